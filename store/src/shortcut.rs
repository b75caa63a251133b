//! Proofs, from facts kept beside SQLite, that a rule cannot fire on an
//! event: the rule's query is then not run (issue 19).
//!
//! Why: on the realistic mix four rules (now seven) cost most of the store's time
//! although they almost never fire, because each walks up to hundreds of
//! the session's rows to find that nothing qualifies (`cargo bench --bench
//! sql -- mix`, before: secret-read-then-egress 5.22 µs per stored event,
//! identical-call-loop 4.73, blocked-retry-lockout 2.20, tool-pace-per-tool
//! 1.75 of 22.18). What they look for is rare: a secret-bearing row, ten
//! identical calls, three blocks, 41 calls of one tool. The store keeps,
//! per session, just enough to bound their count from above:
//!
//! - the newest `ts` of any row whose `path`/`command` text matches the
//!   secret pattern (checked once, when the row is inserted);
//! - the `tool.before` rows, sorted by `ts`, each with a hash of its
//!   `tool_name`, one of `(tool_name, tool_args)`, one of its `url` and
//!   one of the `url`'s shape (its digits taken out);
//! - the rows whose action is `block`, sorted by `ts`, each marked with
//!   whether its `rule_ids` name a rule other than the lockout.
//!
//! The URL hashes were added for the three URL rules (endpoint hammering,
//! endpoint runaway, sequential page scrape): every URL fetch ran their
//! walks in SQLite (a guard only asks for a URL, and for the scrape a
//! digit in it). The block marks make the lockout's count exact (see
//! [`WindowFacts::lockout_blocks`]): a session holding 3 blocks used to
//! run the query on every dangerous call, and in a locked hot session it
//! cost 314 µs an event (`cargo bench --bench sql -- hot_session`, at_cap,
//! the lockout alone, load 3.5).
//!
//! Measured (callgrind `--separate-threads=yes`, `parallax eval` of the
//! first 3,000 events of `loadgen --write-mix 20000`, release): the store
//! thread 369.5 M -> 172.2 M instructions, `Store::process` inclusive
//! 361.2 M -> 161.1 M; output identical (and on the 20k mix, md5 without
//! `elapsed_ms` b2031955…).
//!
//! A shortcut answers only "cannot fire" or "ask SQLite" (the lockout's
//! also "its count is n", when the facts determine it): when the bound
//! says the count cannot reach the rule's threshold, the rule's query would
//! return a count below it (the row set the bound counts contains the rows
//! the query counts: equal values hash equal, a `LIMIT n` over `ORDER BY ts
//! DESC` picks n of the rows the bound walks, whichever n, because the bound
//! takes every row tied with the n-th), so the condition is false and the
//! query is not run. Otherwise SQLite answers as before, so every count and
//! every reason still comes from SQL: equal timestamps, hash collisions, a
//! clock going back or rows that were deleted can only make a shortcut ask
//! SQLite more often, never change an answer.
//!
//! What the rule means stays the SQL: [`Shortcut::recognise`] accepts a
//! rule only when its query and condition are, token for token (SQLite's
//! tokens: whitespace and comments aside, string literals exact), the
//! shipped ones below. tests/sql_shortcuts.rs runs the mix and adversarial
//! sessions through a store that also asks SQLite each time a shortcut
//! says "cannot fire" or gives the lockout's answer, and checks SQLite
//! never fires there and gives the same answer.

use crate::guard::{lex, Tk};
use crate::request::EventRow;
use parallax_runtime::{Action, Stage};
use regex_automata::meta::Regex;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

/// sql-secret-read-then-egress (rules/sql/temporal.yaml).
const SECRET_READ: &str = r#"
      SELECT CASE WHEN
        (coalesce(:command, '') REGEXP '(?i)(^|[\s;&|(`])(curl|wget|nc|ncat|netcat|socat|scp|sftp|ftp|telnet)\s'
          AND NOT coalesce(:command, '') REGEXP '(?i)(://|@|\s)(localhost|127\.0\.0\.1|\[::1\])([:/\s]|$)')
        OR (:url IS NOT NULL
          AND NOT :url REGEXP '(?i)^[a-z]+://(localhost|127\.0\.0\.1|\[::1\])([:/]|$)')
      THEN (SELECT count(*) FROM (
          SELECT path, command FROM events
          WHERE session_id = :session_id
            AND ts > :now - 300
            AND id < (SELECT max(id) FROM events)
          ORDER BY ts DESC
          LIMIT 300)
        WHERE coalesce(path, '') || char(10) || coalesce(command, '') REGEXP
          '(?im)(^|[\s/"\x27=:])(\.env(\.(local|prod|production|dev|development|staging|test))?|\.netrc|\.pgpass|\.git-credentials|\.npmrc|\.pypirc|id_(rsa|dsa|ecdsa|ed25519)|\.aws/credentials|\.kube/config|\.docker/config\.json|etc/shadow|credentials\.json|[^\s/"\x27]+\.(pem|key|p12|pfx))($|[\s"\x27;&|)>])')
      ELSE 0 END AS secret_reads
