//! One audit line: what was decided about one event, and the event itself
//! with every secret masked.
//!
//! The line carries the (masked) event so that `parallax eval` can replay a
//! log and check that the same rules still give the same verdicts. Masking
//! uses the program's redaction rules (what a secret is, by definition of
//! the rule set), over every field, whatever the verdict: a secret beside a
//! blocked command must not reach the log because the chain stopped before
//! the secrets evaluator ran.

use crate::decision::Origin;
use parallax_runtime::{mask_secret_text, mask_secrets, Engine, Event, Report};
use serde_json::{json, Map, Value};
use std::time::SystemTime;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The `kind` of a decision line; `parallax eval` recognises audit lines by it.
pub const DECISION_KIND: &str = "decision";

/// What the writer turns into one line, off the request path.
pub struct AuditEntry {
    pub engine: std::sync::Arc<Engine>,
    pub event: Event,
    /// The front door (and framework, session) the event came through.
    pub origin: Origin,
    pub report: Report,
    pub at: SystemTime,
}

/// RFC 3339 in UTC with fractional seconds.
pub fn timestamp(at: SystemTime) -> String {
    OffsetDateTime::from(at)
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// The JSON record of `entry`.
pub fn build(entry: &AuditEntry) -> Value {
    let AuditEntry {
        engine,
        event,
        origin,
        report,
        at,
    } = entry;
    let mut masked_event = event.clone();
    let mut masked = mask_secrets(engine, &mut masked_event);
    let matches: Vec<Value> = report
        .results
        .iter()
        .map(|r| {
            let text = r.matched.clone().map(|mut t| {
                masked |= mask_secret_text(engine, &mut t);
                t
            });
            let mut m = json!({
                "rule_id": r.rule_id,
                "title": r.title,
                "evaluator": r.evaluator,
                "action": r.action,
                "priority": r.priority,
                "match": text,
            });
            if r.monitor {
                m["monitor"] = Value::Bool(true);
            }
            m
        })
        .collect();
    let program = engine.program();
    let mut line = Map::new();
    let mut put = |k: &str, v: Value| {
        line.insert(k.to_string(), v);
    };
    put("kind", Value::String(DECISION_KIND.into()));
    put("ts", Value::String(timestamp(*at)));
    put("stage", Value::String(event.stage.as_str().into()));
    put("door", Value::String(origin.door.as_str().into()));
    if let Some(f) = &origin.framework {
        put("framework", Value::String(f.clone()));
    }
    if let Some(t) = &origin.tenant {
        put("tenant", Value::String(t.clone()));
    }
    let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    put("session_id", opt(&masked_event.session_id));
    put("user_id", opt(&masked_event.user_id));
    put("channel", opt(&masked_event.channel));
    put("tool_name", opt(&masked_event.tool_name));
    put("action", json!(report.action));
    put("would_block", Value::Bool(report.would_block));
    put("matches", Value::Array(matches));
    if !report.drop_documents.is_empty() {
        put("drop_documents", json!(report.drop_documents));
    }
    if let Some(f) = &report.failure {
        put("failure", json!(f));
    }
    put("elapsed_ms", json!(report.elapsed_ms));
    put("backend", Value::String(engine.backend().as_str().into()));
    put(
        "rules_fingerprint",
        Value::String(program.fingerprint.clone()),
    );
    put("masked", Value::Bool(masked));
    put("event", masked_event.to_value());
    Value::Object(line)
}
