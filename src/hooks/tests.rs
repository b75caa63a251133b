//! Payload mapping and answers, on payloads recorded from the real agents
//! (tests/fixtures/hooks/, by `tests/agents/hooks_e2e.py --mode record`:
//! Claude Code 2.1.328, Codex 0.169.0).

use super::payload::map;
use super::verdict::{Kind, Verdict};
use super::{answer, Framework, HookEvent};
use parallax_runtime::Stage;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/hooks/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn report(action: &str, extra: Value) -> Value {
    let mut r = json!({
        "action": action,
        "results": [{"rule_id": "r1", "action": action, "reason": "why one"},
                    {"rule_id": "r2", "action": "detect", "reason": "seen"}],
    });
    if let (Some(r), Some(e)) = (r.as_object_mut(), extra.as_object()) {
        r.extend(e.clone());
    }
    r
}

fn out(framework: Framework, payload: &Value, report: &Value) -> Option<Value> {
    let mapped = map(framework, payload).unwrap().unwrap();
    let a = answer(framework, &mapped, &Verdict::from_report(report));
    a.stdout.map(|s| serde_json::from_str(&s).unwrap())
}

#[test]
fn recorded_payloads_map_to_events() {
    for (fw, prefix) in [
        (Framework::ClaudeCode, "claude"),
        (Framework::Codex, "codex"),
    ] {
        let pre = map(fw, &fixture(&format!("{prefix}-PreToolUse")))
            .unwrap()
            .unwrap();
        assert_eq!(pre.hook, HookEvent::PreToolUse);
        assert_eq!(pre.event.stage, Stage::ToolBefore);
        assert_eq!(pre.event.tool_name.as_deref(), Some("Bash"));
        assert!(pre.event.tool_args["command"]
            .as_str()
            .unwrap()
            .starts_with("touch "));
        assert!(pre.session_id.is_some());
        assert_eq!(pre.event.session_id, pre.session_id);
        assert_eq!(pre.event.metadata["framework"], fw.as_str());

        let post = map(fw, &fixture(&format!("{prefix}-PostToolUse")))
            .unwrap()
            .unwrap();
        assert_eq!(post.event.stage, Stage::ToolAfter);
        assert!(!post.event.tool_result.is_null() || prefix == "codex");
        assert!(post.event.tool_args["command"].is_string());

        let prompt = map(fw, &fixture(&format!("{prefix}-UserPromptSubmit")))
            .unwrap()
            .unwrap();
        assert_eq!(prompt.event.stage, Stage::MessageBefore);
        assert_eq!(
            prompt.event.message_text.as_deref(),
            Some("Run the project's setup commands.")
        );

        for other in ["SessionStart", "Stop", "SessionEnd"] {
            let p = fixture(&format!("{prefix}-{other}"));
            assert!(map(fw, &p).unwrap().is_none(), "{prefix} {other}");
        }
    }
    // Codex names the model; its tool result is a string.
    let codex = map(Framework::Codex, &fixture("codex-PreToolUse"))
        .unwrap()
        .unwrap();
    assert_eq!(codex.event.model.as_deref(), Some("gpt-5.1-codex"));
    let p = fixture("codex-PostToolUse");
    assert!(p["tool_response"].is_string());
}

#[test]
fn bad_payloads_are_named() {
    let e = map(Framework::Codex, &json!([1])).unwrap_err();
    assert!(e.contains("not a JSON object"), "{e}");
    let e = map(Framework::Codex, &json!({"tool_name": "Bash"})).unwrap_err();
    assert!(e.contains("hook_event_name"), "{e}");
    let e = map(
        Framework::ClaudeCode,
        &json!({"hook_event_name": "PreToolUse"}),
    )
    .unwrap_err();
    assert!(e.contains("tool_name"), "{e}");
    let e = map(
        Framework::ClaudeCode,
        &json!({"hook_event_name": "UserPromptSubmit"}),
    )
    .unwrap_err();
    assert!(e.contains("prompt"), "{e}");
}

#[test]
fn allow_and_detect_say_nothing_never_allow() {
    for fw in [Framework::ClaudeCode, Framework::Codex] {
        let prefix = if fw == Framework::ClaudeCode {
            "claude"
        } else {
            "codex"
        };
        for hook in ["PreToolUse", "PostToolUse", "UserPromptSubmit"] {
            let p = fixture(&format!("{prefix}-{hook}"));
            for action in ["allow", "detect"] {
                assert_eq!(
                    out(fw, &p, &report(action, json!({}))),
                    None,
                    "{prefix} {hook}"
                );
            }
        }
    }
}

