//! The decision as a hook needs it, read from a report's JSON (the body
//! `POST /evaluate` answers, or an in-process report serialised), so that
//! an action the runtime adds later (`approve`, with its `approval`
//! object) maps without a change here.

use serde_json::Value;

/// What the hook does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// allow, detect, or anything unknown that is not stricter: no opinion.
    Pass,
    Block,
    Redact,
    /// A human must approve; `approval_id` names the pending request.
    Approve,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub kind: Kind,
    /// The rules behind the action, `id: reason` each.
    pub rules: Vec<String>,
    /// The rewritten event (`redact`).
    pub redacted_event: Option<Value>,
    pub approval_id: Option<String>,
    /// Said to the model and the user after the reason: how the decision
    /// was made when not by the server (in-process fallback, fail-closed).
    pub note: Option<String>,
}

impl Verdict {
    /// A denial that no rule made (`--fail-closed` with the server down, a
    /// payload that cannot be read).
    pub fn denied(why: String) -> Verdict {
        Verdict {
            kind: Kind::Block,
            rules: Vec::new(),
            redacted_event: None,
            approval_id: None,
            note: Some(why),
        }
    }

    /// From a report's JSON. An unknown action is treated as a block: a
    /// hook that cannot tell what the server meant does not let the call
    /// through.
    pub fn from_report(report: &Value) -> Verdict {
        let action = report.get("action").and_then(Value::as_str).unwrap_or("");
        let kind = match action {
            "allow" | "detect" => Kind::Pass,
            "redact" => Kind::Redact,
            "approve" => Kind::Approve,
            _ => Kind::Block,
        };
        let mut rules = Vec::new();
        for r in report
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if r.get("action").and_then(Value::as_str) != Some(action) {
                continue;
            }
            let id = r.get("rule_id").and_then(Value::as_str).unwrap_or("?");
            match r
                .get("reason")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                Some(reason) => rules.push(format!("{id}: {reason}")),
                None => rules.push(id.to_owned()),
            }
        }
        let approval_id = report
            .get("approval")
            .and_then(|a| a.get("id"))
            .map(|id| match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        let mut note = None;
        if rules.is_empty() && kind == Kind::Block {
            if let Some(f) = report.get("failure") {
                let msg = f.get("message").and_then(Value::as_str).unwrap_or("");
                note = Some(format!("evaluation failed, fail_mode decided: {msg}"));
            } else if !action.is_empty() && action != "block" {
                note = Some(format!("unknown action `{action}`, treated as a block"));
            }
        }
        // A verdict resolved by an approval (denied, expired: `block`)
        // names no rule with its own action; the report's reasons say
        // which rule asked and who decided.
        if rules.is_empty() && kind != Kind::Pass && report.get("failure").is_none() {
            rules = report
                .get("reasons")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        Verdict {
            kind,
            rules,
            redacted_event: report.get("redacted_event").cloned(),
            approval_id,
            note,
        }
    }

    /// `rule: reason; rule: reason (note)`, or the note alone.
    pub fn why(&self) -> String {
        let mut s = self.rules.join("; ");
        if let Some(n) = &self.note {
            if s.is_empty() {
                s.clone_from(n);
            } else {
                s = format!("{s} ({n})");
            }
        }
        s
    }

    /// The text the model (and the user) read for a refusal.
    pub fn blocked_text(&self, what: &str) -> String {
        format!("Parallax blocked {what}: {}", self.why())
    }

    /// The text for an approval still pending when the hook stopped
    /// waiting (or one the hook could not wait for: in-process, no
    /// approvals store).
    pub fn approval_text(&self, what: &str) -> String {
        match self.approval_id.as_deref() {
            Some(id) => format!(
                "Parallax: {what} needs a human approval (approval id {id}), which is still \
                 pending: {}",
                self.why()
            ),
            None => format!(
                "Parallax: {what} needs a human approval, and none could be requested: {}",
                self.why()
            ),
        }
    }

    /// The rewritten `tool_args` of a redact verdict.
    pub fn redacted_args(&self) -> Option<&Value> {
        self.redacted_event
            .as_ref()?
            .get("tool_args")
            .filter(|v| !v.is_null())
    }

    /// The rewritten `tool_result` of a redact verdict.
    pub fn redacted_result(&self) -> Option<&Value> {
        self.redacted_event
            .as_ref()?
            .get("tool_result")
            .filter(|v| !v.is_null())
    }
}
