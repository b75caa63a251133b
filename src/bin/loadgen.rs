//! HTTP load generator: drives `POST /evaluate` over keep-alive connections
//! on 127.0.0.1 at fixed concurrency for a fixed time, then drives a trivial
//! hyper handler (fixed verdict, started in-process) the same way, and
//! prints requests/s and p50/p99/p99.9 for both. The ratio shows how close
//! `/evaluate` comes to what the HTTP stack alone manages on this machine.
//!
//! Bounded by design: loopback addresses only, a fixed duration (at most 10
//! minutes), a fixed number of connections.
//!
//! ```text
//! cargo run --release --bin loadgen -- [--connections 32] [--duration 10]
//!     [--warmup 2] [--event mix|tool_call_200b|message_1k|result_64k|...]
//!     [--url http://127.0.0.1:9920 [--server-pid PID]]
//! ```
//! Without `--url` the server runs in-process on the shipped config (baked
//! rules). With `--url` it drives a running `parallax serve`; `--server-pid`
//! then reports that process's peak RSS (VmHWM) before and after the load.

#[path = "../../benches/support/budgets.rs"]
mod budgets;
#[path = "../../benches/support/events.rs"]
mod events;
#[path = "../../benches/support/mix.rs"]
mod mix;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use parallax::decision::DecisionService;
use parallax::http;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

#[derive(Parser)]
#[command(about = "Load generator for POST /evaluate (loopback only)")]
struct Args {
    /// Keep-alive connections, each sending one request at a time.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds of measured load per target (at most 600).
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Seconds of unmeasured load before each measurement.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    /// `mix` (the small benchmark events in turn) or one event's name.
    #[arg(long, default_value = "mix")]
    event: String,
    /// A running server to drive (loopback only); default: one in-process.
    #[arg(long)]
    url: Option<String>,
    /// Pid of the `--url` server, to report its peak RSS.
    #[arg(long, requires = "url")]
    server_pid: Option<u32>,
    /// Worker threads of the client runtime.
    #[arg(long, default_value_t = 2)]
    client_threads: usize,
    /// Worker threads of each in-process server runtime.
    #[arg(long, default_value_t = 2)]
    server_threads: usize,
    /// Print N events of the realistic mix (benches/support/mix.rs) as
    /// JSONL and exit, for `parallax eval` measurements.
    #[arg(long, value_name = "N")]
    write_mix: Option<usize>,
    /// Time this `parallax` binary's `eval` of the realistic mix (20,000
    /// events, `--eval-events`), whole process, best of `--eval-runs`,
    /// and judge it against the `eval-mix-throughput` budget.
    #[arg(long, value_name = "PARALLAX")]
    eval_mix: Option<std::path::PathBuf>,
    /// Events in the `--eval-mix` input.
    #[arg(long, default_value_t = 20_000)]
    eval_events: usize,
    /// Runs of `--eval-mix` (the best and the median are printed).
    #[arg(long, default_value_t = 5)]
    eval_runs: usize,
}

/// A server running on its own runtime thread until dropped.
struct InProcess {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Evaluate,
    Trivial,
}

/// What the trivial handler answers: the shape of an `allow` verdict.
const FIXED_VERDICT: &[u8] =
    br#"{"action":"allow","blocked":false,"reasons":[],"results":[],"elapsed_ms":0.0}"#;

async fn trivial(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the body like /evaluate does, so both pay for the same bytes.
    let _ = req.into_body().collect().await;
    let mut r = Response::new(Full::new(Bytes::from_static(FIXED_VERDICT)));
    r.headers_mut()
        .insert(CONTENT_TYPE, "application/json".parse().expect("static"));
    Ok(r)
}

async fn serve_trivial(listener: TcpListener, mut stop: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                tokio::spawn(async move {
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service_fn(trivial))
                        .await;
                });
            }
            _ = &mut stop => break,
        }
    }
}

fn start(kind: Kind, threads: usize) -> Result<InProcess, String> {
    let state = match kind {
        Kind::Evaluate => {
            let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("parallax.yaml");
            let loaded =
                parallax::backend::load(Some(&config), false).map_err(|e| e.to_string())?;
            println!(
                "in-process /evaluate: {} backend, {} rules",
                loaded.engine.backend().as_str(),
                loaded.engine.program().rules.len()
            );
            let state =
                DecisionService::new(loaded.engine, loaded.settings).map_err(|e| e.to_string())?;
            Some(Arc::new(state))
        }
        Kind::Trivial => None,
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let thread = std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = addr_tx.send(Err(format!("server runtime: {e}")));
                return;
            }
        };
        rt.block_on(async move {
            let listener = match TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(e) => {
                    let _ = addr_tx.send(Err(format!("bind 127.0.0.1: {e}")));
                    return;
                }
            };
            let _ = addr_tx.send(listener.local_addr().map_err(|e| e.to_string()));
            match state {
                Some(state) => {
                    http::serve(listener, state, async {
                        let _ = stop_rx.await;
                    })
                    .await
                }
                None => serve_trivial(listener, stop_rx).await,
            }
        });
    });
    let addr = addr_rx
        .recv()
        .map_err(|_| "server thread died".to_string())??;
    Ok(InProcess {
        addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// `http://127.0.0.1:9920` (or `127.0.0.1:9920`) to an address; anything
/// that is not a loopback IP is refused.
fn parse_url(url: &str) -> Result<SocketAddr, String> {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let hostport = rest.split('/').next().unwrap_or_default();
    let addr: SocketAddr = hostport
        .parse()
        .map_err(|_| format!("`{url}`: expected http://<loopback ip>:<port>"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "`{url}`: loadgen only drives loopback addresses (127.0.0.1)"
        ));
    }
    Ok(addr)
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> Result<Sender, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake {addr}: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn request(sender: &mut Sender, body: &Bytes) -> Result<(u16, Bytes), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let req = Request::post("/evaluate")
        .header(HOST, "127.0.0.1")
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, bytes))
}