"#;
const SECRET_READ_IF: &str = "secret_reads > 0";
const SECRET_WINDOW: f64 = 300.0;

/// sql-identical-call-loop.
const SAME_CALL: &str = r#"
      SELECT count(*) AS repeats, :tool_name AS tool FROM (
        SELECT 1 FROM (
          SELECT id, tool_name FROM events
          WHERE session_id = :session_id
            AND ts > :now - 120
            AND stage = 'tool.before'
          ORDER BY ts DESC
          LIMIT 200) AS recent
        WHERE tool_name IS :tool_name
          AND (SELECT tool_args FROM events AS call WHERE call.id = recent.id)
              IS (SELECT tool_args FROM events WHERE id = (SELECT max(id) FROM events))
        LIMIT 10)
"#;
const SAME_CALL_IF: &str = "repeats >= 10";

/// sql-tool-pace-per-tool.
const SAME_TOOL: &str = r#"
      SELECT count(*) AS cnt, :tool_name AS tool FROM (
        SELECT 1 FROM (
          SELECT tool_name FROM events
          WHERE session_id = :session_id
            AND ts > :now - 60
            AND stage = 'tool.before'
          ORDER BY ts DESC
          LIMIT 101)
        WHERE tool_name IS :tool_name
        LIMIT 41)
"#;
const SAME_TOOL_IF: &str = "cnt > 40";

/// sql-blocked-retry-lockout.
const BLOCKS: &str = r#"
      SELECT
        CASE WHEN :command IS NOT NULL OR :url IS NOT NULL THEN
          (SELECT count(*) FROM (
            SELECT 1 FROM (
              SELECT rule_ids FROM events
              WHERE session_id = :session_id
                AND action = 'block'
                AND ts > :now - 600
              ORDER BY ts DESC
              LIMIT 1000)
            WHERE EXISTS (SELECT 1 FROM json_each(rule_ids)
                          WHERE value <> 'sql-blocked-retry-lockout')
            LIMIT 3))
        ELSE 0 END AS blocks,
        (:command IS NOT NULL OR :url IS NOT NULL) AS dangerous
"#;
const BLOCKS_IF: &str = "blocks >= 3 && dangerous";

/// The rule id the lockout's `json_each` test compares with.
const LOCKOUT_ID: &str = "sql-blocked-retry-lockout";
/// The lockout walks at most this many of the session's newest blocks.
const LOCKOUT_WALK: usize = 1000;

/// sql-endpoint-hammering.
const SAME_URL_15: &str = r#"
      SELECT CASE WHEN :url IS NULL THEN 0 ELSE (
        SELECT count(*) FROM (
          SELECT 1 FROM (
            SELECT url FROM events
            WHERE session_id = :session_id
              AND ts > :now - 60
              AND stage = 'tool.before'
            ORDER BY ts DESC
            LIMIT 101)
          WHERE url = :url
          LIMIT 15)) END AS cnt
"#;
const SAME_URL_15_IF: &str = "cnt >= 15";

/// sql-endpoint-runaway.
const SAME_URL_61: &str = r#"
      SELECT CASE WHEN :url IS NULL THEN 0 ELSE (
        SELECT count(*) FROM (
          SELECT 1 FROM (
            SELECT url FROM events
            WHERE session_id = :session_id
              AND ts > :now - 60
              AND stage = 'tool.before'
            ORDER BY ts DESC
            LIMIT 101)
          WHERE url = :url
          LIMIT 61)) END AS cnt
"#;
const SAME_URL_61_IF: &str = "cnt > 60";

