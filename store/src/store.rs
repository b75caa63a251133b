//! The side-store itself: one SQLite connection, the recorded window of
//! events, and the SQL rules run over it. Synchronous; the server talks to
//! it through [`crate::StoreHandle`], which owns it on a thread of its own.

use crate::clock::Clock;
use crate::request::{EventRow, SqlHit, StoreRequest};
use crate::rule::{compile_rule, Param, SqlRuleCode};
use crate::schema;
use parallax_runtime::{Action, Program, StageSet, StateSettings};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::Arc;

/// Retention is enforced every this many inserts (the row cap on every
/// insert: it is one index seek).
const RETENTION_EVERY: u32 = 256;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the state file {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("side-store schema: {0}")]
    Schema(String),
    #[error("SQL rule `{id}`: {message}")]
    Rule { id: String, message: String },
    #[error("side-store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot start the side-store thread: {0}")]
    Thread(std::io::Error),
    #[error("the side-store thread has stopped")]
    Closed,
}

struct LoadedRule {
    rule: u32,
    id: String,
    action: Action,
    stages: StageSet,
    code: SqlRuleCode,
}

pub struct Store {
    conn: Connection,
    rules: Vec<LoadedRule>,
    clock: Arc<dyn Clock>,
    retention: f64,
    max_rows: i64,
    since_retention: u32,
}

