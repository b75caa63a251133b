//! The model-API proxy: a front door that needs no integration code. An
//! agent's base URL points at `/anthropic`, `/openai` or a named upstream
//! (`proxy.upstreams`: Ollama, vLLM, Azure OpenAI...) on Parallax's
//! listener; requests are forwarded to the configured upstream, and the
//! three model endpoints (Messages, Chat Completions, Responses) are
//! inspected on the way out and on the way back. Everything it learns is
//! an event for the decision service; this module only translates (see
//! docs/PROXY.md for what each API's traffic becomes).

pub mod anthropic;
pub mod api;
pub mod errors;
pub mod headers;
pub mod openai_chat;
pub mod openai_responses;
pub mod params;
pub mod routes;
pub mod session;
pub mod sse;
pub mod stream;
pub mod upstream;
pub mod verdict;

use crate::budgets::{usage, Budgets, Verdict};
use crate::decision::{DecisionService, Door, Origin};
use crate::http::response::{full, Body, BoxError};
use crate::settings::ProxySettings;
use api::{ModelApi, Provider};
use bytes::Bytes;
use errors::{api_error, Kind};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use routes::{Routes, Target};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use stream::{Rewriter, StreamTiming};
use upstream::{Upstream, UpstreamBody};
use verdict::{Inspector, Outcome};

/// The proxy's shared state.
pub struct Proxy {
    upstream: Upstream,
    routes: Routes,
    settings: ProxySettings,
    /// Token and cost budgets, when `budgets.limits` has any.
    budgets: Option<Arc<Budgets>>,
}

/// Why the proxy cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    Routes(#[from] routes::RouteError),
    #[error(transparent)]
    Upstream(#[from] upstream::UpstreamError),
}

impl Proxy {
    /// The proxy for `settings`; named upstreams' credentials are read
    /// from the process environment now.
    pub fn new(settings: &ProxySettings) -> Result<Proxy, ProxyError> {
        Proxy::with_env(settings, &|name| std::env::var(name).ok())
    }

    /// [`Proxy::new`] with the environment given.
    pub fn with_env(
        settings: &ProxySettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Proxy, ProxyError> {
        Ok(Proxy {
            upstream: Upstream::new(settings)?,
            routes: Routes::new(settings, env)?,
            settings: settings.clone(),
            budgets: None,
        })
    }

    /// The proxy with `budgets` checked before and charged after each
    /// model call.
    pub fn with_budgets(mut self, budgets: Option<Arc<Budgets>>) -> Proxy {
        self.budgets = budgets;
        self
    }

    /// Whether `path` belongs to the proxy: a built-in prefix or a named
    /// upstream's.
    pub fn owns(&self, path: &str) -> bool {
        self.routes.route(path).is_some()
    }

    /// Each upstream: its prefix and where it forwards (start-up log).
    pub fn describe(&self) -> Vec<String> {
        self.routes
            .targets()
            .map(|t| {
                format!(
                    "/{} -> {}://{}{}",
                    t.name, t.base.scheme, t.base.authority, t.base.prefix
                )
            })
            .collect()
    }
}

/// Whether `path` belongs to the built-in upstreams (`/anthropic`,
/// `/openai`); [`Proxy::owns`] knows the named ones too.
pub fn is_proxy_path(path: &str) -> bool {
    api::route(path).is_some()
}

/// One proxied request.
pub async fn handle(
    req: Request<Incoming>,
    service: Arc<DecisionService>,
    proxy: Arc<Proxy>,
    peer: Option<SocketAddr>,
) -> Response<Body> {
    let Some((target, rest)) = proxy.routes.route(req.uri().path()) else {
        return api_error(
            Provider::OpenAi,
            Kind::InvalidRequest,
            "not a proxy path".into(),
        );
    };
    let target = target.clone();
    let provider = target.provider;
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    };
    let uri = match target.base.join(&path_and_query) {
        Ok(u) => u,
        Err(e) => {
            return api_error(
                provider,
                Kind::InvalidRequest,
                format!("cannot forward this path: {e}"),
            )
        }
    };
    let model = (req.method() == Method::POST)
        .then(|| target.model_api(rest))
        .flatten();
    match model {
        Some(api) => model_call(req, uri, &target, api, service, proxy, peer).await,
        None if target.refuse_other_paths => api_error(
            provider,
            Kind::Forbidden,
            format!(
                "Parallax forwards only the inspected model endpoints to the upstream `{}` \
                 (proxy.upstreams.{}.other_paths: refuse); {} {rest} is not one",
                target.name,
                target.name,
                req.method()
            ),
        ),
        None => passthrough(req, uri, &target, &proxy).await,
    }
}