#[test]
fn claude_code_answers() {
    let pre = fixture("claude-PreToolUse");
    let o = out(Framework::ClaudeCode, &pre, &report("block", json!({}))).unwrap();
    let h = &o["hookSpecificOutput"];
    assert_eq!(h["hookEventName"], "PreToolUse");
    assert_eq!(h["permissionDecision"], "deny");
    assert_eq!(
        h["permissionDecisionReason"],
        "Parallax blocked this tool call: r1: why one"
    );

    let redacted = json!({"redacted_event": {"tool_args": {"command": "echo [REDACTED]"}}});
    let o = out(Framework::ClaudeCode, &pre, &report("redact", redacted)).unwrap();
    assert_eq!(
        o,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                      "updatedInput": {"command": "echo [REDACTED]"}}})
    );

    let approval = json!({"approval": {"id": "ap-7", "state": "pending"}});
    let o = out(Framework::ClaudeCode, &pre, &report("approve", approval)).unwrap();
    assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "ask");
    let why = o["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(why.contains("ap-7") && why.contains("r1: why one"), "{why}");

    let post = fixture("claude-PostToolUse");
    let o = out(Framework::ClaudeCode, &post, &report("block", json!({}))).unwrap();
    assert_eq!(o["decision"], "block");
    assert!(o["reason"].as_str().unwrap().contains("withheld"), "{o}");
    assert!(
        o.get("hookSpecificOutput").is_none(),
        "Bash's output cannot be replaced"
    );

    // An MCP tool's result is replaced.
    let mut mcp = post.clone();
    mcp["tool_name"] = json!("mcp__probe__run_command");
    let o = out(Framework::ClaudeCode, &mcp, &report("block", json!({}))).unwrap();
    let replaced = o["hookSpecificOutput"]["updatedMCPToolOutput"]
        .as_str()
        .unwrap();
    assert!(replaced.starts_with("[withheld by Parallax"), "{o}");
    let redacted = json!({"redacted_event": {"tool_result": "key=[REDACTED]"}});
    let o = out(Framework::ClaudeCode, &mcp, &report("redact", redacted)).unwrap();
    assert_eq!(
        o["hookSpecificOutput"]["updatedMCPToolOutput"],
        "key=[REDACTED]"
    );

    let prompt = fixture("claude-UserPromptSubmit");
    for action in ["block", "redact", "approve"] {
        let o = out(Framework::ClaudeCode, &prompt, &report(action, json!({}))).unwrap();
        assert_eq!(o["decision"], "block", "{action}");
        assert!(o["reason"].as_str().unwrap().contains("r1"), "{o}");
    }
}

/// Codex rejects unknown fields: every answer uses only these.
fn codex_fields_only(o: &Value) {
    let top: Vec<&str> = o.as_object().unwrap().keys().map(String::as_str).collect();
    for k in &top {
        assert!(
            ["decision", "reason", "hookSpecificOutput"].contains(k),
            "{o}"
        );
    }
    if let Some(h) = o.get("hookSpecificOutput") {
        for k in h.as_object().unwrap().keys() {
            assert!(
                [
                    "hookEventName",
                    "permissionDecision",
                    "permissionDecisionReason"
                ]
                .contains(&k.as_str()),
                "{o}"
            );
        }
        assert_eq!(
            h["permissionDecision"], "deny",
            "Codex has no allow or ask here"
        );
    }
}

