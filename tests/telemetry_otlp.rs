//! `telemetry.otlp` on a real `parallax serve` on 127.0.0.1, exporting to
//! an OTLP receiver this test runs (http/protobuf on hyper, gRPC on
//! tonic), which decodes what arrives with the official protobuf
//! definitions (`opentelemetry-proto`):
//! - a decision is one `parallax.decision` span with its door, stage,
//!   action and rule ids; a `traceparent` makes it a child of the caller's
//!   span (on `/evaluate`, the hooks route, LiteLLM's guardrail route),
//!   none makes it a root, an unsampled one exports nothing; the event's
//!   text is not exported;
//! - `include_content: true` exports the event with its secrets masked;
//! - a proxied model call is a `parallax.proxy` span in the caller's
//!   trace, its decisions are its children, and the fake model upstream
//!   gets a `traceparent` of it;
//! - a receiver that accepts connections and never answers delays no
//!   decision, and the spans that do not fit the queue show on /metrics.

mod support;

#[path = "support/fake_upstream.rs"]
mod fake_upstream;

use bytes::Bytes;
use fake_upstream::{Canned, FakeUpstream};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

/// The caller's trace and span in the `traceparent` the tests send.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLQ";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{CALLER_SPAN}-01")
}

/// What the receiver got: every span with its service name, and every
/// request body as it arrived (to look for text that must not be there).
#[derive(Default)]
struct Got {
    spans: Vec<(String, Span)>,
    raw: Vec<u8>,
}

impl Got {
    fn add(&mut self, raw: &[u8], req: ExportTraceServiceRequest) {
        self.raw.extend_from_slice(raw);
        for rs in req.resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|r| {
                    r.attributes
                        .iter()
                        .find(|a| a.key == "service.name")
                        .map(|a| render(a.value.as_ref().and_then(|v| v.value.as_ref())))
                })
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for s in ss.spans {
                    self.spans.push((service.clone(), s));
                }
            }
        }
    }
}

/// An OTLP receiver on 127.0.0.1 (its own runtime, dropped with it).
struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Got>>,
    _rt: tokio::runtime::Runtime,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

impl Receiver {
    /// OTLP/HTTP: `POST /v1/traces` with an `application/x-protobuf` body.
    fn http() -> Receiver {
        let rt = runtime();
        let got = Arc::new(Mutex::new(Got::default()));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let g = got.clone();
        rt.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let g = g.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let g = g.clone();
                        async move {
                            let ok_path = req.uri().path() == "/v1/traces";
                            let ct = req
                                .headers()
                                .get("content-type")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("")
                                .to_string();
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            assert!(ok_path, "spans sent to the wrong path");
                            assert_eq!(ct, "application/x-protobuf");
                            let decoded = ExportTraceServiceRequest::decode(body.as_ref())
                                .expect("an OTLP ExportTraceServiceRequest");
                            g.lock().unwrap().add(&body, decoded);
                            let answer = ExportTraceServiceResponse::default().encode_to_vec();
                            let mut r = hyper::Response::new(Full::new(Bytes::from(answer)));
                            r.headers_mut().insert(
                                "content-type",
                                hyper::header::HeaderValue::from_static("application/x-protobuf"),
                            );
                            Ok::<_, Infallible>(r)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Receiver { addr, got, _rt: rt }
    }

    /// OTLP/gRPC: tonic's generated `TraceService`.
    fn grpc() -> Receiver {
        let rt = runtime();
        let got = Arc::new(Mutex::new(Got::default()));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let service = TraceServiceServer::new(GrpcReceiver(got.clone()));
        rt.spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Receiver { addr, got, _rt: rt }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The spans received once at least `n` have arrived (10 s at most).
    fn wait_for(&self, n: usize) -> Vec<Span> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got: Vec<Span> = self
                .got
                .lock()
                .unwrap()
                .spans
                .iter()
                .map(|(_, s)| s.clone())
                .collect();
            if got.len() >= n || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn raw(&self) -> String {
        String::from_utf8_lossy(&self.got.lock().unwrap().raw).to_string()
    }

    fn services(&self) -> Vec<String> {
        self.got
            .lock()
            .unwrap()
            .spans
            .iter()
            .map(|(s, _)| s.clone())
            .collect()
    }
}

struct GrpcReceiver(Arc<Mutex<Got>>);

impl TraceService for GrpcReceiver {
    fn export<'a, 'b>(
        &'a self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Pin<
        Box<
            dyn Future<Output = Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status>>
                + Send
                + 'b,
        >,
    >
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            let req = request.into_inner();
            let raw = req.encode_to_vec();
            self.0.lock().unwrap().add(&raw, req);
            Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
        })
    }
}

