//! `POST /beta/litellm_basic_guardrail_api`: LiteLLM's Generic Guardrail
//! API, so a LiteLLM gateway asks Parallax about every call it proxies
//! (`guardrail: generic_guardrail_api`, `api_base` this server).
//!
//! A thin translation into the decision service. LiteLLM sends what it
//! extracted from a call (`input_type: request` before the model sees it,
//! `response` after): its `texts`, and for a response the model's
//! `tool_calls`. Each becomes an event — a request's text a
//! `message.before`, a response's text a `response.after`, each tool call
//! a `tool.before` with its parsed arguments — decided in order, in the
//! session LiteLLM names (`litellm_trace_id`, else the call id). The answer
//! is one of the contract's three:
//!
//! - `BLOCKED` with `blocked_reason` when any event is blocked, or held for
//!   approval (LiteLLM cannot wait for a human: failing closed, the reason
//!   names the approval), or a tool call would need rewriting (the contract
//!   rewrites texts, not arguments);
//! - `GUARDRAIL_INTERVENED` with every text, the redacted ones rewritten,
//!   when some text is redacted;
//! - `NONE` otherwise (a `detect` is logged and alerted, not enforced).
//!
//! Every answer also carries `parallax`: each event's action and rules,
//! which LiteLLM ignores and an operator can read in its debug log.

use super::body;
use super::json_limits;
use super::response::{error, json_response, Body};
use crate::decision::{DecisionService, Door, Origin};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use parallax_runtime::{Action, Event, Report};
use serde_json::{json, Map, Value};
use std::time::Instant;

/// The path LiteLLM appends to the configured `api_base`.
pub const PATH: &str = "/beta/litellm_basic_guardrail_api";

