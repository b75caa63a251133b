//! `parallax mcp proxy --upstream URL`: the Streamable HTTP transport. The
//! client talks to this listener as it would to the server; every request
//! goes to the upstream endpoint (whatever path it came to), headers as
//! they are (`Authorization`, `Mcp-Session-Id`, `MCP-Protocol-Version` and
//! the 2026-07-28 routing headers included; hop-by-hop ones excepted).
//!
//! - POST: the body (one message or a batch) goes through the gate; a
//!   refused call is answered here and never sent. The answer, JSON or an
//!   SSE stream, goes through the gate on its way back, message by message.
//! - GET (the server's stream) and its events: through the gate too.
//! - DELETE and anything else: passed on untouched.
//!
//! A session is the `Mcp-Session-Id` the server handed out (2025-11-25);
//! requests without one (the stateless 2026-07-28 form) share one gate,
//! while each exchange matches responses to its own requests.
//!
//! With `server.auth_token` (or `PARALLAX_AUTH_TOKEN`) set, every request
//! must carry `X-Parallax-Token: <token>` — as on the model proxy's paths,
//! `Authorization` belongs to the MCP server and passes through, while the
//! token header is never forwarded. A wrong or missing token is a 401.
//!
//! An event in the server's SSE stream that is not JSON-RPC is logged and
//! never forwarded; the client gets a JSON-RPC error in its place for the
//! request it answered (the `id` in it, when it has one the exchange is
//! waiting for; else, once the stream ends, every request of the exchange
//! left unanswered), so the client is not left waiting for a timeout.

use super::gate::{Gate, Inflight};
use super::relay::{relay, Forward, Side};
use crate::decision::DecisionService;
use crate::http::response::{full, BoxError};
use crate::proxy::headers::{client_response, upstream_request};
use crate::proxy::sse::{encode_comment, encode_event, SseItem, SseParser};
use crate::proxy::stream::ChannelBody;
use crate::proxy::upstream::{Upstream, UpstreamBody};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode, Uri};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

type Body = crate::http::response::Body;

/// Sessions remembered at most; the oldest is forgotten beyond.
const MAX_SESSIONS: usize = 4096;

/// The gates by session key, and the keys oldest first.
type Sessions = (HashMap<String, Arc<Gate>>, VecDeque<String>);

/// The proxy's shared state.
pub struct McpProxy {
    service: Arc<DecisionService>,
    upstream: Upstream,
    endpoint: Uri,
    name: Option<String>,
    /// `server.auth_token`: required as `X-Parallax-Token` when set.
    token: Option<String>,
    gates: Mutex<Sessions>,
}

impl McpProxy {
    pub fn new(
        service: Arc<DecisionService>,
        endpoint: Uri,
        name: Option<String>,
    ) -> Result<McpProxy, String> {
        let upstream = Upstream::new(&service.settings.proxy).map_err(|e| e.to_string())?;
        let token = service
            .settings
            .server
            .auth_token
            .clone()
            .filter(|t| !t.is_empty());
        Ok(McpProxy {
            service,
            upstream,
            endpoint,
            name,
            token,
            gates: Mutex::new((HashMap::new(), VecDeque::new())),
        })
    }

    /// Whether requests must carry `X-Parallax-Token`.
    pub fn requires_token(&self) -> bool {
        self.token.is_some()
    }

    fn gate(&self, session: Option<&str>) -> Arc<Gate> {
        let key = session.unwrap_or("").to_string();
        let mut guard = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *guard;
        if let Some(g) = map.get(&key) {
            return g.clone();
        }
        let id = if key.is_empty() {
            format!("mcp-http-{}", std::process::id())
        } else {
            format!("mcp-http-{key}")
        };
        let gate = Arc::new(Gate::new(self.service.clone(), id, self.name.as_deref()));
        map.insert(key.clone(), gate.clone());
        order.push_back(key);
        while order.len() > MAX_SESSIONS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
        gate
    }

