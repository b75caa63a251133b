//! The side-store's schema: the one table SQL rules are written against.
//!
//! Documented in `docs/SQL.md`; a change here is a change to the rule
//! language, so bump [`SCHEMA_VERSION`] (a state file of another version is
//! refused rather than misread).

use rusqlite::Connection;

/// Stored in `PRAGMA user_version` of a state file. Version 2 added
/// `metadata`; a version-1 file gains the column on open (see [`init`]).
pub const SCHEMA_VERSION: i64 = 2;

/// `ts` is the store's clock (server time, epoch seconds): windows are
/// measured on it, so a client cannot move its events out of a window.
/// `client_ts` is the event's own `timestamp`, kept for queries that want
/// it. Multi-valued canonical fields (several paths in one call) are joined
/// with newlines. `rule_ids` is a JSON array, for `json_each`. `metadata`
/// is the event's caller data as JSON: what a trace-shaped rule (an ATR
/// `trace:`/`behavioral:` rule, see `docs/ATR.md`) reads span kinds and
/// attributes from.
///
/// The session index carries, after `(session_id, ts)`, every short column
/// a window walk reads: `stage` (a rate rule counting tool calls), then
/// `tool_name`, `url`, `path` and `command` (per-tool paces, endpoint
/// counts, secret reads, downloads). A walk that reads only those is
/// answered from the index alone (SQLite's "covering index"): a hot
/// session's rows cost an index entry each, never a seek into the table,
/// which was most of the store's time on a realistic mix (docs/SQL.md "How
/// it runs"). Only `tool_args`, `rule_ids` and `metadata` (up to 4 KB
/// each) still need the row. The three text columns are clipped at
/// [`crate::request::MAX_FIELD_BYTES`], so an entry stays small enough for
/// an index page. (A state file of an earlier build has the narrower
/// `events_session_ts` or `events_session_ts_stage`; they are replaced on
/// open.)
///
/// The blocks index is partial: only `block` rows have an entry, so the
/// lockout rule (`action = 'block'`, newest first) seeks a session's
/// blocks, and every other row costs it nothing. It replaced a full
/// `(session_id, action, ts)` index, which every insert and every delete
/// of the row cap paid for (one b-tree insert, one seek and delete, the
/// pages' journal) to serve that one query: at the cap, 12.3 k of the
/// 71.1 k instructions an event took (callgrind, `cargo bench --bench sql
/// -- cap`, 71.1 k -> 58.8 k). A query on another action (`action =
/// 'detect'`) cannot use it and walks the session index instead, looking
/// each row up.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
    id         INTEGER PRIMARY KEY,
    ts         REAL NOT NULL,
    client_ts  REAL,
    stage      TEXT NOT NULL,
    session_id TEXT,
    user_id    TEXT,
    channel    TEXT,
    tool_name  TEXT,
    command    TEXT,
    path       TEXT,
    url        TEXT,
    tool_args  TEXT,
    text_len   INTEGER NOT NULL,
    action     TEXT NOT NULL,
    rule_ids   TEXT NOT NULL,
    metadata   TEXT
);
DROP INDEX IF EXISTS events_session_ts;
DROP INDEX IF EXISTS events_session_ts_stage;
CREATE INDEX IF NOT EXISTS events_session_window
    ON events(session_id, ts, stage, tool_name, url, path, command);
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
DROP INDEX IF EXISTS events_session_action_ts;
CREATE INDEX IF NOT EXISTS events_session_blocks ON events(session_id, ts) WHERE action = 'block';
";

/// The columns of `events`, in order (checked against a state file).
pub const COLUMNS: [&str; 16] = [
    "id",
    "ts",
    "client_ts",
    "stage",
    "session_id",
    "user_id",
    "channel",
    "tool_name",
    "command",
    "path",
    "url",
    "tool_args",
    "text_len",
    "action",
    "rule_ids",
    "metadata",
];

/// Compiled REGEXP patterns kept per connection; past this many distinct
/// patterns (only a query that takes its pattern from a column gets there)
/// the cache starts over.
const REGEXP_CACHE: usize = 256;

