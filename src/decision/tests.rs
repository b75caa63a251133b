//! The decision service's own steps, driven where a front door cannot
//! reach: a failed side-store and the no-verdict answer. What every front
//! door sees end to end is in tests/decision.rs.

use super::*;
use crate::backend;
use parallax_runtime::FailMode;
use serde_json::{json, Value};
use std::path::Path;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/decision/parallax.yaml"
);

fn service(fail_mode: FailMode, monitor: bool) -> DecisionService {
    let loaded = backend::load(Some(Path::new(FIXTURE)), false).expect("the fixture loads");
    let mut settings = loaded.settings;
    settings.server.fail_mode = fail_mode;
    settings.server.monitor = monitor;
    DecisionService::new(loaded.engine, settings).expect("the side-store opens")
}

fn event(v: Value) -> Event {
    Event::from_value(v).expect("a valid event")
}

fn call(session: &str, command: &str) -> Event {
    event(
        json!({"stage": "tool.before", "session_id": session, "tool_name": "Bash",
                 "tool_args": {"command": command}}),
    )
}

fn decide(s: &DecisionService, e: Event) -> Value {
    let r = s.decide(e, &Origin::door(Door::Library), Instant::now());
    serde_json::to_value(&r).expect("a report serialises")
}

#[test]
fn a_sql_block_over_a_redaction_returns_no_rewritten_content() {
    let s = service(FailMode::Closed, false);
    let first = decide(&s, call("s1", "echo tok-123456"));
    assert_eq!(first["action"], "redact", "{first}");
    assert_eq!(
        first["redacted_event"]["tool_args"]["command"], "echo [REDACTED]",
        "{first}"
    );
    let second = decide(&s, call("s1", "echo tok-123456"));
    assert_eq!(second["action"], "block", "{second}");
    assert_eq!(second["blocked"], true);
    assert!(second.get("redacted_event").is_none(), "{second}");
    assert!(second.get("redacted").is_none(), "{second}");
    let ids: Vec<&str> = second["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["fixture-token", "fixture-second-call"]);
    assert_eq!(
        second["reasons"][1],
        "fixture-second-call: the session already made a tool call"
    );
}

#[test]
fn the_origin_session_fills_an_event_without_one_and_never_overrides() {
    let s = service(FailMode::Closed, false);
    let origin = Origin {
        door: Door::Library,
        framework: Some("claudecode".into()),
        session_id: Some("from-origin".into()),
        tenant: None,
    };
    let no_session = event(json!({"stage": "tool.before", "tool_name": "Bash",
                                  "tool_args": {"command": "ls"}}));
    let r = s.decide(no_session.clone(), &origin, Instant::now());
    assert_eq!(r.action, Action::Allow);
    // The second call of the origin's session: the SQL rule saw both.
    let r = s.decide(no_session, &origin, Instant::now());
    assert_eq!(r.action, Action::Block, "{:?}", r.reasons);
    // An event's own session is kept: a fresh session is not blocked.
    let own = call("own", "ls");
    assert_eq!(s.decide(own, &origin, Instant::now()).action, Action::Allow);
}

#[test]
fn a_failed_side_store_falls_to_fail_mode_and_keeps_the_compiled_results() {
    for (mode, monitor, want, would_block) in [
        (FailMode::Closed, false, "block", false),
        (FailMode::Open, false, "redact", false),
        (FailMode::Closed, true, "detect", true),
    ] {
        let s = service(mode, monitor);
        let pending = s.begin(call("s2", "echo tok-123456"), &Origin::door(Door::Library));
        let failed = Some(Err(("sql_store", "disk I/O error".to_string())));
        let r = s.finish(
            pending,
            failed,
            &Origin::door(Door::Library),
            Instant::now(),
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["action"], want, "{v}");
        assert_eq!(
            v["would_block"].as_bool().unwrap_or(false),
            would_block,
            "{v}"
        );
        assert_eq!(v["failure"]["kind"], "sql_store", "{v}");
        assert_eq!(v["failure"]["fail_mode"], mode.as_str(), "{v}");
        assert_eq!(v["results"][0]["rule_id"], "fixture-token", "{v}");
        assert!(
            v["reasons"][1]
                .as_str()
                .unwrap()
                .starts_with("SQL rules did not run (sql_store: disk I/O error)"),
            "{v}"
        );
        // Rewritten content only when the answer is `redact`.
        assert_eq!(v.get("redacted_event").is_some(), want == "redact", "{v}");
        assert!(s
            .metrics
            .render()
            .contains("parallax_evaluation_failures_total 1\n"));
    }
}

#[test]
fn no_verdict_is_answered_by_fail_mode_and_says_so() {
    for (mode, want) in [(FailMode::Closed, "block"), (FailMode::Open, "allow")] {
        let s = service(mode, false);
        let r = s.failed("internal", "the engine panicked".into(), Instant::now());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["action"], want);
        assert_eq!(v["failure"]["kind"], "internal");
        assert_eq!(v["failure"]["fail_mode"], mode.as_str());
        assert!(v["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("evaluation failed (internal: the engine panicked)"));
    }
}