/// Sends each event once and checks the verdict, so the load below is the
/// real work and not a stream of 400s.
async fn check_verdicts(addr: SocketAddr, bodies: &[(Bytes, &'static str)]) -> Result<(), String> {
    let mut sender = connect(addr).await?;
    for (body, expect) in bodies {
        let (status, bytes) = request(&mut sender, body).await?;
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("status {status}, unreadable body: {e}"))?;
        let got = v.get("action").and_then(|a| a.as_str()).unwrap_or("?");
        if status != 200 || got != *expect {
            return Err(format!(
                "expected 200 and `{expect}`, got {status} and `{got}`"
            ));
        }
    }
    Ok(())
}

struct Outcome {
    latencies_ns: Vec<u64>,
    errors: usize,
    first_error: Option<String>,
    seconds: f64,
}

async fn drive(addr: SocketAddr, args: &Args, bodies: Arc<Vec<Bytes>>) -> Outcome {
    let warm_end = Instant::now() + Duration::from_secs(args.warmup);
    let end = warm_end + Duration::from_secs(args.duration);
    let mut tasks = Vec::new();
    for c in 0..args.connections {
        let bodies = bodies.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(1 << 16);
            let mut errors = 0;
            let mut first_error = None;
            let mut sender = None;
            let mut i = c;
            while Instant::now() < end {
                if sender.is_none() {
                    match connect(addr).await {
                        Ok(s) => sender = Some(s),
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert(e);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    }
                }
                let Some(s) = sender.as_mut() else { continue };
                let body = &bodies[i % bodies.len()];
                i += 1;
                let t = Instant::now();
                match request(s, body).await {
                    Ok((200, _)) => {
                        if t >= warm_end {
                            lat.push(t.elapsed().as_nanos() as u64);
                        }
                    }
                    Ok((status, _)) => {
                        errors += 1;
                        first_error.get_or_insert(format!("status {status}"));
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                        sender = None;
                    }
                }
            }
            (lat, errors, first_error)
        }));
    }
    let mut out = Outcome {
        latencies_ns: Vec::new(),
        errors: 0,
        first_error: None,
        seconds: args.duration as f64,
    };
    for t in tasks {
        if let Ok((lat, errors, first)) = t.await {
            out.latencies_ns.extend(lat);
            out.errors += errors;
            if out.first_error.is_none() {
                out.first_error = first;
            }
        }
    }
    out.latencies_ns.sort_unstable();
    out
}

struct Summary {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
}

fn summarise(name: &str, o: &Outcome) -> Summary {
    let n = o.latencies_ns.len();
    let at = |q: f64| {
        if n == 0 {
            return f64::NAN;
        }
        o.latencies_ns[((n as f64 - 1.0) * q).round() as usize] as f64 / 1e6
    };
    let s = Summary {
        rps: n as f64 / o.seconds,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        p999_ms: at(0.999),
        max_ms: at(1.0),
    };
    println!(
        "{name:<10} {n:>10} {:>10.0} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>7}",
        s.rps, s.p50_ms, s.p99_ms, s.p999_ms, s.max_ms, o.errors
    );
    if let Some(e) = &o.first_error {
        println!("           first error: {e}");
    }
    s
}

