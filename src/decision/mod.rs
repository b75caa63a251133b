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
//! 5. the decision is recorded: metrics, then the audit log, the webhook
//!    and the decision's trace span (all behind bounded queues, off the
//!    request path).
//!
//! It lives in the binary crate, not the runtime: it ties the engine to the
//! side-store, the audit log and the webhook, which are the binary's. The
//! runtime stays the evaluator alone.

pub mod deadline;
mod documents;
pub mod feed;
pub mod origin;
pub mod pipeline;
pub mod reload;
pub mod rules_in_force;
pub mod watch;

use crate::approvals::store::postgres::PostgresStore;
use crate::approvals::{self, known_recipients, Approval, Approvals, NewApproval, Status};
use crate::audit::{AuditEntry, AuditLog};
use crate::metrics::Metrics;
use crate::settings::Settings;
use crate::webhook::Webhook;
use arc_swap::{ArcSwap, ArcSwapOption};
pub use origin::{Door, Origin};
use parallax_runtime::{
    Action, Conclusion, Engine, EvaluationFailure, Event, OwnedVerdict, PartialFailure,
    PreparedEvent, Report,
};
use parallax_store::{
    late_matches, Clock, Route, SqlHit, StoreError, StoreHandle, StoreRequest, SystemClock,
};
pub use reload::{LastReload, ReloadError, ReloadSource, Reloaded};
use rules_in_force::RulesInForce;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Why the SQL rules did not run: (`sql_store` or `timeout`, message).
type StoreFailure = (&'static str, String);

/// Why the decision service cannot start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Approvals(#[from] approvals::StoreError),
}

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
    /// Approvals in SQLite; `None` while no rule asks for approval. Shared
    /// with the blocking pool, where a large event is prepared and looks
    /// its recipients up ([`DecisionService::begin_bounded`]).
    approvals: Option<Arc<Approvals>>,
    /// The fleet's shared store (`store.postgres`).
    shared: Option<Arc<PostgresStore>>,
    /// Send the side-store only the events its SQL rules can see, and wait
    /// only for the ones they judge (`parallax_store::routing`); off, every
    /// event makes the round trip (differential tests, benches).
    sql_routing: bool,
    /// Finished decisions for live viewers (the dashboard's stream).
    feed: Arc<feed::Feed>,
    /// Evaluations on the blocking pool under the deadline ([`deadline`]).
    running: Arc<deadline::Running>,
    /// How the last reload went (any trigger), for `/health`.
    last_reload: ArcSwapOption<reload::LastReload>,
    /// `reporting.pagerduty`: pages on blocks and holds.
    pagerduty: Option<Arc<crate::pagerduty::PagerDuty>>,
    /// `telemetry:`: a span per decision.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// The proxy's budgets, for the dashboard's report of them.
    budgets: Option<Arc<crate::budgets::Budgets>>,
    /// Every scanner part of the rules is built ([`DecisionService::warm_up`]):
    /// the first evaluation runs at full speed.
    ready: Arc<std::sync::atomic::AtomicBool>,
}

/// An event between the compiled evaluators and the SQL rules.
struct Pending {
    current: Arc<RulesInForce>,
    prepared: PreparedEvent,
    /// The engine's verdict, copied out so its scratch went back to the
    /// pool before any wait; `None` when the engine panicked (that scratch
    /// is dropped, not pooled).
    verdict: Option<OwnedVerdict>,
    /// What to send the side-store, when there is one and the event
    /// concerns it.
    request: Option<StoreRequest>,
    /// Whether the answer waits for the side-store ([`Route::Judge`]) or
    /// the event is only queued to be recorded ([`Route::Record`]).
    route: Route,
    /// Why there is no verdict (the engine panicked).
    panicked: Option<String>,
    /// The evaluation stopped at its deadline ([`deadline`]): the verdict
    /// is incomplete and fail_mode decides.
    timed_out: bool,
    /// A retrieval the compiled verdict would stop, judged document by
    /// document ([`documents`]): what to drop for the rest to go on.
    triage: Option<documents::Triage>,
}

