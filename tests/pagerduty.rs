//! `reporting.pagerduty` over real HTTP: a server on 127.0.0.1 deciding
//! parlok's example file pages a fake Events API v2 receiver — a trigger per
//! deciding rule on a block and on a hold, one dedup key per session and
//! rule, a resolve once the held call's approval is decided — and sends
//! nothing for an allowed call, and never the event's own text.

#[path = "support/fake_upstream.rs"]
mod fake_upstream;
mod support;

use fake_upstream::{Canned, FakeUpstream, Received};
use parallax::settings::PagerDutySettings;
use parallax_runtime::Priority;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

const SEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/parlok/firewall.yaml"
);
const ROUTING_KEY: &str = "R0UT1NGKEYtest000000000000000000";
const ALICE: &str = "alice-approver-token";

fn call(session: &str, adapter_action: &str, recipient: &str, body: &str) -> Value {
    json!({
        "stage": "tool.before",
        "session_id": session,
        "tool_name": adapter_action,
        "tool_args": {"recipient": recipient, "body": body, "subject": null, "metadata": {}},
    })
}

fn wait_for(fake: &FakeUpstream, n: usize) -> Vec<Received> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = fake.requests();
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn blocks_and_holds_page_and_a_decided_approval_resolves() {
    let fake = FakeUpstream::start(vec![
        Canned::json(
            &json!({"status": "success", "message": "Event processed"})
        );
        16
    ]);
    let db = temp_dir("pagerduty").join("approvals.db");
    let url = format!("{}/v2/enqueue", fake.url());
    let server = TestServer::start(
        Path::new(SEED),
        move |s| {
            s.approvals.path = db.display().to_string();
            s.approvals.approver_tokens = [("alice".to_string(), ALICE.to_string())].into();
            s.reporting.pagerduty = Some(PagerDutySettings {
                routing_key: ROUTING_KEY.into(),
                events_url: url,
                min_priority: Priority::Low,
                retries: 0,
                ..PagerDutySettings::default()
            });
        },
        |s, m| {
            let pager = parallax::pagerduty::PagerDuty::start(&s.settings.reporting, m)
                .expect("starts")
                .expect("configured");
            s.with_pagerduty(pager)
        },
    );
    let addr = server.addr;

    // Allowed: nothing is sent.
    let r = evaluate(
        addr,
        &call("s-1", "slack.chat_postMessage", "#sales", "Closed a deal"),
    );
    assert_eq!(r["action"], "allow");

    // Two blocks of one rule in one session: two triggers, one incident.
    let sql = "DROP TABLE customers_2026";
    for _ in 0..2 {
        let r = evaluate(addr, &call("s-1", "postgres.execute", "", sql));
        assert_eq!(r["action"], "block");
    }
    let sent = wait_for(&fake, 2);
    assert_eq!(sent.len(), 2, "allowed calls page nobody");
    let (a, b) = (sent[0].json(), sent[1].json());
    assert_eq!(a["routing_key"], ROUTING_KEY);
    assert_eq!(a["event_action"], "trigger");
    assert_eq!(a["dedup_key"], b["dedup_key"]);
    assert_eq!(a["payload"]["source"], "parallax");
    assert_eq!(
        a["payload"]["custom_details"]["rule_id"],
        "firewall.block-prod-drops"
    );
    assert!(a["payload"]["summary"]
        .as_str()
        .unwrap()
        .contains("Destructive schema change blocked in production."));
    for r in &sent {
        let text = String::from_utf8_lossy(&r.body);
        assert!(!text.contains("customers_2026"), "event text sent: {text}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.path_and_query, "/v2/enqueue");
    }

    // A hold in another session: its own incident, resolved when decided.
    let r = evaluate(
        addr,
        &call("s-2", "email.send", "buyer@customer.test", "quote"),
    );
    assert_eq!(r["action"], "approve", "{r}");
    let id = r["approval"]["id"].as_str().unwrap().to_string();
    let sent = wait_for(&fake, 3);
    let held = sent[2].json();
    assert_eq!(held["event_action"], "trigger");
    assert_ne!(held["dedup_key"], a["dedup_key"]);
    assert_eq!(
        held["payload"]["custom_details"]["approval_id"],
        id.as_str()
    );
    let auth = format!("Bearer {ALICE}");
    let decided = request(
        addr,
        "POST",
        &format!("/approvals/{id}/approve"),
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        b"",
    );
    assert_eq!(
        decided.status,
        200,
        "{}",
        String::from_utf8_lossy(&decided.body)
    );
    let sent = wait_for(&fake, 4);
    let resolve = sent[3].json();
    assert_eq!(resolve["event_action"], "resolve");
    assert_eq!(resolve["dedup_key"], held["dedup_key"]);
    assert_eq!(resolve["routing_key"], ROUTING_KEY);
    assert_eq!(
        server
            .metrics
            .pagerduty_sent
            .load(std::sync::atomic::Ordering::Relaxed),
        4
    );
    server.stop();
}

#[test]
fn a_bad_pagerduty_section_is_refused_naming_the_key() {
    let dir = temp_dir("pagerduty-bad");
    std::fs::write(
        dir.join("parallax.yaml"),
        "reporting:\n  pagerduty:\n    routing_key: ''\n    events_url: 'not a url'\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["lint", "-c"])
        .arg(dir.join("parallax.yaml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reporting.pagerduty.routing_key"),
        "{stderr}"
    );
    assert!(
        stderr.contains("reporting.pagerduty.events_url"),
        "{stderr}"
    );
}
