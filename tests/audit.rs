//! The audit trail, end to end: the real server writes it, `parallax eval`
//! replays it, rotation under load loses nothing, shutdown flushes it.

mod support;

use parallax::audit::AuditLog;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use support::*;

const KEY: &str =
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretsecretsecret0123\n-----END RSA PRIVATE KEY-----";

fn audited(
    path: &Path,
    tweak: impl FnOnce(&mut parallax::settings::ReportingSettings),
) -> TestServer {
    let path = path.to_path_buf();
    let mut reporting = parallax::settings::ReportingSettings {
        log_file: Some(path.display().to_string()),
        ..Default::default()
    };
    tweak(&mut reporting);
    let r = reporting.clone();
    TestServer::start(
        Path::new(CONFIG),
        move |s| s.reporting = reporting,
        move |state, metrics| {
            state.with_audit(AuditLog::start(&path, &r, metrics).expect("open the audit log"))
        },
    )
}

fn events() -> Vec<Value> {
    vec![
        // Blocked, with a secret beside the command the chain never reaches.
        json!({"stage": "tool.before", "session_id": "s-block", "user_id": "u1", "channel": "c",
               "tool_name": "exec",
               "tool_args": {"command": format!("rm -rf / ; echo '{KEY}'")}}),
        // Redacted.
        json!({"stage": "tool.after", "session_id": "s-redact", "tool_name": "read",
               "tool_result": format!("here: {KEY}")}),
        // Allowed.
        json!({"stage": "tool.before", "session_id": "s-allow", "tool_name": "exec",
               "tool_args": {"command": "ls -la"}, "timestamp": "2026-01-01T00:00:00Z",
               "metadata": {"k": [1, 2]}}),
    ]
}

#[test]
fn every_decision_is_one_masked_line_and_replays() {
    let dir = temp_dir("replay");
    let log = dir.join("audit.log");
    let server = audited(&log, |_| {});
    let mut answers = Vec::new();
    for e in events() {
        answers.push(evaluate(server.addr, &e));
    }
    server.stop();

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("MIIEsecret"),
        "a secret reached the audit log:\n{text}"
    );
    let lines = audit_lines(&log);
    assert_eq!(lines.len(), 3, "{text}");
    let fingerprint = server_fingerprint();
    for (line, answer) in lines.iter().zip(&answers) {
        assert_eq!(line["kind"], "decision");
        assert_eq!(line["action"], answer["action"]);
        assert_eq!(line["rules_fingerprint"], fingerprint);
        assert_eq!(line["backend"], "baked");
        assert!(line["elapsed_ms"].as_f64().is_some());
        assert!(line["ts"].as_str().is_some_and(|t| t.ends_with('Z')));
        let ids: Vec<&Value> = answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["rule_id"])
            .collect();
        let logged: Vec<&Value> = line["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["rule_id"])
            .collect();
        assert_eq!(ids, logged);
    }
    let block = &lines[0];
    assert_eq!(block["session_id"], "s-block");
    assert_eq!(block["user_id"], "u1");
    assert_eq!(block["channel"], "c");
    assert_eq!(block["tool_name"], "exec");
    assert_eq!(block["stage"], "tool.before");
    assert_eq!(block["matches"][0]["rule_id"], "dangerous-rm-rf-root");
    assert_eq!(block["matches"][0]["evaluator"], "dangerous-commands");
    assert_eq!(block["matches"][0]["action"], "block");
    assert_eq!(
        block["matches"][0]["title"],
        "Recursive delete of the filesystem root, home or everything"
    );
    assert_eq!(block["masked"], true);
    assert_eq!(
        block["event"]["tool_args"]["command"],
        "rm -rf / ; echo '[REDACTED]'"
    );
    assert_eq!(lines[1]["matches"][0]["match"], "[REDACTED]");
    assert_eq!(lines[1]["event"]["tool_result"], "here: [REDACTED]");
    assert_eq!(lines[2]["masked"], false);
    assert_eq!(lines[2]["event"]["metadata"], json!({"k": [1, 2]}));

    // Replay: the binary reads the audit log as its input.
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["eval", "-c", CONFIG])
        .arg(&log)
        .stdin(Stdio::null())
        .output()
        .expect("run parallax eval");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "eval failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replays: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let statuses: Vec<&str> = replays
        .iter()
        .map(|r| r["replay"]["status"].as_str().unwrap())
        .collect();
    // The block reproduces on the masked event; the redaction cannot (its
    // secret is, by design, not in the log) and says so; the allow does.
    assert_eq!(statuses, ["same", "masked", "same"]);
    assert_eq!(replays[0]["action"], "block");
    assert_eq!(replays[1]["replay"]["recorded_action"], "redact");
}

fn server_fingerprint() -> String {
    parallax::backend::load(Some(Path::new(CONFIG)), false)
        .unwrap()
        .engine
        .program()
        .fingerprint
        .clone()
}

