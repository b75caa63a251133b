//! The approvals endpoints, for the humans who decide held calls:
//!
//! - `GET /approvals?status=pending|approved|denied|expired&limit=N`
//! - `GET /approvals/{id}` (`?wait=SECONDS` long-polls while pending)
//! - `POST /approvals/{id}/approve`, `POST /approvals/{id}/deny`, with an
//!   optional JSON body `{"comment": "..."}`
//!
//! Deciding takes an approver's own token (`Authorization: Bearer <token>`
//! from `approvals.approver_tokens`); the approver is named by it in the
//! record. The agent's `server.auth_token` can read but never decide: an
//! agent must not approve its own call. A decision on an approval that is
//! no longer pending gets 409 with the outcome on record.

use super::evaluate::wait_param;
use super::response::{error, json_response, Body};
use crate::approvals::{self, DecideError, Status};
use crate::decision::DecisionService;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::AUTHORIZATION;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

/// The approver a request's bearer token names, if any.
fn approver(headers: &HeaderMap, service: &DecisionService) -> Option<String> {
    let token = bearer(headers)?;
    let approvals = service.approvals()?;
    // Every token is compared, so timing does not say which name matched.
    let mut found = None;
    for (name, t) in &approvals.settings.approver_tokens {
        if bool::from(token.as_bytes().ct_eq(t.as_bytes())) {
            found = Some(name.clone());
        }
    }
    found
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim().to_string())
}

/// Whether the request may read approvals: an approver, or whoever may use
/// the API (the server's token, or anyone when it has none).
fn may_read(headers: &HeaderMap, service: &DecisionService) -> bool {
    if approver(headers, service).is_some() {
        return true;
    }
    match &service.settings.server.auth_token {
        None => true,
        Some(t) => super::auth::authorized(headers, t),
    }
}

fn unauthorized() -> Response<Body> {
    error(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "approvals need `Authorization: Bearer <token>`: an approver's token \
         (approvals.approver_tokens) or, to read, server.auth_token"
            .into(),
    )
}

fn closed(a: &approvals::Approval) -> Response<Body> {
    let body = json!({
        "error": {
            "code": "approval_closed",
            "message": format!("approval `{}` is {} already; the recorded outcome stands", a.id, a.status.as_str()),
        },
        "approval": approvals::ticket(a),
    });
    json_response(StatusCode::CONFLICT, body.to_string().into_bytes())
}