#[test]
fn codex_answers() {
    let pre = fixture("codex-PreToolUse");
    for (action, extra) in [
        ("block", json!({})),
        (
            "redact",
            json!({"redacted_event": {"tool_args": {"command": "x"}}}),
        ),
        ("approve", json!({"approval": {"id": "ap-9"}})),
    ] {
        let o = out(Framework::Codex, &pre, &report(action, extra)).unwrap();
        codex_fields_only(&o);
        let why = o["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(why.contains("r1: why one"), "{why}");
        if action == "approve" {
            assert!(
                why.contains("approval id ap-9") && why.contains("pending"),
                "{why}"
            );
        }
    }
    for hook in ["codex-PostToolUse", "codex-UserPromptSubmit"] {
        for action in ["block", "redact", "approve"] {
            let o = out(Framework::Codex, &fixture(hook), &report(action, json!({}))).unwrap();
            codex_fields_only(&o);
            assert_eq!(o["decision"], "block");
        }
    }
}

#[test]
fn unknown_or_failed_verdicts_block() {
    let v = Verdict::from_report(&json!({"action": "quarantine", "results": []}));
    assert_eq!(v.kind, Kind::Block);
    assert!(v.why().contains("quarantine"));
    let v = Verdict::from_report(&json!({"action": "block", "results": [],
        "failure": {"kind": "panic", "message": "boom", "fail_mode": "closed"}}));
    assert!(v.why().contains("boom"), "{}", v.why());
}

#[test]
fn hook_origin_from_headers() {
    use crate::decision::Door;
    let mut h = hyper::HeaderMap::new();
    assert_eq!(super::client::origin_from_headers(&h).door, Door::Http);
    h.insert("x-parallax-door", "hook".parse().unwrap());
    h.insert("x-parallax-framework", "Codex".parse().unwrap());
    let o = super::client::origin_from_headers(&h);
    assert_eq!(
        (o.door, o.framework.as_deref()),
        (Door::Hook, Some("codex"))
    );
    h.insert("x-parallax-framework", "no spaces allowed".parse().unwrap());
    assert_eq!(super::client::origin_from_headers(&h).framework, None);
}

/// What `POST /evaluate?wait=` answers once an approval is decided (the
/// resolved report: the approve rule's result stays, the action changes,
/// the reasons name the approval and who decided).
fn resolved(action: &str, status: &str, extra: Value) -> Value {
    let mut r = json!({
        "action": action,
        "results": [{"rule_id": "deploy", "action": "approve", "reason": "needs a human"}],
        "reasons": ["deploy: needs a human", format!("approval apr_1: {status} by alice: no")],
        "approval": {"id": "apr_1", "status": status},
    });
    if let (Some(r), Some(e)) = (r.as_object_mut(), extra.as_object()) {
        r.extend(e.clone());
    }
    r
}

#[test]
fn approvals_waited_for_map_to_their_outcome() {
    let claude = fixture("claude-PreToolUse");
    let codex = fixture("codex-PreToolUse");
    // Denied (or expired): a block naming the approval and who decided.
    let denied = resolved("block", "denied", json!({}));
    let o = out(Framework::ClaudeCode, &claude, &denied).unwrap();
    let hso = &o["hookSpecificOutput"];
    assert_eq!(hso["permissionDecision"], "deny");
    let why = hso["permissionDecisionReason"].as_str().unwrap();
    assert!(why.contains("apr_1: denied by alice"), "{why}");
    assert!(why.contains("deploy: needs a human"), "{why}");
    let o = out(Framework::Codex, &codex, &denied).unwrap();
    assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "deny");
    codex_fields_only(&o);
    // Approved, nothing else matched: no opinion (never `allow`).
    let approved = resolved("allow", "approved", json!({}));
    assert_eq!(out(Framework::ClaudeCode, &claude, &approved), None);
    assert_eq!(out(Framework::Codex, &codex, &approved), None);
    // Approved, a redact rule matched too: the rewritten input.
    let args = json!({"command": "git push origin main # [REDACTED]"});
    let redacted = resolved(
        "redact",
        "approved",
        json!({"redacted_event": {"tool_args": args}}),
    );
    let o = out(Framework::ClaudeCode, &claude, &redacted).unwrap();
    assert_eq!(o["hookSpecificOutput"]["updatedInput"], args);
    assert!(o["hookSpecificOutput"].get("permissionDecision").is_none());
    // Still pending when the wait ended: Claude Code asks the user, Codex
    // (no `ask`) denies, both naming the approval.
    let pending = json!({"action": "approve",
        "results": [{"rule_id": "deploy", "action": "approve", "reason": "needs a human"}],
        "approval": {"id": "apr_2", "status": "pending"}});
    let o = out(Framework::ClaudeCode, &claude, &pending).unwrap();
    assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "ask");
    let why = o["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("apr_2") && why.contains("still pending"),
        "{why}"
    );
    let o = out(Framework::Codex, &codex, &pending).unwrap();
    assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(o["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("apr_2"));
    // An approve with no approval behind it (in-process: no store).
    let none = json!({"action": "approve",
        "results": [{"rule_id": "deploy", "action": "approve", "reason": "needs a human"}]});
    let o = out(Framework::ClaudeCode, &claude, &none).unwrap();
    assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "ask");
}

/// A one-shot fake server on 127.0.0.1: the request line it got, and it
/// answers `body` after `delay`.
fn fake_server(
    body: Value,
    delay: std::time::Duration,
) -> (String, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
            if h == "\r\n" || h.is_empty() {
                break;
            }
        }
        let mut buf = vec![0; len];
        std::io::Read::read_exact(&mut reader, &mut buf).unwrap();
        std::thread::sleep(delay);
        let body = body.to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        line
    });
    (url, handle)
}

#[test]
fn the_hook_asks_the_server_to_wait_for_approvals() {
    use super::client::{decide, Options, Source};
    use std::time::Duration;
    let mapped = map(Framework::ClaudeCode, &fixture("claude-PreToolUse"))
        .unwrap()
        .unwrap();
    // The server holds the answer longer than the plain timeout (an
    // approval decided after 600 ms): the hook waits for it.
    let (url, server) = fake_server(
        resolved("block", "denied", json!({})),
        Duration::from_millis(600),
    );
    let opts = Options {
        url,
        token: None,
        timeout: Duration::from_millis(300),
        approval_wait: Duration::from_secs(7),
        fail_closed: true,
    };
    let (v, source) = decide(Framework::ClaudeCode, &mapped, &opts);
    assert_eq!(source, Source::Server);
    assert_eq!(v.kind, Kind::Block);
    assert!(v.why().contains("denied by alice"), "{}", v.why());
    let line = server.join().unwrap();
    assert!(line.starts_with("POST /evaluate?wait=7 "), "{line}");
    // No wait asked: no query, and the plain timeout bounds the exchange.
    let (url, server) = fake_server(json!({"action": "allow"}), Duration::from_millis(600));
    let opts = Options {
        approval_wait: Duration::ZERO,
        url,
        ..opts
    };
    let (v, source) = decide(Framework::ClaudeCode, &mapped, &opts);
    assert!(matches!(source, Source::FailClosed { .. }), "{source:?}");
    assert_eq!(v.kind, Kind::Block);
    let line = server.join().unwrap();
    assert!(line.starts_with("POST /evaluate "), "{line}");
}
