//! Checking and preparing one SQL rule: the query against the real schema,
//! its parameters against the ones the store binds, the condition and the
//! reason template against the query's result columns.
//!
//! The compiler runs this on an in-memory store at build time (and in
//! `parallax lint`), so a column typo or an unknown parameter is a compile
//! error naming the rule; the store runs it again when it loads the program.

use crate::condition::Expr;
use crate::schema;
use crate::template::Template;
use rusqlite::Connection;

/// The values a query can ask for, bound by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    SessionId,
    UserId,
    Channel,
    ToolName,
    Stage,
    Command,
    Path,
    Url,
    /// The store's clock for this event (epoch seconds).
    Now,
    /// The ids of the rules the event matched before the SQL rules, as a
    /// JSON array (the `rule_ids` its row will hold): what lets a rule
    /// that weighs earlier turns' findings run only on a turn that adds one.
    RuleIds,
}

pub const PARAMS: [(&str, Param); 10] = [
    (":session_id", Param::SessionId),
    (":user_id", Param::UserId),
    (":channel", Param::Channel),
    (":tool_name", Param::ToolName),
    (":stage", Param::Stage),
    (":command", Param::Command),
    (":path", Param::Path),
    (":url", Param::Url),
    (":now", Param::Now),
    (":rule_ids", Param::RuleIds),
];

/// A rule ready to run: what to bind where, and how to judge the row.
#[derive(Debug, Clone)]
pub struct SqlRuleCode {
    pub query: String,
    /// `params[i]` binds SQL parameter `i + 1`.
    pub params: Vec<Param>,
    pub columns: Vec<String>,
    pub condition: Expr,
    pub reason: Option<Template>,
}

fn param_list() -> String {
    PARAMS.iter().map(|p| p.0).collect::<Vec<_>>().join(" ")
}

/// Prepares `query` on `conn` (which has the schema) and checks it.
pub fn compile_rule(
    conn: &Connection,
    query: &str,
    condition: &str,
    reason: Option<&str>,
) -> Result<SqlRuleCode, String> {
    if query.trim().is_empty() {
        return Err("`query` must not be empty".into());
    }
    // `prepare` compiles the first statement only: count them all.
    let mut batch = rusqlite::Batch::new(conn, query);
    let mut statements = 0;
    while let Ok(Some(_)) = batch.next() {
        statements += 1;
    }
    if statements > 1 {
        return Err("`query` must be a single SELECT statement (found more than one)".into());
    }
    let stmt = conn.prepare(query).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => {
            "`query` must be a single SELECT statement (found more than one)".to_string()
        }
        rusqlite::Error::SqlInputError { msg, offset, .. } => {
            format!(
                "`query` does not compile against the events schema: {msg} (at offset {offset})"
            )
        }
        e => format!("`query` does not compile against the events schema: {e}"),
    })?;
    if !stmt.readonly() {
        return Err("`query` must be a read-only SELECT: rules never write the store".into());
    }
    if stmt.column_count() == 0 {
        return Err("`query` returns no columns: it must be a SELECT".into());
    }
    let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].contains(c) {
            return Err(format!(
                "`query` returns two columns named `{c}`: name them apart with AS"
            ));
        }
    }
    let mut params = Vec::with_capacity(stmt.parameter_count());
    for i in 1..=stmt.parameter_count() {
        let Some(name) = stmt.parameter_name(i) else {
            return Err(format!(
                "`query` has a positional parameter (`?`); use the named ones: {}",
                param_list()
            ));
        };
        let Some(p) = PARAMS.iter().find(|p| p.0 == name) else {
            return Err(format!(
                "`query` uses unknown parameter `{name}` (known: {})",
                param_list()
            ));
        };
        params.push(p.1);
    }
    let condition = Expr::parse(condition, &columns).map_err(|e| e.to_string())?;
    let reason = reason.map(|r| Template::parse(r, &columns)).transpose()?;
    Ok(SqlRuleCode {
        query: query.to_string(),
        params,
        columns,
        condition,
        reason,
    })
}

