//! What the evaluating thread sends the store thread for one event, and what
//! comes back. Built from the prepared event on the caller's side, so the
//! store thread does nothing but SQLite work.

use parallax_runtime::{
    Action, Canonical, FieldRef, LateMatch, PreparedEvent, Program, Stage, Verdict,
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
    /// The event's `metadata` as JSON text (bounded as `tool_args` is), or
    /// NULL: where trace-shaped rules read a span's kind and attributes.
    pub metadata: Option<String>,
    /// The ids of the rules the event matched before the SQL rules, as JSON
    /// text (`:rule_ids`); `[]` until [`StoreRequest::new`] knows them.
    pub rule_ids: String,
}

/// Longest `command`, `path` or `url` value stored, in bytes. Single-event
/// rules see the whole text; the window only needs enough to recognise a
/// call, and a bounded row is what keeps `max_rows` a memory bound.
pub const MAX_FIELD_BYTES: usize = 1024;
/// Longest `tool_args` (and `metadata`) JSON stored; larger arguments are replaced by
/// `{"truncated": true, "bytes": N, "hash": "..."}` (valid JSON, and equal
/// only for equal arguments, so loop rules still compare calls).
pub const MAX_ARGS_BYTES: usize = 4096;

/// `s` cut to at most `max` bytes, at a character boundary.
fn clip(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

fn joined(event: &PreparedEvent, c: Canonical) -> Option<String> {
    let mut out: Option<String> = None;
    event.for_each_value(&FieldRef::Canonical(c), &mut |v| match &mut out {
        // Past the limit already: the rest would be clipped away.
        Some(s) if s.len() >= MAX_FIELD_BYTES => {}
        Some(s) => {
            s.push('\n');
            s.push_str(v);
        }
        None => out = Some(v.to_string()),
    });
    out.map(|s| clip(s, MAX_FIELD_BYTES))
}

fn args_json(args: &serde_json::Value) -> Option<String> {
    use std::hash::{Hash, Hasher};
    if args.is_null() {
        return None;
    }
    let text = args.to_string();
    if text.len() <= MAX_ARGS_BYTES {
        return Some(text);
    }
    // SipHash with fixed keys: stable for equal input within a build.
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    Some(
        serde_json::json!({
            "truncated": true,
            "bytes": text.len(),
            "hash": format!("{:016x}", h.finish()),
        })
        .to_string(),
    )
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
            tool_args: args_json(&e.tool_args),
            text_len,
            metadata: args_json(&e.metadata),
            rule_ids: "[]".to_string(),
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
    /// Which rules to run ([`crate::SqlRouting::rules_for`]: the others'
    /// guards are false for this event); `None` runs every rule at the
    /// event's stage.
    pub rules: Option<crate::RuleMask>,
}

impl StoreRequest {
    pub fn new(
        event: &PreparedEvent,
        verdict: &Verdict<'_>,
        program: &Program,
        now: Option<f64>,
    ) -> StoreRequest {
        let rule_ids: Vec<String> = verdict
            .matched
            .iter()
            .map(|&r| program.rules[r as usize].id.clone())
            .collect();
        let mut row = EventRow::new(event);
        row.rule_ids = serde_json::to_string(&rule_ids).unwrap_or_else(|_| "[]".into());
        StoreRequest {
            row,
            action: verdict.action,
            rule_ids,
            run_rules: verdict.action != Action::Block,
            now,
            rules: None,
        }
    }
}

/// A SQL rule that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlHit {
    /// Index into `Program::rules`.
    pub rule: u32,
    /// The rule's id: during a reload the store may already run the new
    /// rules while a request still holds the old program, and an index alone
    /// would then name the wrong rule.
    pub id: String,
    /// The rendered `reason` template, if the rule has one.
    pub reason: Option<String>,
}

/// The SQL rules that fired, as the report builder's late matches
/// ([`parallax_runtime::Report::decide`] merges them into the verdict as if
/// they had been part of the chain). A hit is matched to `program` by its
/// rule id (see [`SqlHit::id`]); a hit whose rule `program` does not have is
/// left out.
pub fn late_matches(program: &Program, hits: &[SqlHit]) -> Vec<LateMatch> {
    hits.iter()
        .filter_map(|hit| {
            let rule = match program.rules.get(hit.rule as usize) {
                Some(r) if r.id == hit.id => hit.rule,
                _ => program.rules.iter().position(|r| r.id == hit.id)? as u32,
            };
            Some(LateMatch {
                rule,
                reason: hit.reason.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parallax_runtime::Event;
    use serde_json::json;

    fn row(v: serde_json::Value) -> EventRow {
        EventRow::new(&PreparedEvent::new(Event::from_value(v).unwrap()))
    }

    #[test]
    fn rows_are_bounded_and_cut_at_character_boundaries() {
        let long = "é".repeat(5000);
        let r = row(json!({"stage": "tool.before", "tool_name": "Bash",
                           "tool_args": {"command": long.clone(), "file_path": ["/a", "/b"]}}));
        let cmd = r.command.unwrap();
        assert!(cmd.len() <= MAX_FIELD_BYTES && cmd.len() >= MAX_FIELD_BYTES - 1);
        assert!(cmd.chars().all(|c| c == 'é'));
        assert_eq!(r.path.as_deref(), Some("/a\n/b"));
        let args: serde_json::Value =
            serde_json::from_str(r.tool_args.as_deref().unwrap()).unwrap();
        assert_eq!(args["truncated"], true);
        // Equal arguments give equal markers, different ones different.
        let again = row(json!({"stage": "tool.before", "tool_name": "Bash",
                               "tool_args": {"command": long, "file_path": ["/a", "/b"]}}));
        assert_eq!(again.tool_args, r.tool_args);
        let other = row(json!({"stage": "tool.before", "tool_name": "Bash",
                               "tool_args": {"command": "x".repeat(9000)}}));
        assert_ne!(other.tool_args, r.tool_args);
        assert_eq!(r.text_len, (long_len() + 4) as i64);
    }

    fn long_len() -> usize {
        "é".repeat(5000).len()
    }
}