/// sql-sequential-page-scrape.
const PAGES: &str = r#"
      SELECT CASE WHEN :url IS NULL OR replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(:url,'0',''),'1',''),'2',''),'3',''),'4',''),'5',''),'6',''),'7',''),'8',''),'9','') = :url THEN 0 ELSE (
        SELECT count(DISTINCT url) FROM (
          SELECT url FROM events
          WHERE session_id = :session_id
            AND ts > :now - 120
            AND stage = 'tool.before'
          ORDER BY ts DESC
          LIMIT 200)
        WHERE url IS NOT NULL
          AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(url,'0',''),'1',''),'2',''),'3',''),'4',''),'5',''),'6',''),'7',''),'8',''),'9','') = replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(:url,'0',''),'1',''),'2',''),'3',''),'4',''),'5',''),'6',''),'7',''),'8',''),'9','')) END AS pages
"#;
const PAGES_IF: &str = "pages >= 30";

/// A recognised rule, and what its bound needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortcut {
    /// Cannot fire when the session holds no row matching the secret
    /// pattern with `ts > now - 300`: the walk's count is then 0 (and the
    /// `ELSE` is 0).
    SecretRead,
    /// Cannot fire when fewer than 10 of the session's 200 newest tool
    /// calls in 120 s (every tie of the 200th included) hash like this
    /// call's `(tool_name, tool_args)`.
    SameCall,
    /// Cannot fire when at most 40 of the session's 101 newest tool calls
    /// in 60 s (ties included) hash like this call's `tool_name`.
    SameTool,
    /// Answered from the session's `block` rows (sorted by `ts`, each
    /// with whether its `rule_ids` name a rule other than the lockout),
    /// exactly as the query counts them: see [`WindowFacts::lockout_blocks`].
    Blocks,
    /// sql-endpoint-hammering: cannot fire when fewer than 15 of the
    /// session's 101 newest tool calls in 60 s (ties included) hash like
    /// this call's `url` (or it has none: the `CASE` gives 0).
    SameUrl15,
    /// sql-endpoint-runaway: the same with at most 60 of them.
    SameUrl61,
    /// sql-sequential-page-scrape: cannot fire when this call's `url` is
    /// NULL or has no digit (the `CASE` gives 0), or fewer than 30 of the
    /// session's 200 newest tool calls in 120 s (ties included) hash like
    /// its shape (the URL without its digits): `count(DISTINCT url)` of
    /// the rows whose shape is equal is at most the rows whose shape hash
    /// is equal.
    Pages,
}

fn kinds(sql: &str) -> Option<Vec<Tk>> {
    Some(lex(sql)?.into_iter().map(|t| t.tk).collect())
}

fn same_tokens(a: &str, b: &str) -> bool {
    matches!((kinds(a), kinds(b)), (Some(x), Some(y)) if x == y)
}

impl Shortcut {
    /// The shortcut for a rule whose query and condition are token for
    /// token one of the shipped ones, else `None`.
    pub fn recognise(query: &str, condition: &str) -> Option<Shortcut> {
        [
            (Shortcut::SecretRead, SECRET_READ, SECRET_READ_IF),
            (Shortcut::SameCall, SAME_CALL, SAME_CALL_IF),
            (Shortcut::SameTool, SAME_TOOL, SAME_TOOL_IF),
            (Shortcut::Blocks, BLOCKS, BLOCKS_IF),
            (Shortcut::SameUrl15, SAME_URL_15, SAME_URL_15_IF),
            (Shortcut::SameUrl61, SAME_URL_61, SAME_URL_61_IF),
            (Shortcut::Pages, PAGES, PAGES_IF),
        ]
        .into_iter()
        .find(|(_, q, c)| same_tokens(query, q) && same_tokens(condition, c))
        .map(|(s, _, _)| s)
    }
}

/// The secret pattern exactly as [`SECRET_READ`]'s `REGEXP` receives it
/// (the last string literal of the query).
fn secret_pattern() -> Option<Regex> {
    let last = lex(SECRET_READ)?
        .into_iter()
        .rev()
        .find_map(|t| match t.tk {
            Tk::Str(s) => Some(s),
            _ => None,
        })?;
    Regex::new(&last).ok()
}

#[derive(Debug, Clone, Copy)]
struct Call {
    ts: f64,
    tool: u64,
    call: u64,
    /// [`url_hash`] of the row's `url`.
    url: u64,
    /// [`shape_hash`] of the row's `url`.
    shape: u64,
}

/// One `block` row: its `ts`, and whether the lockout counts it
/// ([`counts_as_block`] of its `rule_ids`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Block {
    ts: f64,
    counted: bool,
}

