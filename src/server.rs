//! The HTTP API: `POST /evaluate`, `GET /health`, `GET /metrics` and
//! `POST /admin/reload` (hyper 1, HTTP/1.1).
//!
//! Every failure is a JSON `{"error": {"code", "message"}}` with the status
//! that says whose fault it is; no input reaches a panic. The compiled
//! evaluators run inline on the connection's task (microseconds, never
//! blocking); SQL rules run on the side-store's own thread, awaited. Audit
//! lines and webhooks are handed to background writers.

use crate::audit::{AuditEntry, AuditLog};
use crate::auth;
use crate::limits;
use crate::loader;
use crate::metrics::Metrics;
use crate::webhook::Webhook;
use arc_swap::{ArcSwap, ArcSwapOption};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use parallax_runtime::{
    Action, Engine, EvaluationFailure, Event, EventError, FailMode, PreparedEvent, Report, Scratch,
    Settings,
};
use parallax_store::{
    apply_hits, Clock, SqlHit, StoreError, StoreHandle, StoreRequest, SystemClock,
};
use serde_json::json;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpListener;

/// How long shutdown waits for in-flight requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The rules in force, swapped whole on reload; scratch memory belongs to
/// the engine it was sized for.
pub struct Current {
    pub engine: Arc<Engine>,
    scratch: Mutex<Vec<Scratch>>,
}

impl Current {
    fn new(engine: Engine) -> Current {
        Current {
            engine: Arc::new(engine),
            scratch: Mutex::new(Vec::new()),
        }
    }

    fn take_scratch(&self) -> Scratch {
        let pooled = self.scratch.lock().ok().and_then(|mut p| p.pop());
        pooled.unwrap_or_else(|| self.engine.new_scratch())
    }

    fn put_scratch(&self, s: Scratch) {
        if let Ok(mut p) = self.scratch.lock() {
            p.push(s);
        }
    }
}

/// Where reloads read the rules from.
#[derive(Debug, Clone)]
pub struct ReloadSource {
    pub config: Option<PathBuf>,
    pub baked_only: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("--baked-only: the rules are fixed at build time and cannot be reloaded")]
    BakedOnly,
    #[error("no config file to reload from (running on the baked config)")]
    NoConfig,
    #[error("reload is not enabled for this server")]
    Disabled,
    #[error("the new rules do not compile; the running rules are kept: {0}")]
    Compile(String),
    #[error("the side-store refused the new SQL rules; the running rules are kept: {0}")]
    Store(String),
}

/// What a successful reload swapped in.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reloaded {
    pub previous_fingerprint: String,
    pub rules_fingerprint: String,
    pub backend: &'static str,
    pub evaluators: usize,
    pub rules: usize,
}

/// What every request handler shares.
pub struct AppState {
    current: ArcSwap<Current>,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    audit: Option<AuditLog>,
    webhook: Option<Webhook>,
    reload: Option<ReloadSource>,
    /// The SQL rules' side-store, on its own thread; `None` while the rules
    /// have no SQL rule. One per process: a reload loads the new rules into
    /// it, so the windows (rates, lockouts) survive the reload.
    store: ArcSwapOption<StoreHandle>,
    clock: Arc<dyn Clock>,
    /// Replay mode (`parallax eval`): each event's own `timestamp` is the
    /// store's clock.
    event_clock: bool,
}

impl AppState {
    /// Evaluation only (no audit log, no webhook, no reload), with the
    /// side-store its SQL rules need on the system clock. Fails only when
    /// the store cannot be opened (an unreadable `state.path`).
    pub fn new(engine: Engine, settings: Settings) -> Result<AppState, StoreError> {
        AppState::with_clock(engine, settings, Arc::new(SystemClock))
    }

    /// [`AppState::new`] with the store on `clock` (tests inject one).
    pub fn with_clock(
        engine: Engine,
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<AppState, StoreError> {
        let store = parallax_store::open_for(engine.program(), &settings.state, clock.clone())?;
        Ok(AppState {
            current: ArcSwap::from_pointee(Current::new(engine)),
            settings,
            metrics: Metrics::new(),
            audit: None,
            webhook: None,
            reload: None,
            store: ArcSwapOption::from(store.map(Arc::new)),
            clock,
            event_clock: false,
        })
    }

    /// Replay mode: use each event's `timestamp` (arrival time when it has
    /// none) as the store's clock, so a recorded session replays faithfully.
    pub fn replaying(mut self) -> AppState {
        self.event_clock = true;
        self
    }

    /// The side-store, when the rules have SQL rules.
    pub fn store(&self) -> Option<Arc<StoreHandle>> {
        self.store.load_full()
    }

    /// Sets the metrics the audit log and webhook already report to.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> AppState {
        self.metrics = metrics;
        self
    }

