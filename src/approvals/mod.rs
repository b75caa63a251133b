//! Human approval: the lifecycle of a call a rule holds (`action:
//! approve`) until an approver decides or it expires.
//!
//! created (pending) ──approve──▶ approved ─▶ the call goes ahead
//!         │        └──deny─────▶ denied   ─▶ the call is blocked
//!         └──deadline passed───▶ expired  ─▶ the rule's `on_timeout`
//!                                            (deny unless it says allow)
//!
//! [`store`] keeps every approval in SQLite (a file by default, so pending
//! approvals and their deadlines survive a restart) or, for a fleet, in
//! PostgreSQL (`store.postgres`), where every replica sees every approval
//! and a decision through one wakes the call held on another. Each transition is an
//! audit line (`kind: approval`) and a metric; waiters (`?wait=SECONDS`)
//! are woken by any transition and re-read the record, so a missed wake-up
//! costs at most a re-check, never a lost decision. An approver
//! authenticates with their own token (`approvals.approver_tokens`): the
//! agent's token cannot approve its own call.

pub mod known_recipients;
pub mod notify;
pub mod store;

use crate::audit::AuditLog;
use crate::metrics::Metrics;
use crate::settings::ApprovalsSettings;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
pub use store::{Approval, ApprovalBackend, NewApproval, Status, StoreError};
use tokio::sync::Notify;

/// Seconds since the epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// RFC 3339 (UTC) of epoch seconds.
pub fn rfc3339(secs: f64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs_f64(secs.max(0.0));
    crate::audit::record::timestamp(at)
}

