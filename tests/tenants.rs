//! Tenants (`tenants:`, compiler/src/tenants.rs): overlays compiled into the
//! one program with the precedence written down — a tenant's own rule >
//! its override of an operator rule > the operator rule — locked rules no
//! tenant can weaken, and the tenant taken from the request's token by the
//! server, never from the event.

mod support;

use parallax::backend;
use parallax_runtime::{Engine, Event, PreparedEvent, Report};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{request, temp_dir, TestServer};

fn sha(token: &str) -> String {
    format!("{:x}", Sha256::digest(token.as_bytes()))
}

const OPERATOR_RULES: &str = r#"
evaluators:
  - name: operator
    type: regex
    stages: [tool.before]
    rules:
      - id: op-block-rm
        action: block
        fields: [command]
        pattern: 'rm\s+-rf\s'
      - id: op-detect-curl
        action: detect
        fields: [command]
        pattern: 'curl\s'
      - id: op-locked-key
        action: block
        locked: true
        fields: [command]
        pattern: 'AKIA[0-9A-Z]{16}'
      - id: op-approve-apply
        action: approve
        fields: [command]
        pattern: 'kubectl\s+apply'
"#;

/// A config with the operator rules above, `tenants` as written, and each
/// tenant rule file `(tenant, file body)` in `<tenant>/regex/own.yaml`.
fn config(dir: &Path, tenants: &str, own: &[(&str, &str)]) -> PathBuf {
    for (t, body) in own {
        let d = dir.join(t).join("regex");
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("own.yaml"), body).expect("rule file");
    }
    std::fs::create_dir_all(dir.join("rules")).expect("an empty rules tree");
    let path = dir.join("parallax.yaml");
    std::fs::write(
        &path,
        format!("rules_dir: rules\n{OPERATOR_RULES}\ntenants:\n{tenants}"),
    )
    .expect("config");
    path
}

fn three_tenants(dir: &Path) -> PathBuf {
    let tenants = format!(
        r#"  payments:
    token_sha256: ["{}"]
    rules_dir: payments
    disabled: [op-detect-curl]
    actions: {{op-block-rm: detect}}
  pilot:
    token_sha256: ["{}"]
    mode: monitor
  team-c:
    token_sha256: ["{}"]
    rules_dir: team-c
"#,
        sha("pay-token"),
        sha("pilot-token"),
        sha("team-c-token")
    );
    config(
        dir,
        &tenants,
        &[
            (
                "payments",
                "- id: pay-no-prod-deploy\n  action: block\n  fields: [command]\n  pattern: 'deploy\\s+prod'\n  tests:\n    match: ['./deploy prod']\n    no_match: ['./deploy staging']\n",
            ),
            (
                "team-c",
                "- id: op-detect-curl\n  title: team-c blocks curl\n  action: block\n  fields: [command]\n  pattern: 'curl\\s'\n",
            ),
        ],
    )
}

fn action(engine: &Engine, tenant: Option<&str>, command: &str) -> (String, bool) {
    let mut event = Event::from_value(json!({"stage": "tool.before", "tool_name": "Bash",
                                             "tool_args": {"command": command}}))
    .expect("event");
    event.tenant = tenant.map(str::to_string);
    let prepared = PreparedEvent::new(event);
    let mut scratch = engine.new_scratch();
    let verdict = engine.evaluate(&prepared, &mut scratch);
    let r = Report::build(engine, &prepared, &verdict, Duration::ZERO);
    (r.action.as_str().to_string(), r.would_block)
}