    pub fn with_audit(mut self, audit: AuditLog) -> AppState {
        self.audit = Some(audit);
        self
    }

    pub fn with_webhook(mut self, webhook: Webhook) -> AppState {
        self.webhook = Some(webhook);
        self
    }

    pub fn with_reload(mut self, source: ReloadSource) -> AppState {
        self.reload = Some(source);
        self
    }

    /// The engine in force now.
    pub fn engine(&self) -> Arc<Engine> {
        self.current.load().engine.clone()
    }

    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_ref()
    }

    /// Runs the compiled evaluators (a panic becomes the fail_mode
    /// verdict, never a dropped connection); returns their report and, when
    /// there is a side-store and nothing failed, what to send it.
    fn evaluate_compiled(
        &self,
        current: &Current,
        prepared: &PreparedEvent,
        started: Instant,
    ) -> (Report, Option<StoreRequest>) {
        let with_store = self.store.load().is_some();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut scratch = current.take_scratch();
            let verdict = current.engine.evaluate(prepared, &mut scratch);
            let report = Report::build(&current.engine, prepared, &verdict, started.elapsed());
            let request = with_store.then(|| {
                let now = self.event_clock.then(|| {
                    prepared
                        .event
                        .timestamp
                        .unwrap_or_else(|| SystemClock.now())
                });
                StoreRequest::new(prepared, &verdict, current.engine.program(), now)
            });
            current.put_scratch(scratch);
            (report, request)
        }));
        match outcome {
            Ok(r) => r,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "the engine panicked".into());
                (self.failed("internal", message, started), None)
            }
        }
    }

    /// Adds the SQL rules' verdict (a store failure is logged and leaves the
    /// compiled evaluators' verdict standing), applies monitor mode and
    /// records the decision.
    fn conclude(
        &self,
        current: &Current,
        event: Event,
        mut report: Report,
        hits: Option<Result<Vec<SqlHit>, (&'static str, String)>>,
        started: Instant,
    ) -> Report {
        if let Some(hits) = hits {
            match hits {
                Ok(hits) => apply_hits(&mut report, current.engine.program(), &hits),
                Err((kind, e)) => self.store_failed(&mut report, kind, e),
            }
            report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        }
        if self.settings.server.monitor {
            apply_monitor(&mut report);
        }
        self.record(&current.engine, event, &report, started);
        report
    }

    /// Evaluates one parsed event into the response body and records the
    /// decision (metrics, audit log, webhook), waiting on the side-store
    /// synchronously: for `parallax eval`, never inside an async runtime
    /// (the server uses [`AppState::evaluate_async`]).
    pub fn evaluate(&self, event: Event, started: Instant) -> Report {
        let current = self.current.load_full();
        let prepared = PreparedEvent::new(event);
        let (report, request) = self.evaluate_compiled(&current, &prepared, started);
        let hits = match (self.store.load_full(), request) {
            (Some(store), Some(req)) => Some(
                store
                    .process_blocking(req)
                    .map_err(|e| ("sql_store", e.to_string())),
            ),
            _ => None,
        };
        self.conclude(&current, prepared.event, report, hits, started)
    }

    /// [`AppState::evaluate`] for the server: the side-store runs on its
    /// own thread and this awaits its reply, never blocking a worker.
    pub async fn evaluate_async(&self, event: Event, started: Instant) -> Report {
        let current = self.current.load_full();
        let prepared = PreparedEvent::new(event);
        let (report, request) = self.evaluate_compiled(&current, &prepared, started);
        let hits = match (self.store.load_full(), request) {
            (Some(store), Some(req)) => {
                let wait = Duration::from_millis(self.settings.server.request_timeout_ms.max(1));
                Some(match tokio::time::timeout(wait, store.process(req)).await {
                    Ok(r) => r.map_err(|e| ("sql_store", e.to_string())),
                    Err(_) => Err((
                        "timeout",
                        format!(
                            "the SQL side-store did not answer within \
                             server.request_timeout_ms ({} ms)",
                            self.settings.server.request_timeout_ms
                        ),
                    )),
                })
            }
            _ => None,
        };
        self.conclude(&current, prepared.event, report, hits, started)
    }

    /// The SQL rules could not run (`kind`: `sql_store` or `timeout`): the
    /// compiled evaluators' results stand, the response says what failed,
    /// and `fail_mode` decides the verdict as for any failed evaluation
    /// (closed: block; open: the compiled verdict).
    pub fn store_failed(&self, report: &mut Report, kind: &str, message: String) {
        self.metrics.evaluation_failed();
        let fail_mode = self.settings.server.fail_mode;
        tracing::error!(kind, %message, ?fail_mode, "SQL rules could not run");
        report.reasons.push(format!(
            "SQL rules did not run ({kind}: {message}); fail_mode {} decided",
            match fail_mode {
                FailMode::Closed => "closed",
                FailMode::Open => "open",
            }
        ));
        if fail_mode == FailMode::Closed {
            report.action = Action::Block;
            report.blocked = true;
            report.redacted = None;
            report.redacted_event = None;
        }
        report.failure = Some(EvaluationFailure {
            kind: kind.to_string(),
            message,
            fail_mode,
        });
    }

    /// The fail_mode answer for an evaluation that could not complete
    /// (`kind`: `internal`, `timeout`, or the failing subsystem).
    pub fn failed(&self, kind: &str, message: String, started: Instant) -> Report {
        self.metrics.evaluation_failed();
        tracing::error!(kind, %message, fail_mode = ?self.settings.server.fail_mode, "evaluation failed");
        Report::failed(
            self.settings.server.fail_mode,
            kind,
            message,
            started.elapsed(),
        )
    }

    fn record(&self, engine: &Arc<Engine>, event: Event, report: &Report, started: Instant) {
        self.metrics.decision(
            event.stage,
            report.action,
            report.would_block,
            report.results.iter().map(|r| r.rule_id.as_str()),
            started.elapsed(),
        );
        let plain_allow =
            report.action == Action::Allow && report.results.is_empty() && report.failure.is_none();
        let to_audit = self.audit.as_ref().filter(|a| a.wants(plain_allow));
        let to_webhook = self
            .webhook
            .as_ref()
            .filter(|w| w.wants(report.action) || (report.would_block && w.wants(Action::Block)));
        let entry = |event: Event| AuditEntry {
            engine: engine.clone(),
            event,
            report: report.clone(),
            at: SystemTime::now(),
        };
        match (to_audit, to_webhook) {
            (Some(a), Some(w)) => {
                w.submit(entry(event.clone()));
                a.submit(entry(event));
            }
            (Some(a), None) => a.submit(entry(event)),
            (None, Some(w)) => w.submit(entry(event)),
            (None, None) => {}
        }
    }

    /// Recompiles the configured rules and swaps them in; on any error the
    /// running rules stay. Blocking (compiling takes a while): call it from
    /// a blocking thread.
    pub fn reload(&self) -> Result<Reloaded, ReloadError> {
        let result = self.try_reload();
        match &result {
            Ok(r) => {
                self.metrics
                    .reloads_ok
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(
                    fingerprint = %r.rules_fingerprint,
                    previous = %r.previous_fingerprint,
                    backend = r.backend,
                    rules = r.rules,
                    "rules reloaded"
                );
            }
            Err(e) => {
                self.metrics
                    .reloads_failed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::error!(error = %e, "reload failed; keeping the running rules");
            }
        }
        result
    }

    fn try_reload(&self) -> Result<Reloaded, ReloadError> {
        let source = self.reload.as_ref().ok_or(ReloadError::Disabled)?;
        if source.baked_only {
            return Err(ReloadError::BakedOnly);
        }
        let path = source.config.as_deref().ok_or(ReloadError::NoConfig)?;
        let loaded =
            loader::load(Some(path), false).map_err(|e| ReloadError::Compile(e.to_string()))?;
        if loaded.settings != self.settings {
            tracing::warn!(
                "settings in {} changed; only rules are reloaded, settings need a restart",
                path.display()
            );
        }
        let previous = self.engine().program().fingerprint.clone();
        self.reload_store(loaded.engine.program())?;
        let next = Current::new(loaded.engine);
        let p = next.engine.program();
        let out = Reloaded {
            previous_fingerprint: previous,
            rules_fingerprint: p.fingerprint.clone(),
            backend: next.engine.backend().as_str(),
            evaluators: p.evaluators.len(),
            rules: p.rules.len(),
        };
        self.current.store(Arc::new(next));
        Ok(out)
    }

    /// Gives the side-store the new program's SQL rules (keeping its
    /// windows), or opens one if the rules now have SQL rules and there was
    /// none.
    fn reload_store(&self, program: &parallax_runtime::Program) -> Result<(), ReloadError> {
        match self.store.load_full() {
            Some(store) => store
                .load_rules_blocking(program)
                .map_err(|e| ReloadError::Store(e.to_string())),
            None => {
                let opened =
                    parallax_store::open_for(program, &self.settings.state, self.clock.clone())
                        .map_err(|e| ReloadError::Store(e.to_string()))?;
                self.store.store(opened.map(Arc::new));
                Ok(())
            }
        }
    }

    /// Flushes and stops the background writers (after the last request).
    pub async fn close(&self) {
        if let Some(w) = &self.webhook {
            w.close().await;
        }
        if let Some(a) = &self.audit {
            // Joining the writer blocks: keep it off the async workers.
            crate::audit::run_blocking(|| a.close());
        }
    }
}

