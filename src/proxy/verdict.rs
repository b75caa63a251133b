//! What the proxy does with one inspected piece of traffic: each event an
//! adapter finds goes through the decision service (audit, metrics, SQL
//! window, webhook: every step a front door must not repeat), and its
//! report becomes one of three things the adapters know how to apply.

use crate::decision::{DecisionService, Origin};
use parallax_runtime::{Action, Event, FailMode, Report};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// What to do with one piece of traffic.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Forward as it is (allow, detect).
    Pass,
    /// Do not let it through; `text` says what was blocked and why, for the
    /// model and the user to read.
    Block { text: String },
    /// Let it through rewritten: the event with the matches replaced.
    Redact { event: Value },
}

/// The decision service, seen from one proxied request.
#[derive(Clone)]
pub struct Inspector {
    pub service: Arc<DecisionService>,
    pub origin: Origin,
}

impl Inspector {
    /// Decides `event` (an event's JSON; the adapter built it, so a shape
    /// the event parser refuses is the proxy's bug, answered by fail_mode).
    /// `what` names the piece for the block text (`tool call Bash`).
    pub async fn decide(&self, event: Value, what: &str) -> Outcome {
        let started = Instant::now();
        let event = match Event::from_value(event) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(error = %e, what, "the proxy built an invalid event");
                return match self.service.settings.server.fail_mode {
                    FailMode::Closed => Outcome::Block {
                        text: format!(
                            "Parallax could not inspect this {what} ({e}) and fails closed."
                        ),
                    },
                    FailMode::Open => Outcome::Pass,
                };
            }
        };
        // An `approve` holds the model call until the approval resolves
        // (at most approvals.max_wait_seconds).
        let wait = std::time::Duration::from_secs(self.service.settings.approvals.max_wait_seconds);
        let report = self
            .service
            .decide_waiting(event, &self.origin, started, wait)
            .await;
        outcome(&report, what)
    }
}

/// The outcome a report asks for.
pub fn outcome(report: &Report, what: &str) -> Outcome {
    match report.action {
        Action::Block => Outcome::Block {
            text: block_text(report, what),
        },
        // Not waited for here: [`Inspector::decide`] waits for the approval
        // first, so an approve left at this point was not granted in time.
        Action::Approve => Outcome::Block {
            text: format!(
                "Parallax held this {what} for a human approval that was not given: {}",
                report.reasons.join("; ")
            ),
        },
        Action::Redact => match &report.redacted_event {
            Some(event) => Outcome::Redact {
                event: event.clone(),
            },
            None => Outcome::Pass,
        },
        Action::Detect | Action::Allow => Outcome::Pass,
    }
}

/// `Parallax blocked this tool call Bash: rule-id: reason; ...`.
pub fn block_text(report: &Report, what: &str) -> String {
    let reasons = if report.reasons.is_empty() {
        "no reason given".to_string()
    } else {
        report.reasons.join("; ")
    };
    format!("Parallax blocked this {what}: {reasons}")
}
