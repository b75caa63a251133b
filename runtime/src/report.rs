//! The answer to one evaluation, in the shape `POST /evaluate` returns and
//! `parallax eval` prints.
//!
//! Building a report is the slow path: it finds match spans and rewrites
//! redacted text, work done only for the atoms and rules that hit.

use crate::action::{Action, Priority};
use crate::engine::{Engine, Verdict};
use crate::event::Event;
use crate::field::{Canonical, FieldRef, JsonRoot};
use crate::prepared::PreparedEvent;
use crate::redact::{for_each_source_mut, redact_text, REDACTED};
use crate::settings::FailMode;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// Matched text longer than this is cut in reports.
const MAX_MATCH_CHARS: usize = 200;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub action: Action,
    pub blocked: bool,
    /// Monitor mode held back a block: the event would have been blocked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub would_block: bool,
    pub reasons: Vec<String>,
    pub results: Vec<RuleResult>,
    /// The redacted text of the first redacted field (for clients written
    /// against the original Parallax).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    /// The request's event with redacted fields rewritten in place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redacted_event: Option<Value>,
    pub elapsed_ms: f64,
    /// Set when evaluation itself failed and `fail_mode` decided the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<EvaluationFailure>,
}

/// Why there is no real verdict.
#[derive(Debug, Clone, Serialize)]
pub struct EvaluationFailure {
    /// `internal`, `timeout`, or another subsystem's name.
    pub kind: String,
    pub message: String,
    pub fail_mode: FailMode,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleResult {
    pub evaluator: String,
    pub rule_id: String,
    pub title: String,
    pub action: Action,
    pub priority: Priority,
    /// The rule is in monitor mode: its action was not enforced.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub monitor: bool,
    pub reason: String,
    /// The text that matched (`[REDACTED]` for redaction rules, whose match
    /// is a secret by definition).
    #[serde(rename = "match")]
    pub matched: Option<String>,
    /// The rule's author, when it names one (Sigma rules; the DRL licence of
    /// the SigmaHQ rules asks that matches carry it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

impl Report {
    pub fn build(
        engine: &Engine,
        event: &PreparedEvent,
        verdict: &Verdict<'_>,
        elapsed: Duration,
    ) -> Report {
        let program = engine.program();
        let mut results = Vec::with_capacity(verdict.matched.len());
        for &r in verdict.matched {
            let rule = &program.rules[r as usize];
            let matched = if rule.action == Action::Redact {
                Some(REDACTED.to_string())
            } else {
                first_match(engine, event, verdict, r)
            };
            results.push(RuleResult {
                evaluator: program.evaluators[rule.evaluator as usize].name.clone(),
                rule_id: rule.id.clone(),
                title: rule.title.clone(),
                action: rule.action,
                priority: rule.priority,
                monitor: rule.monitor,
                reason: rule.reason.clone().unwrap_or_else(|| rule.title.clone()),
                matched,
                author: rule.author.clone(),
            });
        }
        let reasons = results
            .iter()
            .map(|r| format!("{}: {}", r.rule_id, r.reason))
            .collect();
        let (redacted, redacted_event) = if verdict.action == Action::Redact {
            redact(engine, event, verdict)
        } else {
            (None, None)
        };
        Report {
            action: verdict.action,
            blocked: verdict.action == Action::Block,
            would_block: verdict.action != Action::Block && verdict.would_action == Action::Block,
            reasons,
            results,
            redacted,
            redacted_event,
            elapsed_ms: elapsed.as_secs_f64() * 1000.0,
            failure: None,
        }
    }

    /// The answer when evaluation failed: `block` when failing closed,
    /// `allow` when failing open, saying so in `failure` and `reasons`.
    pub fn failed(fail_mode: FailMode, kind: &str, message: String, elapsed: Duration) -> Report {
        let action = match fail_mode {
            FailMode::Closed => Action::Block,
            FailMode::Open => Action::Allow,
        };
        Report {
            action,
            blocked: action == Action::Block,
            would_block: false,
            reasons: vec![format!(
                "evaluation failed ({kind}: {message}); fail_mode {} decided",
                match fail_mode {
                    FailMode::Closed => "closed",
                    FailMode::Open => "open",
                }
            )],
            results: Vec::new(),
            redacted: None,
            redacted_event: None,
            elapsed_ms: elapsed.as_secs_f64() * 1000.0,
            failure: Some(EvaluationFailure {
                kind: kind.to_string(),
                message,
                fail_mode,
            }),
        }
    }
}

fn hit_atoms(engine: &Engine, verdict: &Verdict<'_>, rule: u32) -> Vec<u32> {
    let mut atoms = Vec::new();
    engine.program().rules[rule as usize]
        .predicate
        .positive_atoms(&mut atoms);
    atoms.retain(|a| verdict.atoms.contains(*a as usize));
    atoms
}

fn first_match(
    engine: &Engine,
    event: &PreparedEvent,
    verdict: &Verdict<'_>,
    rule: u32,
) -> Option<String> {
    let program = engine.program();
    for atom in hit_atoms(engine, verdict, rule) {
        let Some(re) = engine.span_regex(atom) else {
            continue;
        };
        let spec = &program.atoms[atom as usize];
        let field = &program.fields[spec.field as usize].field;
        let mut found = None;
        event.for_each_value(field, &mut |v| {
            if found.is_none() {
                let valid = re
                    .find_iter(v)
                    .find(|m| spec.validator.is_none_or(|c| c.check(&v[m.range()])));
                if let Some(m) = valid {
                    found = Some(v[m.range()].trim().chars().take(MAX_MATCH_CHARS).collect());
                }
            }
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

fn redact(
    engine: &Engine,
    event: &PreparedEvent,
    verdict: &Verdict<'_>,
) -> (Option<String>, Option<Value>) {
    let program = engine.program();
    let mut rewritten = event.event.clone();
    for &r in verdict.matched {
        let rule = &program.rules[r as usize];
        if rule.action != Action::Redact || rule.monitor {
            continue;
        }
        for atom in hit_atoms(engine, verdict, r) {
            let Some(re) = engine.span_regex(atom) else {
                continue;
            };
            let spec = &program.atoms[atom as usize];
            let field = &program.fields[spec.field as usize].field;
            for_each_source_mut(&mut rewritten, field, &mut |s| {
                redact_text(re, spec.validator, s);
            });
        }
    }
    let first = first_changed(&event.event, &rewritten);
    (first, Some(rewritten.to_value()))
}

/// Rewrites to `[REDACTED]`, in the fields each is scanned in, every span
/// any redaction rule of the program (matched or not, monitored or not)
/// would find; true when anything changed.
///
/// This is the view of an event that may be stored (the audit log): the
/// redaction rules define what a secret is, and a secret must not reach a
/// log just because a block stopped the chain before the secrets evaluator
/// ran, or because the verdict was not `redact`.
pub fn mask_secrets(engine: &Engine, event: &mut Event) -> bool {
    let program = engine.program();
    let mut changed = false;
    for atom in redaction_atoms(engine) {
        let Some(re) = engine.span_regex(atom) else {
            continue;
        };
        let spec = &program.atoms[atom as usize];
        let field = &program.fields[spec.field as usize].field;
        for_each_source_mut(event, field, &mut |s| {
            changed |= redact_text(re, spec.validator, s);
        });
    }
    changed
}

/// Masks every span of `text` any redaction rule's pattern finds, whatever
/// its field (for matched text quoted from any field).
pub fn mask_secret_text(engine: &Engine, text: &mut String) -> bool {
    let mut changed = false;
    for atom in redaction_atoms(engine) {
        if let Some(re) = engine.span_regex(atom) {
            let validator = engine.program().atoms[atom as usize].validator;
            changed |= redact_text(re, validator, text);
        }
    }
    changed
}

fn redaction_atoms(engine: &Engine) -> Vec<u32> {
    let mut atoms = Vec::new();
    for rule in &engine.program().rules {
        if rule.action == Action::Redact {
            rule.predicate.positive_atoms(&mut atoms);
        }
    }
    atoms.sort_unstable();
    atoms.dedup();
    atoms
}

/// The first string leaf, in event order, that redaction changed. Redaction
/// keeps the structure, so the two events' leaves pair up one to one.
fn first_changed(before: &Event, after: &Event) -> Option<String> {
    let leaves = |e: &Event| {
        let mut out: Vec<String> = Vec::new();
        let mut e = e.clone();
        for_each_source_mut(&mut e, &FieldRef::Canonical(Canonical::Text), &mut |s| {
            out.push(s.clone())
        });
        for_each_source_mut(
            &mut e,
            &FieldRef::Json {
                root: JsonRoot::Params,
                path: Vec::new(),
            },
            &mut |s| out.push(s.clone()),
        );
        out
    };
    leaves(before)
        .into_iter()
        .zip(leaves(after))
        .find(|(b, a)| b != a)
        .map(|(_, a)| a)
}
