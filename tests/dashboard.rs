//! The dashboard's endpoints over real HTTP on 127.0.0.1, with the shipped
//! rules: the page and its headers, the token on the data, the live stream
//! (a blocked event arrives with its rule id and the secret masked as in
//! the audit log; nothing is published with nobody watching; a viewer that
//! left stops counting), `/metrics`' feed and per-door series, hits over a
//! window and rule definitions.

mod support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

const TOKEN: &str = "dash-test-token";
const SECRET: &str = "AKIAQ7ZKD4EXAMPLE7RT";

fn server() -> TestServer {
    TestServer::start(
        Path::new(CONFIG),
        |s| s.server.auth_token = Some(TOKEN.into()),
        |service, _| service,
    )
}

fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    request(addr, "GET", path, &headers, b"")
}

fn post_event(addr: SocketAddr, event: &Value) -> Value {
    let auth = format!("Bearer {TOKEN}");
    let r = request(
        addr,
        "POST",
        "/evaluate",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        event.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

fn blocked_event() -> Value {
    json!({"stage": "tool.before", "session_id": "s-dash", "tool_name": "Bash",
           "tool_args": {"command": format!("AWS_ACCESS_KEY_ID={SECRET} rm -rf /")}})
}

fn metrics(addr: SocketAddr) -> String {
    String::from_utf8_lossy(&get(addr, "/metrics", Some(TOKEN)).body).to_string()
}

fn metric(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// An open `GET /ui/api/stream`: reads server-sent events as they come.
struct Stream {
    socket: TcpStream,
    buf: Vec<u8>,
}

impl Stream {
    fn open(addr: SocketAddr) -> Stream {
        let mut socket = TcpStream::connect(addr).expect("connect");
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        write!(
            socket,
            "GET /ui/api/stream HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        )
        .expect("send");
        let mut s = Stream {
            socket,
            buf: Vec::new(),
        };
        let head = s.until(b"\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("text/event-stream"), "{head}");
        assert!(s.next_event().0 == "hello");
        s
    }

    /// Bytes up to and including `end`, waiting at most 10 s.
    fn until(&mut self, end: &[u8]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(i) = self.buf.windows(end.len()).position(|w| w == end) {
                let taken: Vec<u8> = self.buf.drain(..i + end.len()).collect();
                return String::from_utf8_lossy(&taken).to_string();
            }
            assert!(Instant::now() < deadline, "nothing more on the stream");
            let mut chunk = [0u8; 8192];
            match self.socket.read(&mut chunk) {
                Ok(0) => panic!("the stream ended"),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("reading the stream: {e}"),
            }
        }
    }

    /// The next event's name and data (chunk framing lines are skipped).
    fn next_event(&mut self) -> (String, String) {
        loop {
            let block = self.until(b"\n\n");
            let mut name = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            if let Some(n) = name {
                return (n, data);
            }
        }
    }
}

#[test]
fn the_page_and_its_files_carry_a_strict_csp() {
    let s = server();
    let page = get(s.addr, "/ui", None);
    assert_eq!(page.status, 200, "the page itself needs no token");
    assert!(page
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/html")));
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"));
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.header("x-frame-options").as_deref(), Some("DENY"));
    let body = String::from_utf8_lossy(&page.body);
    assert!(body.contains("/ui/app.js") && !body.contains("https://"));
    for asset in [
        "/ui/app.js",
        "/ui/logic.js",
        "/ui/app.css",
        "/ui/vendor/uPlot.iife.min.js",
    ] {
        let r = get(s.addr, asset, None);
        assert_eq!(r.status, 200, "{asset}");
        assert!(r.header("content-security-policy").is_some(), "{asset}");
    }
    get(s.addr, "/ui/nothing.js", None).assert_error(404, "not_found");
    request(s.addr, "POST", "/ui", &[], b"").assert_error(405, "method_not_allowed");
}

#[test]
fn the_data_needs_the_token() {
    let s = server();
    get(s.addr, "/ui/api/overview", None).assert_error(401, "unauthorized");
    get(s.addr, "/ui/api/stream", Some("wrong")).assert_error(401, "unauthorized");
    let r = get(s.addr, "/ui/api/overview", Some(TOKEN));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));
    let v = r.json();
    assert_eq!(v["health"]["backend"], "baked");
    assert!(v["latency"]["doors"]["http"]["buckets"].is_array(), "{v}");
    get(s.addr, "/ui/api/nothing", Some(TOKEN)).assert_error(404, "not_found");
}

#[test]
fn the_stream_carries_a_blocked_event_masked_as_in_the_audit_log() {
    let s = server();
    post_event(s.addr, &blocked_event());
    assert_eq!(
        metric(&metrics(s.addr), "parallax_feed_published_total"),
        Some(0),
        "with nobody watching nothing is published"
    );
    let mut stream = Stream::open(s.addr);
    assert_eq!(metric(&metrics(s.addr), "parallax_feed_viewers"), Some(1));
    let answer = post_event(s.addr, &blocked_event());
    assert_eq!(answer["action"], "block");
    let (name, data) = stream.next_event();
    assert_eq!(name, "decision");
    assert!(
        !data.contains(SECRET),
        "the secret never reaches a viewer: {data}"
    );
    let d: Value = serde_json::from_str(&data).expect("JSON");
    assert_eq!(d["action"], "block");
    assert_eq!(d["door"], "http");
    assert_eq!(d["session_id"], "s-dash");
    assert_eq!(d["matches"][0]["rule_id"], "dangerous-rm-rf-root");
    assert_eq!(d["masked"], true);
    assert_eq!(
        d["event"]["tool_args"]["command"],
        "AWS_ACCESS_KEY_ID=[REDACTED] rm -rf /"
    );
    assert!(d["seq"].as_u64().is_some_and(|n| n >= 1));
    assert_eq!(
        metric(&metrics(s.addr), "parallax_feed_published_total"),
        Some(1)
    );
    // A viewer that left is noticed at the next decision.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        post_event(s.addr, &json!({"stage": "tool.before", "tool_name": "ls"}));
        if metric(&metrics(s.addr), "parallax_feed_viewers") == Some(0) {
            break;
        }
        assert!(Instant::now() < deadline, "the viewer is still counted");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_hits_and_definitions() {
    let s = server();
    // The sampler starts with the first data request.
    assert_eq!(get(s.addr, "/ui/api/hits", Some(TOKEN)).status, 200);
    post_event(s.addr, &blocked_event());
    let text = metrics(s.addr);
    assert_eq!(
        metric(
            &text,
            "parallax_door_evaluation_seconds_count{door=\"http\"}"
        ),
        Some(1)
    );
    assert_eq!(metric(&text, "parallax_evaluation_seconds_count"), Some(1));
    assert_eq!(metric(&text, "parallax_feed_lagged_total"), Some(0));
    let hits = get(s.addr, "/ui/api/hits?window=300", Some(TOKEN)).json();
    assert_eq!(hits["window_seconds"], 300);
    let first = &hits["rules"][0];
    assert_eq!(first["id"], "dangerous-rm-rf-root", "{hits}");
    assert_eq!(
        (first["hits"].as_u64(), first["top"].as_bool()),
        (Some(1), Some(true))
    );
    assert!(hits["never_fired"].as_u64().unwrap_or(0) > 10);
    get(s.addr, "/ui/api/hits?window=soon", Some(TOKEN)).assert_error(400, "invalid_query");
    let def = get(s.addr, "/ui/api/rules/dangerous-rm-rf-root", Some(TOKEN)).json();
    assert_eq!(def["engine"], "regex");
    assert_eq!(def["action"], "block");
    assert!(
        def["atoms"].as_array().is_some_and(|a| !a.is_empty()),
        "{def}"
    );
    get(s.addr, "/ui/api/rules/no-such-rule", Some(TOKEN)).assert_error(404, "not_found");
}
