//! The side-store itself: one SQLite connection, the recorded window of
//! events, and the SQL rules run over it. Synchronous; the server talks to
//! it through [`crate::StoreHandle`], which owns it on a thread of its own.

use crate::clock::Clock;
use crate::request::{EventRow, SqlHit, StoreRequest};
use crate::rule::{compile_rule, Param, SqlRuleCode};
use crate::schema;
use crate::shortcut::{FactRow, Shortcut, WindowFacts};
use crate::window::{RateCount, ToolCallWindow};
use parallax_runtime::{Action, Program, StageSet, StateSettings};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Retention is enforced every this many inserts.
const RETENTION_EVERY: u32 = 256;

/// How far past `max_rows` the store may run before its oldest rows go, in
/// one batch, down to `max_rows`: 1% of the cap, at most 1,000 rows (and
/// at least one). Deleting a row on every insert at the cap was most of an
/// event's cost there (one statement and one seek each); a batch is one
/// read of the oldest rows and one range delete per `cap_slack` inserts.
/// The window a SQL rule reads may so hold up to this many rows more than
/// the cap (docs/SQL.md).
pub fn cap_slack(max_rows: u64) -> u64 {
    (max_rows / 100).clamp(1, 1_000)
}

/// Most rows one session may hold (the global `max_rows` still applies).
///
/// Without it one hot session fills the whole window: it evicts every other
/// session's history (an attacker could wipe its own lockout by flooding
/// from a second session id), and any rule keyed on the session walks as
/// many rows as that session has. 10,000 rows cover the longest shipped
/// window (10 minutes) at 16 events a second, several times a busy agent's
/// pace; past it the session's oldest rows go first.
pub const DEFAULT_SESSION_ROWS: u64 = 10_000;

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
    /// Answered from [`Store::tool_calls`] instead of SQLite (see
    /// [`crate::window`]).
    native: Option<RateCount>,
    /// Skipped when [`WindowFacts`] prove it cannot fire (see
    /// [`crate::shortcut`]).
    shortcut: Option<Shortcut>,
}

pub struct Store {
    conn: Connection,
    rules: Vec<LoadedRule>,
    clock: Arc<dyn Clock>,
    retention: f64,
    max_rows: u64,
    /// Rows in the store now (kept in step like `per_session`).
    rows: u64,
    /// See [`DEFAULT_SESSION_ROWS`].
    session_rows: u64,
    /// Rows each session holds now, kept in step with every insert and
    /// delete (each deleted row is read first), so enforcing the session
    /// budget costs a map lookup, not a count over the session's rows.
    /// Events without a session are not counted: no session rule can see
    /// them, and the global cap bounds them.
    per_session: HashMap<String, u64, ahash::RandomState>,
    /// The `ts` of each session's `tool.before` rows, kept in step like
    /// `per_session`, for the rate queries [`crate::window`] answers.
    tool_calls: ToolCallWindow,
    /// When false every rule runs in SQLite ([`Store::set_native_counts`]).
    native_counts: bool,
    /// What the loaded rules' shortcuts know of each session, kept in step
    /// like `tool_calls` (empty when no rule has one).
    facts: WindowFacts,
    /// Whether any loaded rule has a shortcut (else `facts` is not fed).
    facts_on: bool,
    /// Shortcuts off, on, or on and checked ([`Store::set_shortcuts`]).
    shortcuts: ShortcutMode,
    /// Rules a shortcut skipped; and, in [`ShortcutMode::Checked`], skips
    /// where SQLite fired after all (a test failure).
    skips: u64,
    wrong_skips: u64,
    since_retention: u32,
    /// [`crate::routing::fingerprint`] of the loaded rules.
    program: u64,
    /// Rule queries run so far (a guard that skipped a rule ran none).
    queries: u64,
    /// Where the store's time goes, when asked for ([`Store::set_profiling`]).
    profile: Option<Profile>,
}

/// Time spent per step of [`Store::process`], summed over the events
/// since profiling was turned on: what `cargo bench --bench sql -- mix`
/// prints to show which statement costs what on a realistic mix.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Events processed.
    pub events: u64,
    /// Inserting the event's row.
    pub insert_ns: u64,
    /// The bounds after the insert (session budget, row cap, retention).
    pub bounds_ns: u64,
    /// Per loaded rule (in `Program::sql` order): id, queries run, time.
    pub rules: Vec<(String, u64, u64)>,
}

