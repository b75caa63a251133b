//! Shared harness for the operations tests: the real server on an
//! ephemeral 127.0.0.1 port, a hand-written HTTP/1.1 client, temp dirs.
#![allow(dead_code)]

pub mod agents;
pub mod corpus;
pub mod engine_report;
pub mod held_out;
pub mod postgres;
pub mod tool_calls;

use parallax::decision::DecisionService;
use parallax::metrics::Metrics;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml");
pub const IO_TIMEOUT: Duration = Duration::from_secs(15);

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("parallax-ops-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a temp dir");
    d
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub state: Arc<DecisionService>,
    pub metrics: Arc<Metrics>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// The config at `config`, settings adjusted by `tweak`, state extended
    /// by `build` (run inside the server's runtime, so it may spawn tasks).
    pub fn start(
        config: &Path,
        tweak: impl FnOnce(&mut parallax::settings::Settings),
        build: impl FnOnce(DecisionService, Arc<Metrics>) -> DecisionService + Send + 'static,
    ) -> TestServer {
        TestServer::start_doors(config, tweak, build)
    }

    /// [`TestServer::start`], serving the model-API proxy too when the
    /// settings (after `tweak`) enable it.
    pub fn start_doors(
        config: &Path,
        tweak: impl FnOnce(&mut parallax::settings::Settings),
        build: impl FnOnce(DecisionService, Arc<Metrics>) -> DecisionService + Send + 'static,
    ) -> TestServer {
        let loaded = parallax::backend::load(Some(config), false)
            .unwrap_or_else(|e| panic!("cannot load {}: {e}", config.display()));
        let mut settings = loaded.settings;
        tweak(&mut settings);
        let engine = loaded.engine;
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (state_tx, state_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let metrics = Metrics::new();
                let state = Arc::new(build(
                    DecisionService::new(engine, settings)
                        .expect("open the side-store")
                        .with_metrics(metrics.clone()),
                    metrics.clone(),
                ));
                state_tx.send((state.clone(), metrics)).unwrap();
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                let mut doors = parallax::http::router::Doors::default();
                if state.settings.proxy.enabled {
                    let proxy = parallax::proxy::Proxy::new(&state.settings.proxy)
                        .expect("the proxy starts");
                    doors.proxy = Some(Arc::new(proxy));
                }
                parallax::http::serve_doors(listener, state, doors, async {
                    let _ = rx.await;
                })
                .await;
            });
        });
        let (state, metrics) = state_rx.recv().expect("the server started");
        TestServer {
            addr,
            state,
            metrics,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// Graceful shutdown: in-flight requests finish, queues are flushed.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            if t.join().is_err() && !std::thread::panicking() {
                panic!("the server thread panicked");
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<String> {
        let name = name.to_ascii_lowercase();
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim().to_ascii_lowercase() == name).then(|| v.trim().to_string())
        })
    }

    /// Asserts the status and the `{"error":{"code","message"}}` shape.
    pub fn assert_error(&self, status: u16, code: &str) -> String {
        let text = String::from_utf8_lossy(&self.body).to_string();
        assert_eq!(self.status, status, "wrong status; body: {text}");
        assert!(
            self.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "error is not JSON: {}",
            self.head
        );
        let v = self.json();
        assert_eq!(v.as_object().map(|o| o.len()), Some(1), "{v}");
        assert_eq!(v["error"]["code"], code, "{v}");
        v["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no message: {v}"))
            .to_string()
    }
}

/// Sends `request` verbatim (it should ask for `Connection: close`) and
/// reads the response to EOF.
pub fn raw(addr: SocketAddr, request: &[u8]) -> Response {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(request).expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read the response");
    parse(&buf)
}

pub fn parse(buf: &[u8]) -> Response {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {head}"));
    let raw = &buf[end + 4..];
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .replace(' ', "")
            .starts_with("transfer-encoding:chunked")
    });
    Response {
        status,
        body: if chunked { dechunk(raw) } else { raw.to_vec() },
        head,
    }
}

/// The payload of a `Transfer-Encoding: chunked` body.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            panic!("bad chunked body: {:?}", String::from_utf8_lossy(raw));
        };
        let size_line = String::from_utf8_lossy(&raw[..eol]).to_string();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size line {size_line:?}"));
        raw = &raw[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    raw(addr, &bytes)
}

pub fn evaluate(addr: SocketAddr, body: &Value) -> Value {
    let r = request(
        addr,
        "POST",
        "/evaluate",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// Every line of the audit log and its rotated files, oldest file first.
pub fn audit_lines(path: &Path) -> Vec<Value> {
    let mut files = vec![];
    for n in (1..1000).rev() {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{n}"));
        let p = PathBuf::from(p);
        if p.exists() {
            files.push(p);
        }
    }
    files.push(path.to_path_buf());
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for line in text.lines() {
            out.push(
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("bad audit line in {}: {e}: {line}", f.display())),
            );
        }
    }
    out
}

/// Like [`evaluate`], but `None` on any transport failure (for clients that
/// race a shutdown).
pub fn try_evaluate(addr: SocketAddr, body: &Value) -> Option<Value> {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).ok()?;
    s.set_read_timeout(Some(IO_TIMEOUT)).ok()?;
    let body = body.to_string();
    let req = format!(
        "POST /evaluate HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    if !buf.starts_with(b"HTTP/1.1 200") {
        return None;
    }
    serde_json::from_slice(&buf[end + 4..]).ok()
}

/// `parallax eval -c CONFIG INPUT` with the test build's binary: the
/// verdict of each input line, in order; fails the test with eval's stderr
/// when it exits non-zero.
pub fn eval_file(config: &Path, input: &Path) -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["eval", "-c"])
        .arg(config)
        .arg(input)
        .output()
        .expect("run parallax eval");
    eval_verdicts(out)
}

/// The verdicts a finished `parallax eval` printed, one per line; fails
/// the test with eval's stderr when it exited non-zero.
pub fn eval_verdicts(out: std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "parallax eval failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON verdict per line"))
        .collect()
}

/// A `parallax serve` (or any child) killed and reaped when dropped, so a
/// failing test leaves no server behind.
pub struct Serve(pub std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free on 127.0.0.1 when asked (the server binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind an ephemeral port")
        .local_addr()
        .expect("its address")
        .port()
}