/// What one event of the call is, for the answer.
enum Part {
    /// `texts[i]`, in the field the event carries it in.
    Text(usize, &'static str),
    /// `tool_calls[i]`.
    ToolCall(usize),
}

fn bad(message: String) -> Response<Body> {
    error(StatusCode::BAD_REQUEST, "invalid_body", message)
}

pub async fn handle(req: Request<Incoming>, service: &DecisionService) -> Response<Body> {
    let server = &service.settings.server;
    let tenant = super::auth::tenant_of(&req);
    let bytes = match body::read_json(req, server, &service.metrics).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let started = Instant::now();
    let call: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the guardrail request is not JSON: {e}"),
            )
        }
    };
    if let Err(e) = json_limits::check(&call, server.max_json_depth, server.max_string_bytes) {
        return error(StatusCode::BAD_REQUEST, "limit_exceeded", e.to_string());
    }
    let Value::Object(call) = call else {
        return bad("the guardrail request must be a JSON object".into());
    };
    let request = match call.get("input_type").and_then(Value::as_str) {
        Some("request") => true,
        Some("response") => false,
        Some(other) => {
            return bad(format!(
                "`input_type` is `request` or `response`, not `{other}`"
            ))
        }
        None => return bad("`input_type` is required (`request` or `response`)".into()),
    };
    let texts: Vec<String> = match call.get("texts") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, t) in items.iter().enumerate() {
                match t.as_str() {
                    Some(s) => out.push(s.to_string()),
                    None => return bad(format!("`texts[{i}]` must be a string")),
                }
            }
            out
        }
        Some(_) => return bad("`texts` must be a list of strings".into()),
    };
    let tool_calls: &[Value] = match call.get("tool_calls") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(_) => return bad("`tool_calls` must be a list".into()),
    };
    let session = ["litellm_trace_id", "litellm_call_id"]
        .iter()
        .find_map(|k| call.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let user = call
        .get("request_data")
        .and_then(|d| {
            d.get("user_api_key_user_id")
                .or_else(|| d.get("user_api_key_alias"))
        })
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut metadata = Map::new();
    metadata.insert("source".into(), json!("litellm"));
    if let Some(m) = call.get("model").filter(|m| m.is_string()) {
        metadata.insert("model".into(), m.clone());
    }
    let base = |stage: &str| {
        let mut e = json!({"stage": stage, "metadata": Value::Object(metadata.clone())});
        if let Some(s) = &session {
            e["session_id"] = json!(s);
        }
        if let Some(u) = &user {
            e["user_id"] = json!(u);
        }
        e
    };
    let mut events: Vec<(Part, Value)> = Vec::new();
    let (stage, field) = if request {
        ("message.before", "message_text")
    } else {
        ("response.after", "response_text")
    };
    for (i, text) in texts.iter().enumerate() {
        let mut e = base(stage);
        e[field] = json!(text);
        events.push((Part::Text(i, field), e));
    }
    for (i, tc) in tool_calls.iter().enumerate() {
        let function = tc.get("function").unwrap_or(&Value::Null);
        let Some(name) = function.get("name").and_then(Value::as_str) else {
            return bad(format!("`tool_calls[{i}].function.name` is required"));
        };
        let args = match function.get("arguments") {
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                // Not an object: judged as the text it is.
                _ => json!({"arguments": s}),
            },
            Some(v @ Value::Object(_)) => v.clone(),
            None | Some(Value::Null) => json!({}),
            Some(other) => json!({"arguments": other}),
        };
        let mut e = base("tool.before");
        e["tool_name"] = json!(name);
        e["tool_args"] = args;
        events.push((Part::ToolCall(i), e));
    }
    let origin = Origin {
        door: Door::Proxy,
        framework: Some("litellm".into()),
        session_id: session.clone(),
        tenant,
    };
    let mut blocked: Vec<String> = Vec::new();
    let mut rewritten = texts.clone();
    let mut intervened = false;
    let mut summary = Vec::new();
    for (part, value) in events {
        let event = match Event::from_value(value) {
            Ok(e) => e,
            Err(e) => return bad(format!("cannot judge the call: {e}")),
        };
        let report = service.decide_async(event, &origin, started).await;
        summary.push(json!({
            "part": match part { Part::Text(i, _) => format!("texts[{i}]"), Part::ToolCall(i) => format!("tool_calls[{i}]") },
            "action": report.action,
            "rules": report.results.iter().map(|r| r.rule_id.as_str()).collect::<Vec<_>>(),
        }));
        match (report.action, &part) {
            (Action::Block, _) => blocked.push(reasons(&report)),
            (Action::Approve, _) => blocked.push(format!(
                "held for human approval{}: {}",
                report
                    .approval
                    .as_ref()
                    .and_then(|a| a["id"].as_str())
                    .map(|id| format!(" ({id})"))
                    .unwrap_or_default(),
                reasons(&report)
            )),
            (Action::Redact, Part::Text(i, field)) => {
                if let Some(t) = report
                    .redacted_event
                    .as_ref()
                    .and_then(|e| e.get(*field))
                    .and_then(Value::as_str)
                {
                    rewritten[*i] = t.to_string();
                    intervened = true;
                }
            }
            (Action::Redact, Part::ToolCall(i)) => blocked.push(format!(
                "tool_calls[{i}] carries what must be redacted, and a guardrail answer cannot rewrite \
                 arguments: {}",
                reasons(&report)
            )),
            _ => {}
        }
    }
    let answer = if !blocked.is_empty() {
        json!({
            "action": "BLOCKED",
            "blocked_reason": format!("Parallax: {}", blocked.join("; ")),
            "parallax": summary,
        })
    } else if intervened {
        json!({"action": "GUARDRAIL_INTERVENED", "texts": rewritten, "parallax": summary})
    } else {
        json!({"action": "NONE", "parallax": summary})
    };
    json_response(StatusCode::OK, answer.to_string().into_bytes())
}

/// The deciding rules and their reasons, for `blocked_reason`.
fn reasons(report: &Report) -> String {
    let enforced: Vec<String> = report
        .results
        .iter()
        .filter(|r| r.action == report.action && !r.monitor)
        .map(|r| format!("{}: {}", r.rule_id, r.reason))
        .collect();
    if enforced.is_empty() {
        report.reasons.join("; ")
    } else {
        enforced.join("; ")
    }
}
