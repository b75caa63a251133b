//! Pending and decided approvals in SQLite, so a restart loses none: the
//! event as asked (masked), the rules that asked, who may decide, the
//! deadline, and once decided who did, when, why and with what outcome.
//!
//! One connection behind a mutex: approvals are rare (a human decides each
//! one), so a write costs a few tens of microseconds once per approval, not
//! per event. Every transition is one UPDATE guarded by `status =
//! 'pending'`, so two deciders cannot both win.

use parallax_runtime::{Action, TimeoutOutcome};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

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
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    rule_ids TEXT NOT NULL,
    reason TEXT NOT NULL,
    approvers TEXT NOT NULL,
    on_timeout TEXT NOT NULL,
    event TEXT NOT NULL,
    session_id TEXT,
    decided_by TEXT,
    decided_at REAL,
    comment TEXT,
    outcome TEXT,
    approved_action TEXT NOT NULL,
    approved_event TEXT
);
CREATE INDEX IF NOT EXISTS approvals_pending ON approvals (status, expires_at);
CREATE TABLE IF NOT EXISTS known_recipients (
    key TEXT PRIMARY KEY,
    first_seen REAL NOT NULL
) WITHOUT ROWID;
";

/// Columns added after the first release, with their definitions: a
/// database made by an older build gets them on open (`ALTER TABLE`), so
/// its pending approvals keep working.
const ADDED_COLUMNS: [(&str, &str); 4] = [
    ("via", "TEXT NOT NULL DEFAULT '[]'"),
    ("slack_channel", "TEXT"),
    ("slack_ts", "TEXT"),
    ("recipient_keys", "TEXT NOT NULL DEFAULT '[]'"),
];

pub struct ApprovalStore {
    conn: Connection,
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn timeout_str(t: TimeoutOutcome) -> &'static str {
    match t {
        TimeoutOutcome::Deny => "deny",
        TimeoutOutcome::Allow => "allow",
    }
}

impl ApprovalStore {
    /// Opens (creating) the database at `path`; `:memory:` keeps it in
    /// memory (tests).
    pub fn open(path: &str) -> Result<ApprovalStore, StoreError> {
        let conn = if path == ":memory:" {
            Connection::open_in_memory()
        } else {
            Connection::open(Path::new(path))
        }
        .map_err(|source| StoreError::Open {
            path: path.to_string(),
            source,
        })?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;",
        )
        .map_err(|source| StoreError::Open {
            path: path.to_string(),
            source,
        })?;
        conn.execute_batch(SCHEMA)
            .map_err(|source| StoreError::Open {
                path: path.to_string(),
                source,
            })?;
        Self::add_missing_columns(&conn).map_err(|source| StoreError::Open {
            path: path.to_string(),
            source,
        })?;
        Ok(ApprovalStore { conn })
    }

    fn add_missing_columns(conn: &Connection) -> rusqlite::Result<()> {
        let mut st = conn.prepare("SELECT name FROM pragma_table_info('approvals')")?;
        let have: Vec<String> = st
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for (name, def) in ADDED_COLUMNS {
            if !have.iter().any(|h| h == name) {
                conn.execute_batch(&format!("ALTER TABLE approvals ADD COLUMN {name} {def}"))?;
            }
        }
        Ok(())
    }

    /// Which of `keys` are in the known-recipients memory.
    pub fn known_recipients(&self, keys: &[String]) -> Result<Vec<bool>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT 1 FROM known_recipients WHERE key = ?1")?;
        keys.iter().map(|k| Ok(st.exists(params![k])?)).collect()
    }

    /// Adds `keys` to the known-recipients memory (those already there keep
    /// their first sighting).
    pub fn remember_recipients(&self, keys: &[String], at: f64) -> Result<(), StoreError> {
        let mut st = self.conn.prepare_cached(
            "INSERT OR IGNORE INTO known_recipients (key, first_seen) VALUES (?1, ?2)",
        )?;
        for k in keys {
            st.execute(params![k, at])?;
        }
        Ok(())
    }

    /// Records where approval `id`'s Slack card is.
    pub fn set_slack_card(&self, id: &str, channel: &str, ts: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE approvals SET slack_channel = ?2, slack_ts = ?3 WHERE id = ?1",
            params![id, channel, ts],
        )?;
        Ok(())
    }

    pub fn insert(&self, a: &NewApproval) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO approvals (id, status, created_at, expires_at, rule_ids, reason,
                 approvers, on_timeout, event, session_id, approved_action, approved_event,
                 via, recipient_keys)
             VALUES (?1, 'pending', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                a.id,
                a.created_at,
                a.expires_at,
                json(&a.rule_ids),
                a.reason,
                json(&a.approvers),
                timeout_str(a.on_timeout),
                a.event.to_string(),
                a.session_id,
                a.approved_action.as_str(),
                a.approved_event.as_ref().map(Value::to_string),
                json(&a.via),
                json(&a.recipient_keys),
            ],
        )?;
        Ok(())
    }

    fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
        Ok(RawRow {
            id: r.get(0)?,
            status: r.get(1)?,
            created_at: r.get(2)?,
            expires_at: r.get(3)?,
            rule_ids: r.get(4)?,
            reason: r.get(5)?,
            approvers: r.get(6)?,
            on_timeout: r.get(7)?,
            event: r.get(8)?,
            session_id: r.get(9)?,
            decided_by: r.get(10)?,
            decided_at: r.get(11)?,
            comment: r.get(12)?,
            outcome: r.get(13)?,
            approved_action: r.get(14)?,
            approved_event: r.get(15)?,
            via: r.get(16)?,
            slack_channel: r.get(17)?,
            slack_ts: r.get(18)?,
            recipient_keys: r.get(19)?,
        })
    }

    const COLUMNS: &'static str = "id, status, created_at, expires_at, rule_ids, reason, \
        approvers, on_timeout, event, session_id, decided_by, decided_at, comment, outcome, \
        approved_action, approved_event, via, slack_channel, slack_ts, recipient_keys";

    pub fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let sql = format!("SELECT {} FROM approvals WHERE id = ?1", Self::COLUMNS);
        let raw = self
            .conn
            .query_row(&sql, params![id], Self::row)
            .optional()?;
        raw.map(RawRow::parse).transpose()
    }

    /// Approvals in `status` (all when `None`), newest first, at most `limit`.
    pub fn list(&self, status: Option<Status>, limit: usize) -> Result<Vec<Approval>, StoreError> {
        let limit = limit as i64;
        let rows: Vec<RawRow> = match status {
            Some(s) => {
                let sql = format!(
                    "SELECT {} FROM approvals WHERE status = ?1 ORDER BY created_at DESC LIMIT ?2",
                    Self::COLUMNS
                );
                let mut st = self.conn.prepare(&sql)?;
                let rows = st.query_map(params![s.as_str(), limit], Self::row)?;
                rows.collect::<rusqlite::Result<_>>()?
            }
            None => {
                let sql = format!(
                    "SELECT {} FROM approvals ORDER BY created_at DESC LIMIT ?1",
                    Self::COLUMNS
                );
                let mut st = self.conn.prepare(&sql)?;
                let rows = st.query_map(params![limit], Self::row)?;
                rows.collect::<rusqlite::Result<_>>()?
            }
        };
        rows.into_iter().map(RawRow::parse).collect()
    }

    /// Records a human decision on a pending approval; false when it was
    /// no longer pending (decided or expired already).
    pub fn decide(
        &self,
        id: &str,
        status: Status,
        by: &str,
        comment: Option<&str>,
        at: f64,
    ) -> Result<bool, StoreError> {
        let outcome = if status == Status::Approved {
            "allow"
        } else {
            "deny"
        };
        let n = self.conn.execute(
            "UPDATE approvals SET status = ?2, decided_by = ?3, comment = ?4, decided_at = ?5,
                 outcome = ?6
             WHERE id = ?1 AND status = 'pending' AND expires_at > ?5",
            params![id, status.as_str(), by, comment, at, outcome],
        )?;
        Ok(n == 1)
    }

    /// Expires every pending approval whose deadline has passed at `now`;
    /// returns the ids expired.
    pub fn expire_due(&self, now: f64) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= ?1")?;
        let ids: Vec<String> = st
            .query_map(params![now], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for id in &ids {
            self.conn.execute(
                "UPDATE approvals SET status = 'expired', decided_at = ?2,
                     outcome = on_timeout
                 WHERE id = ?1 AND status = 'pending'",
                params![id, now],
            )?;
        }
        Ok(ids)
    }
}

