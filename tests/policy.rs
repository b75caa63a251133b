//! parlok policies and rewrite transforms through the real engine
//! (`tests/fixtures/policy`: the shipped rules plus `outbound.yaml`), and the
//! compile errors a broken policy file or transform gives.

mod support;

use parallax::backend;
use parallax_runtime::{Engine, Report};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/policy/parallax.yaml"
);

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| backend::dynamic_engine(Path::new(FIXTURE)).expect("fixture compiles"))
}

fn eval_on(e: &Engine, event: Value) -> Report {
    support::engine_report::report(e, event)
}

fn eval(event: Value) -> Report {
    eval_on(engine(), event)
}

fn call(tool: &str, args: Value) -> Value {
    json!({"stage": "tool.before", "tool_name": tool, "tool_args": args})
}

fn ids(r: &Report) -> Vec<&str> {
    r.results.iter().map(|x| x.rule_id.as_str()).collect()
}

#[test]
fn a_matching_call_gets_the_first_matching_policy_decision() {
    // Deny: both the first and the fourth policy match; the first wins.
    let r = eval(call(
        "email.send",
        json!({"recipient": "eve@elsewhere.test", "body": "password: hunter2"}),
    ));
    assert_eq!(r.action.as_str(), "block");
    assert_eq!(ids(&r), ["outbound.no-secrets-outside"]);

    // Approve (a VIP), not the later rewrite.
    let r = eval(call(
        "email.send",
        json!({"recipient": "ceo@northwind.test", "body": "hi"}),
    ));
    assert_eq!(r.action.as_str(), "approve");
    assert_eq!(ids(&r), ["outbound.money-to-vips-needs-a-human"]);
}

#[test]
fn rewrite_returns_the_rewritten_event_with_its_structure() {
    let r = eval(call(
        "slack.chat_postMessage",
        json!({"recipient": "#sales", "body": "card 4111 1111 1111 1111 ok", "metadata": {"thread": "t1"}}),
    ));
    assert_eq!(r.action.as_str(), "redact");
    assert_eq!(ids(&r), ["outbound.internal-chat"]);
    let rw = r.rewritten_event.as_ref().expect("rewritten_event");
    assert_eq!(Some(rw), r.redacted_event.as_ref());
    assert_eq!(rw["tool_args"]["body"], "card [REDACTED] ok");
    assert_eq!(rw["tool_args"]["recipient"], "#sales");
    assert_eq!(rw["tool_args"]["metadata"]["thread"], "t1");

    // clamp_length(280)
    let long = "a".repeat(400);
    let r = eval(call(
        "slack.chat_postMessage",
        json!({"recipient": "#ops", "body": long}),
    ));
    let body = r.rewritten_event.as_ref().expect("rewritten")["tool_args"]["body"].clone();
    assert_eq!(body.as_str().map(str::len), Some(280));

    // strip_urls and replace
    let r = eval(call(
        "email.send",
        json!({"recipient": "bob@partner.test", "subject": "notes", "body": "Confidential: see https://docs.partner.test/a"}),
    ));
    assert_eq!(ids(&r), ["outbound.external-mail"]);
    let rw = r.rewritten_event.expect("rewritten");
    assert_eq!(rw["tool_args"]["body"], ": see [URL]");
    assert_eq!(rw["tool_args"]["recipient"], "bob@partner.test");
}

#[test]
fn an_unmatched_call_of_the_file_adapters_is_denied_and_others_are_not_governed() {
    let r = eval(call(
        "email.delete",
        json!({"recipient": "bob@partner.test"}),
    ));
    assert_eq!(r.action.as_str(), "block");
    assert_eq!(ids(&r), ["outbound.default"]);
    // Bulk mail to partners: no policy matches, default deny.
    let many: Vec<String> = (0..6).map(|i| format!("p{i}@partner.test")).collect();
    let r = eval(call(
        "email.send",
        json!({"recipient": many, "body": "hello"}),
    ));
    assert_eq!(ids(&r), ["outbound.default"]);
    // A tool the file does not govern.
    let r = eval(call("github.create_issue", json!({"body": "hello"})));
    assert_eq!(r.action.as_str(), "allow");
    assert!(ids(&r).is_empty());
}

#[test]
fn the_fixture_rule_cases_pass_through_parallax_test() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["test", "-c", FIXTURE])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}

/// A scratch config folder with `files`.
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parallax-policy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (f, text) in files {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    dir.join("parallax.yaml")
}

