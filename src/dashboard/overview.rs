//! `GET /ui/api/overview`: the health view and the latency view in one
//! answer — what `/health` says (backend, rules fingerprint, mode), the
//! audit, webhook, reload, approval, budget and live-feed counters
//! `/metrics` exports, decisions by action, and the evaluation-time histogram of each
//! front door with its percentiles.

use super::latency;
use crate::decision::DecisionService;
use crate::metrics::LatencySnapshot;
use parallax_runtime::Action;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering::Relaxed;

pub fn overview(service: &DecisionService) -> Value {
    let engine = service.engine();
    let program = engine.program();
    let m = &service.metrics;
    let settings = &service.settings;
    let mut doors = Map::new();
    let mut all = LatencySnapshot::default();
    for (door, h) in m.latency_by_door() {
        if all.buckets.len() < h.buckets.len() {
            all.buckets.resize(h.buckets.len(), 0);
        }
        for (a, b) in all.buckets.iter_mut().zip(&h.buckets) {
            *a += b;
        }
        all.over += h.over;
        all.count += h.count;
        all.sum_seconds += h.sum_seconds;
        doors.insert(door.as_str().into(), latency::view(&h));
    }
    let decisions: Map<String, Value> = Action::ALL
        .iter()
        .map(|a| (a.as_str().to_string(), json!(m.decisions(*a))))
        .collect();
    let approvals: Map<String, Value> = ["created", "approved", "denied", "expired"]
        .iter()
        .zip(&m.approvals)
        .map(|(t, v)| (t.to_string(), json!(v.load(Relaxed))))
        .collect();
    let feed = service.feed();
    json!({
        "health": {
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "mode": if settings.server.monitor { "monitor" } else { "enforce" },
            "backend": engine.backend().as_str(),
            "rules_fingerprint": program.fingerprint,
            "evaluators": program.evaluators.len(),
            "rules": program.rules.len(),
            "fail_mode": settings.server.fail_mode.as_str(),
            "approvals": service.approvals().is_some(),
            "auth": settings.server.auth_token.is_some(),
            "last_reload": service.last_reload().map(|r| json!(*r)),
            "reload_watch": settings.reload.watch,
        },
        "decisions": decisions,
        "audit": {
            "enabled": service.audit().is_some(),
            "lines_written": m.audit_lines_written.load(Relaxed),
            "dropped": m.audit_dropped.load(Relaxed),
            "write_errors": m.audit_write_errors.load(Relaxed),
            "rotations": m.audit_rotations.load(Relaxed),
            "queue_depth": m.audit_queue_depth.load(Relaxed),
        },
        "webhook": {
            "enabled": settings.reporting.webhook_url.is_some(),
            "sent": m.webhook_sent.load(Relaxed),
            "dropped": m.webhook_dropped.load(Relaxed),
            "retries": m.webhook_retries.load(Relaxed),
            "failed": m.webhook_failed.load(Relaxed),
            "queue_depth": m.webhook_queue_depth.load(Relaxed),
        },
        "reloads": {
            "ok": m.reloads_ok.load(Relaxed),
            "failed": m.reloads_failed.load(Relaxed),
        },
        "approvals": approvals,
        "budgets": service.budgets().map(|b| b.report()),
        "feed": {
            "viewers": feed.viewers(),
            "published": feed.published(),
            "lost": feed.lagged(),
        },
        "latency": {
            "all": latency::view(&all),
            "doors": doors,
        },
    })
}
