//! The approvals' notifiers over real HTTP on 127.0.0.1: a fake Slack gets
//! the card (`chat.postMessage`) and its update (`chat.update`); a click
//! comes back signed through `POST /slack/interactions`, where a forged or
//! stale signature and an unmapped Slack user change nothing; the generic
//! webhook's notification arrives signed, and its approve callback works
//! once while forged or reused tokens are refused.

#[path = "support/fake_upstream.rs"]
mod fake_upstream;
mod support;

use fake_upstream::{Canned, FakeUpstream, Received};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/approval_notifiers/parallax.yaml"
);
const AGENT: &str = "agent-token";
const SIGNING_SECRET: &str = "slack-signing-secret";
const HOOK_SECRET: &str = "approvals-hook-secret";

fn server(db: &Path, tweak: impl FnOnce(&mut parallax::settings::Settings)) -> TestServer {
    let db = db.display().to_string();
    TestServer::start(
        Path::new(FIXTURE),
        move |s| {
            s.server.auth_token = Some(AGENT.into());
            s.approvals.path = db;
            s.approvals.approver_tokens = [("alice".to_string(), "alice-token".to_string())]
                .into_iter()
                .collect();
            s.approvals.notify_retries = 0;
            tweak(s);
        },
        |service, _| service,
    )
}

fn call(command: &str) -> Vec<u8> {
    json!({"stage": "tool.before", "session_id": "s-notify", "tool_name": "Bash",
           "tool_args": {"command": command}})
    .to_string()
    .into_bytes()
}