/// What [`Store::judge`] leaves for [`Store::write`]: the clock it judged
/// at, whether the row is in the table already, and its final verdict.
#[derive(Debug)]
pub struct Unwritten {
    now: f64,
    inserted: bool,
    action: Action,
    rule_ids: String,
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
        // A state file brings its window: count what each session holds.
        let per_session = per_session_of(&conn)?;
        let tool_calls = tool_calls_of(&conn)?;
        let rows: i64 = conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
        let rows = rows.max(0) as u64;
        Ok(Store {
            conn,
            rules: Vec::new(),
            clock,
            retention: settings.retention_seconds as f64,
            max_rows: settings.max_rows,
            rows,
            session_rows: DEFAULT_SESSION_ROWS,
            per_session,
            tool_calls,
            native_counts: true,
            facts: WindowFacts::default(),
            facts_on: false,
            shortcuts: ShortcutMode::On,
            skips: 0,
            wrong_skips: 0,
            since_retention: 0,
            program: 0,
            queries: 0,
            profile: None,
        })
    }

    /// Sets the most rows one session may hold (default
    /// [`DEFAULT_SESSION_ROWS`]; at least 1). A session already above it is
    /// trimmed on its next insert.
    pub fn set_session_rows(&mut self, rows: u64) {
        self.session_rows = rows.max(1);
    }

    /// Whether the rate queries [`crate::window`] recognises are answered
    /// natively (the default) or by SQLite: the differential test runs both.
    pub fn set_native_counts(&mut self, on: bool) {
        self.native_counts = on;
    }

    /// Whether rules a shortcut proves cannot fire are skipped (the
    /// default), run anyway, or run and checked: in
    /// [`ShortcutMode::Checked`] a skipped rule's query still runs, its
    /// answer is the one used, and [`Store::wrong_skips`] counts the skips
    /// where it fired (the differential test requires none).
    pub fn set_shortcuts(&mut self, mode: ShortcutMode) {
        self.shortcuts = mode;
    }

    /// Rule runs a shortcut skipped (or, checked, would have).
    pub fn shortcut_skips(&self) -> u64 {
        self.skips
    }

    /// Checked skips where SQLite's answer was a hit, and checked answers
    /// from the facts (the lockout's) that were not SQLite's.
    pub fn wrong_skips(&self) -> u64 {
        self.wrong_skips
    }

    /// Rebuilds the tool-call window and the shortcuts' facts from the
    /// table.
    fn reload_tool_calls(&mut self) -> Result<(), StoreError> {
        self.tool_calls = tool_calls_of(&self.conn)?;
        self.reload_facts()
    }

    /// Rebuilds [`WindowFacts`] for the loaded rules from the table.
    fn reload_facts(&mut self) -> Result<(), StoreError> {
        let shortcuts: Vec<Shortcut> = self.rules.iter().filter_map(|r| r.shortcut).collect();
        self.facts = WindowFacts::new(&shortcuts);
        self.facts_on = !shortcuts.is_empty();
        if !self.facts_on {
            return Ok(());
        }
        let mut stmt = self.conn.prepare(
            "SELECT session_id, ts, stage, tool_name, tool_args, action, path, command, url, \
             rule_ids FROM events WHERE session_id IS NOT NULL",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            if let Some(f) = fact_row(r)? {
                self.facts.insert(&f);
            }
        }
        Ok(())
    }

    /// What [`crate::window`] answers for a recognised rate query (the
    /// differential test compares it with SQLite's answer).
    pub fn tool_call_count(&self, rate: RateCount, session: Option<&str>, now: f64) -> i64 {
        self.tool_calls.count(rate, session, now)
    }

    /// Rows `session` holds now.
    pub fn session_row_count(&self, session: &str) -> u64 {
        self.per_session.get(session).copied().unwrap_or(0)
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
                native: RateCount::recognise(&spec.query).filter(|_| code.columns.len() == 1),
                shortcut: Shortcut::recognise(&spec.query, &spec.condition),
                code,
            });
        }
        // Every rule's statement stays prepared, plus the store's own.
        self.conn
            .set_prepared_statement_cache_capacity(rules.len() + 8);
        self.rules = rules;
        self.program = crate::routing::fingerprint(program);
        self.reload_facts()
    }

    /// Starts (or stops) timing each step of [`Store::process`] from zero.
    pub fn set_profiling(&mut self, on: bool) {
        self.profile = on.then(|| Profile {
            rules: self.rules.iter().map(|r| (r.id.clone(), 0, 0)).collect(),
            ..Profile::default()
        });
    }

    /// What [`Store::set_profiling`] has timed so far.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// How many rule queries this store has run: what the guards save is
    /// visible here (tests/sql_routing.rs).
    pub fn queries_run(&self) -> u64 {
        self.queries
    }

    /// Opens a transaction for the events that follow (group commit, see
    /// [`crate::service`]): SQLite then takes its lock and writes its
    /// journal once per batch instead of once per statement. Queries on
    /// this connection see the batch's rows at once; other connections
    /// to a state file see them at [`Store::end_batch`]. Does nothing when
    /// one is open already.
    pub fn begin_batch(&mut self) {
        if self.conn.is_autocommit() {
            if let Err(e) = self.conn.execute_batch("BEGIN") {
                tracing::error!(error = %e, "side-store: cannot open a batch");
            }
        }
    }

    /// Commits the open batch, if any. A failed commit loses the batch's
    /// rows (their answers were already given); it is logged, and the
    /// answer is false (true: committed, or nothing was open).
    pub fn end_batch(&mut self) -> bool {
        if !self.conn.is_autocommit() {
            if let Err(e) = self.conn.execute_batch("COMMIT") {
                tracing::error!(error = %e, "side-store: cannot commit a batch");
                let _ = self.conn.execute_batch("ROLLBACK");
                // The batch's rows are gone: the tool-call window follows
                // the table, not what was inserted.
                if let Err(e) = self.reload_tool_calls() {
                    tracing::error!(error = %e, "side-store: cannot recount tool calls");
                }
                return false;
            }
        }
        true
    }

    /// Records one event and runs the SQL rules for it: [`Store::judge`],
    /// then [`Store::write`].
    pub fn process(&mut self, req: &StoreRequest) -> Result<Vec<SqlHit>, StoreError> {
        let (hits, rest) = self.judge(req)?;
        self.write(req, rest)?;
        Ok(hits)
    }

    /// Runs the SQL rules for one event and returns their hits; what is
    /// left to record is [`Store::write`]'s, which must follow before any
    /// other call (the store's thread answers the caller in between).
    ///
    /// The event is in the window before any rule is judged, so the
    /// queries see it (a rate rule's `count(*)` includes the call being
    /// judged): in the facts kept beside SQLite at once, in the table
    /// before the first rule that SQLite answers. When every rule is
    /// answered from the facts (or skipped by them), no statement runs
    /// before the answer: the row is inserted by [`Store::write`], with
    /// the final verdict. Why: at the row cap the insert and the delete of
    /// the oldest row are nearly all of an event's cost, and nothing in
    /// the answer depends on them then. If a rule fires after the row was
    /// inserted, it is updated with the final verdict and the rule ids.
    pub fn judge(&mut self, req: &StoreRequest) -> Result<(Vec<SqlHit>, Unwritten), StoreError> {
        let now = req.now.unwrap_or_else(|| self.clock.now());
        let timing = self.profile.is_some();
        if let Some(p) = self.profile.as_mut() {
            p.events += 1;
        }
        let inserted_ids = serde_json::to_string(&req.rule_ids).unwrap_or_else(|_| "[]".into());
        self.note(&req.row, now, req.action, &inserted_ids);
        let mut id: Option<i64> = None;
        let mut hits = Vec::new();
        let mut action = req.action;
        let mut rule_ids = Vec::new();
        if req.run_rules {
            // A mask made for other rules (a reload in between) is ignored.
            let mask = req.rules.as_ref().filter(|m| m.program == self.program);
            for (i, rule) in self.rules.iter().enumerate() {
                if !rule.stages.contains(req.row.stage) || mask.is_some_and(|m| !m.runs(i)) {
                    continue;
                }
                self.queries += 1;
                let started = timing.then(std::time::Instant::now);
                let shortcuts_on = self.shortcuts != ShortcutMode::Off;
                // The lockout's answer from the facts, when they determine
                // it (`None`: SQLite answers).
                let lockout = (shortcuts_on
                    && rule.shortcut == Some(Shortcut::Blocks)
                    && rule.code.columns.len() == 2)
                    .then(|| {
                        self.facts
                            .lockout_blocks(req.row.session_id.as_deref(), now)
                    })
                    .flatten()
                    .map(|n| {
                        // CASE WHEN :command IS NOT NULL OR :url IS NOT NULL
                        // THEN (the count) ELSE 0 END, and the same test.
                        let dangerous = req.row.command.is_some() || req.row.url.is_some();
                        let blocks = if dangerous { n } else { 0 };
                        judge(
                            &rule.code,
                            &[
                                ValueRef::Integer(blocks),
                                ValueRef::Integer(i64::from(dangerous)),
                            ],
                        )
                    });
                let skip = lockout.is_none()
                    && shortcuts_on
                    && rule
                        .shortcut
                        .is_some_and(|s| self.facts.cannot_fire(s, &req.row, now));
                if skip || lockout.is_some() {
                    self.skips += 1;
                }
                let on = self.shortcuts == ShortcutMode::On;
                let outcome = match rule.native.filter(|_| self.native_counts) {
                    _ if skip && on => Ok(None),
                    _ if lockout.is_some() && on => Ok(lockout.clone().flatten()),
                    Some(rate) => {
                        let n = self
                            .tool_calls
                            .count(rate, req.row.session_id.as_deref(), now);
                        Ok(judge(&rule.code, &[ValueRef::Integer(n)]))
                    }
                    None => {
                        if id.is_none() {
                            let started = timing.then(std::time::Instant::now);
                            match insert_row(&self.conn, &req.row, now, req.action, &inserted_ids) {
                                Ok(new) => id = Some(new),
                                Err(e) => {
                                    // The facts have the row, the table
                                    // does not: follow the table.
                                    self.recount()?;
                                    return Err(e);
                                }
                            }
                            if let (Some(p), Some(t)) = (self.profile.as_mut(), started) {
                                p.insert_ns += t.elapsed().as_nanos() as u64;
                            }
                        }
                        run_rule(&self.conn, &rule.code, &req.row, now)
                    }
                };
                if skip && matches!(outcome, Ok(Some(_))) {
                    self.wrong_skips += 1;
                }
                if let Some(answer) = &lockout {
                    if outcome.as_ref().ok() != Some(answer) {
                        self.wrong_skips += 1;
                    }
                }
                if let (Some(p), Some(t)) = (self.profile.as_mut(), started) {
                    if let Some(r) = p.rules.get_mut(i) {
                        r.1 += 1;
                        r.2 += t.elapsed().as_nanos() as u64;
                    }
                }
                match outcome {
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
            if let Some(id) = id {
                self.conn
                    .prepare_cached("UPDATE events SET action = ?1, rule_ids = ?2 WHERE id = ?3")?
                    .execute(rusqlite::params![action.as_str(), ids, id])?;
            }
            if self.facts_on && action == Action::Block {
                if let Some(s) = &req.row.session_id {
                    // The row as inserted (a block already, when an earlier
                    // evaluator's block was judged anyway) and as updated.
                    self.facts.updated(
                        s,
                        now,
                        (req.action == Action::Block, Some(inserted_ids.as_bytes())),
                        (true, Some(ids.as_bytes())),
                    );
                }
            }
            return Ok((
                hits,
                Unwritten {
                    now,
                    inserted: id.is_some(),
                    action,
                    rule_ids: ids,
                },
            ));
        }
        Ok((
            hits,
            Unwritten {
                now,
                inserted: id.is_some(),
                action,
                rule_ids: inserted_ids,
            },
        ))
    }

    /// Records what [`Store::judge`] left of `req`: the row (when no rule
    /// needed it in the table), then the bounds. A row that cannot be
    /// inserted leaves the window as it was (the facts follow the table).
    pub fn write(&mut self, req: &StoreRequest, rest: Unwritten) -> Result<(), StoreError> {
        let timing = self.profile.is_some();
        if !rest.inserted {
            let started = timing.then(std::time::Instant::now);
            if let Err(e) = insert_row(&self.conn, &req.row, rest.now, rest.action, &rest.rule_ids)
            {
                self.recount()?;
                return Err(e);
            }
            if let (Some(p), Some(t)) = (self.profile.as_mut(), started) {
                p.insert_ns += t.elapsed().as_nanos() as u64;
            }
        }
        let started = timing.then(std::time::Instant::now);
        self.after_insert(req.row.session_id.as_deref(), rest.now)?;
        if let (Some(p), Some(t)) = (self.profile.as_mut(), started) {
            p.bounds_ns += t.elapsed().as_nanos() as u64;
        }
        Ok(())
    }

    /// Inserts one row; returns its id. Private: every insert must be
    /// followed by [`Store::after_insert`], which keeps the bounds.
    fn insert(
        &mut self,
        row: &EventRow,
        now: f64,
        action: Action,
        rule_ids: &[String],
    ) -> Result<i64, StoreError> {
        let ids = serde_json::to_string(rule_ids).unwrap_or_else(|_| "[]".into());
        let id = insert_row(&self.conn, row, now, action, &ids)?;
        self.note(row, now, action, &ids);
        Ok(id)
    }

    /// Steps the tool-call window and the facts for a row the table has
    /// (or is about to have), `rule_ids` its JSON text.
    fn note(&mut self, row: &EventRow, now: f64, action: Action, rule_ids: &str) {
        if let (Some(s), parallax_runtime::Stage::ToolBefore) = (&row.session_id, row.stage) {
            self.tool_calls.insert(s, now);
        }
        if self.facts_on {
            if let Some(f) = FactRow::of(row, now, action, rule_ids) {
                self.facts.insert(&f);
            }
        }
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
        self.insert(row, now, action, rule_ids)?;
        self.after_insert(row.session_id.as_deref(), now)
    }

    /// The bounds, after the rules have run: the session's budget (its
    /// oldest rows past [`Store::set_session_rows`], in batches), the row
    /// cap in batches (once the store is [`cap_slack`] rows over
    /// `max_rows`, the oldest rows by id down to `max_rows`, one range
    /// delete), and retention every [`RETENTION_EVERY`] inserts (windows
    /// filter on `ts` anyway; this only reclaims memory).
    ///
    /// The cap counts rows, not ids: a hot session's budget deletes leave
    /// gaps in the ids, and a cap on `id <= last - max_rows` would then
    /// evict a quiet session's rows while the store is far from full.
    fn after_insert(&mut self, session: Option<&str>, now: f64) -> Result<(), StoreError> {
        use rusqlite::types::Value;
        self.rows += 1;
        if let Some(s) = session {
            let held = match self.per_session.get_mut(s) {
                Some(n) => {
                    *n += 1;
                    *n
                }
                None => {
                    self.per_session.insert(s.to_string(), 1);
                    1
                }
            };
            // Trimmed in batches (a 64th of the budget at a time): one
            // statement per batch instead of a seek on every insert.
            if held > self.session_rows + self.session_rows / 64 {
                let over = i64::try_from(held - self.session_rows).unwrap_or(i64::MAX);
                self.delete_counted(
                    "SELECT id, session_id, ts, stage, tool_name, tool_args, action, url, \
                     rule_ids FROM events WHERE session_id = ?1 ORDER BY ts, id LIMIT ?2",
                    &[Value::Text(s.to_string()), Value::Integer(over)],
                )?;
            }
        }
        if self.rows > self.max_rows + cap_slack(self.max_rows) {
            let over = i64::try_from(self.rows - self.max_rows).unwrap_or(i64::MAX);
            self.delete_counted_range(
                "SELECT id, session_id, ts, stage, tool_name, tool_args, action, url, \
                 rule_ids FROM events ORDER BY id LIMIT ?1",
                &[Value::Integer(over)],
            )?;
        }
        self.since_retention += 1;
        if self.since_retention >= RETENTION_EVERY {
            self.since_retention = 0;
            self.prune_expired(now)?;
        }
        Ok(())
    }

    /// Deletes the rows a `SELECT id, session_id, ts, stage, tool_name,
    /// tool_args, action, url, rule_ids FROM events …` finds, one primary
    /// key at a time, and keeps the row counts, the tool-call window and
    /// the shortcuts' facts in step; returns how many rows went.
    ///
    /// Why not one `DELETE … WHERE id IN (SELECT …) RETURNING …`: SQLite
    /// builds two ephemeral tables for that statement (the `IN` list and
    /// the `RETURNING` rows), each a b-tree of its own opened, zeroed and
    /// closed on every run. At the row cap that statement runs on every
    /// insert to delete one row, and it cost 67 k instructions of the
    /// 109 k an event took (callgrind, `cargo bench --bench sql -- cap`);
    /// a read of the row by the primary key and a delete by it cost a
    /// fraction of that.
    fn delete_counted(
        &mut self,
        select: &str,
        params: &[rusqlite::types::Value],
    ) -> Result<usize, StoreError> {
        self.delete_rows(select, params, false)
    }

    /// [`Store::delete_counted`] for a `SELECT … ORDER BY id LIMIT n` from
    /// the oldest row: the rows it finds are every row up to the last id
    /// it read, so they go in one `DELETE … WHERE id <= ?` (one walk of the
    /// primary key's first pages) instead of a seek each.
    fn delete_counted_range(
        &mut self,
        select: &str,
        params: &[rusqlite::types::Value],
    ) -> Result<usize, StoreError> {
        self.delete_rows(select, params, true)
    }

    fn delete_rows(
        &mut self,
        select: &str,
        params: &[rusqlite::types::Value],
        range: bool,
    ) -> Result<usize, StoreError> {
        let mut gone: Vec<(i64, Option<String>)> = Vec::new();
        {
            let mut stmt = self.conn.prepare_cached(select)?;
            let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let session = r.get::<_, Option<String>>(1)?;
                if let Some(s) = &session {
                    let tool_before = r.get_ref(3)?.as_str() == Ok("tool.before");
                    let ts: f64 = r.get(2)?;
                    if tool_before {
                        self.tool_calls.remove(s, ts);
                    }
                    if self.facts_on {
                        let text = |i: usize| -> Result<Option<&[u8]>, rusqlite::Error> {
                            Ok(match r.get_ref(i)? {
                                ValueRef::Text(t) => Some(t),
                                _ => None,
                            })
                        };
                        self.facts.remove(&FactRow {
                            session: s,
                            ts,
                            tool_before,
                            tool_name: text(4)?,
                            tool_args: text(5)?,
                            url: text(7)?,
                            block: r.get_ref(6)?.as_str() == Ok("block"),
                            rule_ids: text(8)?,
                            path: None,
                            command: None,
                        });
                    }
                }
                gone.push((id, session));
            }
        }
        let mut deleted = 0;
        let mut failed = None;
        if range {
            let last = gone.iter().map(|(id, _)| *id).max();
            if let Some(last) = last {
                let mut stmt = self
                    .conn
                    .prepare_cached("DELETE FROM events WHERE id <= ?1")?;
                match stmt.execute([last]) {
                    Ok(n) if n == gone.len() => deleted = n,
                    Ok(n) => {
                        failed = Some(StoreError::Schema(format!(
                            "{} rows up to id {last} were read for deletion and {n} deleted",
                            gone.len()
                        )));
                    }
                    Err(e) => failed = Some(e.into()),
                }
            }
        } else {
            let mut stmt = self
                .conn
                .prepare_cached("DELETE FROM events WHERE id = ?1")?;
            for (id, _) in &gone {
                match stmt.execute([id]) {
                    Ok(1) => deleted += 1,
                    Ok(_) => {
                        failed.get_or_insert(StoreError::Schema(format!(
                            "row {id} was read for deletion and then not found"
                        )));
                    }
                    Err(e) => {
                        failed.get_or_insert(e.into());
                    }
                }
            }
        }
        if let Some(e) = failed {
            // The window and the facts were stepped for rows still there:
            // rebuild them from the table (and the counts with them).
            self.recount()?;
            return Err(e);
        }
        self.rows = self.rows.saturating_sub(deleted as u64);
        for (_, s) in gone {
            let Some(s) = s else { continue };
            if let Some(held) = self.per_session.get_mut(&s) {
                *held = held.saturating_sub(1);
                if *held == 0 {
                    self.per_session.remove(&s);
                    self.facts.forget(&s);
                }
            }
        }
        Ok(deleted)
    }

    /// Rebuilds every count kept beside the table from it (row and session
    /// counts, the tool-call window, the facts): after a write that failed
    /// half-way.
    fn recount(&mut self) -> Result<(), StoreError> {
        let rows: i64 = self
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
        self.rows = rows.max(0) as u64;
        self.per_session = per_session_of(&self.conn)?;
        self.reload_tool_calls()
    }

    /// Deletes events older than the retention; returns how many.
    pub fn prune_expired(&mut self, now: f64) -> Result<usize, StoreError> {
        self.delete_counted(
            "SELECT id, session_id, ts, stage, tool_name, tool_args, action, url, rule_ids \
             FROM events WHERE ts < ?1",
            &[rusqlite::types::Value::Real(now - self.retention)],
        )
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

/// Inserts one row of `events`; returns its id.
fn insert_row(
    conn: &Connection,
    row: &EventRow,
    now: f64,
    action: Action,
    rule_ids: &str,
) -> Result<i64, StoreError> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO events (ts, client_ts, stage, session_id, user_id, channel, tool_name, \
         command, path, url, tool_args, text_len, action, rule_ids, metadata) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
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
        rule_ids,
        row.metadata,
    ])?;
    Ok(conn.last_insert_rowid())
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
        Param::RuleIds => ToSqlOutput::Borrowed(ValueRef::Text(row.rule_ids.as_bytes())),
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
    Ok(judge(code, &values))
}

