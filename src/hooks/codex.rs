//! Codex's hook output (0.169.x). Codex rejects fields outside its schema
//! and treats such an answer as a failed hook, which runs the tool, so
//! only these are written:
//!
//! | verdict | PreToolUse | PostToolUse | UserPromptSubmit |
//! |---|---|---|---|
//! | allow, detect | nothing | nothing | nothing |
//! | block | `permissionDecision: "deny"` + reason | `decision: "block"` + reason | `decision: "block"` + reason |
//! | redact | deny (Codex cannot rewrite a tool's input) | `decision: "block"` telling the model not to use it | `decision: "block"` |
//! | approve | deny, the reason naming the pending approval (Codex has no `ask`) | as block | as block |

use super::verdict::{Kind, Verdict};
use super::{Answer, HookEvent};
use serde_json::json;

pub fn answer(hook: HookEvent, v: &Verdict) -> Answer {
    if v.kind == Kind::Pass {
        return Answer::SILENT;
    }
    match hook {
        HookEvent::PreToolUse => {
            let reason = match v.kind {
                Kind::Redact => format!(
                    "Parallax blocked this command: it holds text that must be redacted, and \
                     Codex cannot run a rewritten command ({})",
                    v.why()
                ),
                Kind::Approve => v.approval_text("this command"),
                _ => v.blocked_text("this command"),
            };
            Answer::json(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }}))
        }
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
            let reason = match v.kind {
                Kind::Redact => format!(
                    "Parallax: this command's output contains text that must not be used or \
                     repeated ({}). Do not quote it.",
                    v.why()
                ),
                Kind::Approve => v.approval_text("this command's output"),
                _ => format!(
                    "Parallax withheld this command's output: {}. Do not use it.",
                    v.why()
                ),
            };
            Answer::json(json!({"decision": "block", "reason": reason}))
        }
        HookEvent::UserPromptSubmit => {
            let reason = match v.kind {
                Kind::Redact => format!(
                    "Parallax withheld this prompt: it contains text that is redacted before \
                     any model sees it ({}). Send it again without that text.",
                    v.why()
                ),
                Kind::Approve => v.approval_text("this prompt"),
                _ => v.blocked_text("this prompt"),
            };
            Answer::json(json!({"decision": "block", "reason": reason}))
        }
    }
}
