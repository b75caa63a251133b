//! ATR correlation rules (`detection.trace` / `detection.behavioral`) on the
//! side-store, without the ATR corpus: four rules written for these tests
//! (tests/fixtures/atr_trace) cover forbid-after, require-before with
//! `one_of_shapes` and a placeholder, an invariant and a windowed count with
//! a cooldown. Their own cases replay as sessions through a real in-memory
//! SQLite; then the `parallax eval` binary runs the same rules on plain
//! Parallax events (no span metadata on the call), as an agent would send
//! them.

mod support;

use parallax::casework::atr_cases::{self, CaseKind};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/atr_trace");

#[test]
fn the_fixture_rules_pass_their_own_trace_cases() {
    let dir = Path::new(FIXTURE);
    let engine = atr_cases::compile(dir, None).expect("the trace rules compile");
    let sql: Vec<&str> = engine
        .program()
        .sql
        .iter()
        .map(|s| engine.program().rules[s.rule as usize].id.as_str())
        .collect();
    assert_eq!(
        sql,
        ["TRACE-0003", "TRACE-0004", "TRACE-0001", "TRACE-0002"],
        "each correlation rule runs as a SQL rule"
    );
    let summary = atr_cases::run(&engine, dir).expect("the cases run");
    println!("{summary}");
    assert_eq!(summary.rules, 4, "{summary}");
    assert!(summary.failures.is_empty(), "{summary}");
    assert_eq!(summary.total(CaseKind::TruePositive).passed, 8, "{summary}");
    assert_eq!(
        summary.total(CaseKind::TrueNegative).passed,
        12,
        "{summary}"
    );
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("parallax-atr-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("rules")).expect("temp dir");
    d
}

/// `parallax eval` of `events` (one session) with the fixture rules; the
/// verdict of each line.
fn eval(dir: &Path, events: &[Value]) -> Vec<Value> {
    let config = dir.join("parallax.yaml");
    std::fs::write(
        &config,
        json!({"evaluators": [], "atr_dirs": [Path::new(FIXTURE).join("rules")]}).to_string(),
    )
    .expect("write config");
    let input = dir.join("events.jsonl");
    let mut f = std::fs::File::create(&input).expect("events file");
    for e in events {
        writeln!(f, "{e}").expect("write event");
    }
    support::eval_file(&config, &input)
}

fn rules(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|x| x["rule_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn plain_events_are_spans_too() {
    let dir = temp_dir("eval");
    let t0 = 1_800_000_000.0;
    // A result tagged as coming from a vault (metadata attributes, no kind:
    // a tool.after event is a TOOL_RESPONSE span), then a plain upload call.
    let attack = [
        json!({"stage": "tool.after", "session_id": "s1", "timestamp": t0, "tool_name": "vault.read",
               "tool_result": "ok", "metadata": {"attributes": {"store.kind": "vault"}}}),
        json!({"stage": "tool.before", "session_id": "s1", "timestamp": t0 + 5.0,
               "tool_name": "http.upload", "tool_args": {"url": "https://files.example/u"}}),
    ];
    let v = eval(&dir, &attack);
    assert_eq!(v[1]["action"], "block", "{}", v[1]);
    assert!(rules(&v[1]).contains(&"TRACE-0001".to_string()), "{}", v[1]);
    // The same upload in a session that read no vault, and a deploy whose
    // requester is its owner (arguments of a plain call): nothing fires.
    let benign = [
        json!({"stage": "tool.after", "session_id": "s2", "timestamp": t0, "tool_name": "cache.read",
               "tool_result": "ok", "metadata": {"attributes": {"store.kind": "cache"}}}),
        json!({"stage": "tool.before", "session_id": "s2", "timestamp": t0 + 5.0,
               "tool_name": "http.upload", "tool_args": {"url": "https://files.example/u"}}),
        json!({"stage": "tool.before", "session_id": "s2", "timestamp": t0 + 6.0,
               "tool_name": "deploy", "metadata": {"attributes": {"owner": "ana"}},
               "tool_args": {"environment": "production", "requested_by": "ana"}}),
    ];
    for (i, v) in eval(&dir, &benign).iter().enumerate() {
        assert_eq!(v["action"], "allow", "benign event {i}: {v}");
    }
    // A deploy requested by someone else with no sign-off before it: the
    // `require` rule blocks it, read from plain tool arguments.
    let deploy = [
        json!({"stage": "tool.before", "session_id": "s3", "timestamp": t0,
               "tool_name": "deploy", "metadata": {"attributes": {"owner": "ana"}},
               "tool_args": {"environment": "production", "requested_by": "bot"}}),
    ];
    let v = eval(&dir, &deploy);
    assert_eq!(v[0]["action"], "block", "{}", v[0]);
    assert!(rules(&v[0]).contains(&"TRACE-0002".to_string()), "{}", v[0]);
    let _ = std::fs::remove_dir_all(&dir);
}
