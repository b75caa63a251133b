//! Verdict actions and rule priorities.
//!
//! The order of [`Action`] variants is the order of strength the chain uses to
//! combine rule results: the strongest action any matching rule asks for wins
//! (how they combine, monitor mode and the chain stop included, is
//! [`crate::tally::Tally`]).

use serde::{Deserialize, Serialize};
use std::fmt;

/// What Parallax tells the agent to do with an event.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Nothing matched (or only rules that merely observe).
    #[default]
    Allow,
    /// Log and alert, but let the event through.
    Detect,
    /// Rewrite the matched text to `[REDACTED]` and let the event through.
    Redact,
    /// Hold the event until a human approves or denies it (or the approval
    /// expires). Stronger than any rewrite: an approver sees the call as
    /// asked. It does not stop the chain: later evaluators may still block.
    Approve,
    /// Refuse the event.
    Block,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Detect => "detect",
            Action::Redact => "redact",
            Action::Approve => "approve",
            Action::Block => "block",
        }
    }

    /// Actions a rule may ask for (`allow` is only ever a verdict).
    pub const RULE_ACTIONS: [Action; 4] = [
        Action::Block,
        Action::Approve,
        Action::Redact,
        Action::Detect,
    ];

    /// Every verdict, weakest first.
    pub const ALL: [Action; 5] = [
        Action::Allow,
        Action::Detect,
        Action::Redact,
        Action::Approve,
        Action::Block,
    ];
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How urgent a finding is, for triage; it does not change the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    Medium,
    High,
    Critical,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Medium => "medium",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
