//! A fleet: two `parallax serve` replicas behind nginx (Debian's package)
//! hashing on the `X-Parallax-Session` header, as docs/DEPLOYMENT.md
//! describes. Temporal rules keep their window in each replica's own
//! side-store, so what makes a fleet correct is that every event of a
//! session lands on one replica. This test shows it end to end:
//!
//! - nginx sends every request of a session to one replica, and the two
//!   test sessions to different ones (asked of nginx itself: it names the
//!   replica that answered in a response header);
//! - a rate rule fires for the busy session on its replica, while the
//!   other session on the other replica, at the limit but not past it, is
//!   allowed throughout;
//! - each replica's side-store is a file (`state.path`) holding only its
//!   own sessions' rows, and each audit log only its own sessions;
//! - the control: the same traffic round-robin (no hash) splits the busy
//!   session's window across the replicas and the rule never fires.
//!
//! nginx runs as a foreground child of the test with a config generated in
//! a temp dir, on 127.0.0.1 only. Without nginx the test prints one
//! `skipped:` line and passes; with `CI=true` it fails instead
//! (.ci/steps/70-nginx.sh installs it).

mod support;

use serde_json::{json, Value};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{audit_lines, request, temp_dir};

/// More than this many tool calls of one session in 60 s are blocked.
const LIMIT: usize = 5;

/// nginx, or why the test cannot run.
fn nginx() -> Result<PathBuf, String> {
    for p in ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return Ok(PathBuf::from(p));
        }
    }
    Err("nginx is not installed (apt-get install nginx; .ci/steps/70-nginx.sh)".into())
}

