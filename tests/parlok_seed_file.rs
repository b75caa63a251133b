//! parlok's own example policy file, byte for byte as its README prints it
//! (`tests/fixtures/parlok/firewall.yaml`), given to Parallax alone: no
//! `parallax.yaml`, no rules tree. Each example of parlok's README decides
//! as parlok documents, over real HTTP against `parallax serve -c
//! firewall.yaml`'s service and with the CLI; and each transform of
//! parlok's list works with nothing else loaded.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

const SEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/parlok/firewall.yaml"
);

/// The fixture is the user's file: the same bytes as parlok's README (the
/// copy in `../shared/seeds` when it is beside the repository).
#[test]
fn the_fixture_is_parloks_file_byte_for_byte() {
    let ours = std::fs::read(SEED).unwrap();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/seeds/parlok-firewall.yaml");
    match std::fs::read(&seed) {
        Ok(theirs) => assert_eq!(ours, theirs, "the fixture drifted from parlok's file"),
        Err(_) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{} is missing under CI", seed.display())
        }
        Err(_) => println!(
            "skipped: {} not found; fixture checked alone",
            seed.display()
        ),
    }
    let text = String::from_utf8(ours).unwrap();
    assert!(text.contains("via: slack_approval_card"));
    assert!(text.contains("transforms: [redact_pii, clamp_length(2000)]"));
}

fn call(adapter: &str, action: &str, recipient: &str, body: &str) -> Value {
    json!({
        "stage": "tool.before",
        "tool_name": format!("{adapter}.{action}"),
        "tool_args": {"recipient": recipient, "body": body, "subject": null, "metadata": {}},
    })
}