impl Store {
    /// Opens the store for `program`'s SQL rules (in memory, or the state
    /// file of `settings`).
    pub fn open(
        program: &Program,
        settings: &StateSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Store, StoreError> {
        let mut store = Store::new(settings, clock)?;
        store.load_rules(program)?;
        Ok(store)
    }

    /// Opens a store with no rules: it records and prunes, nothing more.
    pub fn new(settings: &StateSettings, clock: Arc<dyn Clock>) -> Result<Store, StoreError> {
        let conn = match &settings.path {
            None => Connection::open_in_memory()?,
            Some(p) => {
                let path = PathBuf::from(p);
                let conn = Connection::open(&path).map_err(|source| StoreError::Open {
                    path: path.clone(),
                    source,
                })?;
                // WAL: readers never wait on the writer, and a crash loses
                // at most the last transactions, never the file.
                let mode: String =
                    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
                if !mode.eq_ignore_ascii_case("wal") {
                    return Err(StoreError::Schema(format!(
                        "{}: SQLite refused WAL mode (got `{mode}`)",
                        path.display()
                    )));
                }
                conn.pragma_update(None, "synchronous", "NORMAL")?;
                conn
            }
        };
        schema::init(&conn).map_err(StoreError::Schema)?;
        Ok(Store {
            conn,
            rules: Vec::new(),
            clock,
            retention: settings.retention_seconds as f64,
            max_rows: i64::try_from(settings.max_rows).unwrap_or(i64::MAX),
            since_retention: 0,
        })
    }

    /// Prepares `program`'s SQL rules (replacing any loaded before).
    pub fn load_rules(&mut self, program: &Program) -> Result<(), StoreError> {
        let mut rules = Vec::with_capacity(program.sql.len());
        for spec in &program.sql {
            let meta = program
                .rules
                .get(spec.rule as usize)
                .ok_or_else(|| StoreError::Rule {
                    id: format!("#{}", spec.rule),
                    message: "the program names a rule it does not have".into(),
                })?;
            let code = compile_rule(
                &self.conn,
                &spec.query,
                &spec.condition,
                meta.reason.as_deref(),
            )
            .map_err(|message| StoreError::Rule {
                id: meta.id.clone(),
                message,
            })?;
            rules.push(LoadedRule {
                rule: spec.rule,
                id: meta.id.clone(),
                // A monitored rule's block is not enforced, so it must not
                // count as one for rules that read the window's actions.
                action: if meta.monitor {
                    meta.action.min(Action::Detect)
                } else {
                    meta.action
                },
                stages: meta.stages,
                code,
            });
        }
        // Every rule's statement stays prepared, plus the store's own.
        self.conn
            .set_prepared_statement_cache_capacity(rules.len() + 8);
        self.rules = rules;
        Ok(())
    }

    /// Records one event and runs the SQL rules for it.
    ///
    /// The event is inserted first, so the queries see it (a rate rule's
    /// `count(*)` includes the call being judged); if a rule fires, the row
    /// is updated with the final verdict and the rule ids.
    pub fn process(&mut self, req: &StoreRequest) -> Result<Vec<SqlHit>, StoreError> {
        let now = req.now.unwrap_or_else(|| self.clock.now());
        let id = self.insert(&req.row, now, req.action, &req.rule_ids)?;
        let mut hits = Vec::new();
        let mut action = req.action;
        let mut rule_ids = Vec::new();
        if req.run_rules {
            for rule in &self.rules {
                if !rule.stages.contains(req.row.stage) {
                    continue;
                }
                match run_rule(&self.conn, &rule.code, &req.row, now) {
                    Ok(Some(reason)) => {
                        hits.push(SqlHit {
                            rule: rule.rule,
                            id: rule.id.clone(),
                            reason,
                        });
                        action = action.max(rule.action);
                        rule_ids.push(rule.id.as_str());
                    }
                    Ok(None) => {}
                    // A rule that fails at run time (the query was checked
                    // at build time, so: out of memory, a corrupt file) must
                    // not take the others down with it.
                    Err(e) => tracing::error!(rule = %rule.id, error = %e, "SQL rule failed"),
                }
            }
        }
        if !hits.is_empty() {
            let mut all: Vec<&str> = req.rule_ids.iter().map(String::as_str).collect();
            all.extend(rule_ids);
            let ids = serde_json::to_string(&all).unwrap_or_else(|_| "[]".into());
            self.conn
                .prepare_cached("UPDATE events SET action = ?1, rule_ids = ?2 WHERE id = ?3")?
                .execute(rusqlite::params![action.as_str(), ids, id])?;
        }
        self.after_insert(id, now)?;
        Ok(hits)
    }

    /// Inserts one row; returns its id.
    pub fn insert(
        &mut self,
        row: &EventRow,
        now: f64,
        action: Action,
        rule_ids: &[String],
    ) -> Result<i64, StoreError> {
        let ids = serde_json::to_string(rule_ids).unwrap_or_else(|_| "[]".into());
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO events (ts, client_ts, stage, session_id, user_id, channel, tool_name, \
             command, path, url, tool_args, text_len, action, rule_ids) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?;
        stmt.execute(rusqlite::params![
            now,
            row.client_ts,
            row.stage.as_str(),
            row.session_id,
            row.user_id,
            row.channel,
            row.tool_name,
            row.command,
            row.path,
            row.url,
            row.tool_args,
            row.text_len,
            action.as_str(),
            ids,
        ])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records an event without running any rule (bulk loading in tests and
    /// benches goes through the same bounds as live traffic).
    pub fn record(
        &mut self,
        row: &EventRow,
        now: f64,
        action: Action,
        rule_ids: &[String],
    ) -> Result<(), StoreError> {
        let id = self.insert(row, now, action, rule_ids)?;
        self.after_insert(id, now)
    }

    /// The bounds: the row cap exactly (ids only grow, so the rows kept are
    /// the `max_rows` newest ids), retention every [`RETENTION_EVERY`]
    /// inserts (windows filter on `ts` anyway; this only reclaims memory).
    fn after_insert(&mut self, id: i64, now: f64) -> Result<(), StoreError> {
        if id > self.max_rows {
            self.conn
                .prepare_cached("DELETE FROM events WHERE id <= ?1")?
                .execute([id - self.max_rows])?;
        }
        self.since_retention += 1;
        if self.since_retention >= RETENTION_EVERY {
            self.since_retention = 0;
            self.prune_expired(now)?;
        }
        Ok(())
    }

    /// Deletes events older than the retention; returns how many.
    pub fn prune_expired(&mut self, now: f64) -> Result<usize, StoreError> {
        Ok(self
            .conn
            .prepare_cached("DELETE FROM events WHERE ts < ?1")?
            .execute([now - self.retention])?)
    }

    pub fn row_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// Size of the database (pages times page size), in bytes: in memory,
    /// what the window costs. Deleted rows' pages are reused, so under a
    /// steady load at the cap it stays flat.
    pub fn database_bytes(&self) -> Result<u64, StoreError> {
        let pages: i64 = self.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let size: i64 = self.conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok((pages.max(0) * size.max(0)) as u64)
    }

    /// The connection, for tests and tools that inspect the window.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

fn bind_value<'a>(p: Param, row: &'a EventRow, now: f64) -> rusqlite::types::ToSqlOutput<'a> {
    use rusqlite::types::{ToSqlOutput, Value};
    let text = |v: &'a Option<String>| match v {
        Some(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        None => ToSqlOutput::Owned(Value::Null),
    };
    match p {
        Param::SessionId => text(&row.session_id),
        Param::UserId => text(&row.user_id),
        Param::Channel => text(&row.channel),
        Param::ToolName => text(&row.tool_name),
        Param::Stage => ToSqlOutput::Borrowed(ValueRef::Text(row.stage.as_str().as_bytes())),
        Param::Command => text(&row.command),
        Param::Path => text(&row.path),
        Param::Url => text(&row.url),
        Param::Now => ToSqlOutput::Owned(Value::Real(now)),
    }
}

/// Runs one rule; `Some(reason)` when its condition holds on the first row.
fn run_rule(
    conn: &Connection,
    code: &SqlRuleCode,
    row: &EventRow,
    now: f64,
) -> Result<Option<Option<String>>, rusqlite::Error> {
    let mut stmt = conn.prepare_cached(&code.query)?;
    for (i, p) in code.params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, bind_value(*p, row, now))?;
    }
    let mut rows = stmt.raw_query();
    let Some(first) = rows.next()? else {
        return Ok(None);
    };
    let mut values = Vec::with_capacity(code.columns.len());
    for i in 0..code.columns.len() {
        values.push(first.get_ref(i)?);
    }
    if !code.condition.eval(&values) {
        return Ok(None);
    }
    Ok(Some(code.reason.as_ref().map(|t| t.render(&values))))
}