/// The headers sent upstream: the agent's (see [`headers`]) and the
/// target's own credential, which replaces any the agent sent.
fn outgoing_headers(incoming: &hyper::HeaderMap, target: &Target) -> hyper::HeaderMap {
    let mut h = headers::upstream_request(incoming);
    if let Some((name, value)) = &target.auth {
        h.insert(name.clone(), value.clone());
    }
    h
}

/// Forwards a request that is not a model call, both bodies streamed as
/// they are.
async fn passthrough(
    req: Request<Incoming>,
    uri: hyper::Uri,
    target: &Target,
    proxy: &Proxy,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let mut up = Request::new(body.map_err(|e| Box::new(e) as BoxError).boxed());
    *up.method_mut() = parts.method;
    *up.uri_mut() = uri;
    *up.headers_mut() = outgoing_headers(&parts.headers, target);
    match send(proxy, target.provider, up).await {
        Ok(r) => {
            let (parts, body) = r.into_parts();
            let mut out = Response::new(body.map_err(|e| Box::new(e) as BoxError).boxed());
            *out.status_mut() = parts.status;
            *out.headers_mut() = headers::client_response(&parts.headers, false);
            out
        }
        Err(e) => e,
    }
}

/// Sends `req` upstream within `proxy.response_timeout_ms`; a failure is
/// the API's own error response.
async fn send(
    proxy: &Proxy,
    provider: Provider,
    req: Request<UpstreamBody>,
) -> Result<Response<Incoming>, Response<Body>> {
    let wait = Duration::from_millis(proxy.settings.response_timeout_ms);
    let target = req.uri().clone();
    match tokio::time::timeout(wait, proxy.upstream.send(req)).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => {
            let detail = std::error::Error::source(&e)
                .map(|s| format!("{e}: {s}"))
                .unwrap_or_else(|| e.to_string());
            tracing::warn!(upstream = %target, error = %detail, "upstream request failed");
            Err(api_error(
                provider,
                Kind::Upstream,
                format!("Parallax could not reach the upstream {target}: {detail}"),
            ))
        }
        Err(_) => Err(api_error(
            provider,
            Kind::Timeout,
            format!(
                "the upstream {target} did not answer within {} ms (proxy.response_timeout_ms)",
                proxy.settings.response_timeout_ms
            ),
        )),
    }
}

/// The agent framework a request comes from, by its User-Agent.
fn framework(req: &Request<Incoming>) -> Option<String> {
    let ua = req
        .headers()
        .get(hyper::header::USER_AGENT)?
        .to_str()
        .ok()?
        .to_ascii_lowercase();
    let name = if ua.contains("claude-cli") || ua.contains("claude-code") {
        "claudecode"
    } else if ua.contains("codex") {
        "codex"
    } else if ua.contains("openclaw") {
        "openclaw"
    } else {
        return None;
    };
    Some(name.to_string())
}

