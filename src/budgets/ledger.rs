//! The budget ledger: one row per model answer (when, session, user,
//! model, tokens in and out, cost), in SQLite, so a per-day budget survives
//! a restart when `budgets.path` names a file. Sums are read per session
//! and per user since a time, each an indexed range. Rows older than two
//! days are deleted now and then: no budget looks further back than the
//! current UTC day, and a session older than that is over.

use rusqlite::{params, Connection};
use std::path::Path;
use std::sync::Mutex;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS budget_usage (
    ts REAL NOT NULL,
    session TEXT NOT NULL,
    user TEXT NOT NULL,
    model TEXT,
    input INTEGER NOT NULL,
    output INTEGER NOT NULL,
    cost REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS budget_usage_session ON budget_usage (session);
CREATE INDEX IF NOT EXISTS budget_usage_user_ts ON budget_usage (user, ts);
CREATE INDEX IF NOT EXISTS budget_usage_ts ON budget_usage (ts);
";

/// Rows kept: two days.
const KEEP_SECONDS: f64 = 2.0 * 86_400.0;
/// Old rows are deleted every this many answers.
const PRUNE_EVERY: u64 = 1_000;

/// Why the ledger cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("budgets.path `{path}`: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("the budget ledger: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// Tokens and cost spent.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Spent {
    pub tokens: u64,
    pub cost: f64,
}

/// One answer's row.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub ts: f64,
    pub session: &'a str,
    pub user: &'a str,
    pub model: Option<&'a str>,
    pub input: u64,
    pub output: u64,
    pub cost: f64,
}

pub struct Ledger {
    conn: Mutex<Connection>,
    written: std::sync::atomic::AtomicU64,
}

impl Ledger {
    /// Opens (creating) the ledger at `path`, or one in memory.
    pub fn open(path: Option<&str>) -> Result<Ledger, LedgerError> {
        let name = path.unwrap_or(":memory:").to_string();
        let open_err = |source| LedgerError::Open {
            path: name.clone(),
            source,
        };
        let conn = match path {
            Some(p) => Connection::open(Path::new(p)),
            None => Connection::open_in_memory(),
        }
        .map_err(open_err)?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;")
            .map_err(open_err)?;
        conn.execute_batch(SCHEMA).map_err(open_err)?;
        Ok(Ledger {
            conn: Mutex::new(conn),
            written: Default::default(),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves a usable connection.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes one answer's row (and now and then deletes old ones).
    pub fn record(&self, e: &Entry<'_>) -> Result<(), LedgerError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO budget_usage (ts, session, user, model, input, output, cost) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                e.ts,
                e.session,
                e.user,
                e.model,
                e.input as i64,
                e.output as i64,
                e.cost
            ],
        )?;
        let n = self
            .written
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n % PRUNE_EVERY == PRUNE_EVERY - 1 {
            conn.execute(
                "DELETE FROM budget_usage WHERE ts < ?1",
                params![e.ts - KEEP_SECONDS],
            )?;
        }
        Ok(())
    }

    /// What `session` has spent.
    pub fn session(&self, session: &str) -> Result<Spent, LedgerError> {
        self.sum(
            "SELECT total(input + output), total(cost) FROM budget_usage WHERE session = ?1",
            params![session],
        )
    }

    /// What `user` has spent since `since` (seconds since the epoch).
    pub fn user_since(&self, user: &str, since: f64) -> Result<Spent, LedgerError> {
        self.sum(
            "SELECT total(input + output), total(cost) FROM budget_usage \
             WHERE user = ?1 AND ts >= ?2",
            params![user, since],
        )
    }

    fn sum(&self, sql: &str, p: impl rusqlite::Params) -> Result<Spent, LedgerError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(sql)?;
        let (tokens, cost): (f64, f64) = st.query_row(p, |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(Spent {
            tokens: tokens.max(0.0) as u64,
            cost,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(ts: f64, session: &'a str, user: &'a str, tokens: u64) -> Entry<'a> {
        Entry {
            ts,
            session,
            user,
            model: Some("m"),
            input: tokens / 2,
            output: tokens - tokens / 2,
            cost: tokens as f64 / 1000.0,
        }
    }

    #[test]
    fn sums_per_session_and_per_user_since() {
        let l = Ledger::open(None).expect("ledger");
        l.record(&entry(100.0, "s1", "alice", 10)).expect("row");
        l.record(&entry(200.0, "s1", "alice", 20)).expect("row");
        l.record(&entry(300.0, "s2", "alice", 40)).expect("row");
        l.record(&entry(300.0, "s3", "bob", 80)).expect("row");
        assert_eq!(l.session("s1").expect("sum").tokens, 30);
        assert_eq!(l.user_since("alice", 0.0).expect("sum").tokens, 70);
        assert_eq!(l.user_since("alice", 150.0).expect("sum").tokens, 60);
        assert!((l.user_since("bob", 0.0).expect("sum").cost - 0.08).abs() < 1e-9);
        assert_eq!(l.session("nobody").expect("sum"), Spent::default());
    }

    #[test]
    fn a_file_keeps_spending_across_opens() {
        let dir = std::env::temp_dir().join(format!("parallax-ledger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("budgets.db");
        let p = path.to_str().expect("utf-8 path");
        {
            let l = Ledger::open(Some(p)).expect("ledger");
            l.record(&entry(1.0, "s", "u", 12)).expect("row");
        }
        let l = Ledger::open(Some(p)).expect("reopened");
        assert_eq!(l.session("s").expect("sum").tokens, 12);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unopenable_path_names_the_key() {
        let err = Ledger::open(Some("/nonexistent-dir/x/budgets.db"))
            .err()
            .expect("cannot open");
        assert!(err.to_string().starts_with("budgets.path"), "{err}");
    }
}
