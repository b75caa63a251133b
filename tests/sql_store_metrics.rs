//! An event the side-store has already answered (or queued without a wait)
//! and then fails to record is counted on `GET /metrics`
//! (`parallax_sql_store_write_failures_total`), through the real server on
//! 127.0.0.1. The insert fails for real: the state file carries a trigger
//! that makes SQLite refuse rows of one tool, as a damaged file or a full
//! disk would refuse them.

use parallax::decision::DecisionService;
use parallax::http::serve;
use parallax_store::ManualClock;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml");
const IO_TIMEOUT: Duration = Duration::from_secs(10);

struct TestServer {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    fn start(state_path: &Path) -> TestServer {
        let mut loaded = parallax::backend::load(Some(Path::new(CONFIG)), false)
            .unwrap_or_else(|e| panic!("cannot load {CONFIG}: {e}"));
        loaded.settings.state.path = Some(state_path.to_string_lossy().into_owned());
        let clock = ManualClock::new(1_800_000_000.0);
        let state = Arc::new(
            DecisionService::with_clock(loaded.engine, loaded.settings, Arc::new(clock))
                .expect("open the side-store"),
        );
        assert!(state.store().is_some(), "the shipped config has SQL rules");
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        std_listener.set_nonblocking(true).expect("non-blocking");
        let addr = std_listener.local_addr().expect("address");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                serve(listener, state, async {
                    let _ = rx.await;
                })
                .await;
            });
        });
        TestServer {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// (status line and headers, body) of one request.
    fn request(&self, head: &str, body: &str) -> (String, String) {
        let mut s = TcpStream::connect_timeout(&self.addr, IO_TIMEOUT).expect("connect");
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        write!(
            s,
            "{head}\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut raw = Vec::new();
        s.take(1 << 22).read_to_end(&mut raw).expect("read");
        let text = String::from_utf8(raw).expect("utf-8 response");
        let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
        (head.to_string(), body.to_string())
    }

    fn evaluate(&self, event: &Value) -> Value {
        let (_, body) = self.request(
            "POST /evaluate HTTP/1.1\r\nContent-Type: application/json",
            &event.to_string(),
        );
        serde_json::from_str(&body).expect("JSON body")
    }

    /// The value of an unlabelled series on `GET /metrics`.
    fn metric(&self, name: &str) -> Option<u64> {
        let (_, body) = self.request("GET /metrics HTTP/1.1", "");
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }

    /// Waits (the row is written after the answer) until `name` is `want`.
    fn metric_becomes(&self, name: &str, want: u64) -> Option<u64> {
        let started = Instant::now();
        loop {
            let got = self.metric(name);
            if got == Some(want) || started.elapsed() > Duration::from_secs(10) {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
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
    let server = TestServer::start(&path);
    assert_eq!(server.metric(FAILURES), Some(0), "nothing lost yet");

    // Recorded fine, answered before it is written.
    let v = server.evaluate(&call("s-1", "Bash", "tool.before"));
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(server.metric_becomes(ROWS, 1), Some(1));

    // Judged, every rule answered beside SQLite: the answer comes first,
    // then the insert fails.
    let v = server.evaluate(&call("s-1", "Explode", "tool.before"));
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(server.metric_becomes(FAILURES, 1), Some(1));

    // Recorded without a wait (no SQL rule at tool.after), then refused.
    let v = server.evaluate(&call("s-1", "Explode", "tool.after"));
    assert_eq!(v["action"], "allow", "{v}");
    assert_eq!(server.metric_becomes(FAILURES, 2), Some(2));

    // The store goes on: the next event is recorded, nothing else is lost.
    server.evaluate(&call("s-1", "Bash", "tool.before"));
    assert_eq!(server.metric_becomes(ROWS, 2), Some(2));
    assert_eq!(server.metric(FAILURES), Some(2));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
