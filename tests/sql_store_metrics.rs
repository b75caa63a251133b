//! An event the side-store has already answered (or queued without a wait)
//! and then fails to record is counted on `GET /metrics`
//! (`parallax_sql_store_write_failures_total`), through the real server on
//! 127.0.0.1. The insert fails for real: the state file carries a trigger
//! that makes SQLite refuse rows of one tool, as a damaged file or a full
//! disk would refuse them.

mod support;

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use support::{evaluate, request, TestServer, CONFIG};

/// The value of an unlabelled series on `GET /metrics`.
fn metric(addr: SocketAddr, name: &str) -> Option<u64> {
    let r = request(addr, "GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    String::from_utf8_lossy(&r.body)
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Waits (the row is written after the answer) until `name` is `want`.
fn metric_becomes(addr: SocketAddr, name: &str, want: u64) -> Option<u64> {
    let started = Instant::now();
    loop {
        let got = metric(addr, name);
        if got == Some(want) || started.elapsed() > Duration::from_secs(10) {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const FAILURES: &str = "parallax_sql_store_write_failures_total";
const ROWS: &str = "parallax_sql_store_rows";

fn call(session: &str, tool: &str, stage: &str) -> Value {
    let mut v = json!({"stage": stage, "session_id": session, "tool_name": tool});
    if stage == "tool.before" {
        v["tool_args"] = json!({"command": "ls -la"});
    } else {
        v["tool_result"] = json!("total 0");
    }
    v
}

#[test]
fn an_insert_that_fails_after_the_answer_is_counted_on_metrics() {
    let dir = std::env::temp_dir().join(format!("parallax-sql-lost-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("state.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("create the state file");
        parallax_store::schema::init(&conn).expect("schema");
        conn.execute_batch(
            "CREATE TRIGGER refuse_explode BEFORE INSERT ON events \
             WHEN NEW.tool_name = 'Explode' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .expect("trigger");
    }
    let state = path.to_string_lossy().into_owned();
    let server = TestServer::start(
        Path::new(CONFIG),
        move |s| s.state.path = Some(state),
        |service, _| service,
    );
    assert!(
        server.state.store().is_some(),
        "the shipped config has SQL rules"
    );
    let addr = server.addr;
    assert_eq!(metric(addr, FAILURES), Some(0), "nothing lost yet");

    // Recorded fine, answered before it is written.
    let v = evaluate(addr, &call("s-1", "Bash", "tool.before"));
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(metric_becomes(addr, ROWS, 1), Some(1));

    // Judged, every rule answered beside SQLite: the answer comes first,
    // then the insert fails.
    let v = evaluate(addr, &call("s-1", "Explode", "tool.before"));
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(metric_becomes(addr, FAILURES, 1), Some(1));

    // Recorded without a wait (no SQL rule at tool.after), then refused.
    let v = evaluate(addr, &call("s-1", "Explode", "tool.after"));
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(metric_becomes(addr, FAILURES, 2), Some(2));

    // The store goes on: the next event is recorded, nothing else is lost.
    evaluate(addr, &call("s-1", "Bash", "tool.before"));
    assert_eq!(metric_becomes(addr, ROWS, 2), Some(2));
    assert_eq!(metric(addr, FAILURES), Some(2));
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
