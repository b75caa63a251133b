//! parlok's policy file format as parlok's users write it
//! (`tests/fixtures/parlok/harbor.yaml`, beside the shipped rules): every
//! key a parlok file may hold loads, each decision comes out as parlok
//! describes it, and `recipient.is_first_time` remembers, over real HTTP
//! with the approvals database on disk, who a user has already written to.

mod support;

use parallax::backend;
use parallax_runtime::{Engine, Report};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::OnceLock;
use support::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/parlok/parallax.yaml"
);
const AGENT: &str = "agent-token";
const ALICE: &str = "alice-token";

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| backend::dynamic_engine(Path::new(FIXTURE)).expect("fixture compiles"))
}

fn eval(event: Value) -> Report {
    engine_report::report(engine(), event)
}

fn call(tool: &str, args: Value) -> Value {
    json!({"stage": "tool.before", "tool_name": tool, "tool_args": args})
}

/// `call` at a given time: 2026-03-02 (a Monday) at `hour`:00 UTC.
fn call_at(tool: &str, args: Value, hour: u32) -> Value {
    let mut v = call(tool, args);
    v["timestamp"] = json!(1_772_409_600.0 + f64::from(hour) * 3600.0);
    v
}

/// The action and the rule ids of the harbor file that decided.
fn decided(r: &Report) -> (&'static str, Vec<String>) {
    let ids = r
        .results
        .iter()
        .filter(|x| x.rule_id.starts_with("harbor."))
        .map(|x| x.rule_id.clone())
        .collect();
    (r.action.as_str(), ids)
}

#[test]
fn each_kind_of_call_is_decided_as_parlok_describes() {
    // An internal Slack message with nothing to redact is allowed: the
    // rewrite policy matched but had nothing to change.
    let r = eval(call(
        "slack.chat_postMessage",
        json!({"recipient": "#eng", "body": "deploy finished"}),
    ));
    assert_eq!(decided(&r), ("allow", vec!["harbor.outbound".to_string()]));
    assert_eq!(r.results[0].action.as_str(), "allow");
    assert!(r.rewritten_event.is_none());

    // Personal data in it is rewritten away, the rest kept.
    let r = eval(call(
        "slack.chat_postMessage",
        json!({"recipient": "#eng", "body": "ask jane.doe@example.com about it"}),
    ));
    assert_eq!(r.action.as_str(), "redact", "{:?}", r.results);
    let body = r.rewritten_event.as_ref().expect("rewritten")["tool_args"]["body"].clone();
    let body = body.as_str().unwrap();
    assert!(!body.contains("jane.doe"), "{body}");
    assert!(
        body.starts_with("ask ") && body.ends_with(" about it"),
        "{body}"
    );

    // Money to an outside address waits for a person; so does the CFO,
    // inside; the file's own lists decide what is inside and who is a VIP.
    let r = eval(call(
        "email.send",
        json!({"recipient": "buyer@partner.test", "body": "The invoice is $50,000"}),
    ));
    assert_eq!(
        decided(&r),
        ("approve", vec!["harbor.money-leaving".to_string()])
    );
    let r = eval(call(
        "email.send",
        json!({"recipient": "buyer@partner.test", "body": "see attached",
               "metadata": {"amount": 1200}}),
    ));
    assert_eq!(
        decided(&r),
        ("approve", vec!["harbor.money-leaving".to_string()]),
        "parlok counts a call carrying an amount as financial"
    );
    let r = eval(call(
        "email.send",
        json!({"recipient": "CFO@harbor.test", "body": "lunch?"}),
    ));
    assert_eq!(
        decided(&r),
        ("approve", vec!["harbor.cfo-mail".to_string()])
    );
    let r = eval(call(
        "email.send",
        json!({"recipient": "ana@harbor.test", "body": "lunch?"}),
    ));
    assert_eq!(decided(&r), ("allow", vec!["harbor.outbound".to_string()]));

    // Destructive SQL is denied (the `\\b` of the when string is a word
    // boundary, as parlok reads it); reads are allowed.
    let r = eval(call(
        "postgres.execute",
        json!({"body": "TRUNCATE TABLE orders"}),
    ));
    assert_eq!(
        decided(&r),
        ("block", vec!["harbor.no-truncate".to_string()])
    );
    let r = eval(call(
        "postgres.execute",
        json!({"body": "select count(*) from orders"}),
    ));
    assert_eq!(decided(&r), ("allow", vec!["harbor.reads".to_string()]));

    // parlok's after_hours('UTC', 9, 17) is true outside 09:00-17:00.
    let alter = json!({"body": "alter table orders add note text"});
    let r = eval(call_at("postgres.execute", alter.clone(), 20));
    assert_eq!(
        decided(&r),
        ("block", vec!["harbor.no-night-schema-changes".to_string()])
    );
    // In working hours a change must cite a ticket (a named template).
    let r = eval(call_at("postgres.execute", alter, 10));
    assert_eq!(r.action.as_str(), "block", "{:?}", r.results);
    assert!(
        r.reasons.iter().any(|x| x.contains("template")),
        "{:?}",
        r.reasons
    );
    let r = eval(call_at(
        "postgres.execute",
        json!({"body": "CHG-88: alter table orders add note text"}),
        10,
    ));
    assert_eq!(
        decided(&r),
        (
            "allow",
            vec!["harbor.schema-changes-cite-a-ticket".to_string()]
        )
    );

    // A call of one of the file's adapters that no policy matches is
    // denied; other tools are not the file's business.
    let r = eval(call("postgres.copy", json!({"body": "orders to '/tmp/x'"})));
    assert_eq!(decided(&r), ("block", vec!["harbor.default".to_string()]));
    let r = eval(call(
        "twilio.sms",
        json!({"recipient": "+15550100", "body": "hi"}),
    ));
    assert!(decided(&r).1.is_empty(), "{:?}", r.results);
}

