//! One request to its endpoint: the head-size limit, bearer auth (every
//! endpoint but `/health`), then the route table. Unknown paths and wrong
//! methods get JSON errors naming what is served.

use super::response::{error, method_not_allowed, Body};
use super::{admin, auth, evaluate};
use crate::decision::DecisionService;
use crate::proxy::Proxy;
use crate::telemetry::propagation;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The front doors a connection can reach besides the API itself.
#[derive(Clone, Default)]
pub struct Doors {
    /// The model-API proxy, when enabled.
    pub proxy: Option<Arc<Proxy>>,
    /// The dashboard at `/ui` (it checks its own token: the page is public,
    /// its data is not).
    pub dashboard: crate::dashboard::Dashboard,
}

pub async fn handle(
    mut req: Request<Incoming>,
    service: Arc<DecisionService>,
    doors: Doors,
    peer: Option<SocketAddr>,
) -> Result<Response<Body>, Infallible> {
    let server = &service.settings.server;
    let head_bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum::<usize>()
        + display_len(req.uri());
    if head_bytes > server.max_header_bytes {
        service.metrics.rejected_requests.fetch_add(1, Relaxed);
        return Ok(error(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!(
                "the request head is {head_bytes} bytes, more than server.max_header_bytes ({})",
                server.max_header_bytes
            ),
        ));
    }
    let path = req.uri().path();
    // Approvals authenticate their own callers (approvers have tokens of
    // their own; the agent's token may read but never decide).
    if path == "/approvals" || path.starts_with("/approvals/") {
        if let Some(r) = super::approvals::route(req, &service).await {
            return Ok(r);
        }
        return Ok(error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such endpoint".into(),
        ));
    }
    if crate::dashboard::is_dashboard_path(path) {
        return Ok(crate::dashboard::route(req, &service, &doors.dashboard).await);
    }
    // Slack cannot send our token: its request signature is the auth,
    // checked before anything is acted on.
    if path == "/slack/interactions" {
        return Ok(super::slack::interactions(req, &service).await);
    }
    let path = req.uri().path();
    let proxied = doors.proxy.as_ref().is_some_and(|p| p.owns(path));
    match authenticate(&req, path, proxied, &service) {
        Ok(Some(caller)) => {
            req.extensions_mut().insert(caller);
        }
        Ok(None) => {}
        Err(refused) => return Ok(*refused),
    }
    // The caller's W3C trace context (`traceparent`), when telemetry is
    // on: the decisions this request makes are spans in its trace.
    let trace = propagation::extract(service.telemetry(), req.headers());
    if let Some(proxy) = doors.proxy.filter(|_| proxied) {
        let call = match (service.telemetry(), trace) {
            (Some(t), Some(parent)) => {
                Some(t.proxy_span(&parent, req.method().as_str(), req.uri().path()))
            }
            _ => None,
        };
        let response = propagation::within(
            call.clone(),
            crate::proxy::handle(req, service, proxy, peer),
        )
        .await;
        return Ok(match call {
            Some(cx) => propagation::finish_within(response, cx),
            None => response,
        });
    }
    Ok(propagation::within(trace, route(req, &service)).await)
}

/// The API's own endpoints (not approvals, the dashboard, Slack or the
/// proxy).
async fn route(req: Request<Incoming>, service: &Arc<DecisionService>) -> Response<Body> {
    let path = req.uri().path();
    match (req.method(), path) {
        (&Method::GET | &Method::HEAD, "/health") => admin::health(service),
        (&Method::GET | &Method::HEAD, "/ready") => admin::ready(service),
        (_, "/ready") => method_not_allowed("GET, HEAD"),
        (&Method::POST, "/evaluate") => evaluate::evaluate(req, service).await,
        (&Method::POST, super::litellm::PATH) => super::litellm::handle(req, service).await,
        (_, super::litellm::PATH) => method_not_allowed("POST"),
        (&Method::POST, "/hooks/claudecode") => {
            crate::hooks::http::handle(req, service, crate::hooks::Framework::ClaudeCode).await
        }
        (_, "/hooks/claudecode") => method_not_allowed("POST"),
        (&Method::GET, "/metrics") => admin::metrics(service).await,
        (&Method::POST, "/admin/reload") => admin::reload(service).await,
        (_, "/health") => method_not_allowed("GET, HEAD"),
        (_, "/metrics") => method_not_allowed("GET"),
        (_, "/evaluate") | (_, "/admin/reload") => method_not_allowed("POST"),
        (_, path) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!(
                "no such endpoint `{path}` (try POST /evaluate, GET /health, GET /metrics, \
                 POST /admin/reload, GET /ui)"
            ),
        ),
    }
}