/// An attribute value as text (arrays joined with `,`).
fn render(v: Option<&AnyValue>) -> String {
    match v {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::ArrayValue(a)) => a
            .values
            .iter()
            .map(|v| render(v.value.as_ref()))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .map(|a| render(a.value.as_ref().and_then(|v| v.value.as_ref())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rules of the test's own: a block at `tool.before`, a redaction of AWS
/// key ids at `message.before`.
const RULES: &str = r#"evaluator:
  name: otel-test
  stages: [tool.before, message.before]
rules:
  - id: otel-deny-rm
    title: Recursive delete of the root
    action: block
    stages: [tool.before]
    fields: [command]
    pattern: 'rm -rf /'
  - id: otel-aws-key
    title: AWS access key id
    action: redact
    stages: [message.before]
    fields: [text]
    pattern: '(?:AKIA|ASIA)[0-9A-Z]{16}'
"#;

/// `parallax serve` on a free port with the test rules and `extra` (YAML
/// sections) in its config.
fn serve(name: &str, extra: &str) -> (Serve, SocketAddr) {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("rules/regex")).unwrap();
    std::fs::write(dir.join("rules/regex/otel.yaml"), RULES).unwrap();
    std::fs::write(
        dir.join("parallax.yaml"),
        format!("rules_dir: rules\n{extra}"),
    )
    .unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_parallax"))
        .args(["serve", "-c", "parallax.yaml", "--port", &port.to_string()])
        .args(["--log-level", "warn"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start parallax serve");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let serve = Serve(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while try_health(addr).is_none() {
        assert!(
            Instant::now() < deadline,
            "parallax serve did not start: {}",
            std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (serve, addr)
}

fn try_health(addr: SocketAddr) -> Option<()> {
    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    (request(addr, "GET", "/health", &[], b"").status == 200).then_some(())
}

fn telemetry(endpoint: &str, protocol: &str, extra: &str) -> String {
    format!(
        "telemetry:\n  service_name: parallax-otel-test\n  flush_ms: 50\n{extra}  otlp:\n    \
         endpoint: {endpoint}\n    protocol: {protocol}\n"
    )
}

fn post(addr: SocketAddr, path: &str, trace: Option<&str>, body: &Value) -> Response {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(t) = trace {
        headers.push(("traceparent", t));
        headers.push(("tracestate", "vendor=abc"));
    }
    request(addr, "POST", path, &headers, body.to_string().as_bytes())
}

fn dangerous() -> Value {
    json!({"stage": "tool.before", "session_id": "s-otel", "tool_name": "exec",
           "tool_args": {"command": "rm -rf / --no-preserve-root"}})
}

fn with_secret() -> Value {
    json!({"stage": "message.before", "session_id": "s-otel",
           "message_text": format!("my key is {AWS_KEY}")})
}

fn metric(addr: SocketAddr, name: &str) -> u64 {
    let r = request(addr, "GET", "/metrics", &[], b"");
    let text = String::from_utf8_lossy(&r.body).to_string();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

#[test]
fn http_protobuf_spans_join_the_callers_trace_and_carry_no_content() {
    let receiver = Receiver::http();
    let (_serve, addr) = serve(
        "otel-http",
        &telemetry(&receiver.url(), "http/protobuf", ""),
    );

    let tp = traceparent();
    let r = post(addr, "/evaluate", Some(&tp), &dangerous());
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["action"], "block");
    let r = post(addr, "/evaluate", None, &with_secret());
    assert_eq!(r.json()["action"], "redact");

    let spans = receiver.wait_for(2);
    assert_eq!(spans.len(), 2, "one span per decision");
    assert!(receiver
        .services()
        .iter()
        .all(|s| s == "parallax-otel-test"));
    let joined = spans
        .iter()
        .find(|s| attr(s, "parallax.action").as_deref() == Some("block"))
        .expect("the block's span");
    assert_eq!(joined.name, "parallax.decision");
    assert_eq!(hex(&joined.trace_id), TRACE_ID, "in the caller's trace");
    assert_eq!(
        hex(&joined.parent_span_id),
        CALLER_SPAN,
        "child of its span"
    );
    assert_eq!(attr(joined, "parallax.door").as_deref(), Some("http"));
    assert_eq!(
        attr(joined, "parallax.stage").as_deref(),
        Some("tool.before")
    );
    assert_eq!(
        attr(joined, "parallax.rule_ids").as_deref(),
        Some("otel-deny-rm")
    );
    assert_eq!(
        attr(joined, "parallax.session_id").as_deref(),
        Some("s-otel")
    );
    assert_eq!(attr(joined, "parallax.tool_name").as_deref(), Some("exec"));
    assert!(attr(joined, "parallax.duration_ms").is_some());
    assert!(joined.end_time_unix_nano >= joined.start_time_unix_nano);

    let root = spans
        .iter()
        .find(|s| attr(s, "parallax.action").as_deref() == Some("redact"))
        .expect("the redaction's span");
    assert!(
        root.parent_span_id.is_empty(),
        "no traceparent: a root span"
    );
    assert_ne!(hex(&root.trace_id), TRACE_ID);
    assert_eq!(
        attr(root, "parallax.rule_ids").as_deref(),
        Some("otel-aws-key")
    );

    for s in &spans {
        assert!(attr(s, "parallax.event").is_none(), "content exported");
    }
    let raw = receiver.raw();
    assert!(!raw.contains("rm -rf"), "the command was exported");
    assert!(!raw.contains(AWS_KEY), "the secret was exported");
    assert!(!raw.contains("my key is"), "the message was exported");

    // The hooks route joins the caller's trace too.
    let hook = json!({"session_id": "s-hook", "hook_event_name": "PreToolUse",
                      "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}});
    let r = post(addr, "/hooks/claudecode", Some(&tp), &hook);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let spans = receiver.wait_for(3);
    let hooked = spans
        .iter()
        .find(|s| attr(s, "parallax.door").as_deref() == Some("hook"))
        .expect("the hook's span");
    assert_eq!(hex(&hooked.trace_id), TRACE_ID);
    assert_eq!(hex(&hooked.parent_span_id), CALLER_SPAN);
    assert_eq!(
        attr(hooked, "parallax.framework").as_deref(),
        Some("claudecode")
    );

    // A caller that did not sample its trace (flags 00): nothing exported
    // for it. Then LiteLLM's guardrail route, sampled, joins the trace; by
    // the time its span arrives the unsampled one would have too.
    let unsampled = format!("00-{TRACE_ID}-{CALLER_SPAN}-00");
    let r = post(addr, "/evaluate", Some(&unsampled), &dangerous());
    assert_eq!(r.json()["action"], "block");
    let guardrail = json!({"input_type": "request", "litellm_call_id": "call-otel",
                           "texts": [format!("my key is {AWS_KEY}")]});
    let r = post(
        addr,
        "/beta/litellm_basic_guardrail_api",
        Some(&tp),
        &guardrail,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let spans = receiver.wait_for(4);
    assert_eq!(
        spans.len(),
        4,
        "the unsampled trace was exported: {spans:?}"
    );
    let litellm = spans
        .iter()
        .find(|s| attr(s, "parallax.framework").as_deref() == Some("litellm"))
        .expect("the guardrail's span");
    assert_eq!(hex(&litellm.trace_id), TRACE_ID);
    assert_eq!(hex(&litellm.parent_span_id), CALLER_SPAN);
    assert_eq!(
        attr(litellm, "parallax.session_id").as_deref(),
        Some("call-otel")
    );
    assert_eq!(attr(litellm, "parallax.action").as_deref(), Some("redact"));
    assert!(!receiver.raw().contains(AWS_KEY));
    assert!(metric(addr, "parallax_telemetry_spans_exported_total") >= 4);
    assert_eq!(metric(addr, "parallax_telemetry_spans_dropped_total"), 0);
}

#[test]
fn grpc_spans_with_include_content_carry_the_masked_event() {
    let receiver = Receiver::grpc();
    let (_serve, addr) = serve(
        "otel-grpc",
        &telemetry(&receiver.url(), "grpc", "  include_content: true\n"),
    );
    let tp = traceparent();
    let r = post(addr, "/evaluate", Some(&tp), &with_secret());
    assert_eq!(r.json()["action"], "redact");
    let spans = receiver.wait_for(1);
    assert_eq!(spans.len(), 1);
    let s = &spans[0];
    assert_eq!(s.name, "parallax.decision");
    assert_eq!(hex(&s.trace_id), TRACE_ID);
    assert_eq!(hex(&s.parent_span_id), CALLER_SPAN);
    let event = attr(s, "parallax.event").expect("the event, with include_content");
    assert!(event.contains("my key is"), "{event}");
    assert!(event.contains("[REDACTED]"), "{event}");
    assert!(!event.contains(AWS_KEY), "the secret was exported: {event}");
    assert!(!receiver.raw().contains(AWS_KEY));
}

#[test]
fn a_proxied_call_is_a_span_and_the_upstream_joins_the_trace() {
    let upstream = FakeUpstream::start(vec![Canned::json(&json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}
    }))]);
    let receiver = Receiver::http();
    let extra = format!(
        "proxy:\n  enabled: true\n  anthropic_upstream: {}\n{}",
        upstream.url(),
        telemetry(&receiver.url(), "http/protobuf", "")
    );
    let (_serve, addr) = serve("otel-proxy", &extra);
    let tp = traceparent();
    let body = json!({"model": "m", "max_tokens": 10,
                      "messages": [{"role": "user", "content": "tidy up the repo"}]});
    let r = post(addr, "/anthropic/v1/messages", Some(&tp), &body);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["content"][0]["text"], "done");

    // The upstream got a traceparent in the caller's trace, whose parent
    // is the proxy call's span (not the caller's own).
    let sent = &upstream.requests()[0];
    let up = sent.header("traceparent").expect("a traceparent upstream");
    let parts: Vec<&str> = up.split('-').collect();
    assert_eq!(parts.len(), 4, "{up}");
    assert_eq!(parts[1], TRACE_ID, "{up}");
    assert_ne!(parts[2], CALLER_SPAN, "{up}");
    assert_eq!(sent.header("tracestate"), Some("vendor=abc"));

    // The proxy span (child of the caller's), and the request's and the
    // answer's decisions under it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let spans = loop {
        let spans = receiver.wait_for(3);
        if spans.iter().any(|s| s.name.starts_with("parallax.proxy")) || Instant::now() > deadline {
            break spans;
        }
    };
    let call = spans
        .iter()
        .find(|s| s.name == "parallax.proxy POST")
        .unwrap_or_else(|| panic!("no proxy span: {spans:?}"));
    assert_eq!(hex(&call.trace_id), TRACE_ID);
    assert_eq!(hex(&call.parent_span_id), CALLER_SPAN);
    assert_eq!(hex(&call.span_id), parts[2], "the upstream's parent");
    assert_eq!(
        attr(call, "http.response.status_code").as_deref(),
        Some("200")
    );
    let decisions: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "parallax.decision")
        .collect();
    assert!(!decisions.is_empty());
    for d in decisions {
        assert_eq!(hex(&d.trace_id), TRACE_ID);
        assert_eq!(d.parent_span_id, call.span_id, "under the proxy span");
        assert_eq!(attr(d, "parallax.door").as_deref(), Some("proxy"));
    }
}

#[test]
fn a_receiver_that_never_answers_delays_no_decision_and_drops_are_counted() {
    // Accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let h = held.clone();
    std::thread::spawn(move || {
        for s in silent.incoming().flatten() {
            h.lock().unwrap().push(s);
        }
    });
    let extra = format!(
        "telemetry:\n  queue_size: 2\n  max_batch: 1\n  flush_ms: 1\n  otlp:\n    \
         endpoint: {endpoint}\n    timeout_ms: 30000\n"
    );
    let (_serve, addr) = serve("otel-down", &extra);
    let started = Instant::now();
    for _ in 0..40 {
        let one = Instant::now();
        let r = post(addr, "/evaluate", Some(&traceparent()), &dangerous());
        assert_eq!(r.json()["action"], "block");
        assert!(
            one.elapsed() < Duration::from_secs(2),
            "a decision waited {:?}",
            one.elapsed()
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "40 decisions took {:?}",
        started.elapsed()
    );
    let dropped = metric(addr, "parallax_telemetry_spans_dropped_total");
    assert!(dropped >= 30, "only {dropped} spans dropped");
    assert_eq!(metric(addr, "parallax_telemetry_spans_exported_total"), 0);
    assert!(metric(addr, "parallax_telemetry_queue_depth") <= 2);
}

#[test]
fn bad_telemetry_settings_stop_start_up_naming_the_key() {
    let dir = temp_dir("otel-bad");
    for (yaml, expect) in [
        (
            "telemetry:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n    protocol: thrift\n",
            "telemetry.otlp.protocol",
        ),
        (
            "telemetry:\n  otlp:\n    endpoint: collector:4318\n",
            "telemetry.otlp.endpoint",
        ),
        ("telemetry:\n  queue_size: 0\n", "telemetry.queue_size"),
        (
            "telemetry:\n  sample: 1\n",
            "telemetry.sample: unknown field `sample`",
        ),
    ] {
        std::fs::write(dir.join("parallax.yaml"), yaml).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_parallax"))
            .args(["serve", "-c", "parallax.yaml", "--port", "0"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .expect("run parallax serve");
        assert!(!out.status.success(), "{yaml} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{yaml}: {err}");
    }
}
