//! A hook payload → the event the rules judge.
//!
//! Both frameworks send one JSON object per hook run with
//! `hook_event_name`, `session_id`, `cwd`, and per event:
//!
//! | hook event | stage | from the payload |
//! |---|---|---|
//! | `PreToolUse` | `tool.before` | `tool_name`, `tool_input` → `tool_args` |
//! | `PostToolUse` | `tool.after` | the same, plus `tool_response` → `tool_result` |
//! | `PostToolUseFailure` (Claude Code) | `tool.after` | the same, `error` → `tool_result` |
//! | `UserPromptSubmit` | `message.before` | `prompt` → `message_text` |
//!
//! Codex names its shell tool `Bash` with `{"command": ...}` on the hook
//! side, as Claude Code does, so the canonical `command` field is found the
//! same way. Other events (SessionStart, Stop, SessionEnd,
//! PermissionRequest, ...) carry nothing to judge: `Ok(None)`.

use super::{Framework, HookEvent};
use parallax_runtime::Event;
use serde_json::{json, Map, Value};

/// A payload Parallax has an opinion on.
#[derive(Debug)]
pub struct Mapped {
    pub hook: HookEvent,
    pub event: Event,
    /// The same event as JSON, what `POST /evaluate` is sent.
    pub body: Value,
    /// The framework's session id, for the origin.
    pub session_id: Option<String>,
}

/// The event of `payload`, `Ok(None)` for hook events with nothing to
/// judge, `Err` (naming the problem) for a payload that is not what the
/// framework sends.
pub fn map(framework: Framework, payload: &Value) -> Result<Option<Mapped>, String> {
    let Some(obj) = payload.as_object() else {
        return Err("the hook payload is not a JSON object".into());
    };
    let Some(name) = obj.get("hook_event_name").and_then(Value::as_str) else {
        return Err("the hook payload has no `hook_event_name`".into());
    };
    let hook = match name {
        "PreToolUse" => HookEvent::PreToolUse,
        "PostToolUse" => HookEvent::PostToolUse,
        "PostToolUseFailure" => HookEvent::PostToolUseFailure,
        "UserPromptSubmit" => HookEvent::UserPromptSubmit,
        _ => return Ok(None),
    };
    let session_id = str_of(obj, "session_id");
    let mut event = Map::new();
    let stage = match hook {
        HookEvent::PreToolUse => "tool.before",
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => "tool.after",
        HookEvent::UserPromptSubmit => "message.before",
    };
    event.insert("stage".into(), json!(stage));
    if let Some(s) = &session_id {
        event.insert("session_id".into(), json!(s));
    }
    if let Some(m) = str_of(obj, "model") {
        event.insert("model".into(), json!(m));
    }
    match hook {
        HookEvent::UserPromptSubmit => {
            let Some(prompt) = obj.get("prompt").and_then(Value::as_str) else {
                return Err("a UserPromptSubmit payload has no string `prompt`".into());
            };
            event.insert("message_text".into(), json!(prompt));
        }
        _ => {
            let Some(tool) = obj.get("tool_name").and_then(Value::as_str) else {
                return Err(format!("a {name} payload has no string `tool_name`"));
            };
            event.insert("tool_name".into(), json!(tool));
            if let Some(input) = obj.get("tool_input").filter(|v| !v.is_null()) {
                event.insert("tool_args".into(), input.clone());
            }
            let result = match hook {
                HookEvent::PostToolUse => obj.get("tool_response"),
                HookEvent::PostToolUseFailure => obj.get("error"),
                _ => None,
            };
            if let Some(r) = result.filter(|v| !v.is_null()) {
                event.insert("tool_result".into(), r.clone());
            }
        }
    }
    // Kept for the audit line, never scanned.
    let mut meta = Map::new();
    meta.insert("framework".into(), json!(framework.as_str()));
    meta.insert("hook".into(), json!(name));
    for key in [
        "cwd",
        "tool_use_id",
        "turn_id",
        "prompt_id",
        "permission_mode",
    ] {
        if let Some(v) = str_of(obj, key) {
            meta.insert(key.into(), json!(v));
        }
    }
    if let Some(server) = obj.get("mcp_server").and_then(|s| s.get("name")) {
        meta.insert("mcp_server".into(), server.clone());
    }
    event.insert("metadata".into(), Value::Object(meta));
    let body = Value::Object(event);
    let event = Event::from_value(body.clone())
        .map_err(|e| format!("the {name} payload does not make an event: {e}"))?;
    Ok(Some(Mapped {
        hook,
        event,
        body,
        session_id,
    }))
}

fn str_of(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Whether a Claude Code tool name is an MCP tool (`mcp__<server>__<tool>`),
/// whose result a PostToolUse hook may replace.
pub fn is_mcp_tool(tool_name: Option<&str>) -> bool {
    tool_name.is_some_and(|t| t.starts_with("mcp__"))
}