    fn target(&self, incoming: &Uri) -> Result<Uri, hyper::http::Error> {
        let path = self.endpoint.path();
        let pq = match incoming.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.to_string(),
        };
        let mut parts = self.endpoint.clone().into_parts();
        parts.path_and_query = Some(pq.parse()?);
        Ok(Uri::from_parts(parts)?)
    }
}

/// Serves the proxy on `listener` until the process ends.
pub async fn serve(listener: TcpListener, proxy: Arc<McpProxy>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let proxy = proxy.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(proxy, req).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

fn json_rpc_reply(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn bad_gateway(message: &str) -> Response<Body> {
    let body = super::jsonrpc::error(Value::Null, -32603, message);
    json_rpc_reply(StatusCode::BAD_GATEWAY, body.to_string().into_bytes())
}

fn unauthorized() -> Response<Body> {
    let body = super::jsonrpc::error(
        Value::Null,
        -32001,
        "unauthorized: this MCP proxy requires `X-Parallax-Token: <token>` (server.auth_token)",
    );
    let mut r = json_rpc_reply(StatusCode::UNAUTHORIZED, body.to_string().into_bytes());
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer"),
    );
    r
}

/// The ids of the requests (not notifications) in a client's message.
fn request_ids(bytes: &[u8]) -> Vec<Value> {
    let one = |v: &Value| {
        v.get("method")?;
        v.get("id").filter(|id| !id.is_null()).cloned()
    };
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(items)) => items.iter().filter_map(one).collect(),
        Ok(v) => one(&v).into_iter().collect(),
        Err(_) => Vec::new(),
    }
}

/// The ids of the responses in a message (one or a batch): what it
/// answers. Requests from the server carry ids of their own and are not
/// counted.
fn answered_ids(answer: Option<&[u8]>) -> Vec<Value> {
    let Some(bytes) = answer else {
        return Vec::new();
    };
    let one = |v: &Value| {
        if v.get("method").is_some() {
            return None;
        }
        v.get("id").filter(|id| !id.is_null()).cloned()
    };
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(items)) => items.iter().filter_map(one).collect(),
        Ok(v) => one(&v).into_iter().collect(),
        Err(_) => Vec::new(),
    }
}

/// The error the client gets for a request whose answer from the server
/// was not JSON-RPC.
fn malformed_answer(id: Value) -> Value {
    super::jsonrpc::error(
        id,
        -32603,
        "Internal error: the MCP server's answer to this request was not valid JSON-RPC \
         (Parallax did not forward it)",
    )
}

