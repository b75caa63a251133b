//! The HTTP API: `POST /evaluate` and `GET /health` (hyper 1, HTTP/1.1).
//!
//! Every failure is a JSON `{"error": {"code", "message"}}` with the status
//! that says whose fault it is; no input reaches a panic. The compiled
//! evaluators run inline on the connection's task (microseconds, never
//! blocking); SQL rules run on the side-store's own thread, awaited.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parallax_runtime::{Engine, Event, EventError, PreparedEvent, Report, Scratch, Settings};
use parallax_store::{
    apply_hits, Clock, SqlHit, StoreError, StoreHandle, StoreRequest, SystemClock,
};
use serde_json::json;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// What every request handler shares.
pub struct AppState {
    pub engine: Engine,
    pub settings: Settings,
    /// Scratch memory for evaluations, reused so requests do not allocate it.
    scratch: Mutex<Vec<Scratch>>,
    /// The SQL rules' side-store, on its own thread; `None` when the program
    /// has no SQL rules.
    store: Option<StoreHandle>,
    /// Replay mode (`parallax eval`): each event's own `timestamp` is the
    /// store's clock.
    event_clock: bool,
}

impl AppState {
    /// The state for `engine`, with the side-store its SQL rules need on
    /// the server clock. Fails only when the store cannot be opened (an
    /// unreadable `state.path`).
    pub fn new(engine: Engine, settings: Settings) -> Result<AppState, StoreError> {
        AppState::with_clock(engine, settings, Arc::new(SystemClock))
    }

    /// [`AppState::new`] with the store on `clock` (tests inject one).
    pub fn with_clock(
        engine: Engine,
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<AppState, StoreError> {
        let store = parallax_store::open_for(engine.program(), &settings.state, clock)?;
        Ok(AppState {
            engine,
            settings,
            scratch: Mutex::new(Vec::new()),
            store,
            event_clock: false,
        })
    }

    /// Replay mode: use each event's `timestamp` (arrival time when it has
    /// none) as the store's clock, so a recorded session replays faithfully.
    pub fn replaying(mut self) -> AppState {
        self.event_clock = true;
        self
    }

    pub fn store(&self) -> Option<&StoreHandle> {
        self.store.as_ref()
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

    /// Runs the compiled evaluators; returns their report and, when there
    /// is a side-store, what to send it.
    fn evaluate_compiled(&self, event: Event, started: Instant) -> (Report, Option<StoreRequest>) {
        let prepared = PreparedEvent::new(event);
        let mut scratch = self.take_scratch();
        let verdict = self.engine.evaluate(&prepared, &mut scratch);
        let report = Report::build(&self.engine, &prepared, &verdict, started.elapsed());
        let request = self.store.as_ref().map(|_| {
            let now = self.event_clock.then(|| {
                prepared
                    .event
                    .timestamp
                    .unwrap_or_else(|| SystemClock.now())
            });
            StoreRequest::new(&prepared, &verdict, self.engine.program(), now)
        });
        self.put_scratch(scratch);
        (report, request)
    }

    /// Adds the SQL rules' verdict. A store failure is logged and leaves the
    /// compiled evaluators' verdict standing.
    fn finish(
        &self,
        mut report: Report,
        hits: Result<Vec<SqlHit>, StoreError>,
        started: Instant,
    ) -> Report {
        match hits {
            Ok(hits) => apply_hits(&mut report, self.engine.program(), &hits),
            Err(e) => tracing::error!(error = %e, "side-store failed; SQL rules skipped"),
        }
        report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        report
    }

    /// Evaluates one parsed event into the response body, waiting on the
    /// side-store synchronously: for `parallax eval`, never inside an async
    /// runtime (the server uses [`AppState::evaluate_async`]).
    pub fn evaluate(&self, event: Event, started: Instant) -> Report {
        let (report, request) = self.evaluate_compiled(event, started);
        match (&self.store, request) {
            (Some(store), Some(req)) => self.finish(report, store.process_blocking(req), started),
            _ => report,
        }
    }

    /// [`AppState::evaluate`] for the server: the side-store runs on its
    /// own thread and this awaits its reply, never blocking a worker.
    pub async fn evaluate_async(&self, event: Event, started: Instant) -> Report {
        let (report, request) = self.evaluate_compiled(event, started);
        match (&self.store, request) {
            (Some(store), Some(req)) => self.finish(report, store.process(req).await, started),
            _ => report,
        }
    }
}

type Body = Full<Bytes>;

/// Accepts connections on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
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
                tokio::spawn(async move {
                    let svc = service_fn(move |req| handle(req, state.clone()));
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await
                    {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<AppState>,
) -> Result<Response<Body>, Infallible> {
    let response = match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/health") => health(&state),
        (&Method::POST, "/evaluate") => evaluate(req, &state).await,
        (_, "/health") => method_not_allowed("GET, HEAD"),
        (_, "/evaluate") => method_not_allowed("POST"),
        (_, path) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such endpoint `{path}` (try POST /evaluate or GET /health)"),
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
    let p = state.engine.program();
    let body = json!({
        "status": "ok",
        "mode": "enforce",
        "evaluators": p.evaluators.len(),
        "rules": p.rules.len(),
        "version": env!("CARGO_PKG_VERSION"),
        "backend": state.engine.backend().as_str(),
        "rules_fingerprint": p.fingerprint,
    });
    json_response(StatusCode::OK, body.to_string().into_bytes())
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
    let max = state.settings.server.max_body_bytes;
    if !is_json(req.headers().get(CONTENT_TYPE)) {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON (Content-Type: application/json)".into(),
        );
    }
    let too_large = || {
        error(
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
    let body = match Limited::new(req.into_body(), max).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "unreadable_body",
                format!("could not read the body: {e}"),
            )
        }
    };
    let started = Instant::now();
    let event = match Event::from_slice(&body) {
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