impl DecisionService {
    /// Decisions only (no audit log, no webhook, no reload), with the
    /// side-store its SQL rules need on the system clock. Fails only when
    /// the store cannot be opened (an unreadable `state.path`).
    pub fn new(engine: Engine, settings: Settings) -> Result<DecisionService, OpenError> {
        DecisionService::with_clock(engine, settings, Arc::new(SystemClock))
    }

    /// [`DecisionService::new`] with the store on `clock` (tests inject one).
    pub fn with_clock(
        engine: Engine,
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<DecisionService, OpenError> {
        DecisionService::open(engine, settings, clock, true)
    }

    /// For `parallax eval`: replay mode ([`DecisionService::replaying`])
    /// without the approvals database. A replay reports an `approve`
    /// verdict but asks nobody, so it neither opens nor creates the file.
    pub fn replay(engine: Engine, settings: Settings) -> Result<DecisionService, OpenError> {
        Ok(DecisionService::open(engine, settings, Arc::new(SystemClock), false)?.replaying())
    }

    fn open(
        engine: Engine,
        settings: Settings,
        clock: Arc<dyn Clock>,
        with_approvals: bool,
    ) -> Result<DecisionService, OpenError> {
        let store = parallax_store::open_for(engine.program(), &settings.state, clock.clone())?;
        let metrics = Metrics::new();
        let asks_approval = with_approvals
            && engine
                .program()
                .rules
                .iter()
                .any(|r| r.action == Action::Approve);
        // The fleet's shared store, when configured: approvals live there,
        // and the dashboard's rule-hit history. A replay shares nothing.
        let shared = match (&settings.store.postgres, with_approvals) {
            (Some(pg), true) => Some(Arc::new(PostgresStore::open(pg)?)),
            _ => None,
        };
        let approvals = if asks_approval {
            Some(Arc::new(Approvals::open(
                &settings.approvals,
                shared.clone(),
                metrics.clone(),
            )?))
        } else {
            None
        };
        let feed = Arc::new(feed::Feed::default());
        metrics.add_source(feed.clone());
        let running = Arc::new(deadline::Running::default());
        metrics.add_source(running.clone());
        Ok(DecisionService {
            current: ArcSwap::from_pointee(RulesInForce::new(engine)),
            settings,
            metrics,
            audit: None,
            webhook: None,
            reload: None,
            store: ArcSwapOption::from(store.map(Arc::new)),
            clock,
            event_clock: false,
            approvals,
            shared,
            sql_routing: true,
            feed,
            running,
            last_reload: ArcSwapOption::empty(),
            pagerduty: None,
            telemetry: None,
            budgets: None,
            ready: Arc::default(),
        })
    }

    /// Replay mode: use each event's `timestamp` (arrival time when it has
    /// none) as the store's clock, so a recorded session replays faithfully.
    pub fn replaying(mut self) -> DecisionService {
        self.event_clock = true;
        self
    }

    /// Every event makes the round trip to the side-store and waits for
    /// it, as before routing: the reference the routed service is checked
    /// against (tests/sql_routing.rs) and measured against (benches).
    pub fn judging_every_event(mut self) -> DecisionService {
        self.sql_routing = false;
        self
    }

    /// The side-store, when the rules have SQL rules.
    pub fn store(&self) -> Option<Arc<StoreHandle>> {
        self.store.load_full()
    }

    /// Sets the metrics the audit log and webhook already report to.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> DecisionService {
        if let Some(a) = self.approvals.as_mut().and_then(Arc::get_mut) {
            a.set_metrics(metrics.clone());
        }
        metrics.add_source(self.feed.clone());
        metrics.add_source(self.running.clone());
        self.metrics = metrics;
        self
    }

    /// The live feed of finished decisions.
    pub fn feed(&self) -> &Arc<feed::Feed> {
        &self.feed
    }

    /// The fleet's PostgreSQL store (`store.postgres`), when configured.
    pub fn shared_store(&self) -> Option<&Arc<PostgresStore>> {
        self.shared.as_ref()
    }

    /// The approvals, when a rule asks for approval.
    pub fn approvals(&self) -> Option<&Approvals> {
        self.approvals.as_deref()
    }