/// Reads a model request's body within `proxy.max_request_bytes` and
/// `server.request_timeout_ms`.
async fn read_body(
    body: Incoming,
    provider: Provider,
    limit: usize,
    timeout_ms: u64,
) -> Result<Bytes, Response<Body>> {
    let read = Limited::new(body, limit).collect();
    match tokio::time::timeout(Duration::from_millis(timeout_ms.max(1)), read).await {
        Err(_) => Err(api_error(
            provider,
            Kind::InvalidRequest,
            format!("the request body did not arrive within server.request_timeout_ms ({timeout_ms} ms)"),
        )),
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(api_error(
            provider,
            Kind::InvalidRequest,
            format!("the request body is larger than proxy.max_request_bytes ({limit} bytes)"),
        )),
        Ok(Err(e)) => Err(api_error(
            provider,
            Kind::InvalidRequest,
            format!("could not read the request body: {e}"),
        )),
    }
}

/// A request-side event's outcome applied, per API.
fn apply_request(api: ModelApi, body: &mut Value, slot: &RequestSlot, redacted: &Value) {
    match (api, slot) {
        (ModelApi::Messages, RequestSlot::Messages(s)) => {
            anthropic::apply_request_redaction(body, s, redacted)
        }
        (ModelApi::ChatCompletions, RequestSlot::Chat(s)) => {
            openai_chat::apply_request_redaction(body, s, redacted)
        }
        (ModelApi::Responses, RequestSlot::Responses(s)) => {
            openai_responses::apply_request_redaction(body, s, redacted)
        }
        _ => {}
    }
}

/// Where a request event came from, in any API.
enum RequestSlot {
    Messages(anthropic::RequestSlot),
    Chat(openai_chat::RequestSlot),
    Responses(openai_responses::RequestSlot),
}

fn request_events(api: ModelApi, body: &Value) -> Vec<(RequestSlot, Value)> {
    match api {
        ModelApi::Messages => anthropic::request_events(body)
            .into_iter()
            .map(|(s, e)| (RequestSlot::Messages(s), e))
            .collect(),
        ModelApi::ChatCompletions => openai_chat::request_events(body)
            .into_iter()
            .map(|(s, e)| (RequestSlot::Chat(s), e))
            .collect(),
        ModelApi::Responses => openai_responses::request_events(body)
            .into_iter()
            .map(|(s, e)| (RequestSlot::Responses(s), e))
            .collect(),
    }
}

/// What a blocked request gets: a normal assistant reply in the API's
/// shape (streamed when the request streamed), since agents handle that
/// gracefully while a 4xx makes them retry or abort.
fn blocked_reply(api: ModelApi, request: &Value, text: &str) -> Response<Body> {
    let streamed = request.get("stream").and_then(Value::as_bool) == Some(true);
    if streamed {
        let events = match api {
            ModelApi::Messages => anthropic::blocked_stream(request, text),
            ModelApi::ChatCompletions => openai_chat::blocked_stream(request, text),
            ModelApi::Responses => openai_responses::blocked_stream(request, text),
        };
        let mut buf = Vec::new();
        for e in &events {
            sse::encode_event(e, &mut buf);
        }
        let mut r = Response::new(full(buf));
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        r.headers_mut()
            .insert("cache-control", HeaderValue::from_static("no-cache"));
        r
    } else {
        let message = match api {
            ModelApi::Messages => anthropic::blocked_message(request, text),
            ModelApi::ChatCompletions => openai_chat::blocked_message(request, text),
            ModelApi::Responses => openai_responses::blocked_message(request, text),
        };
        crate::http::response::json_response(StatusCode::OK, message.to_string().into_bytes())
    }
}