/// Why a decision was refused.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no approval `{0}`")]
    NotFound(String),
    /// Decided or expired already: the recorded outcome stands.
    #[error("approval `{}` is {} already", .0.id, .0.status.as_str())]
    Closed(Box<Approval>),
    #[error("`{who}` may not decide approval `{id}` (its rule names: {allowed})")]
    NotAllowed {
        who: String,
        id: String,
        allowed: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Approvals {
    /// Shared with the notifiers, which keep where a Slack card is.
    store: Arc<dyn ApprovalBackend>,
    /// Woken by every transition, here or (PostgreSQL) on another replica.
    changed: Arc<Notify>,
    pub settings: ApprovalsSettings,
    metrics: Arc<Metrics>,
    /// The webhook and Slack notifiers, when configured ([`notify`]).
    notifiers: Option<notify::Notifiers>,
    notify_counts: Arc<notify::Counts>,
    /// PagerDuty, told when an approval is decided (its incidents resolve).
    pager: std::sync::OnceLock<Arc<crate::pagerduty::PagerDuty>>,
}

impl Approvals {
    pub fn open(
        settings: &ApprovalsSettings,
        shared: Option<Arc<store::postgres::PostgresStore>>,
        metrics: Arc<Metrics>,
    ) -> Result<Approvals, StoreError> {
        let (store, changed) = store::open(&settings.path, shared)?;
        let notify_counts = Arc::new(notify::Counts::default());
        let notifiers = notify::Notifiers::start(settings, store.clone(), notify_counts.clone());
        if notifiers.is_some() {
            metrics.add_source(notify_counts.clone());
        }
        Ok(Approvals {
            store,
            changed,
            settings: settings.clone(),
            metrics,
            notifiers,
            notify_counts,
            pager: std::sync::OnceLock::new(),
        })
    }

    /// Resolves PagerDuty incidents when approvals are decided.
    pub fn set_pager(&self, pager: Arc<crate::pagerduty::PagerDuty>) {
        let _ = self.pager.set(pager);
    }

    /// The notifiers, when `approvals.webhook_url` or `approvals.slack`
    /// configure one.
    pub fn notifiers(&self) -> Option<&notify::Notifiers> {
        self.notifiers.as_ref()
    }

    /// The address the server listens on: the base of the webhook's
    /// callback URLs unless `approvals.public_url` is set.
    pub fn set_local_addr(&self, addr: std::net::SocketAddr) {
        if let Some(n) = &self.notifiers {
            n.set_local_addr(addr);
        }
    }

    /// Flushes the notifiers' queues (bounded), at shutdown.
    pub async fn close(&self) {
        if let Some(n) = &self.notifiers {
            n.close().await;
        }
    }

    /// Uses `metrics` from now on (the server's, shared with the rest).
    pub fn set_metrics(&mut self, metrics: Arc<Metrics>) {
        if self.notifiers.is_some() {
            metrics.add_source(self.notify_counts.clone());
        }
        self.metrics = metrics;
    }

    /// The known-recipient keys of `event`'s recipients
    /// ([`known_recipients::key`]) paired with whether each is known. An
    /// unreadable database is logged and counts every recipient as new,
    /// so the trigger errs towards asking.
    pub fn known_recipients(&self, keys: &[String]) -> Vec<bool> {
        match self.with_store(|s| s.known_recipients(keys)) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the known recipients");
                vec![false; keys.len()]
            }
        }
    }

    /// Remembers `keys` (a call to them went ahead).
    pub fn remember_recipients(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        if let Err(e) = self.with_store(|s| s.remember_recipients(keys, now())) {
            tracing::error!(error = %e, "cannot record the call's recipients as known");
        }
    }

    fn with_store<R>(&self, f: impl FnOnce(&dyn ApprovalBackend) -> R) -> R {
        f(self.store.as_ref())
    }

    /// Which store keeps the approvals (`sqlite`, `postgres`).
    pub fn store_kind(&self) -> &'static str {
        self.store.kind()
    }

    /// A fresh approval id: time, process and a counter, hashed so ids do
    /// not reveal how many approvals there were. The counter is the
    /// process's, not the store's: two engines in one process sharing one
    /// database (two `Firewall.from_file` on one `state_db`) never draw the
    /// same id.
    pub fn new_id(&self) -> String {
        use sha2::{Digest, Sha256};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Relaxed);
        let mut h = Sha256::new();
        h.update(format!("{}:{}:{n}", now(), std::process::id()).as_bytes());
        let d = h.finalize();
        let hex: String = d.iter().take(10).map(|b| format!("{b:02x}")).collect();
        format!("apr_{hex}")
    }

    fn transition(&self, a: &Approval, what: &str, audit: Option<&AuditLog>) {
        let i = match what {
            "created" => 0,
            "approved" => 1,
            "denied" => 2,
            _ => 3,
        };
        self.metrics.approvals[i].fetch_add(1, Relaxed);
        tracing::info!(id = %a.id, transition = what, by = a.decided_by.as_deref().unwrap_or("-"), "approval");
        if let Some(log) = audit {
            log.submit_record(json!({
                "kind": "approval",
                "ts": rfc3339(now()),
                "transition": what,
                "approval": ticket(a),
                "by": a.decided_by,
                "comment": a.comment,
                "session_id": a.session_id,
            }));
        }
        if let Some(n) = &self.notifiers {
            n.notify(a, what);
        }
        if matches!(what, "approved" | "denied" | "expired") {
            if let Some(p) = self.pager.get() {
                p.on_approval(a);
            }
        }
        self.store.announce(&a.id);
        self.changed.notify_waiters();
    }

    pub fn create(
        &self,
        new: NewApproval,
        audit: Option<&AuditLog>,
    ) -> Result<Approval, StoreError> {
        self.with_store(|s| s.insert(&new))?;
        let a = self
            .get(&new.id)?
            .ok_or_else(|| StoreError::Corrupt(format!("approval {} vanished", new.id)))?;
        self.transition(&a, "created", audit);
        Ok(a)
    }

    /// The approval as recorded (see [`Approvals::expire_due`]).
    pub fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        self.with_store(|s| s.get(id))
    }

    pub fn list(&self, status: Option<Status>, limit: usize) -> Result<Vec<Approval>, StoreError> {
        self.with_store(|s| s.list(status, limit))
    }

    /// Expires what is due; called on a timer and before every read that
    /// matters, so correctness never waits for the timer.
    pub fn expire_due(&self, audit: Option<&AuditLog>) -> Result<usize, StoreError> {
        let ids = self.with_store(|s| s.expire_due(now()))?;
        for id in &ids {
            if let Some(a) = self.get(id)? {
                if a.outcome.as_deref() == Some("allow") {
                    self.remember_recipients(&a.recipient_keys);
                }
                self.transition(&a, "expired", audit);
            }
        }
        Ok(ids.len())
    }

    /// `who` approves or denies `id`.
    pub fn decide(
        &self,
        id: &str,
        approve: bool,
        who: &str,
        comment: Option<&str>,
        audit: Option<&AuditLog>,
    ) -> Result<Approval, DecideError> {
        self.expire_due(audit)?;
        let a = self
            .get(id)?
            .ok_or_else(|| DecideError::NotFound(id.to_string()))?;
        if a.status != Status::Pending {
            return Err(DecideError::Closed(Box::new(a)));
        }
        if !a.approvers.is_empty() && !a.approvers.iter().any(|n| n == who) {
            return Err(DecideError::NotAllowed {
                who: who.to_string(),
                id: id.to_string(),
                allowed: a.approvers.join(", "),
            });
        }
        let status = if approve {
            Status::Approved
        } else {
            Status::Denied
        };
        let won = self.with_store(|s| s.decide(id, status, who, comment, now()))?;
        let a = self
            .get(id)?
            .ok_or_else(|| DecideError::NotFound(id.to_string()))?;
        if !won {
            // Someone else decided, or the deadline passed, in between.
            return Err(DecideError::Closed(Box::new(a)));
        }
        if a.status == Status::Approved {
            self.remember_recipients(&a.recipient_keys);
        }
        self.transition(&a, a.status.as_str(), audit);
        Ok(a)
    }

    /// Waits up to `max` for `id` to leave `pending`; the record as it
    /// stands then.
    pub async fn wait(
        &self,
        id: &str,
        max: Duration,
        audit: Option<&AuditLog>,
    ) -> Result<Option<Approval>, StoreError> {
        let deadline = Instant::now() + max;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            self.expire_due(audit)?;
            let Some(a) = self.get(id)? else {
                return Ok(None);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if a.status != Status::Pending || left.is_zero() {
                return Ok(Some(a));
            }
            let to_expiry = Duration::from_secs_f64((a.expires_at - now()).max(0.0));
            // Re-read at least twice a second: another process sharing the
            // database (a `parallax mcp wrap` or a hook beside the server
            // the approver talks to) decides without waking us.
            let nap = left
                .min(to_expiry + Duration::from_millis(5))
                .min(Duration::from_millis(500));
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(nap) => {}
            }
        }
    }
}

/// What callers are told of an approval.
pub fn ticket(a: &Approval) -> Value {
    let mut t = json!({
        "id": a.id,
        "status": a.status,
        "created_at": rfc3339(a.created_at),
        "expires_at": rfc3339(a.expires_at),
        "reason": a.reason,
        "rule_id": a.rule_ids.first(),
        "rule_ids": a.rule_ids,
        "approvers": a.approvers,
        "on_timeout": a.on_timeout,
    });
    if a.status != Status::Pending {
        t["outcome"] = json!(a.outcome);
        t["decided_by"] = json!(a.decided_by);
        t["decided_at"] = json!(a.decided_at.map(rfc3339));
        t["comment"] = json!(a.comment);
    }
    t
}

/// The whole record, for approvers (`GET /approvals/{id}`): the ticket and
/// the (masked) event as asked.
pub fn full(a: &Approval) -> Value {
    let mut t = ticket(a);
    t["event"] = a.event.clone();
    t["session_id"] = json!(a.session_id);
    t
}