async fn handle(proxy: Arc<McpProxy>, req: Request<Incoming>) -> Response<Body> {
    if let Some(token) = &proxy.token {
        if !crate::http::auth::proxy_authorized(req.headers(), token) {
            tracing::warn!("MCP proxy request without a valid X-Parallax-Token, refused");
            return unauthorized();
        }
    }
    let limit = proxy.service.settings.mcp.max_message_bytes;
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let target = match proxy.target(req.uri()) {
        Ok(t) => t,
        Err(e) => return bad_gateway(&format!("cannot build the upstream URL: {e}")),
    };
    let (parts, body) = req.into_parts();
    let mut headers = upstream_request(&parts.headers);
    if let Some(host) = target.authority() {
        if let Ok(v) = HeaderValue::from_str(host.as_str()) {
            headers.insert(hyper::header::HOST, v);
        }
    }
    let gate = proxy.gate(session.as_deref());
    let inflight = Arc::new(Inflight::default());
    let mut local_answer = None;
    // The requests of this exchange the server still owes an answer to.
    let mut waiting = Vec::new();
    let out_body: UpstreamBody = if parts.method == Method::POST {
        let bytes = match Limited::new(body, limit).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                let body = super::jsonrpc::error(
                    Value::Null,
                    super::jsonrpc::INVALID_REQUEST,
                    &format!(
                        "Invalid Request: body unreadable or over mcp.max_message_bytes ({e})"
                    ),
                );
                return json_rpc_reply(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    body.to_string().into_bytes(),
                );
            }
        };
        let relayed = relay(&gate, Side::Client, &bytes, &inflight).await;
        let forward = match relayed.forward {
            Forward::Verbatim => Some(bytes),
            Forward::Bytes(b) => Some(Bytes::from(b)),
            Forward::Nothing => None,
        };
        match (forward, relayed.answer) {
            (None, Some(answer)) => {
                // Refused here, or not JSON-RPC: answered, never sent.
                let status = if is_error(&answer) {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                return json_rpc_reply(status, answer);
            }
            (None, None) => return json_rpc_reply(StatusCode::ACCEPTED, Vec::new()),
            (Some(b), answer) => {
                let done = answered_ids(answer.as_deref());
                waiting = request_ids(&b);
                waiting.retain(|id| !done.contains(id));
                local_answer = answer;
                Full::new(b).map_err(|never| match never {}).boxed()
            }
        }
    } else {
        body.map_err(|e| -> BoxError { Box::new(e) }).boxed()
    };
    let mut up = Request::new(out_body);
    *up.method_mut() = parts.method.clone();
    *up.uri_mut() = target;
    *up.headers_mut() = headers;
    let resp = match proxy.upstream.send(up).await {
        Ok(r) => r,
        Err(e) => return bad_gateway(&format!("the MCP server cannot be reached: {e}")),
    };
    let (rparts, rbody) = resp.into_parts();
    let content_type = rparts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let inspect = parts.method == Method::POST || parts.method == Method::GET;
    if inspect && rparts.status.is_success() && content_type.starts_with("text/event-stream") {
        let exchange = Exchange {
            gate,
            inflight,
            limit,
            local: local_answer,
            waiting,
        };
        let mut out = Response::new(sse_body(rbody, exchange));
        *out.status_mut() = rparts.status;
        *out.headers_mut() = client_response(&rparts.headers, true);
        return out;
    }
    if inspect && rparts.status.is_success() && content_type.starts_with("application/json") {
        let bytes = match Limited::new(rbody, limit).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return bad_gateway(&format!("the MCP server's answer is unreadable: {e}")),
        };
        let relayed = relay(&gate, Side::Server, &bytes, &inflight).await;
        if relayed.answer.is_some() && relayed.forward == Forward::Nothing {
            tracing::warn!("the MCP server answered with malformed JSON-RPC, not forwarded");
            if waiting.is_empty() {
                return bad_gateway("the MCP server answered with malformed JSON-RPC");
            }
            // Each request of the exchange gets its error, by id.
            let errors: Vec<Value> = waiting.into_iter().map(malformed_answer).collect();
            let body = match errors.len() {
                1 => errors.into_iter().next().unwrap_or_default(),
                _ => Value::Array(errors),
            };
            let body = merge(local_answer, serde_json::to_vec(&body).unwrap_or_default());
            return json_rpc_reply(StatusCode::BAD_GATEWAY, body);
        }
        let body = match relayed.forward {
            Forward::Verbatim => bytes.to_vec(),
            Forward::Bytes(b) => b,
            Forward::Nothing => Vec::new(),
        };
        let body = merge(local_answer, body);
        let mut out = Response::new(full(body));
        *out.status_mut() = rparts.status;
        *out.headers_mut() = client_response(&rparts.headers, true);
        return out;
    }
    // Anything else passes as it is (a 202, an error page, a DELETE's answer);
    // a local answer still reaches the client.
    if let Some(answer) = local_answer {
        return json_rpc_reply(StatusCode::OK, answer);
    }
    let mut out = Response::new(rbody.map_err(|e| -> BoxError { Box::new(e) }).boxed());
    *out.status_mut() = rparts.status;
    *out.headers_mut() = client_response(&rparts.headers, false);
    out
}

fn is_error(answer: &[u8]) -> bool {
    serde_json::from_slice::<Value>(answer)
        .map(|v| v.get("error").is_some())
        .unwrap_or(false)
}

