//! The decision service: one event and its origin in, the final decision
//! out. Every front door — `POST /evaluate`, `parallax eval`, and each one
//! added later (proxy, hooks, MCP) — is a thin translation into
//! [`DecisionService::decide`] or [`DecisionService::decide_async`]; none
//! of them repeats a step.
//!
//! The steps, in order:
//! 1. the origin's session is given to an event that has none;
//! 2. the compiled evaluators run on the rules in force (a panic becomes
//!    the fail_mode answer, never a dropped request);
//! 3. the SQL rules run on the side-store's own thread (awaited by the
//!    async form, waited for by the blocking one), unless an earlier
//!    evaluator blocked;
//! 4. [`Report::decide`] — the one function that merges actions — builds
//!    the answer: the SQL hits join the chain, a store failure lets
//!    fail_mode decide, server-wide monitor mode caps the action, and the
//!    event is rewritten only when the final action is `redact`;
//! 5. the decision is recorded: metrics, then the audit log and the
//!    webhook (both behind bounded queues, off the request path).
//!
//! It lives in the binary crate, not the runtime: it ties the engine to the
//! side-store, the audit log and the webhook, which are the binary's. The
//! runtime stays the evaluator alone.

pub mod origin;
pub mod reload;
pub mod rules_in_force;

use crate::audit::{AuditEntry, AuditLog};
use crate::metrics::Metrics;
use crate::settings::Settings;
use crate::webhook::Webhook;
use arc_swap::{ArcSwap, ArcSwapOption};
pub use origin::{Door, Origin};
use parallax_runtime::{
    Action, Conclusion, Engine, EvaluationFailure, Event, PartialFailure, PreparedEvent, Report,
    Scratch,
};
use parallax_store::{
    late_matches, Clock, SqlHit, StoreError, StoreHandle, StoreRequest, SystemClock,
};
pub use reload::{ReloadError, ReloadSource, Reloaded};
use rules_in_force::RulesInForce;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Why the SQL rules did not run: (`sql_store` or `timeout`, message).
type StoreFailure = (&'static str, String);

/// What every front door shares.
pub struct DecisionService {
    current: ArcSwap<RulesInForce>,
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

/// An event between the compiled evaluators and the SQL rules.
struct Pending {
    current: Arc<RulesInForce>,
    prepared: PreparedEvent,
    /// The engine's verdict lives in it ([`Scratch::verdict`]); `None` when
    /// the engine panicked (the scratch is then dropped, not pooled).
    scratch: Option<Scratch>,
    /// What to send the side-store, when there is one.
    request: Option<StoreRequest>,
    /// Why there is no verdict (the engine panicked).
    panicked: Option<String>,
}

impl DecisionService {
    /// Decisions only (no audit log, no webhook, no reload), with the
    /// side-store its SQL rules need on the system clock. Fails only when
    /// the store cannot be opened (an unreadable `state.path`).
    pub fn new(engine: Engine, settings: Settings) -> Result<DecisionService, StoreError> {
        DecisionService::with_clock(engine, settings, Arc::new(SystemClock))
    }

    /// [`DecisionService::new`] with the store on `clock` (tests inject one).
    pub fn with_clock(
        engine: Engine,
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<DecisionService, StoreError> {
        let store = parallax_store::open_for(engine.program(), &settings.state, clock.clone())?;
        Ok(DecisionService {
            current: ArcSwap::from_pointee(RulesInForce::new(engine)),
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
    pub fn replaying(mut self) -> DecisionService {
        self.event_clock = true;
        self
    }

    /// The side-store, when the rules have SQL rules.
    pub fn store(&self) -> Option<Arc<StoreHandle>> {
        self.store.load_full()
    }

    /// Sets the metrics the audit log and webhook already report to.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> DecisionService {
        self.metrics = metrics;
        self
    }

    pub fn with_audit(mut self, audit: AuditLog) -> DecisionService {
        self.audit = Some(audit);
        self
    }

    pub fn with_webhook(mut self, webhook: Webhook) -> DecisionService {
        self.webhook = Some(webhook);
        self
    }

    pub fn with_reload(mut self, source: ReloadSource) -> DecisionService {
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

    /// The decision on `event`, waiting for the side-store synchronously:
    /// for callers outside an async runtime (`parallax eval`, embedders).
    /// `started` is when the caller had the event (its `elapsed_ms` counts
    /// from there).
    pub fn decide(&self, event: Event, origin: &Origin, started: Instant) -> Report {
        let mut pending = self.begin(event, origin);
        let hits = match (self.store.load_full(), pending.request.take()) {
            (Some(store), Some(req)) => Some(
                store
                    .process_blocking(req)
                    .map_err(|e| ("sql_store", e.to_string())),
            ),
            _ => None,
        };
        self.finish(pending, hits, origin, started)
    }

    /// [`DecisionService::decide`] for async front doors: the side-store
    /// runs on its own thread and this awaits its reply (bounded by
    /// `server.request_timeout_ms`), never blocking a worker.
    pub async fn decide_async(&self, event: Event, origin: &Origin, started: Instant) -> Report {
        let mut pending = self.begin(event, origin);
        let hits = match (self.store.load_full(), pending.request.take()) {
            (Some(store), Some(req)) => {
                let timeout_ms = self.settings.server.request_timeout_ms;
                let wait = Duration::from_millis(timeout_ms.max(1));
                Some(match tokio::time::timeout(wait, store.process(req)).await {
                    Ok(r) => r.map_err(|e| ("sql_store", e.to_string())),
                    Err(_) => Err((
                        "timeout",
                        format!(
                            "the SQL side-store did not answer within \
                             server.request_timeout_ms ({timeout_ms} ms)"
                        ),
                    )),
                })
            }
            _ => None,
        };
        self.finish(pending, hits, origin, started)
    }

    /// Steps 1 and 2: the origin's session, the compiled evaluators, and
    /// what the side-store is to be sent.
    fn begin(&self, mut event: Event, origin: &Origin) -> Pending {
        if event.session_id.is_none() {
            event.session_id.clone_from(&origin.session_id);
        }
        let current = self.current.load_full();
        let prepared = PreparedEvent::new(event);
        let with_store = self.store.load().is_some();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut scratch = current.take_scratch();
            let verdict = current.engine.evaluate(&prepared, &mut scratch);
            // A blocked event is recorded too (a retried blocked command is
            // what rate rules must see); the store then runs no rule on it.
            let request = with_store.then(|| {
                let now = self.event_clock.then(|| {
                    prepared
                        .event
                        .timestamp
                        .unwrap_or_else(|| SystemClock.now())
                });
                StoreRequest::new(&prepared, &verdict, current.engine.program(), now)
            });
            (scratch, request)
        }));
        match outcome {
            Ok((scratch, request)) => Pending {
                current,
                prepared,
                scratch: Some(scratch),
                request,
                panicked: None,
            },
            Err(panic) => Pending {
                current,
                prepared,
                scratch: None,
                request: None,
                panicked: Some(panic_message(panic)),
            },
        }
    }

    /// Steps 4 and 5: the one report, then the record of it.
    fn finish(
        &self,
        pending: Pending,
        hits: Option<Result<Vec<SqlHit>, StoreFailure>>,
        origin: &Origin,
        started: Instant,
    ) -> Report {
        let Pending {
            current,
            prepared,
            scratch,
            panicked,
            ..
        } = pending;
        let monitor = self.settings.server.monitor;
        let fail_mode = self.settings.server.fail_mode;
        let report = match (scratch, panicked) {
            (Some(scratch), None) => {
                let engine = &current.engine;
                let (late, failure) = match hits {
                    Some(Ok(hits)) => (late_matches(engine.program(), &hits), None),
                    Some(Err((kind, message))) => {
                        tracing::error!(kind, %message, ?fail_mode, "SQL rules could not run");
                        let failure = EvaluationFailure {
                            kind: kind.to_string(),
                            message,
                            fail_mode,
                        };
                        (
                            Vec::new(),
                            Some(PartialFailure {
                                skipped: "SQL rules",
                                failure,
                            }),
                        )
                    }
                    None => (Vec::new(), None),
                };
                let conclusion = Conclusion {
                    late: &late,
                    monitor,
                    failure,
                };
                let built = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let verdict = scratch.verdict();
                    Report::decide(engine, &prepared, &verdict, &conclusion, started.elapsed())
                }));
                match built {
                    Ok(report) => {
                        current.put_scratch(scratch);
                        report
                    }
                    Err(panic) => self.failed("internal", panic_message(panic), started),
                }
            }
            (_, panicked) => self.failed(
                "internal",
                panicked.unwrap_or_else(|| "the engine panicked".into()),
                started,
            ),
        };
        if report.failure.is_some() {
            self.metrics.evaluation_failed();
        }
        self.record(&current.engine, prepared.event, origin, &report, started);
        report
    }

    /// The fail_mode answer when there is no verdict at all (`kind`:
    /// `internal` or the failing subsystem).
    fn failed(&self, kind: &str, message: String, started: Instant) -> Report {
        let fail_mode = self.settings.server.fail_mode;
        tracing::error!(kind, %message, ?fail_mode, "evaluation failed");
        Report::failed(
            EvaluationFailure {
                kind: kind.to_string(),
                message,
                fail_mode,
            },
            self.settings.server.monitor,
            started.elapsed(),
        )
    }

    /// Step 5: metrics, audit line, webhook.
    fn record(
        &self,
        engine: &Arc<Engine>,
        event: Event,
        origin: &Origin,
        report: &Report,
        started: Instant,
    ) {
        self.metrics.decision(
            origin.door,
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
            origin: origin.clone(),
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

/// What a panic said, as text.
fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the engine panicked".into())
}

#[cfg(test)]
mod tests;