/// `X REGEXP Y` in rule queries: SQLite parses the operator but ships no
/// implementation. Patterns use regex-automata syntax (the same as regex
/// rules). SQLite drops a function's auxiliary data whenever a statement is
/// reset, i.e. after every event, so compiled patterns are cached here
/// instead: compiling the shipped patterns costs far more than running the
/// queries. NULL text gives NULL.
fn register_regexp(conn: &Connection) -> rusqlite::Result<()> {
    use regex_automata::meta::Regex;
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::ValueRef;
    use std::collections::HashMap;
    use std::sync::Arc;
    let mut cache: HashMap<String, Arc<Regex>> = HashMap::new();
    conn.create_scalar_function(
        "regexp",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |ctx| {
            // Within one execution SQLite keeps the compiled pattern as
            // auxiliary data (no lookup per row); across executions the
            // cache has it (no compile per event).
            let re: Arc<Regex> = match ctx.get_aux::<Arc<Regex>>(0)? {
                Some(re) => re.as_ref().clone(),
                None => {
                    let pattern = ctx.get_raw(0).as_str().map_err(|e| {
                        rusqlite::Error::UserFunctionError(format!("REGEXP pattern: {e}").into())
                    })?;
                    let re = match cache.get(pattern) {
                        Some(re) => re.clone(),
                        None => {
                            let re = Arc::new(Regex::new(pattern).map_err(|e| {
                                rusqlite::Error::UserFunctionError(
                                    format!("invalid REGEXP pattern `{pattern}`: {e}").into(),
                                )
                            })?);
                            if cache.len() >= REGEXP_CACHE {
                                cache.clear();
                            }
                            cache.insert(pattern.to_string(), re.clone());
                            re
                        }
                    };
                    ctx.set_aux(0, re.clone())?;
                    re
                }
            };
            Ok(match ctx.get_raw(1) {
                ValueRef::Text(t) => Some(re.is_match(t)),
                ValueRef::Null => None,
                ValueRef::Integer(n) => Some(re.is_match(n.to_string().as_bytes())),
                ValueRef::Real(n) => Some(re.is_match(n.to_string().as_bytes())),
                ValueRef::Blob(b) => Some(re.is_match(b)),
            })
        },
    )
}

/// Creates the schema (idempotent), checks an existing one, and registers
/// the SQL functions rules may use.
pub fn init(conn: &Connection) -> Result<(), String> {
    register_regexp(conn).map_err(|e| format!("cannot register REGEXP: {e}"))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    let has_table: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'events'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    // Version 1 lacked `metadata` only: add it (NULL for the old rows, as
    // for an event without metadata) rather than refuse a window.
    if has_table && version == 1 {
        conn.execute_batch("ALTER TABLE events ADD COLUMN metadata TEXT")
            .map_err(|e| format!("cannot add `metadata` to a version-1 state file: {e}"))?;
    } else if has_table && version != SCHEMA_VERSION {
        return Err(format!(
            "the state file has side-store schema version {version}, this build uses \
             {SCHEMA_VERSION}; move the file away to start a fresh window"
        ));
    }
    conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
    let mut cols = Vec::new();
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info('events') ORDER BY cid")
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| e.to_string())?;
    for r in rows {
        cols.push(r.map_err(|e| e.to_string())?);
    }
    if cols != COLUMNS {
        return Err(format!(
            "table `events` has columns ({}), expected ({})",
            cols.join(", "),
            COLUMNS.join(", ")
        ));
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state file written by the version-1 schema (no `metadata`) keeps
    /// its rows and gains the column; any other version is refused.
    #[test]
    fn a_version_1_file_gains_metadata_and_keeps_its_rows() {
        let dir = std::env::temp_dir().join(format!("parallax-schema-v1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let _ = std::fs::remove_file(&path);
        {
            let conn = Connection::open(&path).unwrap();
            let v1 = SCHEMA.replace(",\n    metadata   TEXT\n", "\n");
            conn.execute_batch(&v1).unwrap();
            conn.execute(
                "INSERT INTO events (ts, stage, text_len, action, rule_ids) \
                 VALUES (1, 'tool.before', 0, 'allow', '[]')",
                [],
            )
            .unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
        }
        let conn = Connection::open(&path).unwrap();
        init(&conn).unwrap();
        let (n, meta): (i64, Option<String>) = conn
            .query_row("SELECT count(*), max(metadata) FROM events", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((n, meta), (1, None));
        drop(conn);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
        let err = init(&conn).unwrap_err();
        assert!(err.contains("schema version 7"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A state file with the full `(session_id, action, ts)` index of an
    /// earlier build has the partial blocks index instead once opened, and
    /// it holds the `block` rows only.
    #[test]
    fn the_full_action_index_becomes_the_partial_blocks_index() {
        let dir = std::env::temp_dir().join(format!("parallax-schema-idx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let _ = std::fs::remove_file(&path);
        {
            let conn = Connection::open(&path).unwrap();
            let old = SCHEMA
                .replace("DROP INDEX IF EXISTS events_session_action_ts;", "")
                .replace(
                    "events_session_blocks ON events(session_id, ts) WHERE action = 'block'",
                    "events_session_action_ts ON events(session_id, action, ts)",
                );
            conn.execute_batch(&old).unwrap();
            for action in ["allow", "block", "detect", "block"] {
                conn.execute(
                    "INSERT INTO events (ts, stage, session_id, text_len, action, rule_ids) \
                     VALUES (1, 'tool.before', 's', 0, ?1, '[]')",
                    [action],
                )
                .unwrap();
            }
            conn.pragma_update(None, "user_version", SCHEMA_VERSION)
                .unwrap();
        }
        let conn = Connection::open(&path).unwrap();
        init(&conn).unwrap();
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            indexes,
            [
                "events_session_blocks",
                "events_session_window",
                "events_ts"
            ]
        );
        let entries: i64 = conn
            .query_row(
                "SELECT count(*) FROM events INDEXED BY events_session_blocks \
                 WHERE session_id = 's' AND action = 'block' AND ts > 0",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(entries, 2);
        let partial: bool = conn
            .query_row(
                "SELECT partial FROM pragma_index_list('events') \
                 WHERE name = 'events_session_blocks'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(partial, "only block rows have an entry");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