/// Who the request is (`None`: nothing to check — /health, /ready, or no
/// `server.auth_token` and no tenants), or the refusal: 401 for a missing
/// or unknown token, 403 for a tenant's token outside the decision
/// endpoints (the rules, the metrics and reloads are the operator's).
fn authenticate(
    req: &Request<Incoming>,
    path: &str,
    proxied: bool,
    service: &DecisionService,
) -> Result<Option<auth::Caller>, Box<Response<Body>>> {
    let server = &service.settings.server;
    let tenants = &service.settings.tenants;
    if path == "/health" || path == "/ready" || (server.auth_token.is_none() && tenants.is_empty())
    {
        return Ok(None);
    }
    // On proxy paths `Authorization` is the agent's API key, so the token
    // comes in a header of its own.
    let headers = req.headers();
    let presented: Vec<&[u8]> = if proxied {
        auth::header_token(headers, auth::PROXY_TOKEN_HEADER)
            .into_iter()
            .collect()
    } else if path == super::litellm::PATH {
        auth::bearer(headers)
            .into_iter()
            .chain(auth::header_token(headers, "x-api-key"))
            .collect()
    } else {
        auth::bearer(headers).into_iter().collect()
    };
    let operator = server
        .auth_token
        .as_ref()
        .is_some_and(|t| presented.iter().any(|p| bool::from(p.ct_eq(t.as_bytes()))));
    let caller = if operator {
        Some(auth::Caller::Operator)
    } else {
        presented
            .iter()
            .find_map(|p| auth::tenant_for(p, tenants))
            .map(auth::Caller::Tenant)
    };
    match caller {
        Some(auth::Caller::Tenant(_)) if !(proxied || is_decision_path(path)) => {
            service.metrics.unauthorized.fetch_add(1, Relaxed);
            Err(Box::new(error(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "`{path}` is the operator's (server.auth_token); a tenant's token may only \
                     ask for decisions"
                ),
            )))
        }
        Some(c) => Ok(Some(c)),
        None => {
            service.metrics.unauthorized.fetch_add(1, Relaxed);
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                if proxied {
                    "proxy paths require `X-Parallax-Token: <token>` (server.auth_token)"
                } else {
                    "this endpoint requires `Authorization: Bearer <token>` (server.auth_token)"
                }
                .into(),
            );
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Err(Box::new(r))
        }
    }
}

/// The endpoints that ask for a decision, where a tenant's token is
/// accepted.
fn is_decision_path(path: &str) -> bool {
    path == "/evaluate" || path == super::litellm::PATH || path.starts_with(concat!('/', "hooks/"))
}

/// How long `uri` is as text, counted without building the text (a
/// `String` a request, before).
fn display_len(uri: &hyper::Uri) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{uri}"));
    count.0
}

#[cfg(test)]
mod tests {
    // Origin-form paths spelt with `concat!`, the bare "/" too: tests/openapi.rs
    // reads this file's string literals that start with a slash as routes.
    #[allow(clippy::useless_concat)]
    #[test]
    fn display_len_is_the_texts_length() {
        for uri in [
            concat!('/', "evaluate?wait=2.5"),
            concat!('/', "approvals/ab%20cd/approve?x=%C3%A9"),
            concat!('/'),
            "http://127.0.0.1:9920/health",
            "*",
        ] {
            let u: hyper::Uri = uri.parse().expect("a uri");
            assert_eq!(super::display_len(&u), u.to_string().len(), "{uri}");
        }
    }
}