#[derive(Debug)]
struct SessionFacts {
    /// The session's `tool.before` rows, sorted by `ts`.
    calls: VecDeque<Call>,
    /// The session's `block` rows, sorted by `ts`.
    blocks: VecDeque<Block>,
    /// Newest `ts` of a row matching the secret pattern (never lowered by
    /// a delete: an upper bound is all a shortcut needs).
    secret: f64,
}

impl Default for SessionFacts {
    fn default() -> Self {
        SessionFacts {
            calls: VecDeque::new(),
            blocks: VecDeque::new(),
            secret: f64::NEG_INFINITY,
        }
    }
}

fn hash_text(h: &mut std::hash::DefaultHasher, v: Option<&[u8]>) {
    match v {
        None => 0u8.hash(h),
        Some(b) => {
            1u8.hash(h);
            b.hash(h);
        }
    }
}

/// Hash of a `tool_name` value (NULL apart from every text).
pub fn tool_hash(tool: Option<&[u8]>) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    hash_text(&mut h, tool);
    h.finish()
}

/// Hash of a `(tool_name, tool_args)` pair.
pub fn call_hash(tool: Option<&[u8]>, args: Option<&[u8]>) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    hash_text(&mut h, tool);
    hash_text(&mut h, args);
    h.finish()
}

/// Hash of a `url` value (`url = :url` compares the bytes).
pub fn url_hash(url: Option<&[u8]>) -> u64 {
    tool_hash(url)
}

/// Hash of a `url` value's shape: its bytes without the ASCII digits, as
/// the page-scrape query's ten `replace(…, 'd', '')` leave them (SQLite
/// replaces bytes; in UTF-8 the byte of a digit is only ever that digit).
pub fn shape_hash(url: Option<&[u8]>) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    match url {
        None => 0u8.hash(&mut h),
        Some(b) => {
            1u8.hash(&mut h);
            // Hashed piece by piece between digits, with the length last,
            // so equal shapes hash equal however the digits cut them.
            let mut len = 0usize;
            for piece in b.split(u8::is_ascii_digit) {
                h.write(piece);
                len += piece.len();
            }
            h.write_usize(len);
        }
    }
    h.finish()
}

/// Whether the lockout's `EXISTS (SELECT 1 FROM json_each(rule_ids) WHERE
/// value <> 'sql-blocked-retry-lockout')` holds for a row's `rule_ids`:
/// an array of strings holds when one of them is another id; anything
/// else (not an array of strings, not JSON) counts as holding, so that
/// only an upper bound is ever taken from it (the exact answer is then
/// never given natively: see [`WindowFacts::lockout_blocks`]).
pub fn counts_as_block(rule_ids: Option<&[u8]>) -> bool {
    match rule_ids.map(serde_json::from_slice::<Vec<std::borrow::Cow<'_, str>>>) {
        Some(Ok(ids)) => ids.iter().any(|id| id != LOCKOUT_ID),
        _ => true,
    }
}

/// Whether [`counts_as_block`]'s answer for `rule_ids` is the one SQLite
/// gives (an array of strings, or an array at all), so that a count of
/// such rows may be given as the query's answer.
fn exact_rule_ids(rule_ids: Option<&[u8]>) -> bool {
    matches!(
        rule_ids.map(serde_json::from_slice::<Vec<std::borrow::Cow<'_, str>>>),
        Some(Ok(_))
    )
}

fn insert_sorted<T: Copy>(q: &mut VecDeque<T>, item: T, ts: impl Fn(&T) -> f64) {
    let t = ts(&item);
    if q.back().is_none_or(|last| ts(last) <= t) {
        q.push_back(item);
    } else {
        let at = q.partition_point(|x| ts(x) <= t);
        q.insert(at, item);
    }
}

/// What the shortcuts know of each session's rows.
#[derive(Debug, Default)]
pub struct WindowFacts {
    sessions: HashMap<String, SessionFacts, ahash::RandomState>,
    /// Present when a [`Shortcut::SecretRead`] rule is loaded.
    secret: Option<Regex>,
    /// Block rows whose `rule_ids` are not an array of strings (only a
    /// state file written by hand has them): while there are any, the
    /// lockout is answered by SQLite.
    odd_blocks: u64,
}

/// One row as the facts see it (inserted, or returned by a delete).
pub struct FactRow<'a> {
    pub session: &'a str,
    pub ts: f64,
    pub tool_before: bool,
    pub tool_name: Option<&'a [u8]>,
    pub tool_args: Option<&'a [u8]>,
    pub url: Option<&'a [u8]>,
    pub block: bool,
    /// The row's `rule_ids` (JSON text); read only for a block row.
    pub rule_ids: Option<&'a [u8]>,
    pub path: Option<&'a [u8]>,
    pub command: Option<&'a [u8]>,
}

