//! What the evaluating thread sends the store thread for one event, and what
//! comes back. Built from the prepared event on the caller's side, so the
//! store thread does nothing but SQLite work.

use parallax_runtime::{
    Action, Canonical, FieldRef, PreparedEvent, Program, Report, RuleResult, Stage, Verdict,
};

/// One row of `events`, minus what the store adds (`id`, `ts`, verdict).
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub stage: Stage,
    pub client_ts: Option<f64>,
    pub session_id: Option<String>,
    pub user_id: Option<String>,
    pub channel: Option<String>,
    pub tool_name: Option<String>,
    pub command: Option<String>,
    pub path: Option<String>,
    pub url: Option<String>,
    /// The arguments as JSON text, for SQLite's JSON functions.
    pub tool_args: Option<String>,
    /// Bytes of text in the event (message, argument and result strings).
    pub text_len: i64,
}

fn joined(event: &PreparedEvent, c: Canonical) -> Option<String> {
    let mut out: Option<String> = None;
    event.for_each_value(&FieldRef::Canonical(c), &mut |v| match &mut out {
        Some(s) => {
            s.push('\n');
            s.push_str(v);
        }
        None => out = Some(v.to_string()),
    });
    out
}

impl EventRow {
    pub fn new(event: &PreparedEvent) -> EventRow {
        let e = &event.event;
        let mut text_len = 0i64;
        event.for_each_value(&FieldRef::Canonical(Canonical::Text), &mut |v| {
            text_len = text_len.saturating_add(v.len() as i64)
        });
        EventRow {
            stage: e.stage,
            client_ts: e.timestamp,
            session_id: e.session_id.clone(),
            user_id: e.user_id.clone(),
            channel: e.channel.clone(),
            tool_name: e.tool_name.clone(),
            command: joined(event, Canonical::Command),
            path: joined(event, Canonical::Path),
            url: joined(event, Canonical::Url),
            tool_args: (!e.tool_args.is_null()).then(|| e.tool_args.to_string()),
            text_len,
        }
    }
}

/// One evaluated event for the store.
#[derive(Debug, Clone)]
pub struct StoreRequest {
    pub row: EventRow,
    /// The verdict of the evaluators before SQL.
    pub action: Action,
    /// Ids of the rules that matched before SQL, in chain order.
    pub rule_ids: Vec<String>,
    /// False when an earlier evaluator blocked: the event is recorded (a
    /// retried blocked command is what rate rules must see) but SQL rules
    /// do not run.
    pub run_rules: bool,
    /// The clock for this event; `None` uses the store's clock. `parallax
    /// eval` passes each event's own timestamp to replay a session.
    pub now: Option<f64>,
}

impl StoreRequest {
    pub fn new(
        event: &PreparedEvent,
        verdict: &Verdict<'_>,
        program: &Program,
        now: Option<f64>,
    ) -> StoreRequest {
        StoreRequest {
            row: EventRow::new(event),
            action: verdict.action,
            rule_ids: verdict
                .matched
                .iter()
                .map(|&r| program.rules[r as usize].id.clone())
                .collect(),
            run_rules: verdict.action != Action::Block,
            now,
        }
    }
}

/// A SQL rule that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlHit {
    /// Index into `Program::rules`.
    pub rule: u32,
    /// The rendered `reason` template, if the rule has one.
    pub reason: Option<String>,
}

/// Adds the SQL rules that fired to a report built from the earlier
/// evaluators, exactly as if they had been part of the chain.
pub fn apply_hits(report: &mut Report, program: &Program, hits: &[SqlHit]) {
    for hit in hits {
        let Some(rule) = program.rules.get(hit.rule as usize) else {
            continue;
        };
        let reason = hit.reason.clone().unwrap_or_else(|| rule.title.clone());
        report.reasons.push(format!("{}: {}", rule.id, reason));
        report.results.push(RuleResult {
            evaluator: program
                .evaluators
                .get(rule.evaluator as usize)
                .map_or_else(String::new, |e| e.name.clone()),
            rule_id: rule.id.clone(),
            title: rule.title.clone(),
            action: rule.action,
            priority: rule.priority,
            reason,
            matched: None,
        });
        report.action = report.action.max(rule.action);
    }
    report.blocked = report.action == Action::Block;
}