/// Routes `/approvals...`; `None` for other paths.
pub async fn route(req: Request<Incoming>, service: &DecisionService) -> Option<Response<Body>> {
    let path = req.uri().path().to_string();
    let rest = path.strip_prefix("/approvals")?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let Some(approvals) = service.approvals() else {
        return Some(error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no rule asks for approval (`action: approve`), so there are no approvals".into(),
        ));
    };
    let parts: Vec<&str> = rest.trim_matches('/').split('/').collect();
    let method = req.method().clone();
    let response = match (method, parts.as_slice()) {
        (Method::GET, [""]) => {
            if !may_read(req.headers(), service) {
                return Some(unauthorized());
            }
            let mut status = None;
            let mut limit = 100usize;
            for pair in req.uri().query().unwrap_or("").split('&') {
                match pair.split_once('=') {
                    Some(("status", s)) => match Status::parse(s) {
                        Some(s) => status = Some(s),
                        None => {
                            return Some(error(
                                StatusCode::BAD_REQUEST,
                                "invalid_query",
                                format!(
                                    "`status` is pending, approved, denied or expired, not `{s}`"
                                ),
                            ))
                        }
                    },
                    Some(("limit", n)) => match n.parse::<usize>() {
                        Ok(n) => limit = n.clamp(1, 1000),
                        Err(_) => {
                            return Some(error(
                                StatusCode::BAD_REQUEST,
                                "invalid_query",
                                format!("`limit` must be a number, not `{n}`"),
                            ))
                        }
                    },
                    _ => {}
                }
            }
            let _ = approvals.expire_due(service.audit());
            match approvals.list(status, limit) {
                Ok(list) => {
                    let items: Vec<Value> = list.iter().map(approvals::full).collect();
                    json_response(
                        StatusCode::OK,
                        json!({ "approvals": items }).to_string().into_bytes(),
                    )
                }
                Err(e) => store_error(&e),
            }
        }
        (Method::GET, [id]) => {
            if !may_read(req.headers(), service) {
                return Some(unauthorized());
            }
            let wait = match wait_param(req.uri().query()) {
                Ok(w) => w.min(std::time::Duration::from_secs(
                    approvals.settings.max_wait_seconds,
                )),
                Err(m) => return Some(error(StatusCode::BAD_REQUEST, "invalid_query", m)),
            };
            match approvals.wait(id, wait, service.audit()).await {
                Ok(Some(a)) => {
                    json_response(StatusCode::OK, approvals::full(&a).to_string().into_bytes())
                }
                Ok(None) => error(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no approval `{id}`"),
                ),
                Err(e) => store_error(&e),
            }
        }
        (Method::POST, [id, verb @ ("approve" | "deny")]) => {
            let Some(who) = approver(req.headers(), service) else {
                if bearer(req.headers()).is_some() {
                    return Some(error(
                        StatusCode::FORBIDDEN,
                        "not_an_approver",
                        "this token is not an approver's (approvals.approver_tokens); the \
                         agent's token cannot decide approvals"
                            .into(),
                    ));
                }
                return Some(unauthorized());
            };
            let approve = *verb == "approve";
            let id = id.to_string();
            let body = Limited::new(req.into_body(), 64 * 1024).collect().await;
            let comment = match body {
                Ok(b) => {
                    let b = b.to_bytes();
                    if b.iter().all(u8::is_ascii_whitespace) {
                        None
                    } else {
                        match serde_json::from_slice::<Value>(&b) {
                            Ok(Value::Object(o)) => match o.get("comment") {
                                None | Some(Value::Null) => None,
                                Some(Value::String(c)) => Some(c.clone()),
                                Some(_) => {
                                    return Some(error(
                                        StatusCode::BAD_REQUEST,
                                        "invalid_body",
                                        "`comment` must be a string".into(),
                                    ))
                                }
                            },
                            _ => return Some(error(
                                StatusCode::BAD_REQUEST,
                                "invalid_body",
                                "the body, when given, is a JSON object `{\"comment\": \"...\"}`"
                                    .into(),
                            )),
                        }
                    }
                }
                Err(_) => {
                    return Some(error(
                        StatusCode::BAD_REQUEST,
                        "invalid_body",
                        "the body could not be read (at most 64 KiB)".into(),
                    ))
                }
            };
            match approvals.decide(&id, approve, &who, comment.as_deref(), service.audit()) {
                Ok(a) => {
                    json_response(StatusCode::OK, approvals::full(&a).to_string().into_bytes())
                }
                Err(DecideError::Closed(a)) => closed(&a),
                Err(DecideError::NotFound(id)) => error(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no approval `{id}`"),
                ),
                Err(e @ DecideError::NotAllowed { .. }) => {
                    error(StatusCode::FORBIDDEN, "approver_not_allowed", e.to_string())
                }
                Err(DecideError::Store(e)) => store_error(&e),
            }
        }
        // The approvals webhook's callback URLs: the token in the URL is
        // the credential (`super::approval_callback`).
        (Method::POST, [id, "callback"]) => {
            super::approval_callback::handle(req.uri().query(), id, approvals, service)
        }
        (_, [_, "approve" | "deny" | "callback"]) => super::response::method_not_allowed("POST"),
        (_, [""] | [_]) => super::response::method_not_allowed("GET"),
        _ => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such endpoint `{path}`"),
        ),
    };
    Some(response)
}

/// The answer when the approvals store could not: `503 store_unavailable`
/// while a shared database is away (retry later; nothing was decided),
/// `500 internal` for anything else.
fn store_error(e: &approvals::StoreError) -> Response<Body> {
    match e {
        approvals::StoreError::Postgres(_) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            e.to_string(),
        ),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}