    /// Expires due approvals once a second, so an expiry is recorded (audit
    /// line, metric, woken waiters) even when nobody is reading. Returns at
    /// once when no rule asks for approval.
    pub async fn run_approval_expiry(self: Arc<Self>) {
        if self.approvals.is_none() {
            return;
        }
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            if let Some(a) = &self.approvals {
                if let Err(e) = a.expire_due(self.audit.as_ref()) {
                    tracing::error!(error = %e, "cannot expire approvals");
                }
            }
        }
    }

    pub fn with_audit(mut self, audit: AuditLog) -> DecisionService {
        self.audit = Some(audit);
        self
    }

    /// Builds every scanner part of the rules in force on a thread of its
    /// own ([`rules_in_force::warm_up`]); [`DecisionService::ready`] says
    /// when it is done. Until then requests are answered, each part built
    /// on first use (the first evaluations are slower).
    pub fn warm_up(&self) {
        let ready = self.ready.clone();
        let verifiers = self.settings.server.prebuild == crate::settings::Prebuild::All;
        rules_in_force::warm_up(self.engine(), verifiers, move || {
            ready.store(true, std::sync::atomic::Ordering::Release);
        });
    }

    /// Whether the rules' scanners are all built (see `warm_up`).
    pub fn ready(&self) -> bool {
        self.ready.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Pages on PagerDuty ([`crate::pagerduty`]): triggers from the
    /// decisions, resolves from the approvals.
    /// Reports `budgets` on the dashboard (the proxy enforces them).
    pub fn with_budgets(mut self, budgets: Arc<crate::budgets::Budgets>) -> DecisionService {
        self.budgets = Some(budgets);
        self
    }

    pub fn budgets(&self) -> Option<&Arc<crate::budgets::Budgets>> {
        self.budgets.as_ref()
    }

    pub fn with_pagerduty(mut self, pager: Arc<crate::pagerduty::PagerDuty>) -> DecisionService {
        if let Some(a) = &self.approvals {
            a.set_pager(pager.clone());
        }
        self.pagerduty = Some(pager);
        self
    }

    /// Exports a span per decision (`telemetry.otlp`).
    pub fn with_telemetry(
        mut self,
        telemetry: Arc<crate::telemetry::Telemetry>,
    ) -> DecisionService {
        self.telemetry = Some(telemetry);
        self
    }

    /// The tracer, when `telemetry.otlp` is set.
    pub fn telemetry(&self) -> Option<&crate::telemetry::Telemetry> {
        self.telemetry.as_deref()
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
        let decision = self.submit(event, origin, started);
        self.complete(decision, origin)
    }

    /// [`DecisionService::decide`] for async front doors: the side-store
    /// runs on its own thread and this awaits its reply (bounded by
    /// `server.request_timeout_ms`), never blocking a worker.
    ///
    /// An event with more than [`deadline::INLINE_BYTES`] of text is
    /// evaluated on the blocking pool under `server.eval_timeout_ms`.
    pub async fn decide_async(&self, event: Event, origin: &Origin, started: Instant) -> Report {
        let inline =
            deadline::scanned_bytes(&event, deadline::INLINE_BYTES) <= deadline::INLINE_BYTES;
        let mut pending = if inline {
            self.begin(event, origin)
        } else {
            match self.begin_bounded(event, origin, started).await {
                Ok(p) => p,
                Err(report) => return report,
            }
        };
        let hits = match (self.store.load_full(), pending.request.take()) {
            (Some(store), Some(req)) if pending.route != Route::Judge => {
                if let Err(e) = store.record(req).await {
                    tracing::error!(error = %e, "cannot queue an event for the side-store");
                }
                None
            }
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
    fn begin(&self, event: Event, origin: &Origin) -> Pending {
        let (current, prepared) = self.prepare(event, origin);
        let store = StoreUse {
            present: self.store.load().is_some(),
            event_clock: self.event_clock,
            decided_at: self.clock.now(),
            routing: self.sql_routing,
        };
        evaluate(current, prepared, store, None)
    }

    /// Step 1, and the event prepared for the evaluators.
    fn prepare(&self, mut event: Event, origin: &Origin) -> (Arc<RulesInForce>, PreparedEvent) {
        origin.stamp(&mut event);
        let current = self.current.load_full();
        let prepared = prepare(&current, event, self.approvals.as_deref());
        (current, prepared)
    }

    /// [`DecisionService::begin`] with the evaluators on the blocking pool
    /// under `server.eval_timeout_ms` (see [`deadline`]); past the deadline
    /// the answer is the fail_mode report, recorded like any decision.
    async fn begin_bounded(
        &self,
        event: Event,
        origin: &Origin,
        started: Instant,
    ) -> Result<Pending, Report> {
        let mut event = event;
        origin.stamp(&mut event);
        let current = self.current.load_full();
        let engine = current.engine.clone();
        let kept = event.clone();
        let approvals = self.approvals.clone();
        let store = StoreUse {
            present: self.store.load().is_some(),
            event_clock: self.event_clock,
            decided_at: self.clock.now(),
            routing: self.sql_routing,
        };
        let timeout_ms = self.settings.server.eval_timeout_ms;
        let left = Duration::from_millis(timeout_ms.max(1)).saturating_sub(started.elapsed());
        // The engine checks this itself and stops there, so a timed-out
        // evaluation frees its blocking thread too, not only the request.
        let stop = Instant::now() + left;
        let running = self.running.enter();
        // Preparing is on the pool too, under the same deadline: deriving
        // the fields of a big event (its commands parsed, its patches read,
        // its recipients looked up) is work in proportion to its size, and
        // on the async worker it would hold every request behind it.
        let task = tokio::task::spawn_blocking(move || {
            let _running = running;
            let prepared = prepare(&current, event, approvals.as_deref());
            evaluate(current, prepared, store, Some(stop))
        });
        let report = match tokio::time::timeout(left, task).await {
            Ok(Ok(pending)) if !pending.timed_out => return Ok(pending),
            Ok(Ok(_)) => self.failed(
                "timeout",
                format!(
                    "the evaluation did not finish within server.eval_timeout_ms \
                     ({timeout_ms} ms)"
                ),
                started,
            ),
            Ok(Err(e)) => self.failed("internal", format!("evaluation task failed: {e}"), started),
            Err(_) => self.failed(
                "timeout",
                format!(
                    "the evaluation did not finish within server.eval_timeout_ms \
                     ({timeout_ms} ms)"
                ),
                started,
            ),
        };
        self.metrics.evaluation_failed();
        self.record(&engine, kept, origin, &report, started);
        Err(report)
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
            verdict,
            panicked,
            triage,
            ..
        } = pending;
        let monitor = self.settings.server.monitor;
        let fail_mode = self.settings.server.fail_mode;
        let report = match (verdict, panicked) {
            (Some(owned), None) => {
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
                    let verdict = owned.verdict();
                    Report::decide(engine, &prepared, &verdict, &conclusion, started.elapsed())
                }));
                match (built, triage) {
                    // The documents' verdicts stand for the compiled rules
                    // only: a late (SQL) rule's match or a failure keeps
                    // the whole verdict.
                    (Ok(report), Some(t))
                        if documents::flags(&report)
                            && !monitor
                            && late.is_empty()
                            && report.failure.is_none() =>
                    {
                        t.apply(started.elapsed())
                    }
                    (Ok(report), _) => report,
                    (Err(panic), _) => self.failed("internal", panic_message(panic), started),
                }
            }
            (_, panicked) => self.failed(
                "internal",
                panicked.unwrap_or_else(|| "the engine panicked".into()),
                started,
            ),
        };
        // A replay (`parallax eval`) reports the approve verdict but asks
        // nobody: replaying a log must not create approvals.
        let report = if report.action == Action::Approve && !self.event_clock {
            self.hold(&current.engine, &prepared.event, report)
        } else {
            report
        };
        if report.failure.is_some() {
            self.metrics.evaluation_failed();
        }
        if current.recipient_memory && !self.event_clock {
            self.remember_recipients(&prepared, &report);
        }
        self.record(&current.engine, prepared.event, origin, &report, started);
        report
    }

    /// A tool call that goes ahead now (allowed, detected, rewritten) makes
    /// its recipients known; a held one does when it is approved
    /// ([`Approvals::decide`]), a blocked one never.
    fn remember_recipients(&self, prepared: &PreparedEvent, report: &Report) {
        if prepared.event.stage != parallax_runtime::Stage::ToolBefore
            || report.action > Action::Redact
            || report.failure.is_some()
        {
            return;
        }
        if let Some(approvals) = &self.approvals {
            let keys: Vec<String> = known_recipients::of(prepared)
                .into_iter()
                .map(|(_, k)| k)
                .collect();
            approvals.remember_recipients(&keys);
        }
    }

    /// An `approve` verdict: the approval is recorded (pending) and named
    /// in the report. If it cannot be recorded, fail_mode decides.
    fn hold(&self, engine: &Engine, event: &Event, mut report: Report) -> Report {
        let program = engine.program();
        let asking: Vec<&parallax_runtime::RuleMeta> = report
            .results
            .iter()
            .filter(|r| r.action == Action::Approve && !r.monitor)
            .filter_map(|r| program.rules.iter().find(|m| m.id == r.rule_id))
            .collect();
        let Some(approvals) = &self.approvals else {
            return self.hold_failed(report, "no approvals store is open".into());
        };
        let specs: Vec<&parallax_runtime::ApprovalSpec> =
            asking.iter().filter_map(|r| r.approval.as_ref()).collect();
        // The strictest terms of the rules that asked: every named
        // approver list joined, the shortest timeout, deny on expiry if any
        // rule says so.
        let mut approvers: Vec<String> = specs
            .iter()
            .flat_map(|s| s.approvers.iter().cloned())
            .collect();
        approvers.sort();
        approvers.dedup();
        let timeout = specs
            .iter()
            .filter_map(|s| s.timeout_seconds)
            .min()
            .unwrap_or(approvals.settings.timeout_seconds)
            .max(1);
        let on_timeout = if specs.is_empty()
            || specs
                .iter()
                .any(|s| s.on_timeout == parallax_runtime::TimeoutOutcome::Deny)
        {
            parallax_runtime::TimeoutOutcome::Deny
        } else {
            parallax_runtime::TimeoutOutcome::Allow
        };
        let approved_action = report
            .results
            .iter()
            .filter(|r| !r.monitor && r.action != Action::Approve)
            .map(|r| r.action.min(Action::Redact))
            .max()
            .unwrap_or(Action::Allow);
        // The approve rules' own transforms rewrite what goes ahead once
        // approved: the approved answer is then a redact with that event.
        let approved_event = report.held_rewrite.take();
        let approved_action = if approved_event
            .as_ref()
            .is_some_and(|e| *e != event.to_value())
        {
            approved_action.max(Action::Redact)
        } else {
            approved_action
        };
        let mut masked = event.clone();
        parallax_runtime::mask_secrets(engine, &mut masked);
        let created = approvals::now();
        let new = NewApproval {
            id: approvals.new_id(),
            created_at: created,
            expires_at: created + timeout as f64,
            rule_ids: asking.iter().map(|r| r.id.clone()).collect(),
            reason: report
                .results
                .iter()
                .filter(|r| r.action == Action::Approve)
                .map(|r| r.reason.clone())
                .collect::<Vec<_>>()
                .join("; "),
            approvers,
            on_timeout,
            event: masked.to_value(),
            session_id: event.session_id.clone(),
            approved_action,
            approved_event,
            via: {
                // Every notifier unless each asking rule names where.
                let mut via: Vec<String> = specs.iter().flat_map(|s| s.via.clone()).collect();
                if specs.len() < asking.len() || specs.iter().any(|s| s.via.is_empty()) {
                    via.clear();
                }
                via.sort();
                via.dedup();
                via
            },
            recipient_keys: if self.current.load().recipient_memory {
                let prepared = PreparedEvent::new(event.clone());
                known_recipients::of(&prepared)
                    .into_iter()
                    .map(|(_, k)| k)
                    .collect()
            } else {
                Vec::new()
            },
        };
        match approvals.create(new, self.audit.as_ref()) {
            Ok(a) => {
                report.approval = Some(approvals::ticket(&a));
                report
            }
            Err(e) => self.hold_failed(report, e.to_string()),
        }
    }

    fn hold_failed(&self, mut report: Report, message: String) -> Report {
        let fail_mode = self.settings.server.fail_mode;
        tracing::error!(%message, ?fail_mode, "cannot record an approval");
        report.reasons.push(format!(
            "the approval could not be recorded ({message}); fail_mode {} decided",
            fail_mode.as_str()
        ));
        report.action = match fail_mode {
            parallax_runtime::FailMode::Closed => Action::Block,
            parallax_runtime::FailMode::Open => Action::Allow,
        };
        report.blocked = report.action == Action::Block;
        report.failure = Some(EvaluationFailure {
            kind: "approvals".into(),
            message,
            fail_mode,
        });
        report
    }

    /// [`DecisionService::decide_async`], then, for an `approve`, waits up
    /// to `wait` (at most `approvals.max_wait_seconds`) for the approval to
    /// resolve and answers with its outcome; still pending after the wait,
    /// the report says `approve` with the pending approval.
    pub async fn decide_waiting(
        &self,
        event: Event,
        origin: &Origin,
        started: Instant,
        wait: Duration,
    ) -> Report {
        let report = self.decide_async(event, origin, started).await;
        self.wait_for_approval(report, wait).await
    }

    /// Waits for the approval a report holds (see
    /// [`DecisionService::decide_waiting`]).
    pub async fn wait_for_approval(&self, report: Report, wait: Duration) -> Report {
        let (Some(approvals), Some(id)) = (
            &self.approvals,
            report
                .approval
                .as_ref()
                .and_then(|a| a["id"].as_str())
                .map(str::to_string),
        ) else {
            return report;
        };
        if report.action != Action::Approve || wait.is_zero() {
            return report;
        }
        let wait = wait.min(Duration::from_secs(approvals.settings.max_wait_seconds));
        match approvals.wait(&id, wait, self.audit.as_ref()).await {
            Ok(Some(a)) if a.status != Status::Pending => resolve(report, &a),
            Ok(_) => report,
            Err(e) => self.hold_failed(report, e.to_string()),
        }
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

    /// Step 5: metrics, pages, trace span, audit line, webhook.
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
        if let Some(pager) = &self.pagerduty {
            pager.on_decision(&event, report);
        }
        if let Some(t) = &self.telemetry {
            t.decision(engine, &event, origin, report, started);
        }
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
        // Live viewers get the audit's own entry (masked when they read
        // it); with none connected this is one atomic load.
        if self.feed.has_viewers() {
            self.feed.publish(entry(event.clone()));
        }
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
        if let Some(p) = &self.pagerduty {
            p.close().await;
        }
        if let Some(t) = &self.telemetry {
            t.close(Duration::from_secs(5)).await;
        }
        if let Some(a) = &self.audit {
            // Joining the writer blocks: keep it off the async workers.
            crate::audit::run_blocking(|| a.close());
        }
    }
}

