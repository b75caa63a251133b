//! Agent frameworks' hooks, a front door: a hook payload (what Claude Code
//! or Codex sends a hook on stdin, or Claude Code POSTs to an HTTP hook)
//! becomes an [`Event`]; the decision comes back as exactly the output the
//! framework reads.
//!
//! - [`payload`]: payload → event, per framework and hook event name;
//! - [`verdict`]: the decision as the hook needs it (from a report's JSON,
//!   so an action this binary does not know yet, `approve`, maps too);
//! - [`claudecode`], [`codex`]: verdict → the framework's output;
//! - [`client`]: `parallax hook`'s way to a decision: the server, else the
//!   baked rules in-process, else (`--fail-closed`) a denial;
//! - [`http`]: `POST /hooks/claudecode`, Claude Code's HTTP hook transport.
//!
//! "No opinion" is always silence (exit 0, nothing on stdout): a hook
//! answering `allow` would switch Claude Code's own permission checks off.

pub mod claudecode;
pub mod client;
pub mod codex;
pub mod http;
pub mod payload;
pub mod verdict;

use serde::Serialize;

/// The frameworks whose hooks Parallax speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Framework {
    ClaudeCode,
    Codex,
}

impl Framework {
    /// The name in commands, URLs and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::ClaudeCode => "claudecode",
            Framework::Codex => "codex",
        }
    }
}

/// The hook events Parallax has an opinion on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a tool runs (`tool.before`).
    PreToolUse,
    /// After a tool ran (`tool.after`).
    PostToolUse,
    /// After a tool failed (Claude Code; `tool.after` on the error text).
    PostToolUseFailure,
    /// A user prompt before the model sees it (`message.before`).
    UserPromptSubmit,
}

impl HookEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
        }
    }
}

/// What a hook prints and how it exits. `stdout: None` is "no opinion".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub stdout: Option<String>,
}

impl Answer {
    pub const SILENT: Answer = Answer { stdout: None };

    fn json(v: serde_json::Value) -> Answer {
        Answer {
            stdout: Some(v.to_string()),
        }
    }
}

/// The answer for `framework` to the hook `mapped` came from.
pub fn answer(
    framework: Framework,
    mapped: &payload::Mapped,
    verdict: &verdict::Verdict,
) -> Answer {
    match framework {
        Framework::ClaudeCode => {
            claudecode::answer(mapped.hook, mapped.event.tool_name.as_deref(), verdict)
        }
        Framework::Codex => codex::answer(mapped.hook, verdict),
    }
}

#[cfg(test)]
mod tests;