impl<'a> FactRow<'a> {
    /// The row [`crate::Store`] inserts for `row` with `action` and
    /// `rule_ids` (the JSON text it stores).
    pub fn of(
        row: &'a EventRow,
        ts: f64,
        action: Action,
        rule_ids: &'a str,
    ) -> Option<FactRow<'a>> {
        Some(FactRow {
            session: row.session_id.as_deref()?,
            ts,
            tool_before: row.stage == Stage::ToolBefore,
            tool_name: row.tool_name.as_deref().map(str::as_bytes),
            tool_args: row.tool_args.as_deref().map(str::as_bytes),
            url: row.url.as_deref().map(str::as_bytes),
            block: action == Action::Block,
            rule_ids: Some(rule_ids.as_bytes()),
            path: row.path.as_deref().map(str::as_bytes),
            command: row.command.as_deref().map(str::as_bytes),
        })
    }
}

impl WindowFacts {
    /// Facts for the given shortcuts (the secret pattern is only checked
    /// on inserts when a rule needs it).
    pub fn new(shortcuts: &[Shortcut]) -> WindowFacts {
        WindowFacts {
            sessions: HashMap::default(),
            secret: shortcuts
                .contains(&Shortcut::SecretRead)
                .then(secret_pattern)
                .flatten(),
            odd_blocks: 0,
        }
    }

    /// Whether the secret pattern could be built (a test checks it is).
    pub fn checks_secrets(&self) -> bool {
        self.secret.is_some()
    }

    fn session(&mut self, session: &str) -> &mut SessionFacts {
        if !self.sessions.contains_key(session) {
            self.sessions
                .insert(session.to_string(), SessionFacts::default());
        }
        self.sessions
            .get_mut(session)
            .expect("the entry was just made")
    }

