//! CEL rules through the dynamic backend (`tests/fixtures/cel`): string
//! calls answered by atoms, aliases, `has()`, macros over JSON arguments,
//! numbers, stages, missing fields, and redaction of what a CEL rule found.

mod support;

use parallax_runtime::{Engine, Report};
use serde_json::{json, Value};
use std::sync::OnceLock;

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| support::engine_report::dynamic_fixture("tests/fixtures/cel/parallax.yaml"))
}

fn eval(event: Value) -> Report {
    support::engine_report::report(engine(), event)
}

fn ids(r: &Report) -> Vec<&str> {
    support::engine_report::rule_ids(r)
}

fn tool(name: &str, args: Value) -> Value {
    json!({"stage": "tool.before", "tool_name": name, "tool_args": args})
}

#[test]
fn atoms_answer_string_calls_on_canonical_fields() {
    let r = eval(tool(
        "Write",
        json!({"file_path": "/home/u/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA"}),
    ));
    assert_eq!(r.action.as_str(), "block");
    assert_eq!(ids(&r), ["write-ssh-keys"]);
    assert_eq!(
        r.results[0].matched.as_deref(),
        Some("/.ssh/authorized_keys")
    );
    // Wrong tool, or another file: no match.
    assert!(eval(tool(
        "Read",
        json!({"file_path": "/home/u/.ssh/authorized_keys"})
    ))
    .results
    .is_empty());
    assert!(
        eval(tool("Write", json!({"file_path": "/home/u/notes.txt"})))
            .results
            .is_empty()
    );
}

#[test]
fn flattened_alias_and_index_syntax() {
    let r = eval(tool("Bash", json!({"command": "chmod 777 /srv"})));
    assert_eq!(ids(&r), ["legacy-alias"]);
    assert!(eval(tool("Bash", json!({"command": "echo chmod 777"})))
        .results
        .is_empty());
    let r = eval(tool("Read", json!({"file_path": "/app/.ENV"})));
    assert_eq!(ids(&r), ["indexed-key"]);
    // The atom stands for a string call: a non-string value is an error,
    // so no match even though the automaton sees the string inside.
    assert!(eval(tool("Read", json!({"file_path": ["/app/.env"]})))
        .results
        .is_empty());
}

#[test]
fn macros_and_numbers_over_json_arguments() {
    let r = eval(tool("fs", json!({"argv": ["rm", "-R", "/tmp/x"]})));
    assert_eq!(ids(&r), ["recursive-args"]);
    assert!(eval(tool("fs", json!({"argv": ["rm", "/tmp/x"]})))
        .results
        .is_empty());
    // has() is false, so no error and no match.
    assert!(eval(tool("fs", json!({"other": 1}))).results.is_empty());

    assert_eq!(
        ids(&eval(tool("job", json!({"batch": 5000})))),
        ["big-batch"]
    );
    assert!(eval(tool("job", json!({"batch": 5001}))).results.is_empty());
    assert!(eval(tool("job", json!({"batch": 10}))).results.is_empty());
    // A string where a number is compared: a runtime error, no match.
    assert!(eval(tool("job", json!({"batch": "5000"})))
        .results
        .is_empty());
    // A negative number cannot be a uint, compares below 1000u.
    assert!(eval(tool("job", json!({"batch": -4000})))
        .results
        .is_empty());
}

#[test]
fn missing_fields_and_bare_string_arguments_never_match() {
    for args in [json!({"a": 1}), json!("just a string"), Value::Null] {
        let r = eval(tool("Bash", args.clone()));
        assert!(r.results.is_empty(), "{args}: {:?}", ids(&r));
    }
    let r = eval(json!({"stage": "tool.before"}));
    assert!(r.results.is_empty());
}

#[test]
fn stages_apply_to_cel_rules() {
    let params = |t: f64, model: &str| json!({"stage": "params.before", "model": model, "params": {"temperature": t}});
    assert_eq!(ids(&eval(params(1.9, "gpt-5"))), ["hot-sampling"]);
    assert!(eval(params(0.7, "gpt-5")).results.is_empty());
    assert!(eval(params(1.9, "claude")).results.is_empty());
    // Same expression, wrong stage: the rule does not run.
    let mut e = params(1.9, "gpt-5");
    e["stage"] = json!("tool.before");
    assert!(eval(e).results.is_empty());
}

#[test]
fn redaction_rewrites_what_the_cel_rule_found() {
    let r = eval(json!({"stage": "message.before",
        "message_text": "my key is sk-abcdefghijklmnopqrstuvwxyz123 thanks"}));
    assert_eq!(r.action.as_str(), "redact");
    assert_eq!(ids(&r), ["api-key-in-message"]);
    assert_eq!(r.redacted.as_deref(), Some("my key is [REDACTED] thanks"));
    // The negated condition blocks it.
    let r = eval(json!({"stage": "message.before",
        "message_text": "example: sk-abcdefghijklmnopqrstuvwxyz123"}));
    assert!(r.results.is_empty());
}