#[test]
fn each_tenant_gets_its_overlay_in_order_of_precedence() {
    let dir = temp_dir("tenants-overlay");
    let engine = backend::dynamic_engine(&three_tenants(&dir)).expect("compiles");
    let key = "echo AKIAABCDEFGHIJKLMNOP";
    let cases: [(&str, Option<&str>, &str, bool); 16] = [
        // The operator's rules, for a call with no tenant.
        ("rm -rf /tmp/x", None, "block", false),
        ("curl https://x.example", None, "detect", false),
        ("./deploy prod", None, "allow", false),
        (key, None, "block", false),
        // payments: an action override, a disabled rule, a rule of its own.
        ("rm -rf /tmp/x", Some("payments"), "detect", false),
        ("curl https://x.example", Some("payments"), "allow", false),
        ("./deploy prod", Some("payments"), "block", false),
        (key, Some("payments"), "block", false),
        // pilot: everything reports (would_block says what it would do),
        // except the locked rule.
        ("rm -rf /tmp/x", Some("pilot"), "detect", true),
        ("curl https://x.example", Some("pilot"), "detect", false),
        ("./deploy prod", Some("pilot"), "allow", false),
        (key, Some("pilot"), "block", false),
        // team-c: its own rule replaces the operator's of the same id.
        ("rm -rf /tmp/x", Some("team-c"), "block", false),
        ("curl https://x.example", Some("team-c"), "block", false),
        ("./deploy prod", Some("team-c"), "allow", false),
        // An unknown tenant gets the operator's rules.
        ("curl https://x.example", Some("nobody"), "detect", false),
    ];
    for (command, tenant, want, would_block) in cases {
        let got = action(&engine, tenant, command);
        assert_eq!(
            got,
            (want.to_string(), would_block),
            "{command} for {tenant:?}"
        );
    }
    // A tenant's rules pass their own cases, run as that tenant's calls.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["test", "-c"])
        .arg(dir.join("parallax.yaml"))
        .output()
        .expect("parallax test");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_client_cannot_name_a_tenant_in_the_event() {
    let e = Event::from_value(json!({"stage": "tool.before", "tenant": "payments"}));
    assert!(e.is_err(), "{e:?}");
}

/// An overlay, the tenant's own rule files, and what the error must say.
type Wrong<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn no_tenant_weakens_a_locked_rule_and_every_mistake_is_named() {
    let h = sha("t");
    let cases: [Wrong; 7] = [
        (
            "disabled: [op-locked-key]",
            &[],
            "rule `op-locked-key` is locked by the operator and cannot be disabled",
        ),
        (
            "actions: {op-locked-key: detect}",
            &[],
            "cannot be lowered from `block` to `detect`",
        ),
        (
            "rules_dir: t\n    ",
            &[(
                "t",
                "- id: op-locked-key\n  action: detect\n  fields: [command]\n  pattern: 'AKIA'\n",
            )],
            "cannot be replaced by the tenant's own rule",
        ),
        (
            "disabled: [no-such-rule]",
            &[],
            "`no-such-rule` names no rule",
        ),
        ("actions: {op-block-rm: redact}", &[], "cannot be given"),
        ("mode: monitor\n    bogus: 1", &[], "bogus"),
        (
            "mode: monitor\n    token_sha256: [abc]",
            &[],
            "64 hex digits",
        ),
    ];
    for (i, (overlay, own, says)) in cases.into_iter().enumerate() {
        let dir = temp_dir(&format!("tenants-wrong-{i}"));
        let has_tokens = overlay.contains("token_sha256");
        let tokens = if has_tokens {
            String::new()
        } else {
            format!("    token_sha256: [\"{h}\"]\n")
        };
        let tenants = format!("  t:\n{tokens}    {overlay}\n");
        let path = config(&dir, &tenants, own);
        let err = match backend::dynamic_engine(&path) {
            Ok(_) => panic!("case {i} compiled: {overlay}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(says), "case {i}: expected `{says}` in: {err}");
    }
    // Raising a locked rule's action is no weakening.
    let dir = temp_dir("tenants-raise");
    let tenants =
        format!("  t:\n    token_sha256: [\"{h}\"]\n    actions: {{op-detect-curl: block}}\n");
    let engine = backend::dynamic_engine(&config(&dir, &tenants, &[])).expect("compiles");
    assert_eq!(action(&engine, Some("t"), "curl x").0, "block");
}

#[test]
fn the_server_takes_the_tenant_from_the_token_and_keeps_tenants_to_decisions() {
    let dir = temp_dir("tenants-http");
    let config = three_tenants(&dir);
    let log = dir.join("audit.jsonl");
    let audit_path = log.clone();
    let server = TestServer::start(
        &config,
        move |s| s.server.auth_token = Some("operator-token".into()),
        move |state, metrics| {
            let reporting = parallax::settings::ReportingSettings::default();
            state.with_audit(
                parallax::audit::AuditLog::start(&audit_path, &reporting, metrics)
                    .expect("open the audit log"),
            )
        },
    );
    let call = json!({"stage": "tool.before", "session_id": "s1", "tool_name": "Bash",
                      "tool_args": {"command": "curl https://x.example"}})
    .to_string();
    let post = |token: &str, body: &str| {
        request(
            server.addr,
            "POST",
            "/evaluate",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &format!("Bearer {token}")),
            ],
            body.as_bytes(),
        )
    };
    let verdict = |token: &str| {
        let r = post(token, &call);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()["action"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(verdict("operator-token"), "detect");
    assert_eq!(verdict("pay-token"), "allow");
    assert_eq!(verdict("team-c-token"), "block");
    // An unknown token is refused as before.
    assert_eq!(post("nobody-token", &call).status, 401);
    // The event cannot claim a tenant.
    let claimed = json!({"stage": "tool.before", "tenant": "payments", "tool_name": "Bash",
                         "tool_args": {"command": "curl https://x.example"}})
    .to_string();
    assert_eq!(post("team-c-token", &claimed).status, 400);
    // A tenant's token reaches decisions only: not the operator's metrics,
    // reloads, approvals or dashboard data.
    for (method, path) in [
        ("GET", "/metrics"),
        ("POST", "/admin/reload"),
        ("GET", "/approvals"),
        ("GET", "/ui/api/overview"),
    ] {
        let r = request(
            server.addr,
            method,
            path,
            &[("Authorization", "Bearer pay-token")],
            b"",
        );
        assert!(
            r.status == 401 || r.status == 403,
            "{method} {path}: {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
    }
    drop(server);
    // The audit line names the tenant; the operator's has none.
    let lines = support::audit_lines(&log);
    let tenants: Vec<Option<&str>> = lines
        .iter()
        .filter(|l| l["kind"] == "decision")
        .map(|l| l.get("tenant").and_then(Value::as_str))
        .collect();
    assert_eq!(tenants, vec![None, Some("payments"), Some("team-c")]);
}
