//! Where approvals are kept: one interface ([`ApprovalBackend`]) with two
//! implementations side by side, so the approvals lifecycle, the notifiers
//! and the dashboard know neither:
//! - [`sqlite`]: a file on one host (the default; `approvals.path`);
//! - [`postgres`]: a database a fleet shares (`store.postgres`), with
//!   LISTEN/NOTIFY so a decision made through one replica wakes the call
//!   held on another.
//!
//! Each keeps the event as asked (masked), the rules that asked, who may
//! decide, the deadline, and once decided who did, when, why and with what
//! outcome, plus the known-recipients memory. Every transition is one
//! UPDATE guarded by `status = 'pending'`, so two deciders — in one
//! process or on two replicas — cannot both win.

pub mod postgres;
pub mod sqlite;

use parallax_runtime::{Action, TimeoutOutcome};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Approved,
    Denied,
    /// Nobody decided in time; `outcome` says what that meant.
    Expired,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Expired => "expired",
        }
    }

    /// What a human decision resolves the call to: `allow` when approved,
    /// `deny` otherwise (the `outcome` column).
    pub fn outcome(self) -> &'static str {
        if self == Status::Approved {
            "allow"
        } else {
            "deny"
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "pending" => Status::Pending,
            "approved" => Status::Approved,
            "denied" => Status::Denied,
            "expired" => Status::Expired,
            _ => return None,
        })
    }
}

/// One approval.
#[derive(Debug, Clone, Serialize)]
pub struct Approval {
    pub id: String,
    pub status: Status,
    /// Epoch seconds.
    pub created_at: f64,
    pub expires_at: f64,
    pub rule_ids: Vec<String>,
    pub reason: String,
    /// Who may decide (approver names); empty: any approver.
    pub approvers: Vec<String>,
    pub on_timeout: TimeoutOutcome,
    /// The event as asked, secrets masked.
    pub event: Value,
    pub session_id: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<f64>,
    pub comment: Option<String>,
    /// What the call resolved to: `allow` or `deny` (none while pending).
    pub outcome: Option<String>,
    /// The answer an approval turns the call into: the strongest action of
    /// the other rules that matched (allow, detect, redact) and, for a
    /// redact, the rewritten event.
    #[serde(skip)]
    pub approved_action: Action,
    #[serde(skip)]
    pub approved_event: Option<Value>,
    /// The notifiers the rules asked for (`slack`, `webhook`, `console`);
    /// empty: every configured notifier.
    pub via: Vec<String>,
    /// Where its Slack card was posted (channel, message ts), to update it
    /// with the outcome, also after a restart.
    #[serde(skip)]
    pub slack_card: Option<(String, String)>,
    /// The known-recipient keys to remember once the call is approved
    /// ([`super::known_recipients`]).
    #[serde(skip)]
    pub recipient_keys: Vec<String>,
}

/// What a new approval is made of.
pub struct NewApproval {
    pub id: String,
    pub created_at: f64,
    pub expires_at: f64,
    pub rule_ids: Vec<String>,
    pub reason: String,
    pub approvers: Vec<String>,
    pub on_timeout: TimeoutOutcome,
    pub event: Value,
    pub session_id: Option<String>,
    pub approved_action: Action,
    pub approved_event: Option<Value>,
    pub via: Vec<String>,
    pub recipient_keys: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the approvals database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("the approvals database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("the approvals database holds an unreadable row: {0}")]
    Corrupt(String),
    /// The PostgreSQL store could not answer (down, unreachable, a failed
    /// statement); the message never includes the URL's password.
    #[error("the PostgreSQL approvals store: {0}")]
    Postgres(String),
    /// The database's schema is newer than this build knows.
    #[error(
        "the PostgreSQL approvals store has schema version {found}, newer than this build's \
         {supported}: upgrade parallax before pointing it at this database"
    )]
    SchemaTooNew { found: i32, supported: i32 },
}