#[test]
fn without_the_memory_every_outside_recipient_is_a_first_time() {
    // `parallax test`, a replay, a hook deciding alone: nobody looked the
    // recipient up, so the trigger errs towards asking.
    let r = eval(call(
        "email.send",
        json!({"recipient": "ops@newco.test", "body": "hello"}),
    ));
    assert_eq!(
        decided(&r),
        ("approve", vec!["harbor.new-partner".to_string()])
    );
}

#[test]
fn parlok_only_keys_are_checked_like_the_rest() {
    let dir = temp_dir("parlok-format-errors");
    let write = |name: &str, policy: &str| {
        std::fs::write(
            dir.join("parallax.yaml"),
            format!("policy_files: [{name}.yaml]\n"),
        )
        .unwrap();
        std::fs::write(dir.join(format!("{name}.yaml")), policy).unwrap();
        match parallax_compiler::load(&dir.join("parallax.yaml")) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    };
    let e = write(
        "pager",
        "version: 1\npolicies:\n  - name: p\n    decision: approve\n    via: pager\n",
    );
    assert!(
        e.contains("pager.yaml")
            && e.contains("via `pager`")
            && e.contains("slack, webhook, console"),
        "{e}"
    );
    let e = write(
        "hours",
        "version: 1\npolicies:\n  - name: p\n    when: after_hours('UTC', 9, 30)\n    decision: deny\n",
    );
    assert!(e.contains("hours are 0 to 24"), "{e}");
    let e = write("colour", "version: 1\ncolour: blue\npolicies: []\n");
    assert!(e.contains("colour.yaml") && e.contains("colour"), "{e}");
}

// ---------------------------------------------------------------------------
// The known-recipients memory, over HTTP
// ---------------------------------------------------------------------------

fn server(db: &Path) -> TestServer {
    let db = db.display().to_string();
    TestServer::start(
        Path::new(FIXTURE),
        move |s| {
            s.server.auth_token = Some(AGENT.into());
            s.approvals.path = db;
            s.approvals.approver_tokens = [("alice".to_string(), ALICE.to_string())]
                .into_iter()
                .collect();
        },
        |service, _| service,
    )
}

fn send(addr: std::net::SocketAddr, user: &str, to: &str) -> Value {
    let body = json!({"stage": "tool.before", "user_id": user, "session_id": format!("s-{user}"),
        "tool_name": "email.send", "tool_args": {"recipient": to, "body": "hello"}});
    let r = request(
        addr,
        "POST",
        "/evaluate",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &format!("Bearer {AGENT}")),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

fn decide(addr: std::net::SocketAddr, id: &str, verb: &str) {
    let r = request(
        addr,
        "POST",
        &format!("/approvals/{id}/{verb}"),
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &format!("Bearer {ALICE}")),
        ],
        b"{}",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

fn harbor_rules(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["rule_id"].as_str())
        .filter(|id| id.starts_with("harbor."))
        .map(String::from)
        .collect()
}

#[test]
fn a_recipient_is_new_until_a_call_to_them_goes_ahead_per_user_and_across_restarts() {
    let dir = temp_dir("parlok-first-time");
    let db = dir.join("state.db");
    let s = server(&db);

    // First mail to a new partner: held; once approved, the partner is
    // known to this user and the next mail just goes (with nothing to
    // redact).
    let first = send(s.addr, "ana", "ops@newco.test");
    assert_eq!(first["action"], "approve", "{first}");
    assert_eq!(harbor_rules(&first), ["harbor.new-partner"]);
    let id = first["approval"]["id"].as_str().unwrap().to_string();
    let again = send(s.addr, "ana", "ops@newco.test");
    assert_eq!(
        again["action"], "approve",
        "still new while pending: {again}"
    );
    decide(s.addr, &id, "approve");
    let known = send(s.addr, "ana", "OPS@newco.test ");
    assert_eq!(known["action"], "allow", "{known}");
    assert_eq!(harbor_rules(&known), ["harbor.outbound"]);

    // Another user has never written to them.
    let other = send(s.addr, "ben", "ops@newco.test");
    assert_eq!(other["action"], "approve", "{other}");
    assert_eq!(harbor_rules(&other), ["harbor.new-partner"]);

    // A denied call teaches nothing.
    let denied = send(s.addr, "ana", "sales@rival.test");
    let denied_id = denied["approval"]["id"].as_str().unwrap().to_string();
    decide(s.addr, &denied_id, "deny");
    assert_eq!(send(s.addr, "ana", "sales@rival.test")["action"], "approve");
    s.stop();

    // The memory is in the approvals database: a restart keeps it.
    let s = server(&db);
    let after = send(s.addr, "ana", "ops@newco.test");
    assert_eq!(after["action"], "allow", "{after}");
    s.stop();
    // The memory holds keys, not addresses.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let keys: Vec<String> = conn
        .prepare("SELECT key FROM known_recipients")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(
        keys[0].len() == 64 && keys[0].chars().all(|c| c.is_ascii_hexdigit()),
        "{keys:?}"
    );
}