/// `VmHWM` and `VmRSS` of a process, in KiB.
fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(n) = args.write_mix {
        return write_mix(n);
    }
    if let Some(bin) = &args.eval_mix {
        return match eval_mix(bin, args.eval_events, args.eval_runs) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("loadgen: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.duration == 0 || args.duration > 600 || args.warmup > 60 {
        eprintln!("loadgen: --duration must be 1..=600 seconds and --warmup at most 60");
        return ExitCode::FAILURE;
    }
    if args.connections == 0 || args.connections > 1024 {
        eprintln!("loadgen: --connections must be 1..=1024");
        return ExitCode::FAILURE;
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--write-mix N`: 20 sessions, from a fixed start time.
fn write_mix(n: usize) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for e in mix::realistic_mix(n, 20, 1_800_000_000.0) {
        if writeln!(out, "{e}").is_err() {
            return ExitCode::FAILURE;
        }
    }
    if out.flush().is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `--eval-mix PARALLAX`: the mix written to a temporary file, then
/// `PARALLAX eval FILE` run `runs` times from that file's directory (so no
/// `./parallax.yaml` is picked up: the binary's baked rules), its output
/// read and counted, the wall time of each whole process taken. Events per
/// second of the best run is judged against `eval-mix-throughput`; the
/// load average is printed beside it, as wall time on a shared machine
/// means little without it.
fn eval_mix(bin: &Path, n: usize, runs: usize) -> Result<(), String> {
    if n == 0 || n > 1_000_000 || runs == 0 || runs > 50 {
        return Err("--eval-events must be 1..=1000000 and --eval-runs 1..=50".into());
    }
    let budgets = budgets::Budgets::load();
    let dir = std::env::temp_dir().join(format!("parallax-eval-mix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join("mix.jsonl");
    let text: String = mix::realistic_mix(n, 20, 1_800_000_000.0)
        .iter()
        .map(|e| format!("{e}\n"))
        .collect();
    std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut walls = Vec::with_capacity(runs);
    for run in 0..runs {
        let started = Instant::now();
        let out = std::process::Command::new(bin)
            .arg("eval")
            .arg(&file)
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let wall = started.elapsed();
        if !out.status.success() {
            return Err(format!(
                "{} eval failed: {}",
                bin.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let lines = out
            .stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        if lines != n {
            return Err(format!(
                "{} eval printed {lines} verdicts for {n} events",
                bin.display()
            ));
        }
        println!(
            "run {}: {:.3} s, {:.0} events/s (load average {})",
            run + 1,
            wall.as_secs_f64(),
            n as f64 / wall.as_secs_f64(),
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        walls.push(wall.as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&dir);
    walls.sort_by(f64::total_cmp);
    let best = walls[0];
    let median = walls[walls.len() / 2];
    println!(
        "parallax eval of the realistic mix, {n} events, whole process: best {best:.3} s \
         ({:.0} events/s), median {median:.3} s ({:.0} events/s)",
        n as f64 / best,
        n as f64 / median
    );
    budgets.check("eval-mix-throughput", n as f64 / best);
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let budgets = budgets::Budgets::load();
    let chosen: Vec<events::BenchEvent> = events::all()
        .into_iter()
        .filter(|e| match args.event.as_str() {
            // The small events: the large result would measure copying 64 KB.
            "mix" => e.name != "result_64k",
            name => e.name == name,
        })
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = events::all().iter().map(|e| e.name).collect();
        return Err(format!(
            "unknown event `{}` (mix, {})",
            args.event,
            names.join(", ")
        ));
    }
    let checked: Vec<(Bytes, &'static str)> = chosen
        .iter()
        .map(|e| {
            serde_json::to_vec(&e.json)
                .map(|b| (Bytes::from(b), e.expect))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let bodies = Arc::new(checked.iter().map(|b| b.0.clone()).collect::<Vec<_>>());
    let names: Vec<&str> = chosen.iter().map(|e| e.name).collect();

    let mut _evaluate_server = None;
    let evaluate_addr = match &args.url {
        Some(url) => parse_url(url)?,
        None => {
            let s = start(Kind::Evaluate, args.server_threads)?;
            let a = s.addr;
            _evaluate_server = Some(s);
            a
        }
    };
    let trivial_server = start(Kind::Trivial, args.server_threads)?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads)
        .enable_all()
        .build()
        .map_err(|e| format!("client runtime: {e}"))?;
    rt.block_on(check_verdicts(evaluate_addr, &checked))
        .map_err(|e| format!("POST /evaluate at {evaluate_addr}: {e}"))?;

    println!(
        "{} connections, {} s warm-up + {} s measured per target, events: {}; {} CPUs",
        args.connections,
        args.warmup,
        args.duration,
        names.join(", "),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let before = args.server_pid.and_then(memory);
    println!(
        "{:<10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "target", "requests", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "errors"
    );
    let eval = rt.block_on(drive(evaluate_addr, args, bodies.clone()));
    let after = args.server_pid.and_then(memory);
    let ev = summarise("/evaluate", &eval);
    let triv = rt.block_on(drive(trivial_server.addr, args, bodies));
    let tr = summarise("trivial", &triv);
    println!(
        "/evaluate vs trivial handler: {:.0}% of its requests/s, p99 {:.2}×",
        100.0 * ev.rps / tr.rps,
        ev.p99_ms / tr.p99_ms
    );
    if let (Some(pid), Some((hwm0, rss0)), Some((hwm1, rss1))) = (args.server_pid, before, after) {
        println!(
            "server pid {pid}: before load VmHWM {hwm0} KiB VmRSS {rss0} KiB; \
             after load VmHWM {hwm1} KiB VmRSS {rss1} KiB"
        );
    }
    println!();
    for name in ["http-throughput", "http-p99"] {
        let b = budgets.get(name);
        if b.connections.is_some_and(|c| c != args.connections) {
            println!(
                "budget {name:<24} not checked: it holds at {} connections, this run used {}",
                b.connections.unwrap_or_default(),
                args.connections
            );
            continue;
        }
        let value = if name == "http-throughput" {
            ev.rps
        } else {
            ev.p99_ms
        };
        budgets.check(name, value);
    }
    drop(trivial_server);
    Ok(())
}
