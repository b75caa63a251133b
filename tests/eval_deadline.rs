//! `server.eval_timeout_ms` on the real server: an event too big to
//! evaluate inline that does not finish within the deadline is answered by
//! fail_mode (closed: block, with `failure.kind: "timeout"`), and small
//! events are still judged by the rules. With a 1 ms deadline the big
//! event's time has run out before its evaluation can finish, whatever the
//! machine, so the test does not depend on timing.

mod support;

use serde_json::json;
use std::path::Path;
use support::*;

#[test]
fn a_big_event_past_the_deadline_is_answered_by_fail_mode() {
    let server = TestServer::start(
        Path::new(CONFIG),
        |s| s.server.eval_timeout_ms = 1,
        |s, _| s,
    );
    let big = json!({"stage": "tool.after", "session_id": "d", "tool_name": "Read",
                     "tool_result": "benign line of a source file\n".repeat(8_000)})
    .to_string();
    let r = request(
        server.addr,
        "POST",
        "/evaluate",
        &[("Content-Type", "application/json")],
        big.as_bytes(),
    );
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["action"], "block", "{v}");
    assert_eq!(v["failure"]["kind"], "timeout", "{v}");
    assert!(
        v["failure"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("server.eval_timeout_ms (1 ms)"),
        "{v}"
    );
    // A small event is evaluated inline and judged as usual.
    let r = request(
        server.addr,
        "POST",
        "/evaluate",
        &[("Content-Type", "application/json")],
        br#"{"stage":"tool.before","tool_name":"Bash","tool_args":{"command":"ls -la"}}"#,
    );
    let v = r.json();
    assert_eq!(v["action"], "allow", "{v}");
    assert!(v.get("failure").is_none() || v["failure"].is_null(), "{v}");
    // And the server still answers.
    assert_eq!(request(server.addr, "GET", "/health", &[], b"").status, 200);
}