/// `--monitor`: the decision stands in the report (`would_block`, rule
/// results) but the returned action is at most `detect`.
fn apply_monitor(report: &mut Report) {
    if report.action <= Action::Detect {
        return;
    }
    report.would_block |= report.action == Action::Block;
    report.action = Action::Detect;
    report.blocked = false;
    report.redacted = None;
    report.redacted_event = None;
}

type Body = Full<Bytes>;

/// Accepts connections on `listener` until `shutdown` resolves, then stops
/// accepting, lets in-flight requests finish (bounded by a drain timeout),
/// and flushes the audit log and webhook queue.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let server = &state.settings.server;
    let permits = Arc::new(tokio::sync::Semaphore::new(server.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(server.request_timeout_ms.max(1)))
        // hyper answers 431 itself past this (it requires at least 8 KiB);
        // below it, `handle` answers with a JSON 431.
        .max_buf_size((server.max_header_bytes * 2).max(8192));
    loop {
        // At most max_connections served at once: further clients wait in
        // the kernel's accept queue instead of exhausting memory or fds.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors and the like: back off
                        // instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let state = state.clone();
                let svc = service_fn(move |req| handle(req, state.clone()));
                let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), svc));
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    drop(permit);
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within {DRAIN_TIMEOUT:?}");
    }
    state.close().await;
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<AppState>,
) -> Result<Response<Body>, Infallible> {
    let server = &state.settings.server;
    let head_bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum::<usize>()
        + req.uri().to_string().len();
    if head_bytes > server.max_header_bytes {
        state
            .metrics
            .rejected_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Ok(error(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!(
                "the request head is {head_bytes} bytes, more than server.max_header_bytes ({})",
                server.max_header_bytes
            ),
        ));
    }
    let path = req.uri().path();
    if path != "/health" {
        if let Some(token) = &server.auth_token {
            if !auth::authorized(req.headers(), token) {
                state
                    .metrics
                    .unauthorized
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut r = error(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "this endpoint requires `Authorization: Bearer <token>` (server.auth_token)"
                        .into(),
                );
                r.headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return Ok(r);
            }
        }
    }
    let response = match (req.method(), path) {
        (&Method::GET | &Method::HEAD, "/health") => health(&state),
        (&Method::POST, "/evaluate") => evaluate(req, &state).await,
        (&Method::GET, "/metrics") => metrics(&state).await,
        (&Method::POST, "/admin/reload") => reload(&state).await,
        (_, "/health") => method_not_allowed("GET, HEAD"),
        (_, "/metrics") => method_not_allowed("GET"),
        (_, "/evaluate") | (_, "/admin/reload") => method_not_allowed("POST"),
        (_, path) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!(
                "no such endpoint `{path}` (try POST /evaluate, GET /health, GET /metrics, \
                 POST /admin/reload)"
            ),
        ),
    };
    Ok(response)
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error(status: StatusCode, code: &str, message: String) -> Response<Body> {
    let body = json!({"error": {"code": code, "message": message}});
    json_response(status, body.to_string().into_bytes())
}

fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("this endpoint only accepts {allow}"),
    );
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    r
}

fn health(state: &AppState) -> Response<Body> {
    let engine = state.engine();
    let p = engine.program();
    let body = json!({
        "status": "ok",
        "mode": if state.settings.server.monitor { "monitor" } else { "enforce" },
        "evaluators": p.evaluators.len(),
        "rules": p.rules.len(),
        "version": env!("CARGO_PKG_VERSION"),
        "backend": engine.backend().as_str(),
        "rules_fingerprint": p.fingerprint,
    });
    json_response(StatusCode::OK, body.to_string().into_bytes())
}

async fn metrics(state: &AppState) -> Response<Body> {
    let mut text = state.metrics.render();
    if let Some(store) = state.store() {
        if let Ok(rows) = store.row_count().await {
            text.push_str(
                "# HELP parallax_sql_store_rows Events in the SQL side-store's window.\n\
                 # TYPE parallax_sql_store_rows gauge\n",
            );
            text.push_str(&format!("parallax_sql_store_rows {rows}\n"));
        }
    }
    let mut r = Response::new(Full::new(Bytes::from(text)));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

async fn reload(state: &Arc<AppState>) -> Response<Body> {
    let s = state.clone();
    let result = match tokio::task::spawn_blocking(move || s.reload()).await {
        Ok(r) => r,
        Err(e) => Err(ReloadError::Compile(format!("the reload task failed: {e}"))),
    };
    match result {
        Ok(r) => json_response(
            StatusCode::OK,
            json!({"status": "reloaded", "reload": r})
                .to_string()
                .into_bytes(),
        ),
        Err(e @ (ReloadError::BakedOnly | ReloadError::NoConfig | ReloadError::Disabled)) => {
            error(StatusCode::CONFLICT, "reload_refused", e.to_string())
        }
        Err(e) => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "reload_failed",
            e.to_string(),
        ),
    }
}

