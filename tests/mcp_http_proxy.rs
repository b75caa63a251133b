//! `parallax mcp proxy` (the real binary on 127.0.0.1) in front of a
//! scripted Streamable HTTP server (tests/support/fake_upstream.rs):
//!
//! - with `PARALLAX_AUTH_TOKEN` set, a request without `X-Parallax-Token`
//!   or with a wrong one is a 401 and never reaches the server; the right
//!   one passes, `Authorization` goes to the server unchanged and the
//!   token header does not;
//! - an event in the server's SSE answer that is not JSON-RPC is not
//!   forwarded, and the client gets a JSON-RPC error for its request's id
//!   (named in the event, or — when the event names none — once the
//!   stream ends), next to the events that were fine.
//!
//! The broader gateway behaviour (both revisions, the official SDK on both
//! sides) is tests/python/mcp/, run by tests/python_sdks.rs.

mod support;

#[path = "support/fake_upstream.rs"]
mod fake_upstream;

use fake_upstream::{Canned, FakeUpstream};
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "mcp-proxy-test-token";

struct Proxy {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start_proxy(upstream: &FakeUpstream, token: Option<&str>) -> Proxy {
    let port = free_port();
    let dir = support::temp_dir(&format!("mcp-http-{port}"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_parallax"));
    cmd.args(["mcp", "proxy", "--name", "probe", "--log-level", "warn"])
        .arg("--upstream")
        .arg(format!("{}/mcp", upstream.url()))
        .arg("--port")
        .arg(port.to_string())
        .current_dir(&dir)
        .env_remove("PARALLAX_AUTH_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(t) = token {
        cmd.env("PARALLAX_AUTH_TOKEN", t);
    }
    let child = cmd.spawn().expect("start parallax mcp proxy");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "mcp proxy did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    Proxy { child, addr }
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {"text": "hi"}}})
}

fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> support::Response {
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    h.extend_from_slice(headers);
    support::request(addr, "POST", "/mcp", &h, body.to_string().as_bytes())
}

/// The JSON-RPC messages in an SSE body, in order.
fn sse_messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).ok())?
        })
        .collect()
}

fn ok_result(id: i64, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id,
           "result": {"content": [{"type": "text", "text": text}], "isError": false}})
    .to_string()
}

#[test]
fn the_token_is_required_and_never_forwarded() {
    let upstream = FakeUpstream::start(vec![Canned::json(
        &serde_json::from_str(&ok_result(1, "hi")).unwrap(),
    )]);
    let proxy = start_proxy(&upstream, Some(TOKEN));
    for headers in [
        &[][..],
        &[("X-Parallax-Token", "wrong")][..],
        &[("Authorization", &format!("Bearer {TOKEN}") as &str)][..],
    ] {
        let r = post(proxy.addr, headers, &call(1, "echo"));
        assert_eq!(r.status, 401, "{headers:?}");
        let body: Value = r.json();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("X-Parallax-Token"),
            "{body}"
        );
    }
    assert!(upstream.requests().is_empty(), "a refused request was sent");
    let r = post(
        proxy.addr,
        &[
            ("X-Parallax-Token", TOKEN),
            ("Authorization", "Bearer server-own-key"),
        ],
        &call(1, "echo"),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    let sent = upstream.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].header("authorization"),
        Some("Bearer server-own-key")
    );
    assert_eq!(sent[0].header("x-parallax-token"), None);
}

#[test]
fn no_token_configured_means_no_check() {
    let upstream = FakeUpstream::start(vec![Canned::json(
        &serde_json::from_str(&ok_result(3, "hi")).unwrap(),
    )]);
    let proxy = start_proxy(&upstream, None);
    let r = post(proxy.addr, &[], &call(3, "echo"));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn a_malformed_sse_event_is_answered_with_an_error_for_its_request() {
    let stream = |events: &[&str]| {
        let text: String = events
            .iter()
            .map(|e| format!("event: message\ndata: {e}\n\n"))
            .collect();
        Canned::sse(&text, 7)
    };
    let upstream = FakeUpstream::start(vec![
        // Not JSON at all: no id to read; answered when the stream ends.
        stream(&["{\"jsonrpc\": \"2.0\", \"id\": 5, \"result\": {"]),
        // JSON naming the request, but not JSON-RPC: answered at once.
        stream(&[
            "{\"jsonrpc\": \"1.0\", \"id\": 6, \"result\": {}}",
            r#"{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "after"}}"#,
        ]),
        // A batch: one answer fine, the other malformed.
        stream(&[&ok_result(7, "seven"), "not json"]),
    ]);
    let proxy = start_proxy(&upstream, None);

    let r = post(proxy.addr, &[], &call(5, "echo"));
    assert_eq!(r.status, 200);
    let msgs = sse_messages(&r.body);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["id"], 5);
    assert_eq!(msgs[0]["error"]["code"], -32603);
    assert!(msgs[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON-RPC"));

    let r = post(proxy.addr, &[], &call(6, "echo"));
    let msgs = sse_messages(&r.body);
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["id"], 6);
    assert_eq!(msgs[0]["error"]["code"], -32603);
    assert_eq!(msgs[1]["method"], "notifications/message");

    let batch = json!([call(7, "echo"), call(8, "echo")]);
    let r = post(proxy.addr, &[], &batch);
    let msgs = sse_messages(&r.body);
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["id"], 7);
    assert_eq!(msgs[0]["result"]["content"][0]["text"], "seven");
    assert_eq!(msgs[1]["id"], 8);
    assert_eq!(msgs[1]["error"]["code"], -32603);
    // Nothing half-parsed went to the client: every event is JSON-RPC.
    assert!(msgs.iter().all(|m| m["jsonrpc"] == "2.0"));
}
