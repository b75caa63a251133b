//! `reload.watch: true` on a real `parallax serve` over HTTP on 127.0.0.1:
//! an edit of a rule file takes effect without a signal or a request; an
//! edit that does not compile keeps the running rules and is shown on
//! `/health` with its file; fixing it reloads again; a file the config does
//! not read (an audit log beside it) triggers nothing.

mod support;

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn rule(pattern: &str) -> String {
    format!(
        "evaluator:\n  name: local\n  stages: [tool.before]\nrules:\n  - id: local-deny\n    \
         title: Local deny\n    action: block\n    fields: [command]\n    pattern: '{pattern}'\n"
    )
}

fn health(addr: SocketAddr) -> Value {
    let r = request(addr, "GET", "/health", &[], b"");
    assert_eq!(r.status, 200);
    r.json()
}

fn action(addr: SocketAddr, command: &str) -> String {
    let v = evaluate(
        addr,
        &json!({"stage": "tool.before", "tool_name": "exec", "tool_args": {"command": command}}),
    );
    v["action"].as_str().unwrap().to_string()
}

/// Polls `probe` until it holds, at most 20 s (the watcher's debounce is
/// 100 ms; the bound only stops a hang).
fn eventually(what: &str, mut probe: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if probe() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("not within 20 s: {what}");
}

fn start(dir: &Path) -> (Serve, SocketAddr) {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "-c", "parallax.yaml", "--port", &port.to_string()])
        .args(["--log-level", "warn"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start parallax serve");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let serve = Serve(child);
    eventually("the server answers /health", || {
        try_evaluate(
            addr,
            &json!({"stage": "tool.before", "tool_name": "exec", "tool_args": {"command": "true"}}),
        )
        .is_some()
    });
    (serve, addr)
}

#[test]
fn rule_edits_are_picked_up_and_a_broken_edit_keeps_the_old_rules() {
    let dir = temp_dir("reload-watch");
    std::fs::create_dir_all(dir.join("rules/regex")).unwrap();
    std::fs::write(
        dir.join("parallax.yaml"),
        "rules_dir: rules\nreload:\n  watch: true\n  debounce_ms: 100\n",
    )
    .unwrap();
    let file = dir.join("rules/regex/local.yaml");
    std::fs::write(&file, rule("frobnicate")).unwrap();
    let (_serve, addr) = start(&dir);
    assert_eq!(action(addr, "frobnicate now"), "block");
    assert_eq!(action(addr, "defenestrate now"), "allow");
    assert!(health(addr).get("reload").is_none(), "no reload yet");

    // A file beside the config that the config does not read.
    std::fs::write(dir.join("audit.log"), "{}\n").unwrap();

    // An edit: the new pattern is in force without a signal.
    std::fs::write(&file, rule("defenestrate")).unwrap();
    eventually("the edited rule is in force", || {
        action(addr, "defenestrate now") == "block"
    });
    assert_eq!(action(addr, "frobnicate now"), "allow");
    let h = health(addr);
    assert_eq!(h["reload"]["status"], "ok", "{h}");
    let fingerprint = h["rules_fingerprint"].clone();

    // A broken edit: the running rules stay, /health says why and where.
    std::fs::write(&file, rule("unclosed(")).unwrap();
    eventually("the failed reload is on /health", || {
        health(addr)["reload"]["status"] == "failed"
    });
    let h = health(addr);
    let error = h["reload"]["error"].as_str().unwrap();
    assert!(error.contains("local.yaml"), "{error}");
    assert_eq!(h["rules_fingerprint"], fingerprint);
    assert_eq!(action(addr, "defenestrate now"), "block");

    // Fixed: reloaded again.
    std::fs::write(&file, rule("frobnicate")).unwrap();
    eventually("the fixed rule is in force", || {
        action(addr, "frobnicate now") == "block"
    });
    assert_eq!(health(addr)["reload"]["status"], "ok");
}

#[test]
fn a_bad_debounce_is_refused_at_start() {
    let dir = temp_dir("reload-watch-bad");
    std::fs::write(
        dir.join("parallax.yaml"),
        "reload:\n  watch: true\n  debounce_ms: 0\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "-c", "parallax.yaml", "--port", "0"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reload.debounce_ms"), "{stderr}");
}