#[allow(clippy::too_many_arguments)]
async fn model_call(
    req: Request<Incoming>,
    uri: hyper::Uri,
    target: &Target,
    api: ModelApi,
    service: Arc<DecisionService>,
    proxy: Arc<Proxy>,
    peer: Option<SocketAddr>,
) -> Response<Body> {
    let provider = target.provider;
    let framework = framework(&req);
    let (parts, body) = req.into_parts();
    let bytes = match read_body(
        body,
        provider,
        proxy.settings.max_request_bytes,
        service.settings.server.request_timeout_ms,
    )
    .await
    {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut body: Value = match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return api_error(
                provider,
                Kind::InvalidRequest,
                "Parallax inspects model requests: the body must be a JSON object".into(),
            )
        }
        Err(e) => {
            return api_error(
                provider,
                Kind::InvalidRequest,
                format!("Parallax inspects model requests: the body is not JSON ({e})"),
            )
        }
    };
    let session = session::session_id(
        &parts.headers,
        &proxy.settings.session_header,
        api,
        &body,
        peer,
    );
    // Budgets: who pays, and whether they still may.
    let charge = proxy.budgets.clone().map(|b| {
        let user = crate::budgets::user_of(&parts.headers, b.user_header(), &body, &session);
        Charge {
            budgets: b,
            session: session.clone(),
            user,
        }
    });
    let inspector = Inspector {
        service: service.clone(),
        origin: Origin {
            door: Door::Proxy,
            framework,
            session_id: Some(session),
            tenant: parts
                .extensions
                .get::<crate::http::auth::Caller>()
                .and_then(crate::http::auth::Caller::tenant),
        },
    };
    // The request side: every event of the new turn, the parameters.
    let mut rewritten = false;
    for (slot, event) in request_events(api, &body) {
        let what = match event.get("stage").and_then(Value::as_str) {
            Some("tool.after") => "tool result",
            Some("params.before") => "request's parameters",
            _ => "message",
        };
        match inspector.decide(event, what).await {
            Outcome::Pass => {}
            Outcome::Block { text } => return blocked_reply(api, &body, &text),
            Outcome::Redact { event } => {
                apply_request(api, &mut body, &slot, &event);
                rewritten = true;
            }
        }
    }
    if let Some(c) = &charge {
        if let Verdict::Spent(text) = c.budgets.check(&c.session, &c.user) {
            // The model never saw the request: the audit log says why, as
            // it does for every other refusal (`kind: budget`).
            if let Some(audit) = service.audit() {
                audit.submit_record(serde_json::json!({
                    "kind": "budget",
                    "ts": crate::audit::record::timestamp(std::time::SystemTime::now()),
                    "door": Door::Proxy.as_str(),
                    "framework": inspector.origin.framework,
                    "session_id": c.session,
                    "user_id": c.user,
                    "action": "block",
                    "reason": text,
                }));
            }
            return blocked_reply(api, &body, &text);
        }
        // A streamed chat answer reports its usage only when asked to.
        if api == ModelApi::ChatCompletions && ask_for_stream_usage(&mut body) {
            rewritten = true;
        }
    }
    let out_bytes = if rewritten {
        Bytes::from(body.to_string())
    } else {
        bytes
    };
    let mut up = Request::new(full(out_bytes));
    *up.method_mut() = parts.method;
    *up.uri_mut() = uri;
    let mut h = outgoing_headers(&parts.headers, target);
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    *up.headers_mut() = h;
    let response = match send(&proxy, provider, up).await {
        Ok(r) => r,
        Err(e) => return e,
    };
    let (rparts, rbody) = response.into_parts();
    let is_stream = rparts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !rparts.status.is_success() {
        // An upstream error passes through as the upstream said it.
        let mut out = Response::new(rbody.map_err(|e| Box::new(e) as BoxError).boxed());
        *out.status_mut() = rparts.status;
        *out.headers_mut() = headers::client_response(&rparts.headers, false);
        return out;
    }
    if is_stream {
        let rewriter: Box<dyn Rewriter> = match api {
            ModelApi::Messages => Box::<anthropic::MessagesStream>::default(),
            ModelApi::ChatCompletions => Box::<openai_chat::ChatStream>::default(),
            ModelApi::Responses => Box::<openai_responses::ResponsesStream>::default(),
        };
        let timing = StreamTiming {
            idle: Duration::from_millis(proxy.settings.stream_idle_timeout_ms),
            keepalive: Duration::from_millis(proxy.settings.keepalive_ms),
            max_event_bytes: proxy.settings.max_response_bytes,
        };
        let tap = charge.map(|c| c.tap(api));
        let mut out = Response::new(stream::rewrite(rbody, rewriter, inspector, timing, tap));
        *out.status_mut() = rparts.status;
        *out.headers_mut() = headers::client_response(&rparts.headers, true);
        return out;
    }
    // A whole response: read, inspect, rewrite.
    let limit = proxy.settings.max_response_bytes;
    let read = Limited::new(rbody, limit).collect();
    let wait = Duration::from_millis(proxy.settings.response_timeout_ms);
    let bytes = match tokio::time::timeout(wait, read).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) => {
            return api_error(
                provider,
                Kind::Upstream,
                format!("could not read the upstream response (limit proxy.max_response_bytes = {limit}): {e}"),
            )
        }
        Err(_) => {
            return api_error(
                provider,
                Kind::Timeout,
                "the upstream response did not finish within proxy.response_timeout_ms".into(),
            )
        }
    };
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        // A model endpoint answering 2xx with something else cannot be
        // inspected, so it does not reach the agent.
        return api_error(
            provider,
            Kind::Upstream,
            "the upstream's model response is not JSON; Parallax cannot inspect it".into(),
        );
    };
    if let (Some(c), Some((u, model))) = (&charge, usage::of_answer(api, &value)) {
        c.record(
            u,
            model
                .as_deref()
                .or_else(|| body.get("model").and_then(Value::as_str)),
        );
    }
    let changed = inspect_response(api, &mut value, &inspector).await;
    let out_bytes = if changed {
        Bytes::from(value.to_string())
    } else {
        bytes
    };
    let mut out = Response::new(full(out_bytes.clone()));
    *out.status_mut() = rparts.status;
    let mut h = headers::client_response(&rparts.headers, true);
    if let Ok(len) = HeaderValue::from_str(&out_bytes.len().to_string()) {
        h.insert(CONTENT_LENGTH, len);
    }
    *out.headers_mut() = h;
    out
}