fn evaluate_as_agent(addr: std::net::SocketAddr, path: &str, body: &[u8]) -> Value {
    let auth = format!("Bearer {AGENT}");
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

fn status_of(addr: std::net::SocketAddr, id: &str) -> Value {
    let auth = format!("Bearer {AGENT}");
    request(
        addr,
        "GET",
        &format!("/approvals/{id}"),
        &[("Authorization", &auth)],
        b"",
    )
    .json()["status"]
        .clone()
}

/// The requests `fake` got on `path`, waiting until there are `n`.
fn wait_for(fake: &FakeUpstream, path: &str, n: usize) -> Vec<Received> {
    for _ in 0..400 {
        let got: Vec<Received> = fake
            .requests()
            .into_iter()
            .filter(|r| r.path_and_query == path)
            .collect();
        if got.len() >= n {
            return got;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "{path}: fewer than {n} requests; got {:?}",
        fake.requests()
            .iter()
            .map(|r| r.path_and_query.clone())
            .collect::<Vec<_>>()
    );
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Slack's signature, computed here from Slack's specification.
fn slack_signature(secret: &str, ts: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{ts}:").as_bytes());
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v0={hex}")
}

/// A button click as Slack posts it.
fn click_body(user: &str, action_id: &str, id: &str) -> Vec<u8> {
    let payload = json!({
        "type": "block_actions",
        "user": {"id": user, "username": "someone"},
        "channel": {"id": "C0APPROVALS"},
        "message": {"ts": "1700000000.000100"},
        "container": {"type": "message", "message_ts": "1700000000.000100",
                      "channel_id": "C0APPROVALS"},
        "actions": [{"action_id": action_id, "block_id": "parallax_approval",
                     "value": id, "type": "button"}],
        "response_url": "http://127.0.0.1:9/unused",
    });
    form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish()
        .into_bytes()
}

fn interact(
    addr: std::net::SocketAddr,
    body: &[u8],
    ts: &str,
    signature: &str,
) -> support::Response {
    request(
        addr,
        "POST",
        "/slack/interactions",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("X-Slack-Request-Timestamp", ts),
            ("X-Slack-Signature", signature),
        ],
        body,
    )
}

fn slack_ok(extra: Value) -> Canned {
    let mut v = json!({"ok": true});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    Canned::json(&v)
}

#[test]
fn a_slack_click_signed_by_slack_decides_and_the_card_shows_the_outcome() {
    let dir = temp_dir("notify-slack");
    let slack = FakeUpstream::start(vec![
        slack_ok(json!({"channel": "C0APPROVALS", "ts": "1700000000.000100"})),
        slack_ok(json!({"channel": "C0APPROVALS", "ts": "1700000000.000100"})),
    ]);
    let api_base = slack.url();
    let s = server(&dir.join("approvals.db"), move |s| {
        let sl = &mut s.approvals.slack;
        sl.bot_token = Some("xoxb-test-token".into());
        sl.channel = Some("C0APPROVALS".into());
        sl.signing_secret = Some(SIGNING_SECRET.into());
        sl.api_base = api_base;
        sl.approvers = [
            ("U0ALICE".to_string(), "alice".to_string()),
            ("U0BOB".into(), "bob".into()),
        ]
        .into_iter()
        .collect();
    });
    let addr = s.addr;
    let waiting = std::thread::spawn(move || {
        evaluate_as_agent(addr, "/evaluate?wait=30", &call("git push origin main"))
    });
    // The card: chat.postMessage with the bot token, two buttons, the id.
    let posted = wait_for(&slack, "/chat.postMessage", 1);
    let post = &posted[0];
    assert_eq!(post.method, "POST");
    assert_eq!(post.header("authorization"), Some("Bearer xoxb-test-token"));
    let card = post.json();
    assert_eq!(card["channel"], "C0APPROVALS");
    let blocks = card["blocks"].as_array().unwrap();
    let actions = blocks
        .iter()
        .find(|b| b["type"] == "actions")
        .unwrap_or_else(|| panic!("no buttons: {card}"));
    let buttons = actions["elements"].as_array().unwrap();
    assert_eq!(buttons.len(), 2, "{card}");
    assert_eq!(buttons[0]["action_id"], "parallax_approve");
    assert_eq!(buttons[0]["text"]["text"], "Approve");
    assert_eq!(buttons[1]["action_id"], "parallax_deny");
    assert_eq!(buttons[1]["text"]["text"], "Deny");
    let id = buttons[0]["value"].as_str().unwrap().to_string();
    assert!(id.starts_with("apr_"), "{id}");
    assert_eq!(buttons[1]["value"], id.as_str());
    assert!(card.to_string().contains("deploy-to-main"), "{card}");

    // Refused before acting, and nothing changes: a forged signature, a
    // stale (replayed) timestamp, no signature at all.
    let body = click_body("U0ALICE", "parallax_approve", &id);
    let ts = now().to_string();
    interact(
        addr,
        &body,
        &ts,
        &slack_signature("not-the-secret", &ts, &body),
    )
    .assert_error(401, "invalid_signature");
    let mut tampered = click_body("U0ALICE", "parallax_deny", &id);
    tampered.push(b' ');
    interact(
        addr,
        &tampered,
        &ts,
        &slack_signature(SIGNING_SECRET, &ts, &body),
    )
    .assert_error(401, "invalid_signature");
    let stale = (now() - 6 * 60).to_string();
    interact(
        addr,
        &body,
        &stale,
        &slack_signature(SIGNING_SECRET, &stale, &body),
    )
    .assert_error(401, "stale_request");
    request(addr, "POST", "/slack/interactions", &[], &body).assert_error(401, "unsigned");
    assert_eq!(status_of(addr, &id), "pending");

    // Signed, but by a Slack user no approver maps to; bob is mapped but
    // the rule names alice only.
    let eve = click_body("U0EVE", "parallax_approve", &id);
    interact(addr, &eve, &ts, &slack_signature(SIGNING_SECRET, &ts, &eve))
        .assert_error(403, "slack_user_not_mapped");
    let bob = click_body("U0BOB", "parallax_approve", &id);
    interact(addr, &bob, &ts, &slack_signature(SIGNING_SECRET, &ts, &bob))
        .assert_error(403, "approver_not_allowed");
    assert_eq!(status_of(addr, &id), "pending");
    assert_eq!(slack.requests().len(), 1, "no update for a refused click");

    // Alice's click, signed: approved, and the waiting call goes ahead.
    let r = interact(
        addr,
        &body,
        &ts,
        &slack_signature(SIGNING_SECRET, &ts, &body),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let answer = waiting.join().expect("the waiting call");
    assert_eq!(answer["action"], "allow", "{answer}");
    assert_eq!(answer["approval"]["status"], "approved");
    assert_eq!(answer["approval"]["decided_by"], "alice");

    // The card is updated with the outcome, buttons gone.
    let updated = wait_for(&slack, "/chat.update", 1);
    let u = updated[0].json();
    assert_eq!(u["channel"], "C0APPROVALS");
    assert_eq!(u["ts"], "1700000000.000100");
    assert!(
        u["text"].as_str().unwrap().contains("Approved by alice"),
        "{u}"
    );
    assert!(
        !u["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "actions"),
        "{u}"
    );
    // A second click: the outcome on record stands.
    let deny = click_body("U0ALICE", "parallax_deny", &id);
    let r = interact(
        addr,
        &deny,
        &ts,
        &slack_signature(SIGNING_SECRET, &ts, &deny),
    );
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["approval"]["status"], "approved");
}

/// Checks `got`'s `X-Parallax-Signature` against the approvals secret.
fn assert_signed(got: &Received) {
    let ts = got.header("x-parallax-timestamp").expect("a timestamp");
    let sig = got.header("x-parallax-signature").expect("a signature");
    let mut mac = Hmac::<Sha256>::new_from_slice(HOOK_SECRET.as_bytes()).unwrap();
    mac.update(format!("{ts}.").as_bytes());
    mac.update(&got.body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(sig, format!("sha256={hex}"));
}

/// The path and query of a callback URL under `base`.
fn local(url: &str, base: &str) -> String {
    url.strip_prefix(base)
        .unwrap_or_else(|| panic!("{url} is not under {base}"))
        .to_string()
}

fn callback(addr: std::net::SocketAddr, path: &str) -> support::Response {
    request(addr, "POST", path, &[], b"")
}

#[test]
fn the_webhook_notification_is_signed_and_its_callback_works_once() {
    let dir = temp_dir("notify-webhook");
    let hook = FakeUpstream::start(vec![
        Canned::json(&json!({})),
        Canned::json(&json!({})),
        Canned::json(&json!({})),
    ]);
    let url = format!("{}/hooks/approvals", hook.url());
    let s = server(&dir.join("approvals.db"), move |s| {
        s.approvals.webhook_url = Some(url);
        s.approvals.webhook_secret = Some(HOOK_SECRET.into());
        s.approvals.public_url = Some("https://parallax.example/".into());
    });
    let addr = s.addr;
    let v = evaluate_as_agent(
        addr,
        "/evaluate",
        &call("git push origin main && echo tok-123456"),
    );
    let id = v["approval"]["id"].as_str().unwrap().to_string();

    let got = wait_for(&hook, "/hooks/approvals", 1);
    assert_signed(&got[0]);
    let n = got[0].json();
    assert_eq!(n["kind"], "approval");
    assert_eq!(n["transition"], "created");
    assert_eq!(n["approval"]["id"], id.as_str());
    assert_eq!(n["approval"]["status"], "pending");
    assert_eq!(n["event"]["tool_name"], "Bash");
    assert!(!n.to_string().contains("tok-123456"), "masked: {n}");
    let cb = &n["callbacks"][0];
    assert_eq!(cb["approver"], "alice");
    let base = "https://parallax.example";
    let approve = local(cb["approve"].as_str().unwrap(), base);
    let deny = local(cb["deny"].as_str().unwrap(), base);
    assert_eq!(n["approve_url"], cb["approve"]);
    assert!(
        approve.starts_with(&format!("/approvals/{id}/callback?decision=approve&")),
        "{approve}"
    );

    // Forged: a changed token, the deny token used to approve, the token
    // moved to another approver; a GET is not a decision.
    let token = |p: &str| p.rsplit_once("token=").unwrap().1.to_string();
    let mut forged = approve.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    callback(addr, &forged).assert_error(403, "invalid_token");
    callback(
        addr,
        &format!(
            "/approvals/{id}/callback?decision=approve&approver=alice&token={}",
            token(&deny)
        ),
    )
    .assert_error(403, "invalid_token");
    callback(addr, &approve.replace("approver=alice", "approver=bob"))
        .assert_error(403, "invalid_token");
    callback(
        addr,
        &format!(
            "/approvals/apr_0000/callback?decision=approve&approver=alice&token={}",
            token(&approve)
        ),
    )
    .assert_error(403, "invalid_token");
    request(addr, "GET", &approve, &[], b"").assert_error(405, "method_not_allowed");
    assert_eq!(status_of(addr, &id), "pending");

    // The real one, once.
    let r = callback(addr, &approve);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let a = r.json();
    assert_eq!(a["status"], "approved");
    assert_eq!(a["decided_by"], "alice");
    let again = callback(addr, &approve);
    assert_eq!(again.status, 409, "a used token is refused");
    assert_eq!(again.json()["error"]["code"], "approval_closed");
    let r = callback(addr, &deny);
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["approval"]["outcome"], "allow");

    // The decision is notified too, signed, without callbacks.
    let got = wait_for(&hook, "/hooks/approvals", 2);
    assert_signed(&got[1]);
    let n = got[1].json();
    assert_eq!(n["transition"], "approved");
    assert_eq!(n["approval"]["decided_by"], "alice");
    assert!(n.get("callbacks").is_none(), "{n}");
}

#[test]
fn callback_urls_default_to_the_servers_own_address() {
    let dir = temp_dir("notify-default-base");
    let hook = FakeUpstream::start(vec![Canned::json(&json!({}))]);
    let url = format!("{}/h", hook.url());
    let s = server(&dir.join("approvals.db"), move |s| {
        s.approvals.webhook_url = Some(url);
        s.approvals.webhook_secret = Some(HOOK_SECRET.into());
    });
    // The data export: its rule names no approver, so the webhook decides.
    let v = evaluate_as_agent(s.addr, "/evaluate", &call("pg_dump customers"));
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    let n = wait_for(&hook, "/h", 1)[0].json();
    let cb = &n["callbacks"][0];
    assert_eq!(cb["approver"], "webhook");
    let deny = local(cb["deny"].as_str().unwrap(), &format!("http://{}", s.addr));
    let r = callback(s.addr, &deny);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"], "denied");
    assert_eq!(status_of(s.addr, &id), "denied");
}

fn with_slack(s: &mut parallax::settings::Settings, api_base: String) {
    let sl = &mut s.approvals.slack;
    sl.bot_token = Some("xoxb-test-token".into());
    sl.channel = Some("C0APPROVALS".into());
    sl.signing_secret = Some(SIGNING_SECRET.into());
    sl.api_base = api_base;
    sl.approvers = [("U0ALICE".to_string(), "alice".to_string())]
        .into_iter()
        .collect();
}

fn approve_over_http(addr: std::net::SocketAddr, id: &str) {
    let r = request(
        addr,
        "POST",
        &format!("/approvals/{id}/approve"),
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer alice-token"),
        ],
        b"{}",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

fn metric(addr: std::net::SocketAddr, sample: &str) -> String {
    let r = request(
        addr,
        "GET",
        "/metrics",
        &[("Authorization", &format!("Bearer {AGENT}"))],
        b"",
    );
    let text = String::from_utf8_lossy(&r.body).to_string();
    text.lines()
        .find(|l| l.starts_with(sample))
        .unwrap_or_else(|| panic!("no {sample} in /metrics:\n{text}"))
        .to_string()
}

#[test]
fn approvals_go_only_to_the_notifiers_their_rules_name() {
    let dir = temp_dir("notify-routing");
    let slack = FakeUpstream::start(
        (0..4)
            .map(|i| slack_ok(json!({"channel": "C0APPROVALS", "ts": format!("17.{i}")})))
            .collect(),
    );
    let hook = FakeUpstream::start((0..4).map(|_| Canned::json(&json!({}))).collect());
    let (api_base, url) = (slack.url(), format!("{}/hooks/approvals", hook.url()));
    let s = server(&dir.join("approvals.db"), move |s| {
        with_slack(s, api_base);
        s.approvals.webhook_url = Some(url);
        s.approvals.webhook_secret = Some(HOOK_SECRET.into());
    });
    // In order: Slack only; nobody (console); every notifier (no via).
    for command in [
        "terraform apply -auto-approve",
        "kubectl delete ns prod",
        "pg_dump prod",
    ] {
        let v = evaluate_as_agent(s.addr, "/evaluate", &call(command));
        assert_eq!(v["action"], "approve", "{v}");
    }
    // Each notifier works through its queue in order: once it has the last
    // approval, it would have had the earlier ones it was meant to get.
    let cards = wait_for(&slack, "/chat.postMessage", 2);
    let hooks = wait_for(&hook, "/hooks/approvals", 1);
    std::thread::sleep(Duration::from_millis(200));
    let cards: Vec<String> = cards.iter().map(|c| c.json().to_string()).collect();
    assert_eq!(slack.requests().len(), 2, "{cards:?}");
    assert!(cards[0].contains("infra-apply"), "{}", cards[0]);
    assert!(cards[1].contains("data-export"), "{}", cards[1]);
    assert_eq!(hook.requests().len(), 1);
    assert_eq!(hooks[0].json()["approval"]["rule_id"], "data-export");
    // The approval says where it was asked.
    let pending = request(
        s.addr,
        "GET",
        "/approvals?status=pending",
        &[("Authorization", &format!("Bearer {AGENT}"))],
        b"",
    )
    .json();
    let text = pending.to_string();
    assert!(text.contains("cluster-delete"), "{text}");
    assert_eq!(
        metric(
            s.addr,
            "parallax_approval_notifications_total{notifier=\"slack\",outcome=\"sent\"}"
        ),
        "parallax_approval_notifications_total{notifier=\"slack\",outcome=\"sent\"} 2"
    );
    assert_eq!(
        metric(
            s.addr,
            "parallax_approval_notifications_total{notifier=\"webhook\",outcome=\"sent\"}"
        ),
        "parallax_approval_notifications_total{notifier=\"webhook\",outcome=\"sent\"} 1"
    );
}

#[test]
fn a_card_posted_before_a_restart_is_updated_after_it() {
    let dir = temp_dir("notify-card-restart");
    let db = dir.join("approvals.db");
    let before = FakeUpstream::start(vec![slack_ok(
        json!({"channel": "C0APPROVALS", "ts": "1700000000.000777"}),
    )]);
    let api_base = before.url();
    let s = server(&db, move |s| with_slack(s, api_base));
    let v = evaluate_as_agent(s.addr, "/evaluate", &call("terraform apply"));
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    wait_for(&before, "/chat.postMessage", 1);
    s.stop();

    // A new process, a new Slack address: the card is where the database
    // says it is.
    let after = FakeUpstream::start(vec![slack_ok(json!({}))]);
    let api_base = after.url();
    let s = server(&db, move |s| with_slack(s, api_base));
    approve_over_http(s.addr, &id);
    let updated = wait_for(&after, "/chat.update", 1);
    let u = updated[0].json();
    assert_eq!(u["channel"], "C0APPROVALS");
    assert_eq!(u["ts"], "1700000000.000777");
    assert!(
        u["text"].as_str().unwrap().contains("Approved by alice"),
        "{u}"
    );
}

#[test]
fn a_rule_routed_to_a_notifier_that_is_not_configured_stops_lint() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["lint", "-c", FIXTURE])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("rule infra-apply: its approvals are asked via slack, but approvals.slack is not configured"),
        "{err}"
    );
}