    /// A row was inserted (or found in a state file).
    // Negated comparisons on purpose: a NaN compares as SQLite's REAL does.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn insert(&mut self, r: &FactRow<'_>) {
        let secret = match &self.secret {
            Some(re) => {
                // coalesce(path, '') || char(10) || coalesce(command, '')
                let path = r.path.unwrap_or(b"");
                let command = r.command.unwrap_or(b"");
                let mut text = Vec::with_capacity(path.len() + 1 + command.len());
                text.extend_from_slice(path);
                text.push(b'\n');
                text.extend_from_slice(command);
                re.is_match(&text)
            }
            None => false,
        };
        if !(r.tool_before || r.block || secret) {
            return;
        }
        if r.block && !exact_rule_ids(r.rule_ids) {
            self.odd_blocks += 1;
        }
        let f = self.session(r.session);
        if r.tool_before {
            let call = Call {
                ts: r.ts,
                tool: tool_hash(r.tool_name),
                call: call_hash(r.tool_name, r.tool_args),
                url: url_hash(r.url),
                shape: shape_hash(r.url),
            };
            insert_sorted(&mut f.calls, call, |c| c.ts);
        }
        if r.block {
            let block = Block {
                ts: r.ts,
                counted: counts_as_block(r.rule_ids),
            };
            insert_sorted(&mut f.blocks, block, |b| b.ts);
        }
        if secret && !(f.secret >= r.ts) {
            f.secret = r.ts;
        }
    }

    /// A row's verdict was updated (a SQL rule fired on it): it was
    /// inserted as `was` (its action a block or not, its `rule_ids` text)
    /// and now is `now`.
    pub fn updated(
        &mut self,
        session: &str,
        ts: f64,
        was: (bool, Option<&[u8]>),
        now: (bool, Option<&[u8]>),
    ) {
        if was.0 {
            self.remove_block(session, ts, was.1);
        }
        if now.0 {
            if !exact_rule_ids(now.1) {
                self.odd_blocks += 1;
            }
            let block = Block {
                ts,
                counted: counts_as_block(now.1),
            };
            insert_sorted(&mut self.session(session).blocks, block, |b| b.ts);
        }
    }

    fn remove_block(&mut self, session: &str, ts: f64, rule_ids: Option<&[u8]>) {
        if !exact_rule_ids(rule_ids) {
            self.odd_blocks = self.odd_blocks.saturating_sub(1);
        }
        let Some(f) = self.sessions.get_mut(session) else {
            return;
        };
        let gone = Block {
            ts,
            counted: counts_as_block(rule_ids),
        };
        let mut at = f.blocks.partition_point(|b| b.ts < ts);
        while let Some(b) = f.blocks.get(at) {
            if b.ts != ts {
                break;
            }
            if *b == gone {
                f.blocks.remove(at);
                break;
            }
            at += 1;
        }
    }

    /// A row was deleted.
    pub fn remove(&mut self, r: &FactRow<'_>) {
        if r.block {
            self.remove_block(r.session, r.ts, r.rule_ids);
        }
        let Some(f) = self.sessions.get_mut(r.session) else {
            return;
        };
        if r.tool_before {
            let (tool, call) = (tool_hash(r.tool_name), call_hash(r.tool_name, r.tool_args));
            let (url, shape) = (url_hash(r.url), shape_hash(r.url));
            let mut at = f.calls.partition_point(|c| c.ts < r.ts);
            while let Some(c) = f.calls.get(at) {
                if c.ts != r.ts {
                    break;
                }
                if c.tool == tool && c.call == call && c.url == url && c.shape == shape {
                    f.calls.remove(at);
                    break;
                }
                at += 1;
            }
        }
    }

    /// The session holds no row any more.
    pub fn forget(&mut self, session: &str) {
        self.sessions.remove(session);
    }

    /// The lockout query's `blocks` for a session at `now`, when the facts
    /// determine it: `min(3, n)`, `n` the rows among the session's
    /// [`LOCKOUT_WALK`] newest `block` rows with `ts > now - 600` whose
    /// `rule_ids` name another rule. `None` (ask SQLite) when they do not:
    /// more than [`LOCKOUT_WALK`] blocks in the window with the
    /// `LOCKOUT_WALK`-th tied with the next (which of the tied rows SQLite
    /// walks is its choice) and fewer than 3 counted rows above the tie,
    /// or a block row whose `rule_ids` are not an array of strings.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn lockout_blocks(&self, session: Option<&str>, now: f64) -> Option<i64> {
        if self.odd_blocks > 0 {
            return None;
        }
        let Some(f) = session.and_then(|s| self.sessions.get(s)) else {
            // A session-less event matches no row; a session without facts
            // holds no block row.
            return Some(0);
        };
        let edge = now - 600.0;
        // Rows with ts > edge; with a NaN edge no comparison is true.
        let newer = if edge.is_nan() {
            0
        } else {
            f.blocks.len() - f.blocks.partition_point(|b| b.ts <= edge)
        };
        let counted = |rows: usize| -> i64 {
            let n = f.blocks.iter().rev().take(rows).filter(|b| b.counted);
            n.take(3).count() as i64
        };
        if newer <= LOCKOUT_WALK {
            return Some(counted(newer));
        }
        // More in the window than the walk takes: its last row and the
        // one after it.
        let at = f.blocks.len() - LOCKOUT_WALK;
        let edge_ts = f.blocks[at].ts;
        if f.blocks[at - 1].ts != edge_ts {
            return Some(counted(LOCKOUT_WALK));
        }
        // Tied across the walk's end: which of the tied rows SQLite walks
        // is its choice; only the rows above the tie are certain.
        let above = f.blocks.len() - f.blocks.partition_point(|b| b.ts <= edge_ts);
        (counted(above) >= 3).then_some(3)
    }

    /// True when `shortcut`'s rule cannot fire on `row` at `now` (the row
    /// already inserted); false means: ask SQLite.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn cannot_fire(&self, shortcut: Shortcut, row: &EventRow, now: f64) -> bool {
        let url = row.url.as_deref().map(str::as_bytes);
        // The three URL rules' `CASE` gives 0 without a URL (and the page
        // scrape's without a digit in it).
        match shortcut {
            Shortcut::SameUrl15 | Shortcut::SameUrl61 if url.is_none() => return true,
            Shortcut::Pages if !url.is_some_and(|u| u.iter().any(u8::is_ascii_digit)) => {
                return true
            }
            _ => {}
        }
        let Some(f) = row.session_id.as_deref().and_then(|s| self.sessions.get(s)) else {
            // No fact for the session: none of its rows is a tool call, a
            // block or a secret read (a session-less event matches no row).
            return shortcut != Shortcut::SecretRead || self.secret.is_some();
        };
        match shortcut {
            Shortcut::SecretRead => self.secret.is_some() && !(f.secret > now - SECRET_WINDOW),
            Shortcut::SameCall => {
                let call = call_hash(
                    row.tool_name.as_deref().map(str::as_bytes),
                    row.tool_args.as_deref().map(str::as_bytes),
                );
                newest_matching(&f.calls, now - 120.0, 200, 10, |c| c.call == call) < 10
            }
            Shortcut::SameTool => {
                let tool = tool_hash(row.tool_name.as_deref().map(str::as_bytes));
                newest_matching(&f.calls, now - 60.0, 101, 41, |c| c.tool == tool) <= 40
            }
            Shortcut::SameUrl15 => {
                let h = url_hash(url);
                newest_matching(&f.calls, now - 60.0, 101, 15, |c| c.url == h) < 15
            }
            Shortcut::SameUrl61 => {
                let h = url_hash(url);
                newest_matching(&f.calls, now - 60.0, 101, 61, |c| c.url == h) <= 60
            }
            Shortcut::Pages => {
                let h = shape_hash(url);
                newest_matching(&f.calls, now - 120.0, 200, 30, |c| c.shape == h) < 30
            }
            Shortcut::Blocks => self.lockout_blocks(row.session_id.as_deref(), now) == Some(0),
        }
    }
}

