//! ATR correlation rules' own test cases, replayed as sessions through a
//! real side-store (SQLite in memory, manual clock).
//!
//! A trace rule's case is an OpenInference trace, `{"spans": [{"id",
//! "kind", "attributes"}, …]}`: each span becomes one event of one session,
//! a second apart, with the span's kind and attributes in `metadata` (the
//! mapping of `compiler/src/atr_trace.rs`, docs/ATR.md). A behavioral
//! rule's case is the metric it summarises, `{"window": "PT1M",
//! "event_count": N, "attributes": {…}, "in_cooldown": bool}`: N tool calls
//! spread over the window (carrying those attributes), after an earlier
//! burst that already fired when the case says the session is in cooldown.
//! The case is "triggered" when the rule fires on any of the case's own
//! events.

use parallax_runtime::{Engine, Event, PreparedEvent};
use parallax_store::StoreRequest;
use serde_json::{json, Map, Value};

/// At most this many events per case: a summary claiming a billion calls
/// must not hang a run.
const MAX_EVENTS: u64 = 20_000;
const SESSION: &str = "atr-trace";

/// One event to replay: the seconds to advance the clock first, the event,
/// and whether it belongs to the case (not to set-up).
type Step = (f64, Value, bool);

/// The stage a span of `kind` arrives at.
fn stage(kind: &str) -> &'static str {
    match kind {
        "TOOL" => "tool.before",
        "TOOL_RESPONSE" | "RETRIEVER" => "tool.after",
        _ => "response.after",
    }
}

fn span_event(kind: &str, attributes: &Value, id: Option<&Value>) -> Value {
    let mut e = Map::new();
    e.insert("stage".into(), json!(stage(kind)));
    e.insert("session_id".into(), json!(SESSION));
    if kind == "TOOL" {
        if let Some(n) = attributes.get("tool.name").and_then(Value::as_str) {
            e.insert("tool_name".into(), json!(n));
        }
    }
    let mut meta = json!({"span_kind": kind, "attributes": attributes});
    if let Some(id) = id {
        meta["span_id"] = id.clone();
    }
    e.insert("metadata".into(), meta);
    Value::Object(e)
}

fn window_seconds(s: &str) -> Option<f64> {
    let rest = s.strip_prefix("PT")?;
    let (num, unit) = rest.split_at(rest.len().checked_sub(1)?);
    let n: f64 = num.parse().ok()?;
    Some(match unit {
        "S" => n,
        "M" => n * 60.0,
        "H" => n * 3600.0,
        _ => return None,
    })
}

/// The steps a case's input stands for.
fn steps(input: &Value) -> Result<Vec<Step>, String> {
    if let Some(spans) = input.get("spans").and_then(Value::as_array) {
        return Ok(spans
            .iter()
            .map(|s| {
                let kind = s.get("kind").and_then(Value::as_str).unwrap_or("UNKNOWN");
                let attrs = s.get("attributes").cloned().unwrap_or_else(|| json!({}));
                (1.0, span_event(kind, &attrs, s.get("id")), true)
            })
            .collect());
    }
    let count = input
        .get("event_count")
        .or_else(|| input.get("metric_value"))
        .and_then(Value::as_u64)
        .ok_or("a behavioral case gives `event_count` or `metric_value`")?;
    if count == 0 || count.saturating_mul(2) > MAX_EVENTS {
        return Err(format!(
            "a behavioral case of {count} events (at most {})",
            MAX_EVENTS / 2
        ));
    }
    let window = input
        .get("window")
        .and_then(Value::as_str)
        .and_then(window_seconds)
        .unwrap_or(60.0);
    let attrs = input
        .get("attributes")
        .cloned()
        .unwrap_or_else(|| json!({}));
    // Spread over nine tenths of the window: all inside it, whatever the
    // rounding.
    let every = window * 0.9 / count as f64;
    let burst = |own: bool, a: &Value| -> Vec<Step> {
        (0..count)
            .map(|_| (every, span_event("TOOL", a, None), own))
            .collect()
    };
    let mut out = Vec::new();
    if input.get("in_cooldown").and_then(Value::as_bool) == Some(true) {
        // The earlier match the case speaks of, then the window empties.
        out.extend(burst(false, &json!({})));
        out.push((window + 1.0, Value::Null, false));
    }
    out.extend(burst(true, &attrs));
    Ok(out)
}

/// Replays `input` and says whether SQL rule `rule` (an index into the
/// program's rules) fired on one of the case's own events.
pub fn fires(engine: &Engine, rule: usize, input: &Value) -> Result<bool, String> {
    let (mut store, clock) = super::session_cases::replay_store(engine)?;
    let mut scratch = engine.new_scratch();
    let mut fired = false;
    for (advance, event, own) in steps(input)? {
        clock.advance(advance);
        if event.is_null() {
            continue;
        }
        let event = Event::from_value(event).map_err(|e| e.to_string())?;
        let prepared = PreparedEvent::new(event);
        let verdict = engine.evaluate(&prepared, &mut scratch);
        let req = StoreRequest::new(&prepared, &verdict, engine.program(), None);
        let hits = store
            .process(&req)
            .map_err(|e| format!("side-store: {e}"))?;
        if own && hits.iter().any(|h| h.rule as usize == rule) {
            fired = true;
        }
    }
    Ok(fired)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_become_one_session_of_events() {
        let s = steps(&json!({"spans": [
            {"id": "a", "kind": "AGENT", "attributes": {"human_approval": true}},
            {"id": "t", "kind": "TOOL", "attributes": {"tool.name": "db.drop"}}
        ]}))
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].1["stage"], "response.after");
        assert_eq!(s[1].1["stage"], "tool.before");
        assert_eq!(s[1].1["tool_name"], "db.drop");
        assert_eq!(s[1].1["metadata"]["span_kind"], "TOOL");
    }

    #[test]
    fn a_summary_becomes_calls_inside_the_window() {
        let s = steps(&json!({"window": "PT1M", "event_count": 20, "in_cooldown": true})).unwrap();
        assert_eq!(s.iter().filter(|x| x.2).count(), 20);
        let own: f64 = s.iter().filter(|x| x.2).map(|x| x.0).sum();
        assert!(own < 60.0);
        assert!(steps(&json!({"event_count": 1_000_000})).is_err());
        assert!(steps(&json!({})).is_err());
    }
}
