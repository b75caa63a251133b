//! What the model-API proxy adds to a model call: the same request sent to
//! a local upstream directly and through `parallax serve --mode proxy`
//! (in-process, shipped rules, baked backend), one keep-alive connection
//! each, on 127.0.0.1.
//!
//! - non-streamed Messages call (a tool call in the answer, so both sides
//!   are inspected): added p50 and p99 (`proxy-added-p50`, `proxy-added-p99`);
//! - streamed Messages call: added time to the first body byte
//!   (`proxy-stream-ttfb-added`).
//!
//! Run: `cargo bench --bench proxy`. Both paths share the machine's two
//! cores with the client, so the figures include scheduling noise; the
//! medians are stable to a few µs run to run.

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/timing.rs"]
mod timing;

use budgets::Budgets;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use parallax::decision::DecisionService;
use parallax::http::router::Doors;
use parallax::proxy::Proxy;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use timing::Dist;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/parallax.yaml");
const SAMPLES: usize = 3000;

fn answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-bench",
        "content": [
            {"type": "text", "text": "Listing the files."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la src"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 50, "output_tokens": 20},
    })
}

fn stream_answer() -> String {
    let mut s = String::new();
    let mut ev = |kind: &str, mut d: Value| {
        d["type"] = json!(kind);
        s.push_str(&format!("event: {kind}\ndata: {d}\n\n"));
    };
    ev(
        "message_start",
        json!({"message": {"id": "msg_1", "type": "message", "role": "assistant",
                            "model": "claude-bench", "content": [], "stop_reason": null,
                            "usage": {"input_tokens": 50, "output_tokens": 1}}}),
    );
    ev(
        "content_block_start",
        json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for w in ["Listing ", "the ", "files."] {
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "text_delta", "text": w}}),
        );
    }
    ev("content_block_stop", json!({"index": 0}));
    ev(
        "message_delta",
        json!({"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
    );
    ev("message_stop", json!({}));
    s
}

fn request_body(stream: bool) -> Vec<u8> {
    json!({
        "model": "claude-bench", "max_tokens": 512, "stream": stream,
        "system": "You are a coding agent.",
        "messages": [
            {"role": "user", "content": "what is in src?"},
        ],
        "tools": [{"name": "Bash", "description": "Run a shell command",
                   "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
    })
    .to_string()
    .into_bytes()
}

/// A model API that answers every call at once with the canned answers.
async fn upstream(listener: tokio::net::TcpListener) {
    let json_body = Bytes::from(answer().to_string());
    let sse_body = Bytes::from(stream_answer());
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let (j, s) = (json_body.clone(), sse_body.clone());
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let (j, s) = (j.clone(), s.clone());
                async move {
                    let body = req.into_body().collect().await.map(|b| b.to_bytes());
                    let streamed = body
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                        .and_then(|v| v["stream"].as_bool())
                        .unwrap_or(false);
                    let (ct, body) = if streamed {
                        ("text/event-stream", s)
                    } else {
                        ("application/json", j)
                    };
                    let mut r = Response::new(Full::new(body));
                    r.headers_mut()
                        .insert("content-type", ct.parse().expect("a header value"));
                    Ok::<_, Infallible>(r)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    sender
}

/// One call: (time to the first body byte, time to the whole body).
async fn call(sender: &mut Sender, path: &str, body: &[u8]) -> (Duration, Duration) {
    let req = Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("x-api-key", "sk-bench")
        .header("anthropic-version", "2023-06-01")
        .body(Full::new(Bytes::copy_from_slice(body)))
        .expect("a request");
    let started = Instant::now();
    sender.ready().await.expect("ready");
    let resp = sender.send_request(req).await.expect("a response");
    assert!(resp.status().is_success(), "status {}", resp.status());
    let mut body = resp.into_body();
    let mut first = None;
    while let Some(frame) = body.frame().await {
        let frame: Frame<Bytes> = frame.expect("a body frame");
        if first.is_none() && frame.data_ref().is_some_and(|d| !d.is_empty()) {
            first = Some(started.elapsed());
        }
    }
    let total = started.elapsed();
    (first.unwrap_or(total), total)
}

fn dist(mut ns: Vec<u64>) -> Dist {
    ns.sort_unstable();
    Dist::from_sorted(&ns)
}

async fn measure(addr: SocketAddr, path: &str, stream: bool) -> (Dist, Dist) {
    let body = request_body(stream);
    let mut sender = connect(addr).await;
    for _ in 0..200 {
        call(&mut sender, path, &body).await;
    }
    let mut ttfb = Vec::with_capacity(SAMPLES);
    let mut total = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let (f, t) = call(&mut sender, path, &body).await;
        ttfb.push(f.as_nanos() as u64);
        total.push(t.as_nanos() as u64);
    }
    (dist(ttfb), dist(total))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let up = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let up_addr = up.local_addr().expect("addr");
        tokio::spawn(upstream(up));

        let loaded = parallax::backend::load(Some(Path::new(CONFIG)), false).expect("config");
        let mut settings = loaded.settings;
        settings.proxy.enabled = true;
        settings.proxy.anthropic_upstream = format!("http://{up_addr}");
        let proxy = Arc::new(Proxy::new(&settings.proxy).expect("proxy"));
        let service = Arc::new(DecisionService::new(loaded.engine, settings).expect("service"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let px_addr = listener.local_addr().expect("addr");
        let doors = Doors {
            proxy: Some(proxy),
            ..Doors::default()
        };
        tokio::spawn(parallax::http::serve_doors(
            listener,
            service,
            doors,
            std::future::pending::<()>(),
        ));

        let (_, direct) = measure(up_addr, "/v1/messages", false).await;
        let (_, proxied) = measure(px_addr, "/anthropic/v1/messages", false).await;
        let (direct_ttfb, _) = measure(up_addr, "/v1/messages", true).await;
        let (proxied_ttfb, _) = measure(px_addr, "/anthropic/v1/messages", true).await;

        let us = |ns: f64| ns / 1000.0;
        println!(
            "non-streamed call: direct p50 {:.1} µs p99 {:.1} µs; through the proxy p50 {:.1} µs p99 {:.1} µs ({} samples)",
            us(direct.p50),
            us(direct.p99),
            us(proxied.p50),
            us(proxied.p99),
            direct.samples
        );
        println!(
            "streamed call, first byte: direct p50 {:.1} µs; through the proxy p50 {:.1} µs p99 {:.1} µs",
            us(direct_ttfb.p50),
            us(proxied_ttfb.p50),
            us(proxied_ttfb.p99)
        );
        let budgets = Budgets::load();
        budgets.check("proxy-added-p50", us(proxied.p50 - direct.p50));
        budgets.check("proxy-added-p99", us(proxied.p99 - direct.p99));
        budgets.check(
            "proxy-stream-ttfb-added",
            us(proxied_ttfb.p50 - direct_ttfb.p50),
        );
    });
}