#[test]
fn replay_reports_a_real_disagreement() {
    let dir = temp_dir("disagree");
    let log = dir.join("audit.log");
    // A hand-made line claiming `ls` was blocked by a rule.
    let line = json!({"kind": "decision", "action": "block", "masked": false,
                      "matches": [{"rule_id": "dangerous-rm-rf-root"}],
                      "event": {"stage": "tool.before", "tool_args": {"command": "ls"}}});
    std::fs::write(&log, format!("{line}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["eval", "-c", CONFIG])
        .arg(&log)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["replay"]["status"], "different");
    assert!(String::from_utf8_lossy(&out.stderr).contains("differ from the audit log"));
}

#[test]
fn log_allows_false_drops_plain_allows_only() {
    let dir = temp_dir("allows");
    let log = dir.join("audit.log");
    let server = audited(&log, |r| r.log_allows = false);
    for e in events() {
        evaluate(server.addr, &e);
    }
    server.stop();
    let lines = audit_lines(&log);
    let sessions: Vec<&str> = lines
        .iter()
        .map(|l| l["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["s-block", "s-redact"]);
}

/// Many concurrent clients while the log rotates every few lines: afterwards
/// every request has exactly one line across the log and its rotations.
#[test]
fn load_with_rotation_keeps_exactly_one_line_per_request() {
    const CLIENTS: usize = 8;
    const PER_CLIENT: usize = 150;
    let dir = temp_dir("load");
    let log = dir.join("audit.log");
    let server = audited(&log, |r| {
        r.max_bytes = 16 * 1024;
        r.keep = 1000;
        r.flush_ms = 5;
        r.on_full = parallax::settings::OnFull::Block;
        r.queue_size = 64;
    });
    let addr = server.addr;
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            std::thread::spawn(move || {
                for i in 0..PER_CLIENT {
                    let cmd = if i % 3 == 0 { "rm -rf /" } else { "ls" };
                    let v = evaluate(
                        addr,
                        &json!({"stage": "tool.before", "session_id": format!("c{c}-{i}"),
                                "tool_args": {"command": cmd}}),
                    );
                    let want = if i % 3 == 0 { "block" } else { "allow" };
                    assert_eq!(v["action"], want);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let elapsed = started.elapsed();
    let metrics = server.metrics.clone();
    server.stop();
    let lines = audit_lines(&log);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for l in &lines {
        *seen
            .entry(l["session_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let total = CLIENTS * PER_CLIENT;
    assert_eq!(lines.len(), total);
    assert_eq!(seen.len(), total);
    assert!(seen.values().all(|n| *n == 1));
    let rotations = metrics.audit_rotations.load(Relaxed);
    assert!(rotations >= 5, "only {rotations} rotations");
    assert_eq!(metrics.audit_dropped.load(Relaxed), 0);
    assert_eq!(metrics.audit_lines_written.load(Relaxed), total as u64);
    eprintln!(
        "load: {total} requests from {CLIENTS} clients in {elapsed:?}, {rotations} rotations, \
         {} files",
        rotations + 1
    );
}

/// With a tiny queue and `on_full: drop`, a burst may drop lines, but every
/// one is either written or counted.
#[test]
fn a_full_queue_counts_every_dropped_line() {
    let dir = temp_dir("drops");
    let log = dir.join("audit.log");
    let server = audited(&log, |r| {
        r.queue_size = 1;
        r.fsync = parallax::settings::FsyncPolicy::Flush;
        r.flush_ms = 1;
    });
    let addr = server.addr;
    let threads: Vec<_> = (0..4)
        .map(|c| {
            std::thread::spawn(move || {
                for i in 0..50 {
                    evaluate(
                        addr,
                        &json!({"stage": "tool.before", "session_id": format!("{c}-{i}")}),
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let metrics = server.metrics.clone();
    server.stop();
    let written = audit_lines(&log).len() as u64;
    let dropped = metrics.audit_dropped.load(Relaxed);
    assert_eq!(
        written + dropped,
        200,
        "written {written}, dropped {dropped}"
    );
    assert_eq!(metrics.audit_lines_written.load(Relaxed), written);
}

/// The binary: SIGTERM while clients are sending; every answered request
/// has its line once the process has exited.
#[cfg(unix)]
#[test]
fn sigterm_drains_and_flushes_every_line() {
    let dir = temp_dir("sigterm");
    let log = dir.join("audit.log");
    std::fs::create_dir_all(dir.join("rules")).unwrap();
    let config = dir.join("parallax.yaml");
    let shipped = std::fs::read_to_string(CONFIG).unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cfg = shipped
        .replace(
            "log_file: null",
            &format!(
                "log_file: {}\n  flush_ms: 60000\n  fsync: never",
                log.display()
            ),
        )
        .replace("port: 9920", &format!("port: {port}"));
    std::fs::write(&config, cfg).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "-c"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Clients keep sending until the server stops answering.
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let answered = answered.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let e = json!({"stage": "tool.before", "session_id": format!("t{c}-{i}")});
                    if try_evaluate(addr, &e).is_none() {
                        break;
                    }
                    answered.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    while answered.load(Relaxed) < 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // flush_ms is a minute: only the shutdown flush can have written them.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    for c in clients {
        c.join().unwrap();
    }
    let n = answered.load(Relaxed);
    let lines = audit_lines(&log);
    eprintln!(
        "sigterm: {n} answered requests, {} audit lines",
        lines.len()
    );
    // Every answered request was logged. (A request the server evaluated
    // but whose answer the client never read would be logged too, so the
    // log may exceed the count by the in-flight few, never fall short.)
    assert!(
        lines.len() >= n && lines.len() <= n + 4,
        "{} lines for {n} answers",
        lines.len()
    );
}