/// Who a model call is charged to.
struct Charge {
    budgets: Arc<Budgets>,
    session: String,
    user: String,
}

impl Charge {
    fn record(&self, u: usage::Usage, model: Option<&str>) {
        self.budgets.record(&self.session, &self.user, model, u);
    }

    /// What a streamed answer charges, read as it passes and written to
    /// the ledger when the stream ends, however it ends.
    fn tap(self, api: ModelApi) -> stream::UsageTap {
        stream::UsageTap::new(usage::StreamUsage::new(api), move |u, model| {
            self.record(u, model)
        })
    }
}

/// Sets `stream_options.include_usage` on a streamed Chat Completions
/// request that does not ask for it; true when the body changed. The
/// client then also gets the final usage chunk (`choices: []`), which the
/// API sends to any client that asks.
fn ask_for_stream_usage(body: &mut Value) -> bool {
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        return false;
    }
    let Some(obj) = body.as_object_mut() else {
        return false;
    };
    let options = obj
        .entry("stream_options")
        .or_insert_with(|| Value::Object(Default::default()));
    match options {
        Value::Object(o) if o.get("include_usage") != Some(&Value::Bool(true)) => {
            o.insert("include_usage".into(), Value::Bool(true));
            true
        }
        _ => false,
    }
}

/// Decides every event of a whole response and applies the outcomes; true
/// when the body changed.
async fn inspect_response(api: ModelApi, body: &mut Value, inspector: &Inspector) -> bool {
    macro_rules! run {
        ($module:ident) => {{
            let mut outcomes = Vec::new();
            for (slot, event, what) in $module::response_events(body) {
                let o = inspector.decide(event, &what).await;
                if o != Outcome::Pass {
                    outcomes.push((slot, o));
                }
            }
            let changed = !outcomes.is_empty();
            $module::apply_response(body, &outcomes);
            changed
        }};
    }
    match api {
        ModelApi::Messages => run!(anthropic),
        ModelApi::ChatCompletions => run!(openai_chat),
        ModelApi::Responses => run!(openai_responses),
    }
}
