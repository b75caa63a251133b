//! `POST /hooks/claudecode`: Claude Code's HTTP hook transport. Claude Code
//! POSTs the same JSON a command hook reads on stdin; the answer is the
//! same JSON a command hook prints, in a 200 (an empty body for no
//! opinion). Caveat, documented for users: Claude Code treats a refused
//! connection or an error status as a failed hook and runs the tool, so
//! this transport fails open when the server is down.
//!
//! A pending approval is waited for, as `parallax hook` does: `?wait=N`
//! on the hook URL, [`DEFAULT_APPROVAL_WAIT_SECS`] without it (the
//! `timeout` setup writes on the hook leaves room for it); still pending
//! after that, Claude Code asks the user.

use super::client::DEFAULT_APPROVAL_WAIT_SECS;
use super::payload::map;
use super::verdict::Verdict;
use super::{answer, Framework};
use crate::decision::DecisionService;
use crate::http::body;
use crate::http::response::{error, full, json_response, Body};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::time::{Duration, Instant};

pub async fn handle(
    req: Request<Incoming>,
    service: &DecisionService,
    framework: Framework,
) -> Response<Body> {
    let tenant = crate::http::auth::tenant_of(&req);
    let wait = match req.uri().query() {
        Some(q) if q.split('&').any(|kv| kv.starts_with("wait=")) => {
            match crate::http::evaluate::wait_param(Some(q)) {
                Ok(w) => w,
                Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_wait", e),
            }
        }
        _ => Duration::from_secs(DEFAULT_APPROVAL_WAIT_SECS),
    };
    let server = &service.settings.server;
    let bytes = match body::read_json(req, server, &service.metrics).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let started = Instant::now();
    let payload: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the hook payload is not JSON: {e}"),
            )
        }
    };
    if let Err(e) =
        crate::http::json_limits::check(&payload, server.max_json_depth, server.max_string_bytes)
    {
        return error(StatusCode::BAD_REQUEST, "limit_exceeded", e.to_string());
    }
    let mapped = match map(framework, &payload) {
        Ok(Some(m)) => m,
        Ok(None) => return no_opinion(),
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_payload", e),
    };
    let origin = super::client::origin(framework, &mapped).for_tenant(tenant);
    let report = service
        .decide_waiting(mapped.event.clone(), &origin, started, wait)
        .await;
    let verdict = match serde_json::to_value(&report) {
        Ok(v) => Verdict::from_report(&v),
        Err(e) => Verdict::denied(format!("could not read the verdict: {e}")),
    };
    match answer(framework, &mapped, &verdict).stdout {
        Some(out) => json_response(StatusCode::OK, out.into_bytes()),
        None => no_opinion(),
    }
}

/// 200 with an empty body: Claude Code's "no decision".
fn no_opinion() -> Response<Body> {
    Response::new(full(Vec::new()))
}