fn errors_of(config: &Path) -> String {
    match parallax_compiler::load(config) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_policies_and_transforms_are_compile_errors_naming_file_rule_and_key() {
    let cfg = scratch(
        "unknown-key",
        &[
            ("parallax.yaml", "rules_dir: rules\n"),
            (
                "rules/policy/fw.yaml",
                "version: 1\npolicies:\n  - name: a\n    match: {adapter: slack}\n    decision: allow\n    colour: red\n",
            ),
        ],
    );
    let e = errors_of(&cfg);
    assert!(e.contains("fw.yaml") && e.contains("colour"), "{e}");

    let cfg = scratch(
        "bad-regex",
        &[
            ("parallax.yaml", "rules_dir: rules\n"),
            (
                "rules/regex/r.yaml",
                "- id: tidy\n  action: redact\n  pattern: secret\n  transforms: [\"replace('(', 'x')\"]\n",
            ),
        ],
    );
    let e = errors_of(&cfg);
    assert!(
        e.contains("r.yaml") && e.contains("tidy") && e.contains("replace"),
        "{e}"
    );
    assert!(e.contains("invalid regular expression"), "{e}");

    let cfg = scratch(
        "unknown-transform",
        &[
            ("parallax.yaml", "rules_dir: rules\n"),
            (
                "rules/regex/r.yaml",
                "- id: loud\n  action: redact\n  pattern: x\n  transforms: [shout]\n",
            ),
        ],
    );
    let e = errors_of(&cfg);
    assert!(
        e.contains("loud") && e.contains("unknown transform `shout`"),
        "{e}"
    );

    let cfg = scratch(
        "bad-zone",
        &[
            ("parallax.yaml", "rules_dir: rules\n"),
            (
                "rules/policy/fw.yaml",
                "version: 1\npolicies:\n  - name: night\n    match: {adapter: email}\n    when: after_hours('Mars/Olympus', '18:00', '08:00')\n    decision: approve\n",
            ),
        ],
    );
    let e = errors_of(&cfg);
    assert!(e.contains("fw.night") && e.contains("Mars/Olympus"), "{e}");
}

#[test]
fn transforms_on_an_ordinary_rule_and_templates_that_deny() {
    let cfg = scratch(
        "template",
        &[
            (
                "parallax.yaml",
                "rules_dir: rules\npolicy:\n  internal_domains: [acme.test]\n",
            ),
            (
                "rules/cel/t.yaml",
                r#"- id: ticket-title
  action: redact
  expr: tool_name == 'jira.create' && after_hours('Europe/Berlin', '18:00', '08:00')
  transforms:
    - {apply: "enforce_template('^[A-Z]+-[0-9]+: ')", fields: [tool_args.subject]}
    - {apply: "replace('[0-9]{3}-[0-9]{4}', 'NNN-NNNN')", fields: [tool_args.body]}
- id: external-mail
  action: detect
  expr: tool_name == 'email.send' && external_recipient()
"#,
            ),
        ],
    );
    let e = backend::dynamic_engine(&cfg).expect("compiles");
    // 2024-01-15T20:30:00Z is 21:30 in Berlin: after hours.
    let ev = |subject: &str| {
        json!({"stage": "tool.before", "tool_name": "jira.create", "timestamp": 1_705_350_600.0,
               "tool_args": {"subject": subject, "body": "call 555-1234"}})
    };
    let r = eval_on(&e, ev("OPS-12: disk full"));
    assert_eq!(r.action.as_str(), "redact");
    let rw = r.rewritten_event.expect("rewritten");
    assert_eq!(rw["tool_args"]["body"], "call NNN-NNNN");
    assert_eq!(rw["tool_args"]["subject"], "OPS-12: disk full");
    let r = eval_on(&e, ev("disk full"));
    assert_eq!(r.action.as_str(), "block");
    assert!(r.rewritten_event.is_none() && r.redacted_event.is_none());
    // 12:00 in Berlin: not after hours, the rule does not match.
    let mut day = ev("disk full");
    day["timestamp"] = json!(1_705_316_400.0);
    assert_eq!(eval_on(&e, day).action.as_str(), "allow");
    // A trigger from a plain CEL rule, with the configured domains.
    let mail = |to: &str| call("email.send", json!({"recipient": to, "body": "hi"}));
    assert_eq!(eval_on(&e, mail("x@other.test")).action.as_str(), "detect");
    assert_eq!(eval_on(&e, mail("x@acme.test")).action.as_str(), "allow");
}

#[test]
fn the_policies_doc_shows_the_checked_example() {
    let doc = include_str!("../docs/POLICIES.md");
    let fixture = include_str!("fixtures/policy/outbound.yaml");
    assert!(
        doc.contains(fixture),
        "docs/POLICIES.md must show tests/fixtures/policy/outbound.yaml verbatim"
    );
}

#[test]
fn init_writes_a_starter_that_lints_and_blocks_the_obvious() {
    let bin = env!("CARGO_BIN_EXE_parallax");
    let dir = std::env::temp_dir().join(format!("parallax-init-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |args: &[&str], stdin: Option<&str>| {
        use std::io::Write;
        let mut child = std::process::Command::new(bin)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        if let Some(s) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(s.as_bytes())
                .expect("write");
        }
        child.wait_with_output().expect("output")
    };
    let d = dir.to_string_lossy().to_string();
    let out = run(&["init", &d], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = dir.join("parallax.yaml").to_string_lossy().to_string();
    let lint = run(&["lint", "-c", &config], None);
    assert!(
        lint.status.success(),
        "{}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    let events = [
        r#"{"stage":"tool.before","tool_name":"Bash","tool_args":{"command":"rm -rf /"}}"#,
        r#"{"stage":"tool.before","tool_name":"email.send","tool_args":{"recipient":"x@other.test","body":"password: hunter2"}}"#,
        r#"{"stage":"tool.before","tool_name":"email.delete","tool_args":{"recipient":"x@other.test"}}"#,
        r#"{"stage":"tool.before","tool_name":"Bash","tool_args":{"command":"ls -la"}}"#,
    ];
    let out = run(&["eval", "-c", &config], Some(&(events.join("\n") + "\n")));
    let actions: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["action"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(actions, ["block", "block", "block", "allow"]);
    // A second init refuses to overwrite.
    assert!(!run(&["init", &d], None).status.success());
}
