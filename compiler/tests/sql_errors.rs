//! A SQL rule that cannot run is a compile error naming the file and the
//! rule: queries are prepared against the real `events` schema in an
//! in-memory SQLite, conditions and reasons checked against the query's
//! result columns.

mod common;

use common::{assert_mentions, errors, CONFIG};

fn errors_of(rule: &str) -> String {
    errors(&[CONFIG, ("rules/sql/bad.yaml", rule)])
}

fn rule(query: &str, condition: &str, extra: &str) -> String {
    format!(
        "- id: temporal-x\n  action: block\n{extra}  query: \"{query}\"\n  condition: '{condition}'\n"
    )
}

#[test]
fn column_typo_names_file_rule_and_column() {
    let m = errors_of(&rule(
        "SELECT count(*) AS cnt FROM events WHERE sesion_id = :session_id",
        "cnt > 5",
        "",
    ));
    assert_mentions(
        &m,
        &[
            "rules/sql/bad.yaml",
            "rule `temporal-x`",
            "no such column: sesion_id",
        ],
    );
}

#[test]
fn unknown_parameter_is_an_error() {
    let m = errors_of(&rule(
        "SELECT count(*) AS cnt FROM events WHERE session_id = :session",
        "cnt > 5",
        "",
    ));
    assert_mentions(
        &m,
        &[
            "rule `temporal-x`",
            "unknown parameter `:session`",
            ":session_id",
        ],
    );
}

#[test]
fn condition_on_a_column_the_query_does_not_return() {
    let m = errors_of(&rule("SELECT count(*) AS cnt FROM events", "count > 5", ""));
    assert_mentions(
        &m,
        &[
            "rule `temporal-x`",
            "unknown column `count`",
            "returns: cnt",
        ],
    );
}

#[test]
fn broken_condition_syntax() {
    let m = errors_of(&rule(
        "SELECT count(*) AS cnt FROM events",
        "cnt > 5 &&",
        "",
    ));
    assert_mentions(&m, &["rule `temporal-x`", "unexpected end"]);
}

#[test]
fn reason_placeholder_must_be_a_column() {
    let m = errors_of(&rule(
        "SELECT count(*) AS cnt FROM events",
        "cnt > 5",
        "  reason: '{calls} calls'\n",
    ));
    assert_mentions(
        &m,
        &["rule `temporal-x`", "`{calls}` names no result column"],
    );
}

#[test]
fn writes_and_redaction_are_refused() {
    let m = errors_of(&rule("DELETE FROM events", "cnt > 5", ""));
    assert_mentions(&m, &["rule `temporal-x`", "read-only"]);
    let m = errors_of(
        "- id: temporal-r\n  action: redact\n  query: SELECT 1 AS one\n  condition: one == 1\n",
    );
    assert_mentions(&m, &["rule `temporal-r`", "`block` or `detect`"]);
}

#[test]
fn bad_regexp_pattern_is_found_at_compile_time() {
    let m = errors_of(&rule(
        "SELECT count(*) AS cnt FROM events WHERE path REGEXP '[unclosed'",
        "cnt > 0",
        "",
    ));
    assert_mentions(&m, &["rule `temporal-x`", "invalid REGEXP pattern"]);
}

#[test]
fn missing_condition_is_an_error() {
    let m = errors_of("- id: temporal-y\n  query: SELECT 1 AS one\n");
    assert_mentions(&m, &["rule `temporal-y`", "condition"]);
}