fn rule_ids(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_readme_examples_decide_as_parlok_documents_over_http() {
    let server = TestServer::start(Path::new(SEED), |_| {}, |s, _| s);
    let addr = server.addr;

    // An internal channel with nothing to redact: allowed.
    let r = evaluate(
        addr,
        &call("slack", "chat_postMessage", "#sales", "Closed a deal"),
    );
    assert_eq!(r["action"], "allow", "{r}");

    // PII in an internal message: rewritten before it is sent, by the
    // transform alone (no redaction rules are loaded).
    let r = evaluate(
        addr,
        &call(
            "slack",
            "chat_postMessage",
            "#sales",
            "Customer SSN 123-45-6789 paid with 4111 1111 1111 1111",
        ),
    );
    assert_eq!(r["action"], "redact", "{r}");
    let body = r["rewritten_event"]["tool_args"]["body"].as_str().unwrap();
    assert_eq!(body, "Customer SSN [REDACTED] paid with [REDACTED]");
    assert_eq!(rule_ids(&r), ["firewall.redact-pii"]);

    // clamp_length(2000): a long message is cut to 2000 characters.
    let long = "a".repeat(2500);
    let r = evaluate(addr, &call("slack", "chat_postMessage", "#sales", &long));
    assert_eq!(r["action"], "redact", "{r}");
    let body = r["rewritten_event"]["tool_args"]["body"].as_str().unwrap();
    assert_eq!(body.chars().count(), 2000);

    // An external recipient: held for approval (first match wins, so the
    // rewrite policy after it does not decide).
    let r = evaluate(
        addr,
        &call("email", "send", "buyer@customer.test", "Your quote"),
    );
    assert_eq!(r["action"], "approve", "{r}");
    assert_eq!(rule_ids(&r), ["firewall.external-message-approval"]);
    let id = r["approval"]["id"]
        .as_str()
        .expect("an approval to wait for");
    assert!(!id.is_empty());

    // DROP TABLE through the postgres adapter: denied with the reason.
    let r = evaluate(
        addr,
        &call("postgres", "execute", "", "drop   TABLE customers;"),
    );
    assert_eq!(r["action"], "block", "{r}");
    assert!(
        r["reasons"][0]
            .as_str()
            .unwrap()
            .contains("Destructive schema change blocked in production."),
        "{r}"
    );

    // A call of a governed adapter no policy matches: denied (fail closed).
    let r = evaluate(addr, &call("postgres", "execute", "", "SELECT 1"));
    assert_eq!(r["action"], "block", "{r}");
    assert_eq!(rule_ids(&r), ["firewall.default"]);
    server.stop();
}

fn parallax() -> Command {
    Command::new(env!("CARGO_BIN_EXE_parallax"))
}

#[test]
fn lint_and_test_take_the_bare_file() {
    let out = parallax().args(["lint", SEED]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("a parlok policy file"), "{stdout}");
    assert!(stdout.contains("4 rules"), "{stdout}");

    let out = parallax()
        .args(["test", SEED, "--call"])
        .arg(r##"{"adapter":"slack","action":"chat_postMessage","recipient":"#sales","body":"SSN 123-45-6789"}"##)
        .arg("--call")
        .arg(r#"{"adapter":"postgres","action":"execute","body":"DROP TABLE x"}"#)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("slack.chat_postMessage: rewrite"),
        "{stdout}"
    );
    assert!(stdout.contains(r#""body":"SSN [REDACTED]""#), "{stdout}");
    assert!(stdout.contains("postgres.execute: deny"), "{stdout}");

    // A call that is not one: the error names the problem.
    let out = parallax()
        .args(["test", SEED, "--call", r#"{"adapter":"slack"}"#])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`action` is required"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A policy file of its own (in a temporary folder, nothing beside it).
fn bare_file(name: &str, policies: &str) -> PathBuf {
    let dir = temp_dir(name);
    let path = dir.join("firewall.yaml");
    std::fs::write(&path, format!("version: 1\npolicies:\n{policies}")).unwrap();
    path
}

fn rewrite_policy(transforms: &str) -> String {
    format!(
        "  - name: out\n    match:\n      adapter: slack\n    decision: rewrite\n    transforms: {transforms}\n"
    )
}

fn decide(path: &Path, body: &str) -> Value {
    let engine = parallax::backend::dynamic_engine(path).expect("compiles");
    let report =
        support::engine_report::report(&engine, call("slack", "chat_postMessage", "#eng", body));
    serde_json::to_value(&report).unwrap()
}

fn sent(v: &Value) -> String {
    v["rewritten_event"]["tool_args"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn each_transform_works_with_nothing_else_loaded() {
    let p = bare_file("parlok-secrets", &rewrite_policy("[redact_secrets]"));
    let r = decide(
        &p,
        "deploy key AKIAIOSFODNN7EXAMPLE and token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    );
    assert_eq!(
        sent(&r),
        "deploy key [REDACTED] and token [REDACTED]",
        "{r}"
    );

    let p = bare_file("parlok-urls", &rewrite_policy("[strip_urls]"));
    let r = decide(&p, "see https://evil.example/x?a=1 now");
    assert_eq!(sent(&r), "see [URL] now", "{r}");

    let p = bare_file("parlok-tone", &rewrite_policy("[tone_check]"));
    let r = decide(&p, "PLEASE SEND THE REPORT TODAY, WE ARE WAITING!!!");
    assert_eq!(r["action"], "redact", "{r}");
    assert_eq!(
        sent(&r),
        "Please send the report today, we are waiting!",
        "{r}"
    );
    let r = decide(&p, "you are useless, fix it");
    assert_eq!(r["action"], "block", "{r}");
    assert!(
        r["reasons"]
            .to_string()
            .contains("hostile language (`useless`)"),
        "{r}"
    );

    let p = bare_file(
        "parlok-template",
        &rewrite_policy(r#"["enforce_template('^\\[[A-Z]+\\] ')"]"#),
    );
    assert_eq!(decide(&p, "[OPS] restart done")["action"], "allow");
    let r = decide(&p, "restart done");
    assert_eq!(r["action"], "block", "{r}");
    assert!(
        r["reasons"]
            .to_string()
            .contains("does not match its template"),
        "{r}"
    );

    let p = bare_file("parlok-pii", &rewrite_policy("[redact_pii]"));
    let r = decide(&p, "mail jo@corp.test or call +44 20 7946 0958");
    assert_eq!(sent(&r), "mail [REDACTED] or call [REDACTED]", "{r}");
}

#[test]
fn parlok_approver_names_are_accepted_and_unknown_ones_refused() {
    let p = bare_file(
        "parlok-via",
        "  - name: hold\n    match:\n      adapter: email\n    decision: approve\n    via: [webhook_approver, slack_approval_card]\n",
    );
    let rules = parallax_compiler::load(&p).expect("loads");
    let compiled = parallax_compiler::plan::compile(&rules, &Default::default());
    let via = &compiled.program.rules[0].approval.as_ref().unwrap().via;
    assert_eq!(via, &["webhook".to_string(), "slack".to_string()]);

    let p = bare_file(
        "parlok-via-bad",
        "  - name: hold\n    decision: approve\n    via: carrier_pigeon\n",
    );
    let e = parallax_compiler::load(&p).unwrap_err().to_string();
    assert!(
        e.contains("via `carrier_pigeon`") && e.contains("slack_approval_card"),
        "{e}"
    );
}

/// parlok's `state_db` is where a bare file's approvals are kept.
#[test]
fn state_db_names_the_approvals_file() {
    let dir = temp_dir("parlok-state-db");
    let path = dir.join("firewall.yaml");
    std::fs::write(
        &path,
        "version: 1\nstate_db: state.db\npolicies:\n  - name: hold\n    match:\n      adapter: email\n    decision: approve\n",
    )
    .unwrap();
    let server = TestServer::start(&path, |_| {}, |s, _| s);
    let r = evaluate(server.addr, &call("email", "send", "x@y.test", "hi"));
    assert_eq!(r["action"], "approve", "{r}");
    server.stop();
    assert!(
        dir.join("state.db").is_file(),
        "the approval went to state_db"
    );
}
