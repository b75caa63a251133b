//! `GET /ready` and `/health`'s `ready` (issue 39): a real `parallax serve`
//! on the shipped rules says it is ready once its scanners are built; a
//! service whose scanners were never built up front says 503 with why,
//! while still answering evaluations; neither needs the token.

mod support;

use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

#[test]
fn serve_becomes_ready_after_its_warm_up() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "--port", &port.to_string(), "--log-level", "warn"])
        .current_dir(repo)
        .env("PARALLAX_AUTH_TOKEN", "ready-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ready = None;
    while Instant::now() < deadline {
        if let Ok(s) = std::net::TcpStream::connect(addr) {
            drop(s);
            let r = request(addr, "GET", "/ready", &[], b"");
            if r.status == 200 {
                ready = Some(r.json());
                break;
            }
            assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let h = request(addr, "GET", "/health", &[], b"").json();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(ready.expect("ready within 60 s"), json!({"ready": true}));
    assert_eq!(h["ready"], true, "{h}");
}

#[test]
fn not_ready_until_built_but_answering() {
    let server = TestServer::start(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml")),
        |s| s.server.auth_token = Some("t".into()),
        |s, _| s,
    );
    let r = request(server.addr, "GET", "/ready", &[], b"");
    assert_eq!(r.status, 503);
    assert!(r.json()["reason"]
        .as_str()
        .unwrap()
        .contains("still being built"));
    assert_eq!(
        request(server.addr, "GET", "/health", &[], b"").json()["ready"],
        false
    );
    assert_eq!(request(server.addr, "POST", "/ready", &[], b"").status, 405);
    server.state.warm_up();
    let deadline = Instant::now() + Duration::from_secs(60);
    while request(server.addr, "GET", "/ready", &[], b"").status != 200 {
        assert!(Instant::now() < deadline, "not ready within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
}