/// The event prepared for the evaluators of `current`, with the call's
/// known recipients when a rule asks (the approvals database holds them).
/// A free function so that it can run on the blocking pool
/// ([`DecisionService::begin_bounded`]).
fn prepare(current: &RulesInForce, event: Event, approvals: Option<&Approvals>) -> PreparedEvent {
    let mut prepared = PreparedEvent::new(event);
    if current.recipient_memory {
        look_up_recipients(approvals, &mut prepared);
    }
    prepared
}

/// Tells the evaluation which of a tool call's recipients are known
/// (the `first_time_recipient` trigger); without an approvals database
/// (a replay) nobody looks and every recipient counts as new.
fn look_up_recipients(approvals: Option<&Approvals>, prepared: &mut PreparedEvent) {
    if prepared.event.stage != parallax_runtime::Stage::ToolBefore {
        return;
    }
    let Some(approvals) = approvals else {
        return;
    };
    let pairs = known_recipients::of(prepared);
    if pairs.is_empty() {
        return;
    }
    let keys: Vec<String> = pairs.iter().map(|(_, k)| k.clone()).collect();
    let known = approvals.known_recipients(&keys);
    let names = pairs
        .into_iter()
        .zip(known)
        .filter(|(_, known)| *known)
        .map(|((name, _), _)| name)
        .collect();
    prepared.set_known_recipients(names);
}

