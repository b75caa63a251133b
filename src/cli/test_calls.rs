//! `parallax test FILE --call JSON`: parlok's `parlok test`, deciding sample
//! tool calls against a config or a bare policy file and printing each
//! decision in parlok's words (allow, rewrite, approve, deny) beside
//! Parallax's action.

use super::fail;
use crate::backend;
use crate::decision::{DecisionService, Door, Origin};
use parallax_runtime::{Action, Event, Report};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The `tool.before` event of a parlok tool call (`adapter`, `action`,
/// `recipient`, `body`, `subject`, `metadata`), or the event itself when
/// the JSON already is one (it has a `stage`).
pub fn call_event(text: &str) -> Result<Event, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("--call `{text}`: not JSON: {e}"))?;
    let Value::Object(call) = value else {
        return Err(format!("--call `{text}`: a call is a JSON object"));
    };
    if call.contains_key("stage") {
        return Event::from_value(Value::Object(call)).map_err(|e| format!("--call: {e}"));
    }
    let text_of = |k: &str| -> Result<String, String> {
        match call.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) | None => Err(format!(
                "--call `{text}`: `{k}` is required (a tool call names its adapter and action)"
            )),
            Some(other) => Err(format!(
                "--call `{text}`: `{k}` must be a string, not {other}"
            )),
        }
    };
    let adapter = text_of("adapter")?;
    let action = text_of("action")?;
    let known = [
        "adapter",
        "action",
        "recipient",
        "body",
        "subject",
        "metadata",
        "session_id",
    ];
    if let Some(k) = call.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "--call `{text}`: unknown key `{k}` (a call has {})",
            known.join(", ")
        ));
    }
    let mut args = Map::new();
    for k in ["recipient", "subject", "body"] {
        args.insert(k.into(), call.get(k).cloned().unwrap_or(Value::Null));
    }
    args.insert(
        "metadata".into(),
        call.get("metadata").cloned().unwrap_or_else(|| json!({})),
    );
    let mut event = json!({
        "stage": "tool.before",
        "tool_name": format!("{adapter}.{action}"),
        "tool_args": Value::Object(args),
    });
    if let Some(s) = call.get("session_id") {
        event["session_id"] = s.clone();
    }
    Event::from_value(event).map_err(|e| format!("--call: {e}"))
}

/// parlok's name for an action.
pub fn parlok_decision(action: Action) -> &'static str {
    match action {
        Action::Allow | Action::Detect => "allow",
        Action::Redact => "rewrite",
        Action::Approve => "approve",
        Action::Block => "deny",
    }
}

pub fn run(config: Option<PathBuf>, fixtures: Vec<PathBuf>, calls: Vec<String>) -> ExitCode {
    if !fixtures.is_empty() {
        return fail("--call runs decide calls only; run fixture files without --call");
    }
    let path = match super::required_config(config.as_deref(), "test") {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let events: Vec<Event> = match calls.iter().map(|c| call_event(c)).collect() {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let loaded = match backend::load(Some(&path), false) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(async move {
        let service = match DecisionService::new(loaded.engine, loaded.settings) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let origin = Origin::door(Door::Library);
        for (text, event) in calls.iter().zip(events) {
            let tool = event.tool_name.clone().unwrap_or_default();
            let report = service.decide_async(event, &origin, Instant::now()).await;
            print_decision(text, &tool, &report);
        }
        ExitCode::SUCCESS
    })
}

fn print_decision(text: &str, tool: &str, report: &Report) {
    println!("{text}");
    println!(
        "  {tool}: {} (action {})",
        parlok_decision(report.action),
        report.action
    );
    for reason in &report.reasons {
        println!("    {reason}");
    }
    let rewritten = report
        .rewritten_event
        .as_ref()
        .or(report.redacted_event.as_ref());
    if report.action == Action::Redact {
        if let Some(args) = rewritten.and_then(|e| e.get("tool_args")) {
            println!("    sent as: {args}");
        }
    }
}
