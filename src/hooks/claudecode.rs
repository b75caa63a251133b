//! Claude Code's hook output (2.1.x), per hook event:
//!
//! | verdict | PreToolUse | PostToolUse(Failure) | UserPromptSubmit |
//! |---|---|---|---|
//! | allow, detect | nothing | nothing | nothing |
//! | block | `permissionDecision: "deny"` + reason | `decision: "block"` + reason; an MCP tool's result replaced (`updatedMCPToolOutput`) | `decision: "block"` + reason |
//! | redact | `updatedInput`: the rewritten arguments | MCP tool: the rewritten result; other tools: `decision: "block"` telling the model not to use it | `decision: "block"` (a prompt cannot be rewritten) |
//! | approve | `permissionDecision: "ask"`: the user decides | as block | as block |
//!
//! Never `permissionDecision: "allow"`: it skips Claude Code's own
//! permission checks.

use super::payload::is_mcp_tool;
use super::verdict::{Kind, Verdict};
use super::{Answer, HookEvent};
use serde_json::json;

pub fn answer(hook: HookEvent, tool_name: Option<&str>, v: &Verdict) -> Answer {
    if v.kind == Kind::Pass {
        return Answer::SILENT;
    }
    match hook {
        HookEvent::PreToolUse => pre_tool_use(v),
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => post_tool_use(hook, tool_name, v),
        HookEvent::UserPromptSubmit => {
            let reason = match v.kind {
                Kind::Redact => format!(
                    "Parallax withheld this prompt: it contains text that is redacted \
                     before any model sees it ({}). Send it again without that text.",
                    v.why()
                ),
                Kind::Approve => v.approval_text("this prompt"),
                _ => v.blocked_text("this prompt"),
            };
            Answer::json(json!({"decision": "block", "reason": reason}))
        }
    }
}

fn pre_tool_use(v: &Verdict) -> Answer {
    let deny = |reason: String| {
        Answer::json(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }}))
    };
    match v.kind {
        Kind::Redact => match v.redacted_args() {
            // No permissionDecision: Claude Code's own checks still run on
            // the rewritten input.
            Some(args) => Answer::json(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": args,
            }})),
            None => deny(format!(
                "Parallax blocked this tool call: its arguments hold text that must be \
                 redacted and could not be rewritten ({})",
                v.why()
            )),
        },
        Kind::Approve => Answer::json(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": v.approval_text("this tool call"),
        }})),
        _ => deny(v.blocked_text("this tool call")),
    }
}

fn post_tool_use(hook: HookEvent, tool_name: Option<&str>, v: &Verdict) -> Answer {
    let mcp = hook == HookEvent::PostToolUse && is_mcp_tool(tool_name);
    if v.kind == Kind::Redact {
        if let (true, Some(result)) = (mcp, v.redacted_result()) {
            return Answer::json(json!({"hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "updatedMCPToolOutput": result,
            }}));
        }
    }
    let reason = match v.kind {
        Kind::Redact => format!(
            "Parallax: this tool result contains text that must not be used or repeated \
             ({}). Do not quote it.",
            v.why()
        ),
        Kind::Approve => v.approval_text("this tool result"),
        _ => format!(
            "Parallax withheld this tool result: {}. Do not use it.",
            v.why()
        ),
    };
    let mut out = json!({"decision": "block", "reason": reason});
    if mcp && v.kind != Kind::Redact {
        out["hookSpecificOutput"] = json!({
            "hookEventName": "PostToolUse",
            "updatedMCPToolOutput": format!("[withheld by Parallax: {}]", v.why()),
        });
    }
    Answer::json(out)
}