/// What the approvals lifecycle needs of a store. Methods are blocking:
/// approvals are rare (a human decides each one), and the SQLite store is
/// a blocking library; the PostgreSQL store answers from its own thread.
pub trait ApprovalBackend: Send + Sync {
    /// Which of `keys` are in the known-recipients memory.
    fn known_recipients(&self, keys: &[String]) -> Result<Vec<bool>, StoreError>;
    /// Adds `keys` to the known-recipients memory (those already there keep
    /// their first sighting).
    fn remember_recipients(&self, keys: &[String], at: f64) -> Result<(), StoreError>;
    /// Records where approval `id`'s Slack card is.
    fn set_slack_card(&self, id: &str, channel: &str, ts: &str) -> Result<(), StoreError>;
    fn insert(&self, a: &NewApproval) -> Result<(), StoreError>;
    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError>;
    /// Approvals in `status` (all when `None`), newest first, at most `limit`.
    fn list(&self, status: Option<Status>, limit: usize) -> Result<Vec<Approval>, StoreError>;
    /// Records a human decision on a pending approval; false when it was
    /// no longer pending (decided or expired already, here or elsewhere).
    fn decide(
        &self,
        id: &str,
        status: Status,
        by: &str,
        comment: Option<&str>,
        at: f64,
    ) -> Result<bool, StoreError>;
    /// Expires every pending approval whose deadline has passed at `now`;
    /// returns the ids this call expired (on a shared store, a replica
    /// racing another gets only the ones it won).
    fn expire_due(&self, now: f64) -> Result<Vec<String>, StoreError>;
    /// Tells whoever else shares the store that approval `id` changed
    /// (PostgreSQL: NOTIFY); a store no other process reads does nothing.
    fn announce(&self, _id: &str) {}
    /// Which implementation, for `/health` and logs.
    fn kind(&self) -> &'static str;
}

/// The store approvals live in: the fleet's PostgreSQL store when the
/// service opened one (`store.postgres`), else the SQLite file
/// `approvals.path`; with what is woken when another process changes an
/// approval.
pub fn open(
    path: &str,
    shared: Option<Arc<postgres::PostgresStore>>,
) -> Result<(Arc<dyn ApprovalBackend>, Arc<tokio::sync::Notify>), StoreError> {
    match shared {
        Some(pg) => {
            let changed = pg.changed();
            Ok((pg, changed))
        }
        None => Ok((
            Arc::new(sqlite::SqliteStore::open(path)?),
            Arc::new(tokio::sync::Notify::new()),
        )),
    }
}

/// A row as either database returns it, before its JSON columns are read.
pub(super) struct RawRow {
    pub(super) id: String,
    pub(super) status: String,
    pub(super) created_at: f64,
    pub(super) expires_at: f64,
    pub(super) rule_ids: String,
    pub(super) reason: String,
    pub(super) approvers: String,
    pub(super) on_timeout: String,
    pub(super) event: String,
    pub(super) session_id: Option<String>,
    pub(super) decided_by: Option<String>,
    pub(super) decided_at: Option<f64>,
    pub(super) comment: Option<String>,
    pub(super) outcome: Option<String>,
    pub(super) approved_action: String,
    pub(super) approved_event: Option<String>,
    pub(super) via: String,
    pub(super) slack_channel: Option<String>,
    pub(super) slack_ts: Option<String>,
    pub(super) recipient_keys: String,
}

impl RawRow {
    pub(super) fn parse(self) -> Result<Approval, StoreError> {
        let bad = |what: &str| StoreError::Corrupt(format!("approval {}: {what}", self.id));
        let action = Action::ALL
            .into_iter()
            .find(|a| a.as_str() == self.approved_action)
            .ok_or_else(|| bad("approved_action"))?;
        Ok(Approval {
            status: Status::parse(&self.status).ok_or_else(|| bad("status"))?,
            created_at: self.created_at,
            expires_at: self.expires_at,
            rule_ids: serde_json::from_str(&self.rule_ids).map_err(|_| bad("rule_ids"))?,
            reason: self.reason.clone(),
            approvers: serde_json::from_str(&self.approvers).map_err(|_| bad("approvers"))?,
            on_timeout: match self.on_timeout.as_str() {
                "allow" => TimeoutOutcome::Allow,
                "deny" => TimeoutOutcome::Deny,
                _ => return Err(bad("on_timeout")),
            },
            event: serde_json::from_str(&self.event).map_err(|_| bad("event"))?,
            session_id: self.session_id.clone(),
            decided_by: self.decided_by.clone(),
            decided_at: self.decided_at,
            comment: self.comment.clone(),
            outcome: self.outcome.clone(),
            approved_action: action,
            approved_event: match &self.approved_event {
                Some(t) => Some(serde_json::from_str(t).map_err(|_| bad("approved_event"))?),
                None => None,
            },
            via: serde_json::from_str(&self.via).map_err(|_| bad("via"))?,
            slack_card: self.slack_channel.clone().zip(self.slack_ts.clone()),
            recipient_keys: serde_json::from_str(&self.recipient_keys)
                .map_err(|_| bad("recipient_keys"))?,
            id: self.id,
        })
    }
}

pub(super) fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

pub(super) fn timeout_str(t: TimeoutOutcome) -> &'static str {
    match t {
        TimeoutOutcome::Deny => "deny",
        TimeoutOutcome::Allow => "allow",
    }
}
