//! One live decision as the page gets it: the audit line itself
//! (`audit::record::build`, so the event's secrets are masked exactly as
//! in the audit log, by the same code), plus what a viewer opening it
//! wants beside the line — the reasons, and the rewritten event of a
//! redaction or transform, masked the same way.

use crate::audit::{record, AuditEntry};
use parallax_runtime::{mask_secret_text, Engine};
use serde_json::Value;

/// The JSON of one feed entry; `seq` is its place in the feed.
pub fn view(seq: u64, entry: &AuditEntry) -> Value {
    let mut line = record::build(entry);
    line["seq"] = Value::from(seq);
    line["reasons"] = Value::from(entry.report.reasons.clone());
    let rewritten = entry
        .report
        .redacted_event
        .as_ref()
        .or(entry.report.rewritten_event.as_ref());
    if let Some(ev) = rewritten {
        let mut ev = ev.clone();
        mask_strings(&entry.engine, &mut ev);
        line["rewritten_event"] = ev;
    }
    if let Some(a) = &entry.report.approval {
        line["approval"] = a.clone();
    }
    line
}

/// Masks every string of a JSON value with the audit's secret masking.
fn mask_strings(engine: &Engine, v: &mut Value) {
    match v {
        Value::String(s) => {
            mask_secret_text(engine, s);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| mask_strings(engine, i)),
        Value::Object(map) => map.values_mut().for_each(|i| mask_strings(engine, i)),
        _ => {}
    }
}