/// Shortcuts off, on (the default), or on and checked against SQLite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortcutMode {
    Off,
    On,
    Checked,
}

/// A row of `SELECT session_id, ts, stage, tool_name, tool_args, action,
/// path, command, url, rule_ids` as the shortcuts' facts see it.
fn fact_row<'r>(r: &'r rusqlite::Row<'_>) -> Result<Option<FactRow<'r>>, rusqlite::Error> {
    let text = |i: usize| -> Result<Option<&'r [u8]>, rusqlite::Error> {
        Ok(match r.get_ref(i)? {
            ValueRef::Text(t) => Some(t),
            _ => None,
        })
    };
    let Some(session) = text(0)?.and_then(|s| std::str::from_utf8(s).ok()) else {
        return Ok(None);
    };
    Ok(Some(FactRow {
        session,
        ts: r.get(1)?,
        tool_before: text(2)? == Some(b"tool.before"),
        tool_name: text(3)?,
        tool_args: text(4)?,
        url: text(8)?,
        block: text(5)? == Some(b"block"),
        rule_ids: text(9)?,
        path: text(6)?,
        command: text(7)?,
    }))
}

/// The rows each session holds, as the table holds them.
fn per_session_of(
    conn: &Connection,
) -> Result<HashMap<String, u64, ahash::RandomState>, StoreError> {
    let mut per_session = HashMap::default();
    let mut stmt = conn.prepare(
        "SELECT session_id, count(*) FROM events WHERE session_id IS NOT NULL \
         GROUP BY session_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let n: i64 = r.get(1)?;
        per_session.insert(r.get::<_, String>(0)?, n.max(0) as u64);
    }
    Ok(per_session)
}

/// The `tool.before` rows' timestamps per session, as the table holds them.
fn tool_calls_of(conn: &Connection) -> Result<ToolCallWindow, StoreError> {
    let mut window = ToolCallWindow::default();
    let mut stmt = conn.prepare(
        "SELECT session_id, ts FROM events WHERE session_id IS NOT NULL \
         AND stage = 'tool.before'",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        window.insert(&r.get::<_, String>(0)?, r.get(1)?);
    }
    Ok(window)
}

/// The rule's condition on its first row; `Some(reason)` when it holds.
fn judge(code: &SqlRuleCode, values: &[ValueRef<'_>]) -> Option<Option<String>> {
    if !code.condition.eval(values) {
        return None;
    }
    Some(code.reason.as_ref().map(|t| t.render(values)))
}