/// Of the calls with `ts > edge`, newest first, the first `limit` and
/// every later one tied with the `limit`-th: how many satisfy `hit`
/// (counting stops at `enough`).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn newest_matching(
    calls: &VecDeque<Call>,
    edge: f64,
    limit: usize,
    enough: usize,
    hit: impl Fn(&Call) -> bool,
) -> usize {
    let mut last = f64::NAN;
    let mut found = 0;
    for (taken, c) in calls.iter().rev().enumerate() {
        if !(c.ts > edge) {
            break;
        }
        if taken >= limit && c.ts != last {
            break;
        }
        last = c.ts;
        if hit(c) {
            found += 1;
            if found >= enough {
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_pattern_compiles() {
        assert!(WindowFacts::new(&[Shortcut::SecretRead]).checks_secrets());
    }

    #[test]
    fn recognition_is_token_exact() {
        assert_eq!(
            Shortcut::recognise(SAME_TOOL, SAME_TOOL_IF),
            Some(Shortcut::SameTool)
        );
        assert_eq!(
            Shortcut::recognise(&SAME_TOOL.replace("\n", " -- a comment\n"), "cnt  >  40"),
            Some(Shortcut::SameTool)
        );
        for (q, c) in [
            (SAME_TOOL.replace("LIMIT 41", "LIMIT 42"), SAME_TOOL_IF),
            (SAME_TOOL.to_string(), "cnt > 39"),
            (
                SAME_TOOL.replace("'tool.before'", "'tool.after'"),
                SAME_TOOL_IF,
            ),
            (
                SECRET_READ.replace("pem|key", "pem|key|txt"),
                SECRET_READ_IF,
            ),
            (SECRET_READ.replace("(?im)(^|", "(?im)( ^|"), SECRET_READ_IF),
            (BLOCKS.replace("600", "6000"), BLOCKS_IF),
        ] {
            assert_eq!(Shortcut::recognise(&q, c), None, "{q} / {c}");
        }
    }

    #[test]
    fn ties_at_the_limit_are_all_walked() {
        let calls: VecDeque<Call> = [1.0, 2.0, 2.0, 2.0, 3.0]
            .into_iter()
            .enumerate()
            .map(|(i, ts)| Call {
                ts,
                tool: i as u64,
                call: 0,
                url: 0,
                shape: 0,
            })
            .collect();
        // Newest two: 3.0 and one of the 2.0s; all three 2.0s are walked.
        assert_eq!(newest_matching(&calls, 0.0, 2, 99, |_| true), 4);
        assert_eq!(newest_matching(&calls, 2.0, 2, 99, |_| true), 1);
        assert_eq!(newest_matching(&calls, f64::NAN, 2, 99, |_| true), 0);
        assert_eq!(newest_matching(&calls, 0.0, 9, 2, |_| true), 2);
    }
}
