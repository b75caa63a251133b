//! The operator's endpoints: `GET /health`, `GET /metrics` and
//! `POST /admin/reload`.

use super::response::{error, full, json_response, Body};
use crate::decision::{DecisionService, ReloadError};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;
use std::sync::Arc;

pub fn health(service: &DecisionService) -> Response<Body> {
    let engine = service.engine();
    let p = engine.program();
    let body = json!({
        "status": "ok",
        "mode": if service.settings.server.monitor { "monitor" } else { "enforce" },
        "evaluators": p.evaluators.len(),
        "rules": p.rules.len(),
        "version": env!("CARGO_PKG_VERSION"),
        "backend": engine.backend().as_str(),
        "rules_fingerprint": p.fingerprint,
        "ready": service.ready(),
    });
    let mut body = body;
    if let Some(last) = service.last_reload() {
        body["reload"] = json!(*last);
    }
    json_response(StatusCode::OK, body.to_string().into_bytes())
}

/// `GET /ready`: 200 once every scanner part of the rules is built (the
/// first evaluation then runs at full speed), 503 before; for a load
/// balancer's readiness probe. `/health` says the server is up.
pub fn ready(service: &DecisionService) -> Response<Body> {
    if service.ready() {
        json_response(
            StatusCode::OK,
            json!({"ready": true}).to_string().into_bytes(),
        )
    } else {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({
                "ready": false,
                "reason": "the rules' literal automata and verifiers are still being built; \
                           requests are answered meanwhile, more slowly"
            })
            .to_string()
            .into_bytes(),
        )
    }
}

pub async fn metrics(service: &DecisionService) -> Response<Body> {
    let mut text = service.metrics.render();
    if let Some(store) = service.store() {
        let rows = store.row_count().await.ok();
        crate::metrics::render_sql_store(&mut text, rows, store.lost_events());
    }
    let mut r = Response::new(full(text));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

pub async fn reload(service: &Arc<DecisionService>) -> Response<Body> {
    let s = service.clone();
    let result = match tokio::task::spawn_blocking(move || s.reload()).await {
        Ok(r) => r,
        Err(e) => Err(ReloadError::Compile(format!("the reload task failed: {e}"))),
    };
    match result {
        Ok(r) => json_response(
            StatusCode::OK,
            json!({"status": "reloaded", "reload": r})
                .to_string()
                .into_bytes(),
        ),
        Err(e @ (ReloadError::BakedOnly | ReloadError::NoConfig | ReloadError::Disabled)) => {
            error(StatusCode::CONFLICT, "reload_refused", e.to_string())
        }
        Err(e) => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "reload_failed",
            e.to_string(),
        ),
    }
}