/// How an evaluation uses the side-store.
#[derive(Clone, Copy)]
struct StoreUse {
    /// There is one (the rules have SQL rules).
    present: bool,
    /// Replay mode: the event's timestamp is the store's clock.
    event_clock: bool,
    /// The service clock when the event was taken: the time its row gets
    /// and its windows end at, so a backlog on the store's thread neither
    /// ages an event nor stretches a window (a lockout would otherwise
    /// last as long as the queue is late).
    decided_at: f64,
    /// See [`DecisionService::judging_every_event`].
    routing: bool,
}

/// Step 2: the compiled evaluators on `prepared` with the rules in force,
/// and what the side-store is to be sent. A free function so that it can
/// move to the blocking pool ([`deadline`]).
///
/// With `stop`, the engine gives up at that instant ([`deadline`]); the
/// pending event then says `timed_out` and carries no store request.
fn evaluate(
    current: Arc<RulesInForce>,
    prepared: PreparedEvent,
    store: StoreUse,
    stop: Option<Instant>,
) -> Pending {
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let mut scratch = current.take_scratch();
        scratch.set_deadline(stop);
        current.engine.evaluate(&prepared, &mut scratch);
        if scratch.timed_out() {
            scratch.set_deadline(None);
            current.put_scratch(scratch);
            return None;
        }
        let verdict = scratch.verdict();
        // A blocked event is recorded too (a retried blocked command is
        // what rate rules must see); the store then runs no rule on it.
        let route = if store.routing {
            current.sql.route(
                prepared.event.stage,
                prepared.event.session_id.is_some(),
                verdict.action,
            )
        } else {
            Route::Judge
        };
        let mut route = route;
        let request = (store.present && route != Route::Skip).then(|| {
            let now = Some(if store.event_clock {
                prepared
                    .event
                    .timestamp
                    .unwrap_or_else(|| SystemClock.now())
            } else {
                store.decided_at
            });
            let mut req = StoreRequest::new(&prepared, &verdict, current.engine.program(), now);
            // The rules' cheap preconditions: a rule whose guard is false
            // for this event cannot fire, so its query is not run; with
            // none left the event is only recorded (no wait).
            if store.routing && route == Route::Judge {
                req.rules = current.sql.rules_for(&req.row);
                if req.rules.is_none() {
                    route = Route::Record;
                }
            }
            req.run_rules &= route == Route::Judge;
            req
        });
        let owned = verdict.to_owned_verdict();
        scratch.set_deadline(None);
        current.put_scratch(scratch);
        let triage = documents::wanted(&prepared.event, current.engine.program(), &owned.matched)
            .then(|| documents::triage(&current, &prepared.event, stop))
            .flatten();
        Some((owned, request, route, triage))
    }));
    match outcome {
        Ok(Some((verdict, request, route, triage))) => Pending {
            current,
            prepared,
            verdict: Some(verdict),
            request,
            route,
            panicked: None,
            timed_out: false,
            triage,
        },
        Ok(None) => Pending {
            current,
            prepared,
            verdict: None,
            request: None,
            route: Route::Skip,
            panicked: None,
            timed_out: true,
            triage: None,
        },
        Err(panic) => Pending {
            current,
            prepared,
            verdict: None,
            request: None,
            route: Route::Skip,
            panicked: Some(panic_message(panic)),
            timed_out: false,
            triage: None,
        },
    }
}

/// The answer once an approval is resolved: approved (or expired with
/// `on_timeout: allow`) → what the other matched rules ask (allow, detect,
/// or redact with the rewritten event); denied or expired → block.
pub fn resolve(mut report: Report, a: &Approval) -> Report {
    let allowed = a.outcome.as_deref() == Some("allow");
    report.approval = Some(approvals::ticket(a));
    let how = match a.status {
        Status::Expired => "expired without a decision".to_string(),
        _ => format!(
            "{} by {}{}",
            a.status.as_str(),
            a.decided_by.as_deref().unwrap_or("?"),
            a.comment
                .as_deref()
                .map(|c| format!(": {c}"))
                .unwrap_or_default()
        ),
    };
    report.reasons.push(format!("approval {}: {how}", a.id));
    if allowed {
        report.action = a.approved_action;
        report.redacted_event = if a.approved_action == Action::Redact {
            a.approved_event.clone()
        } else {
            None
        };
        report.rewritten_event.clone_from(&report.redacted_event);
    } else {
        report.action = Action::Block;
        report.redacted_event = None;
        report.rewritten_event = None;
        report.redacted = None;
    }
    report.blocked = report.action == Action::Block;
    report
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