/// A port free on 127.0.0.1 now (bound, then released for the child).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// Kills and reaps the child when dropped, so a failing assertion leaves no
/// server behind.
struct Reaped(Child, &'static str);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `addr` answers `GET path` with 200, or panics with `log`.
fn wait_ready(addr: SocketAddr, path: &str, child: &mut Reaped, log: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = child.0.try_wait() {
            panic!(
                "{} exited early ({status}): {}",
                child.1,
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && request(addr, "GET", path, &[], b"").status == 200
        {
            return;
        }
        assert!(
            Instant::now() < until,
            "{} did not answer on {addr}: {}",
            child.1,
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One replica's config: the rate rule alone, its side-store and audit log
/// in files of their own.
fn replica_config(dir: &Path, n: usize) -> PathBuf {
    let rules = dir.join("rules/sql");
    std::fs::create_dir_all(&rules).expect("rules dir");
    std::fs::write(
        rules.join("rate.yaml"),
        format!(
            r#"evaluator:
  name: fleet-rate
  stages: [tool.before]
rules:
  - id: fleet-session-rate
    title: More than {LIMIT} tool calls in a session within 60 s
    action: block
    priority: high
    reason: "{{cnt}} tool calls in this session in the last 60 s"
    query: |
      SELECT count(*) AS cnt FROM events
      WHERE session_id = :session_id AND stage = 'tool.before' AND ts > :now - 60
    condition: cnt > {LIMIT}
"#
        ),
    )
    .expect("write the rule");
    let config = dir.join(format!("replica-{n}.yaml"));
    std::fs::write(
        &config,
        format!(
            "server:\n  host: 127.0.0.1\nrules_dir: {rules_dir}\nevaluators: []\n\
             state:\n  path: {state}\nreporting:\n  log_file: {audit}\n",
            rules_dir = dir.join("rules").display(),
            state = dir.join(format!("replica-{n}.db")).display(),
            audit = dir.join(format!("audit-{n}.jsonl")).display(),
        ),
    )
    .expect("write the config");
    config
}

fn start_replica(dir: &Path, n: usize) -> (SocketAddr, Reaped) {
    let config = replica_config(dir, n);
    let port = free_port();
    let log = dir.join(format!("replica-{n}.log"));
    let out = std::fs::File::create(&log).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--log-level", "warn"])
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("log file"))
        .stderr(out)
        .spawn()
        .expect("start parallax serve");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut child = Reaped(child, "parallax serve");
    wait_ready(addr, "/health", &mut child, &log);
    (addr, child)
}

/// nginx in the foreground with its own config: `/` hashes on the session
/// header (consistent), `/rr/` round-robins (the control). Each answer
/// names the replica in `X-Fleet-Upstream`.
fn start_nginx(bin: &Path, dir: &Path, replicas: &[SocketAddr]) -> (SocketAddr, Reaped) {
    let port = free_port();
    let conf = dir.join("nginx.conf");
    let servers: String = replicas
        .iter()
        .map(|a| format!("    server {a};\n"))
        .collect();
    let d = dir.display();
    // Running as root, nginx's workers would switch to `nobody`; with the
    // master process off it stays one process with the test's rights.
    let text = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/nginx-error.log warn;\nevents {{ worker_connections 64; }}\n\
         http {{\n  access_log {d}/nginx-access.log;\n\
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         upstream parallax {{\n    hash $http_x_parallax_session consistent;\n{servers}    keepalive 8;\n  }}\n\
         upstream parallax_rr {{\n{servers}  }}\n\
         server {{\n    listen 127.0.0.1:{port};\n\
             location / {{\n      proxy_pass http://parallax;\n      proxy_http_version 1.1;\n\
               proxy_set_header Connection \"\";\n      add_header X-Fleet-Upstream $upstream_addr always;\n    }}\n\
             location /rr/ {{\n      proxy_pass http://parallax_rr/;\n      proxy_http_version 1.1;\n\
               proxy_set_header Connection \"\";\n      add_header X-Fleet-Upstream $upstream_addr always;\n    }}\n\
         }}\n}}\n"
    );
    std::fs::write(&conf, text).expect("write nginx.conf");
    let log = dir.join("nginx-stderr.log");
    let out = std::fs::File::create(&log).expect("log file");
    let child = Command::new(bin)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&conf)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("log file"))
        .stderr(out)
        .spawn()
        .expect("start nginx");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut child = Reaped(child, "nginx");
    wait_ready(addr, "/health", &mut child, &log);
    (addr, child)
}

/// `POST /evaluate` through nginx at `path`: (action, replica that answered).
fn call(lb: SocketAddr, path: &str, session: &str, i: usize) -> (String, String) {
    let body = json!({
        "stage": "tool.before",
        "session_id": session,
        "tool_name": "Bash",
        "tool_args": {"command": format!("cargo test -p crate_{i}")},
    });
    let r = request(
        lb,
        "POST",
        path,
        &[
            ("Content-Type", "application/json"),
            ("X-Parallax-Session", session),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let upstream = r
        .header("x-fleet-upstream")
        .expect("nginx names the replica");
    let v: Value = r.json();
    (v["action"].as_str().unwrap_or("?").to_string(), upstream)
}

/// Which replica nginx sends `session` to (a `/health` probe carrying the
/// header: hashing does not look at the path).
fn replica_of(lb: SocketAddr, session: &str) -> String {
    let r = request(
        lb,
        "GET",
        "/health",
        &[("X-Parallax-Session", session)],
        b"",
    );
    assert_eq!(r.status, 200);
    r.header("x-fleet-upstream")
        .expect("nginx names the replica")
}

fn sessions_in(audit: &Path) -> std::collections::BTreeSet<String> {
    audit_lines(audit)
        .iter()
        .filter_map(|l| {
            l.pointer("/event/session_id")
                .or_else(|| l.get("session_id"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn a_rate_rule_fires_on_its_sessions_replica_and_the_other_replica_is_unaffected() {
    let bin = match nginx() {
        Ok(b) => b,
        Err(why) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{why}; with CI=true a missing nginx fails instead of being skipped");
            }
            let _ = writeln!(std::io::stderr(), "skipped: {why}");
            return;
        }
    };
    let dir = temp_dir("fleet");
    let (r1, _p1) = start_replica(&dir, 1);
    let (r2, _p2) = start_replica(&dir, 2);
    let (lb, _nginx) = start_nginx(&bin, &dir, &[r1, r2]);

    // Two sessions nginx puts on different replicas.
    let busy = "fleet-busy";
    let busy_on = replica_of(lb, busy);
    let calm = (0..200)
        .map(|k| format!("fleet-calm-{k}"))
        .find(|s| replica_of(lb, s) != busy_on)
        .expect("some session hashes to the other replica");
    let calm_on = replica_of(lb, &calm);
    assert_ne!(busy_on, calm_on);
    let on = |a: &str| {
        [r1, r2]
            .iter()
            .position(|r| r.to_string() == a)
            .expect("a replica")
    };

    // Interleaved: the busy session goes one call past the limit, the calm
    // one stays one short of it. Every call of a session lands on its
    // replica.
    let mut busy_actions = Vec::new();
    for i in 0..=LIMIT {
        let (action, upstream) = call(lb, "/evaluate", busy, i);
        assert_eq!(
            upstream, busy_on,
            "call {i} of {busy} stayed on its replica"
        );
        busy_actions.push(action);
        if i + 1 < LIMIT {
            let (action, upstream) = call(lb, "/evaluate", &calm, i);
            assert_eq!(
                upstream, calm_on,
                "call {i} of {calm} stayed on its replica"
            );
            assert_eq!(action, "allow", "call {i} of {calm} is allowed");
        }
    }
    let mut want = vec!["allow".to_string(); LIMIT];
    want.push("block".into());
    assert_eq!(
        busy_actions,
        want,
        "the rate rule fires on the busy session's call {}",
        LIMIT + 1
    );
    // Still blocked on the next call; the calm session's call up to the
    // limit, after the busy one was blocked, is still allowed.
    assert_eq!(call(lb, "/evaluate", busy, 99).0, "block");
    assert_eq!(call(lb, "/evaluate", &calm, 99).0, "allow");

    // Each replica's window and audit log hold its own sessions only.
    let (busy_n, calm_n) = (on(&busy_on) + 1, on(&calm_on) + 1);
    let audit = |n: usize| dir.join(format!("audit-{n}.jsonl"));
    let until = Instant::now() + Duration::from_secs(10);
    while (sessions_in(&audit(calm_n)).is_empty() || sessions_in(&audit(busy_n)).is_empty())
        && Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (seen_busy, seen_calm) = (sessions_in(&audit(busy_n)), sessions_in(&audit(calm_n)));
    assert!(
        seen_busy.contains(busy) && !seen_busy.contains(&calm),
        "{seen_busy:?}"
    );
    assert!(
        seen_calm.contains(&calm) && !seen_calm.contains(busy),
        "{seen_calm:?}"
    );
    // The side-store files: rows are committed in batches as the store
    // thread idles, so wait for them.
    let rows = |n: usize, s: &str| -> i64 {
        let db = dir.join(format!("replica-{n}.db"));
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap_or_else(|e| panic!("open {}: {e}", db.display()));
        conn.query_row(
            "SELECT count(*) FROM events WHERE session_id = ?1",
            [s],
            |r| r.get(0),
        )
        .unwrap_or(-1)
    };
    let until = Instant::now() + Duration::from_secs(10);
    while rows(busy_n, busy) < (LIMIT + 2) as i64 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        rows(busy_n, busy),
        (LIMIT + 2) as i64,
        "the busy session's window"
    );
    assert_eq!(rows(calm_n, busy), 0, "the other replica never saw it");
    assert_eq!(rows(calm_n, &calm), LIMIT as i64);
    assert_eq!(rows(busy_n, &calm), 0);

    // The control: without hashing, one session's calls alternate between
    // the replicas, each sees half, and the rule never fires.
    let spread = "fleet-round-robin";
    let mut upstreams = std::collections::BTreeSet::new();
    for i in 0..=LIMIT + 2 {
        let (action, upstream) = call(lb, "/rr/evaluate", spread, i);
        assert_eq!(
            action, "allow",
            "round-robin call {i}: each replica saw too few"
        );
        upstreams.insert(upstream);
    }
    assert_eq!(upstreams.len(), 2, "round robin used both replicas");
}
