//! A large event is prepared under the deadline too: on the real server,
//! a call naming 60,000 paths (each with a normal form of its own, so
//! every one is normalised) is prepared on the blocking pool inside
//! `server.eval_timeout_ms`, not on the async worker before it; under a
//! tiny deadline it is answered by fail_mode, and the server then answers
//! `/health` and judges normal calls as usual.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use support::*;

fn many_paths() -> Value {
    let paths: Vec<String> = (0..60_000)
        .map(|i| format!("/srv/./data/part-{i}.csv"))
        .collect();
    json!({"stage": "tool.before", "session_id": "many-paths", "tool_name": "Read",
           "tool_args": {"paths": paths}})
}

fn server(eval_timeout_ms: u64) -> TestServer {
    TestServer::start(
        Path::new(CONFIG),
        |s| {
            s.server.eval_timeout_ms = eval_timeout_ms;
            s.server.max_body_bytes = 16 << 20;
        },
        |s, _| s,
    )
}

#[test]
fn under_a_tiny_deadline_the_big_call_gets_fail_mode_and_the_server_goes_on() {
    let server = server(1);
    let v = evaluate(server.addr, &many_paths());
    assert_eq!(v["action"], "block", "{v}");
    assert_eq!(v["failure"]["kind"], "timeout", "{v}");
    assert_eq!(request(server.addr, "GET", "/health", &[], b"").status, 200);
    let v = evaluate(
        server.addr,
        &json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "rm -rf /"}}),
    );
    assert_eq!(v["action"], "block", "{v}");
    assert!(v["failure"].is_null(), "{v}");
}