struct RawRow {
    id: String,
    status: String,
    created_at: f64,
    expires_at: f64,
    rule_ids: String,
    reason: String,
    approvers: String,
    on_timeout: String,
    event: String,
    session_id: Option<String>,
    decided_by: Option<String>,
    decided_at: Option<f64>,
    comment: Option<String>,
    outcome: Option<String>,
    approved_action: String,
    approved_event: Option<String>,
    via: String,
    slack_channel: Option<String>,
    slack_ts: Option<String>,
    recipient_keys: String,
}

impl RawRow {
    fn parse(self) -> Result<Approval, StoreError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A database an older build made (no `via`, no card, no recipient
    /// keys) opens, and its pending approval reads with the defaults.
    #[test]
    fn an_older_database_gets_the_new_columns() {
        let dir =
            std::env::temp_dir().join(format!("parallax-store-migrate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.db");
        {
            let conn = Connection::open(&path).unwrap();
            let old_schema = SCHEMA
                .split("CREATE TABLE IF NOT EXISTS known_recipients")
                .next()
                .unwrap();
            conn.execute_batch(old_schema).unwrap();
            conn.execute(
                "INSERT INTO approvals (id, status, created_at, expires_at, rule_ids, reason,
                     approvers, on_timeout, event, approved_action)
                 VALUES ('apr_old', 'pending', 1.0, 9e9, '[\"r\"]', 'why', '[]', 'deny', '{}', 'allow')",
                [],
            )
            .unwrap();
        }
        let store = ApprovalStore::open(path.to_str().unwrap()).unwrap();
        let a = store.get("apr_old").unwrap().expect("kept");
        assert_eq!(a.status, Status::Pending);
        assert!(a.via.is_empty() && a.recipient_keys.is_empty() && a.slack_card.is_none());
        store.set_slack_card("apr_old", "C1", "1.2").unwrap();
        let a = store.get("apr_old").unwrap().unwrap();
        assert_eq!(a.slack_card, Some(("C1".into(), "1.2".into())));
        // Opening again adds nothing twice.
        drop(store);
        ApprovalStore::open(path.to_str().unwrap()).unwrap();
    }

    #[test]
    fn known_recipients_are_remembered_once() {
        let store = ApprovalStore::open(":memory:").unwrap();
        let keys = vec!["a".to_string(), "b".to_string()];
        assert_eq!(store.known_recipients(&keys).unwrap(), [false, false]);
        store.remember_recipients(&keys[..1], 1.0).unwrap();
        store.remember_recipients(&keys[..1], 2.0).unwrap();
        assert_eq!(store.known_recipients(&keys).unwrap(), [true, false]);
    }
}