/// JSON, or a `+json` type; a request without a type is taken as JSON.
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    let Some(v) = content_type else { return true };
    let Ok(v) = v.to_str() else { return false };
    let mime = v
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || mime.ends_with("+json")
}

async fn evaluate(req: Request<Incoming>, state: &AppState) -> Response<Body> {
    let server = &state.settings.server;
    let max = server.max_body_bytes;
    let reject = |status, code, message| {
        state
            .metrics
            .rejected_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        error(status, code, message)
    };
    if !is_json(req.headers().get(CONTENT_TYPE)) {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON (Content-Type: application/json)".into(),
        );
    }
    let too_large = || {
        reject(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body is larger than server.max_body_bytes ({max} bytes)"),
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return too_large();
    }
    let timeout = Duration::from_millis(server.request_timeout_ms.max(1));
    let read = Limited::new(req.into_body(), max).collect();
    let body = match tokio::time::timeout(timeout, read).await {
        Err(_) => {
            return reject(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!(
                    "the body did not arrive within server.request_timeout_ms ({} ms)",
                    server.request_timeout_ms
                ),
            )
        }
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Ok(Err(e)) => {
            return error(
                StatusCode::BAD_REQUEST,
                "unreadable_body",
                format!("could not read the body: {e}"),
            )
        }
    };
    let started = Instant::now();
    if let Err(e) = std::str::from_utf8(&body) {
        return error(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            format!(
                "malformed JSON: the body is not valid UTF-8 (byte {})",
                e.valid_up_to()
            ),
        );
    }
    let value: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                EventError::Json(e.to_string()).to_string(),
            )
        }
    };
    if let Err(e) = limits::check(&value, server.max_json_depth, server.max_string_bytes) {
        return reject(StatusCode::BAD_REQUEST, "limit_exceeded", e.to_string());
    }
    let event = match Event::from_value(value) {
        Ok(e) => e,
        Err(e) => {
            let code = match e {
                EventError::Json(_) => "malformed_json",
                _ => "invalid_event",
            };
            return error(StatusCode::BAD_REQUEST, code, e.to_string());
        }
    };
    let report = state.evaluate_async(event, started).await;
    match serde_json::to_vec(&report) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("could not encode the verdict: {e}"),
        ),
    }
}
