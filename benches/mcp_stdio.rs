//! What `parallax mcp wrap` adds to a `tools/call` over stdio: the same
//! call to a trivial in-process echo server directly, and through the
//! wrap's relay (`mcp::stdio::relay_streams`, the code `mcp wrap` runs
//! between its stdin/stdout and the server's pipes) with the gate deciding
//! `tool.before` for the call and `tool.after` for its result (shipped
//! rules of ./parallax.yaml, SQL side-store included, as `mcp wrap` loads
//! them). Both paths use in-memory pipes (`tokio::io::duplex`), so the
//! difference is the relay and the decisions, not the server or the OS.
//!
//! - `mcp-stdio-added-p50`, `mcp-stdio-added-p99`: per call, relayed minus
//!   direct, at the median and the 99th percentile.
//! - printed beside them: the relay with no rules at all (an empty
//!   config), which separates the relay's own cost (framing, parsing, the
//!   gate's bookkeeping, the tasks and channels) from the two decisions.
//!
//! Run: `cargo bench --bench mcp_stdio`. The client, the relay's tasks and
//! the server share the machine's two cores, so the figures include
//! scheduling. The arguments differ per call so no repetition rule fires,
//! and the calls go in sessions of `PER_SESSION` (a fresh gate, session
//! and server each; the direct path the same), below the shipped
//! `sql-session-tool-rate` limit of 100 tool calls a minute — each
//! session's first call, which creates the session, is counted too.

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/timing.rs"]
mod timing;

use budgets::Budgets;
use parallax::decision::DecisionService;
use parallax::mcp::gate::Gate;
use parallax::mcp::stdio::relay_streams;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use timing::Dist;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml");
const SAMPLES: usize = 3000;
const WARMUP: usize = 300;
const PIPE: usize = 64 * 1024;
const PER_SESSION: usize = 90;

/// The trivial server: each `tools/call` answered with its `text` argument.
async fn echo_server(io: DuplexStream) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(req) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = req.get("id").cloned() else {
            continue;
        };
        let text = req["params"]["arguments"]["text"].clone();
        let mut out = json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": text}], "isError": false}})
        .to_string()
        .into_bytes();
        out.push(b'\n');
        if write.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn call_line(i: usize) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": format!("status report {i} for the team")}}})
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// `SAMPLES` calls (after a warm-up), each timed alone, `PER_SESSION` on
/// each stream `connect(n)` opens.
async fn measure(mut connect: impl FnMut(usize) -> DuplexStream) -> Dist {
    let mut ns = Vec::with_capacity(SAMPLES);
    let mut i = 0;
    for session in 0.. {
        if i >= WARMUP + SAMPLES {
            break;
        }
        let (read, mut write) = tokio::io::split(connect(session));
        let mut lines = BufReader::new(read).lines();
        for _ in 0..PER_SESSION {
            one_call(i, &mut write, &mut lines, &mut ns).await;
            i += 1;
        }
    }
    ns.sort_unstable();
    Dist::from_sorted(&ns)
}

async fn one_call(
    i: usize,
    write: &mut tokio::io::WriteHalf<DuplexStream>,
    lines: &mut tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    ns: &mut Vec<u64>,
) {
    {
        let line = call_line(i);
        let t = Instant::now();
        write.write_all(&line).await.expect("write the call");
        let answer = lines
            .next_line()
            .await
            .expect("read the answer")
            .expect("an answer");
        let took = t.elapsed().as_nanos() as u64;
        let v: Value = serde_json::from_str(&answer).expect("JSON-RPC answer");
        assert_eq!(v["id"], json!(i), "{answer}");
        assert_eq!(
            v["result"]["isError"],
            json!(false),
            "a call was refused: {answer}"
        );
        if i >= WARMUP {
            ns.push(took);
        }
    }
}

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

fn main() {
    let budgets = Budgets::load();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let service_for = |config: &Path| {
        let loaded = parallax::backend::load(Some(config), false).expect("config");
        Arc::new(DecisionService::new(loaded.engine, loaded.settings).expect("service"))
    };
    let service = service_for(Path::new(CONFIG));
    let empty =
        std::env::temp_dir().join(format!("parallax-bench-mcp-{}.yaml", std::process::id()));
    std::fs::write(&empty, "rules_dir: null\nevaluators: []\n").expect("write the empty config");
    let no_rules = service_for(&empty);
    let _ = std::fs::remove_file(&empty);
    let run = std::process::id();
    let relay = |service: Arc<DecisionService>, label: &'static str| {
        move |n: usize| {
            let gate = Arc::new(Gate::new(
                service.clone(),
                format!("bench-mcp-stdio-{label}-{run}-{n}"),
                Some("bench"),
            ));
            let (client, wrap_client_side) = tokio::io::duplex(PIPE);
            let (wrap_server_side, server) = tokio::io::duplex(PIPE);
            tokio::spawn(echo_server(server));
            let (client_in, client_out) = tokio::io::split(wrap_client_side);
            let (server_out, server_in) = tokio::io::split(wrap_server_side);
            // Its tasks end when the client's stream closes.
            let _ = relay_streams(gate, client_in, client_out, server_in, server_out);
            client
        }
    };
    let (direct, bare, relayed) = rt.block_on(async {
        let direct = measure(|_| {
            let (client, server) = tokio::io::duplex(PIPE);
            tokio::spawn(echo_server(server));
            client
        })
        .await;
        let bare = measure(relay(no_rules, "bare")).await;
        let relayed = measure(relay(service.clone(), "shipped")).await;
        (direct, bare, relayed)
    });
    println!(
        "tools/call over stdio, {SAMPLES} calls (p50 / p99): direct {:.1} / {:.1} µs; relay with \
         no rules {:.1} / {:.1} µs; relay with the shipped rules {:.1} / {:.1} µs",
        us(direct.p50),
        us(direct.p99),
        us(bare.p50),
        us(bare.p99),
        us(relayed.p50),
        us(relayed.p99)
    );
    println!(
        "added by the relay alone: p50 {:.1} µs, p99 {:.1} µs",
        us(bare.p50 - direct.p50),
        us(bare.p99 - direct.p99)
    );
    budgets.check("mcp-stdio-added-p50", us(relayed.p50 - direct.p50));
    budgets.check("mcp-stdio-added-p99", us(relayed.p99 - direct.p99));
}
