//! The dashboard: a page served at `/ui` by `parallax serve`, and the JSON
//! and stream endpoints it reads under `/ui/api/`.
//!
//! A room like the other front doors, but it decides nothing: it shows what
//! the decision service decided (the live feed, `decision/feed.rs`), what
//! `/metrics` counts (rule hits, the evaluation-time histogram per front
//! door), the compiled program's rule definitions, and the approvals the
//! existing `/approvals` endpoints serve.
//!
//! Access: the page and its scripts are public (they hold no data); it asks
//! for a token and sends it as `Authorization: Bearer` on every call. The
//! `/ui/api/` endpoints need `server.auth_token` when one is set, like the
//! rest of the API; deciding an approval goes to `/approvals/...` with an
//! approver's own token. Every response carries a strict
//! Content-Security-Policy (`assets.rs`): scripts and styles from `/ui`
//! only, no inline code, connections to this server only.
//!
//! Routes:
//! - `GET /ui`, `/ui/`, `/ui/<asset>`: the embedded page (`assets.rs`);
//! - `GET /ui/api/overview`: health, counters, latency per door
//!   (`overview.rs`, `latency.rs`);
//! - `GET /ui/api/hits?window=SECONDS`: hits per rule and category over a
//!   window, with a time series for the chart (`hits.rs`);
//! - `GET /ui/api/rules/{id}`: one rule's definition (`rules.rs`);
//! - `GET /ui/api/stream`: the live decisions as server-sent events
//!   (`stream.rs`, each entry built by `decision_view.rs`).

pub mod assets;
pub mod decision_view;
pub mod hits;
pub mod latency;
pub mod overview;
pub mod rules;
pub mod stream;

use crate::decision::DecisionService;
use crate::http::response::{error, json_response, method_not_allowed, Body};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The dashboard's own state, one per listener: the rule-hit history the
/// windows are computed from. Cheap to clone (every connection holds one).
#[derive(Clone, Default)]
pub struct Dashboard {
    history: Arc<hits::History>,
}

impl Dashboard {
    /// With a fleet store (`store.postgres`), starts adding this replica's
    /// rule hits to the fleet's history now, not at the first dashboard
    /// request: the fleet's chart must count every replica from its start.
    pub fn start_fleet(&self, service: &DecisionService) {
        if let Some(store) = service.shared_store() {
            self.history
                .start_fleet(service.metrics.clone(), store.clone());
        }
    }
}

/// Whether `path` is the dashboard's.
pub fn is_dashboard_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Serves one `/ui...` request.
pub async fn route(
    req: Request<Incoming>,
    service: &Arc<DecisionService>,
    dashboard: &Dashboard,
) -> Response<Body> {
    let path = req.uri().path().to_string();
    let Some(api) = path.strip_prefix("/ui/api/") else {
        let mut r = match *req.method() {
            Method::GET | Method::HEAD => assets::serve(&path),
            _ => method_not_allowed("GET, HEAD"),
        };
        assets::secure(&mut r);
        return r;
    };
    if let Some(token) = &service.settings.server.auth_token {
        if !crate::http::auth::authorized(req.headers(), token) {
            service.metrics.unauthorized.fetch_add(1, Relaxed);
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the dashboard's data needs `Authorization: Bearer <token>` (server.auth_token)"
                    .into(),
            );
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            assets::secure(&mut r);
            return r;
        }
    }
    dashboard.history.start(service.metrics.clone());
    let mut r = if req.method() != Method::GET {
        method_not_allowed("GET")
    } else {
        match api.split('/').collect::<Vec<_>>().as_slice() {
            ["overview"] => json(overview::overview(service)),
            ["hits"] => match hits::window_param(req.uri().query()) {
                Ok(w) => json(dashboard.history.report(&service.engine(), w)),
                Err(m) => error(StatusCode::BAD_REQUEST, "invalid_query", m),
            },
            ["rules", id] => match rules::definition(&service.engine(), id) {
                Some(d) => json(d),
                None => error(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no rule `{id}` in the rules in force"),
                ),
            },
            ["stream"] => stream::open(service),
            _ => error(
                StatusCode::NOT_FOUND,
                "not_found",
                format!(
                    "no such endpoint `{path}` (try /ui/api/overview, /ui/api/hits, \
                     /ui/api/rules/ID, /ui/api/stream)"
                ),
            ),
        }
    };
    r.headers_mut()
        .entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    assets::secure(&mut r);
    r
}

fn json(v: serde_json::Value) -> Response<Body> {
    json_response(StatusCode::OK, v.to_string().into_bytes())
}
