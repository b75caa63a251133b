//! Approvals in a SQLite file, so a restart loses none: the single-host
//! store (`approvals.path`).
//!
//! One connection behind a mutex: approvals are rare (a human decides each
//! one), so a write costs a few tens of microseconds once per approval, not
//! per event. Other processes on the host sharing the file (a `parallax mcp
//! wrap`, a hook) see changes when they re-read; waiters re-read twice a
//! second.

use super::{
    json, timeout_str, Approval, ApprovalBackend, NewApproval, RawRow, Status, StoreError,
};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

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

pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating) the database at `path`; `:memory:` keeps it in
    /// memory (tests).
    pub fn open(path: &str) -> Result<SqliteStore, StoreError> {
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
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    /// The connection. A panic while holding the lock leaves SQLite
    /// consistent (each statement is atomic): go on with it.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
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
}

impl ApprovalBackend for SqliteStore {
    /// Which of `keys` are in the known-recipients memory.
    fn known_recipients(&self, keys: &[String]) -> Result<Vec<bool>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached("SELECT 1 FROM known_recipients WHERE key = ?1")?;
        keys.iter().map(|k| Ok(st.exists(params![k])?)).collect()
    }

    /// Adds `keys` to the known-recipients memory (those already there keep
    /// their first sighting).
    fn remember_recipients(&self, keys: &[String], at: f64) -> Result<(), StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "INSERT OR IGNORE INTO known_recipients (key, first_seen) VALUES (?1, ?2)",
        )?;
        for k in keys {
            st.execute(params![k, at])?;
        }
        Ok(())
    }

    /// Records where approval `id`'s Slack card is.
    fn set_slack_card(&self, id: &str, channel: &str, ts: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE approvals SET slack_channel = ?2, slack_ts = ?3 WHERE id = ?1",
            params![id, channel, ts],
        )?;
        Ok(())
    }

    fn insert(&self, a: &NewApproval) -> Result<(), StoreError> {
        self.conn().execute(
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

    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let sql = format!("SELECT {} FROM approvals WHERE id = ?1", Self::COLUMNS);
        let raw = self
            .conn()
            .query_row(&sql, params![id], Self::row)
            .optional()?;
        raw.map(RawRow::parse).transpose()
    }

    fn list(&self, status: Option<Status>, limit: usize) -> Result<Vec<Approval>, StoreError> {
        let limit = limit as i64;
        let rows: Vec<RawRow> = match status {
            Some(s) => {
                let sql = format!(
                    "SELECT {} FROM approvals WHERE status = ?1 ORDER BY created_at DESC LIMIT ?2",
                    Self::COLUMNS
                );
                let conn = self.conn();
                let mut st = conn.prepare(&sql)?;
                let rows = st.query_map(params![s.as_str(), limit], Self::row)?;
                rows.collect::<rusqlite::Result<_>>()?
            }
            None => {
                let sql = format!(
                    "SELECT {} FROM approvals ORDER BY created_at DESC LIMIT ?1",
                    Self::COLUMNS
                );
                let conn = self.conn();
                let mut st = conn.prepare(&sql)?;
                let rows = st.query_map(params![limit], Self::row)?;
                rows.collect::<rusqlite::Result<_>>()?
            }
        };
        rows.into_iter().map(RawRow::parse).collect()
    }

    fn decide(
        &self,
        id: &str,
        status: Status,
        by: &str,
        comment: Option<&str>,
        at: f64,
    ) -> Result<bool, StoreError> {
        let outcome = status.outcome();
        let n = self.conn().execute(
            "UPDATE approvals SET status = ?2, decided_by = ?3, comment = ?4, decided_at = ?5,
                 outcome = ?6
             WHERE id = ?1 AND status = 'pending' AND expires_at > ?5",
            params![id, status.as_str(), by, comment, at, outcome],
        )?;
        Ok(n == 1)
    }

    fn expire_due(&self, now: f64) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let ids: Vec<String> = {
            let mut st = conn.prepare(
                "SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= ?1",
            )?;
            let rows = st.query_map(params![now], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut expired = Vec::with_capacity(ids.len());
        for id in ids {
            // Another process sharing the file may have expired it first:
            // only the one whose UPDATE changed the row reports it.
            let n = conn.execute(
                "UPDATE approvals SET status = 'expired', decided_at = ?2,
                     outcome = on_timeout
                 WHERE id = ?1 AND status = 'pending'",
                params![id, now],
            )?;
            if n == 1 {
                expired.push(id);
            }
        }
        Ok(expired)
    }

    fn kind(&self) -> &'static str {
        "sqlite"
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
        let store = SqliteStore::open(path.to_str().unwrap()).unwrap();
        let a = store.get("apr_old").unwrap().expect("kept");
        assert_eq!(a.status, Status::Pending);
        assert!(a.via.is_empty() && a.recipient_keys.is_empty() && a.slack_card.is_none());
        store.set_slack_card("apr_old", "C1", "1.2").unwrap();
        let a = store.get("apr_old").unwrap().unwrap();
        assert_eq!(a.slack_card, Some(("C1".into(), "1.2".into())));
        // Opening again adds nothing twice.
        drop(store);
        SqliteStore::open(path.to_str().unwrap()).unwrap();
    }

    #[test]
    fn known_recipients_are_remembered_once() {
        let store = SqliteStore::open(":memory:").unwrap();
        let keys = vec!["a".to_string(), "b".to_string()];
        assert_eq!(store.known_recipients(&keys).unwrap(), [false, false]);
        store.remember_recipients(&keys[..1], 1.0).unwrap();
        store.remember_recipients(&keys[..1], 2.0).unwrap();
        assert_eq!(store.known_recipients(&keys).unwrap(), [true, false]);
    }
}