/// The server's JSON answer with the gate's own answers for refused
/// elements of a batch, as one batch.
fn merge(local: Option<Vec<u8>>, upstream: Vec<u8>) -> Vec<u8> {
    let Some(local) = local else { return upstream };
    let as_list = |b: &[u8]| match serde_json::from_slice::<Value>(b) {
        Ok(Value::Array(a)) => a,
        Ok(v) => vec![v],
        Err(_) => Vec::new(),
    };
    let mut all = as_list(&local);
    all.extend(as_list(&upstream));
    serde_json::to_vec(&Value::Array(all)).unwrap_or_default()
}

/// One POST's (or GET's) stream and what it is owed.
struct Exchange {
    gate: Arc<Gate>,
    inflight: Arc<Inflight>,
    limit: usize,
    /// The gate's own answers (refused calls), sent first.
    local: Option<Vec<u8>>,
    /// Requests of the exchange not answered yet.
    waiting: Vec<Value>,
}

impl Exchange {
    /// An event's message passed on: the requests it answers are answered.
    fn answered(&mut self, data: &[u8]) {
        let done = answered_ids(Some(data));
        self.waiting.retain(|id| !done.contains(id));
    }

    /// A malformed event: the error for the request it names (when it
    /// names one this exchange waits for), encoded as an event.
    fn malformed(&mut self, data: &str, out: &mut Vec<u8>) -> bool {
        let id = serde_json::from_str::<Value>(data)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .filter(|id| self.waiting.contains(id));
        let Some(id) = id else { return false };
        self.waiting.retain(|w| *w != id);
        push_error(id, out);
        true
    }
}

fn push_error(id: Value, out: &mut Vec<u8>) {
    let text = malformed_answer(id).to_string();
    encode_event(&crate::proxy::sse::SseEvent::message(text), out);
}

/// The server's event stream, each event's message through the gate.
fn sse_body(upstream: Incoming, mut ex: Exchange) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let (gate, inflight, limit) = (ex.gate.clone(), ex.inflight.clone(), ex.limit);
        let mut malformed_seen = false;
        if let Some(local) = ex.local.take() {
            let mut out = Vec::new();
            let text = String::from_utf8_lossy(&local).into_owned();
            encode_event(&crate::proxy::sse::SseEvent::message(text), &mut out);
            if tx.send(Bytes::from(out)).await.is_err() {
                return;
            }
        }
        let mut parser = SseParser::with_limit(limit);
        let mut body = upstream;
        let mut items = Vec::new();
        loop {
            let frame = match body.frame().await {
                None => break,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "the MCP server's stream broke off");
                    break;
                }
                Some(Ok(f)) => f,
            };
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            let fed = parser.feed(&chunk, &mut items);
            let mut out = Vec::new();
            for item in items.drain(..) {
                match item {
                    SseItem::Comment(c) => encode_comment(&c, &mut out),
                    SseItem::Event(mut event) => {
                        let relayed =
                            relay(&gate, Side::Server, event.data.as_bytes(), &inflight).await;
                        match relayed.forward {
                            Forward::Verbatim => {
                                ex.answered(event.data.as_bytes());
                                encode_event(&event, &mut out);
                            }
                            Forward::Bytes(b) => {
                                ex.answered(&b);
                                event.data = String::from_utf8_lossy(&b).into_owned();
                                encode_event(&event, &mut out);
                            }
                            Forward::Nothing => {
                                let named = ex.malformed(&event.data, &mut out);
                                malformed_seen |= !named;
                                tracing::warn!(
                                    answered_by_id = named,
                                    "malformed JSON-RPC in the MCP server's stream, not \
                                     forwarded; the client gets an error for its request"
                                );
                            }
                        }
                    }
                }
            }
            if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
                return;
            }
            if let Err(e) = fed {
                tracing::warn!(error = %e, "the MCP server's stream is unreadable; ended");
                malformed_seen = true;
                break;
            }
        }
        // The stream is over: a request whose answer was a malformed event
        // (one that named no id) gets its error now.
        if malformed_seen && !ex.waiting.is_empty() {
            let mut out = Vec::new();
            for id in std::mem::take(&mut ex.waiting) {
                push_error(id, &mut out);
            }
            let _ = tx.send(Bytes::from(out)).await;
        }
    });
    ChannelBody::new(rx).boxed()
}