/// SQLite's plan for `query` (`EXPLAIN QUERY PLAN`), one line per step:
/// how a rule author (and a test) sees that a query seeks an index rather
/// than scanning the whole window.
pub fn query_plan(query: &str) -> Result<Vec<String>, String> {
    let conn = Connection::open_in_memory().map_err(|e| format!("cannot open SQLite: {e}"))?;
    schema::init(&conn)?;
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
        .map_err(|e| e.to_string())?;
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        out.push(row.get::<_, String>(3).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Checks one rule against a fresh in-memory store (for the compiler):
/// compiles it, then runs it once over a sample row with every column and
/// parameter set, so errors SQLite only finds at run time (a bad REGEXP
/// pattern, a malformed JSON path) are compile errors too.
pub fn check_rule(query: &str, condition: &str, reason: Option<&str>) -> Result<(), String> {
    let conn = Connection::open_in_memory().map_err(|e| format!("cannot open SQLite: {e}"))?;
    schema::init(&conn)?;
    let code = compile_rule(&conn, query, condition, reason)?;
    conn.execute(
        "INSERT INTO events (ts, client_ts, stage, session_id, user_id, channel, tool_name, \
         command, path, url, tool_args, text_len, action, rule_ids, metadata) VALUES (1000, \
         1000, 'tool.before', 's', 'u', 'c', 'Bash', 'ls -la', '/tmp/x', 'https://example.com/', \
         '{\"command\":\"ls -la\"}', 6, 'block', '[\"r\"]', \
         '{\"span_kind\":\"TOOL\",\"attributes\":{\"tool.name\":\"Bash\"}}')",
        [],
    )
    .map_err(|e| format!("cannot write the sample row: {e}"))?;
    let mut stmt = conn.prepare(query).map_err(|e| e.to_string())?;
    for (i, p) in code.params.iter().enumerate() {
        let v: rusqlite::types::Value = match p {
            Param::Now => rusqlite::types::Value::Real(1001.0),
            Param::Stage => rusqlite::types::Value::Text("tool.before".into()),
            _ => rusqlite::types::Value::Text("sample".into()),
        };
        stmt.raw_bind_parameter(i + 1, v)
            .map_err(|e| e.to_string())?;
    }
    let mut rows = stmt.raw_query();
    while let Some(_row) = rows
        .next()
        .map_err(|e| format!("`query` fails when run on a sample row: {e}"))?
    {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(q: &str, c: &str) -> Result<(), String> {
        check_rule(q, c, None)
    }

    #[test]
    fn accepts_a_window_query() {
        check(
            "SELECT count(*) AS cnt FROM events WHERE session_id = :session_id AND ts > :now - 60",
            "cnt > 50",
        )
        .unwrap();
        check(
            "SELECT count(DISTINCT json_extract(tool_args, '$.host')) AS n FROM events \
             WHERE session_id = :session_id AND EXISTS (SELECT 1 FROM json_each(rule_ids))",
            "n >= 3",
        )
        .unwrap();
        check(
            "SELECT count(*) AS cnt FROM events WHERE path REGEXP '^/tmp/' AND command REGEXP 'ls'",
            "cnt == 1",
        )
        .unwrap();
    }

    #[test]
    fn rejects_broken_queries_with_the_reason() {
        let cases = [
            (
                "SELECT count(*) AS cnt FROM events WHERE sesion_id = :session_id",
                "no such column: sesion_id",
            ),
            ("SELECT count(*) AS cnt FROM event", "no such table: event"),
            (
                "SELECT count(*) AS cnt FROM events WHERE session_id = :session",
                "unknown parameter `:session`",
            ),
            (
                "SELECT count(*) AS cnt FROM events WHERE session_id = ?",
                "positional parameter",
            ),
            ("DELETE FROM events", "read-only"),
            ("SELECT 1 AS cnt; SELECT 2", "single SELECT"),
            ("SELEC 1", "syntax error"),
            ("SELECT 1 AS cnt, 2 AS cnt", "two columns named `cnt`"),
            ("", "must not be empty"),
            (
                "SELECT count(*) AS cnt FROM events WHERE path REGEXP '(unclosed'",
                "invalid REGEXP pattern",
            ),
        ];
        for (q, want) in cases {
            let e = check(q, "cnt > 1").expect_err(q);
            assert!(e.contains(want), "{q}: {e}");
        }
    }

    #[test]
    fn checks_condition_and_reason_against_result_columns() {
        let q = "SELECT count(*) AS cnt FROM events";
        let e = check(q, "count > 1").unwrap_err();
        assert!(e.contains("unknown column `count`"), "{e}");
        let e = check_rule(q, "cnt > 1", Some("{n} calls")).unwrap_err();
        assert!(e.contains("`{n}` names no result column"), "{e}");
        check_rule(q, "cnt > 1", Some("{cnt} calls")).unwrap();
    }
}
