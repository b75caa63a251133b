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
use crate::redact::{for_each_source_mut, redact_split_keys, redact_text, REDACTED};
use crate::settings::FailMode;
use crate::tally::Tally;
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
    /// The same event when a rule's `transforms` rewrote it (parlok's
    /// `rewrite`): named for what it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten_event: Option<Value>,
    /// `retrieval.after`: the indices of the documents to drop (each one
    /// the rules would block on its own); `redacted_event` holds the rest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drop_documents: Vec<usize>,
    pub elapsed_ms: f64,
    /// Set when evaluation itself failed and `fail_mode` decided the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<EvaluationFailure>,
    /// `approve`: the approval the event waits for (`id`, `status`,
    /// `expires_at`, ...), filled in by whoever keeps approvals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Value>,
    /// `approve` with a redaction rule matched too: the event rewritten, for
    /// the answer once approved (never sent while the call is held).
    #[serde(skip)]
    pub held_rewrite: Option<Value>,
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

/// A rule decided outside the compiled automata — a SQL rule, run by the
/// side-store — merged into the verdict as if it had been part of the chain
/// (after every compiled evaluator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateMatch {
    /// Index into `Program::rules`.
    pub rule: u32,
    /// The rendered reason, if the rule has a template; else its title.
    pub reason: Option<String>,
}

/// A part of the evaluation that could not run, and what fail_mode makes of
/// it: the compiled evaluators' results stand, and the response says what
/// failed.
#[derive(Debug, Clone)]
pub struct PartialFailure {
    /// What did not run, for the reason text (e.g. `SQL rules`).
    pub skipped: &'static str,
    pub failure: EvaluationFailure,
}

/// Everything besides the engine's verdict that decides the answer.
#[derive(Debug, Clone, Default)]
pub struct Conclusion<'a> {
    /// Rules that matched outside the engine, in chain order.
    pub late: &'a [LateMatch],
    /// Server-wide monitor mode: the returned action is at most `detect`,
    /// and what would have been blocked says so in `would_block`.
    pub monitor: bool,
    /// A part of the evaluation failed.
    pub failure: Option<PartialFailure>,
}

impl Report {
    /// The answer for an engine verdict with nothing else to add: no late
    /// rules, no server-wide monitor mode, no failure.
    pub fn build(
        engine: &Engine,
        event: &PreparedEvent,
        verdict: &Verdict<'_>,
        elapsed: Duration,
    ) -> Report {
        Report::decide(engine, event, verdict, &Conclusion::default(), elapsed)
    }

    /// The one place a final answer is assembled: the matched rules (the
    /// engine's, then the late ones) are tallied in chain order
    /// ([`Tally`]: strength order, rule monitor mode, chain stop), a
    /// failure lets fail_mode decide, server-wide monitor mode caps the
    /// action, and only then is anything rewritten: the event is redacted
    /// exactly when the final action is `redact`, so a block (however it
    /// came about) never returns rewritten content.
    pub fn decide(
        engine: &Engine,
        event: &PreparedEvent,
        verdict: &Verdict<'_>,
        conclusion: &Conclusion<'_>,
        elapsed: Duration,
    ) -> Report {
        let program = engine.program();
        let mut tally = Tally::default();
        let mut results = Vec::with_capacity(verdict.matched.len() + conclusion.late.len());
        // Rewrite transforms of matched rules (applied whatever the final
        // action, to know which rewrites change nothing).
        let rewrite = crate::transform::rewrite(engine, &event.event, verdict.matched);
        let unchanged = |r: u32| rewrite.as_ref().is_some_and(|rw| rw.unchanged.contains(&r));
        for &r in verdict.matched {
            let rule = &program.rules[r as usize];
            if unchanged(r) {
                tally.add(Action::Allow, rule.monitor);
                let mut result = rule_result(engine, r, None, None);
                result.action = Action::Allow;
                result.reason = format!("{} (nothing to rewrite)", result.reason);
                results.push(result);
                continue;
            }
            tally.add(rule.action, rule.monitor);
            let outside_schema = program
                .evaluators
                .get(rule.evaluator as usize)
                .is_some_and(|e| e.engine == crate::EngineKind::Schema)
                .then(|| crate::check::schema_evidence(&program.checks, &rule.predicate, event))
                .flatten();
            if let Some(why) = outside_schema {
                let mut result = rule_result(engine, r, Some(why.clone()), None);
                result.reason = format!("{}: {why}", result.reason);
                results.push(result);
                continue;
            }
            let matched = if rule.action == Action::Redact {
                Some(REDACTED.to_string())
            } else {
                // A classifier rule shows its score, and the text its
                // other conditions found if any.
                let score =
                    crate::classifier::evidence(engine.cel(), &rule.predicate, verdict, event);
                match (score, first_match(engine, event, verdict, r)) {
                    (Some(s), Some(m)) => Some(format!("{s}: {m}")),
                    (s, m) => s.or(m),
                }
            };
            results.push(rule_result(engine, r, matched, None));
        }
        for late in conclusion.late {
            // Late rules come after every compiled evaluator: a block
            // before them stops the chain.
            if tally.stopped {
                break;
            }
            let Some(rule) = program.rules.get(late.rule as usize) else {
                continue;
            };
            tally.add(rule.action, rule.monitor);
            // A late rule's `reason` is a template only its runner renders:
            // without a rendering, the title.
            let reason = late.reason.clone().unwrap_or_else(|| rule.title.clone());
            results.push(rule_result(engine, late.rule, None, Some(reason)));
        }
        // A value failing a rule's `enforce_template` or `tone_check`
        // makes that rule block.
        for (r, why) in rewrite.iter().flat_map(|rw| &rw.violations) {
            let rule = &program.rules[*r as usize];
            tally.add(Action::Block, rule.monitor);
            let mut result = rule_result(engine, *r, None, None);
            result.action = Action::Block;
            result.reason = format!("{} ({why})", result.reason);
            results.push(result);
        }
        let mut reasons: Vec<String> = results
            .iter()
            .map(|r| format!("{}: {}", r.rule_id, r.reason))
            .collect();
        let failure = conclusion.failure.as_ref().map(|f| {
            reasons.push(format!(
                "{} did not run ({}: {}); fail_mode {} decided",
                f.skipped,
                f.failure.kind,
                f.failure.message,
                f.failure.fail_mode.as_str()
            ));
            f.failure.clone()
        });
        let (action, would_block) = conclude(tally, failure.as_ref(), conclusion.monitor);
        let rewritten = rewrite.as_ref().map(|rw| &rw.event);
        let (redacted, redacted_event) = if action == Action::Redact {
            redact(engine, event, verdict, rewritten)
        } else {
            (None, None)
        };
        let rewritten_event = redacted_event.clone().filter(|_| rewritten.is_some());
        let held_rewrite = (action == Action::Approve
            && (rewritten.is_some()
                || verdict.matched.iter().any(|&r| {
                    let rule = &program.rules[r as usize];
                    rule.action == Action::Redact && !rule.monitor
                })))
        .then(|| redact(engine, event, verdict, rewritten).1)
        .flatten();
        Report {
            action,
            blocked: action == Action::Block,
            would_block,
            reasons,
            results,
            redacted,
            redacted_event,
            rewritten_event,
            drop_documents: Vec::new(),
            elapsed_ms: elapsed.as_secs_f64() * 1000.0,
            failure,
            approval: None,
            held_rewrite,
        }
    }

    /// The answer when there is no verdict at all (the engine itself
    /// failed): `block` when failing closed, `allow` when failing open, saying
    /// so in `failure` and `reasons`; server-wide monitor mode applies as to
    /// any verdict.
    pub fn failed(failure: EvaluationFailure, monitor: bool, elapsed: Duration) -> Report {
        let reasons = vec![format!(
            "evaluation failed ({}: {}); fail_mode {} decided",
            failure.kind,
            failure.message,
            failure.fail_mode.as_str()
        )];
        let (action, would_block) = conclude(Tally::default(), Some(&failure), monitor);
        Report {
            action,
            blocked: action == Action::Block,
            would_block,
            reasons,
            results: Vec::new(),
            redacted: None,
            redacted_event: None,
            rewritten_event: None,
            drop_documents: Vec::new(),
            elapsed_ms: elapsed.as_secs_f64() * 1000.0,
            failure: Some(failure),
            approval: None,
            held_rewrite: None,
        }
    }
}

/// The enforced action and `would_block`, after fail_mode and monitor mode.
fn conclude(tally: Tally, failure: Option<&EvaluationFailure>, monitor: bool) -> (Action, bool) {
    let mut action = tally.action;
    let mut would_block = tally.would_block();
    if failure.is_some_and(|f| f.fail_mode == FailMode::Closed) {
        action = Action::Block;
        would_block = false;
    }
    if monitor && action > Action::Detect {
        would_block |= action == Action::Block;
        action = Action::Detect;
    }
    (action, would_block)
}

fn rule_result(
    engine: &Engine,
    r: u32,
    matched: Option<String>,
    reason: Option<String>,
) -> RuleResult {
    let program = engine.program();
    let rule = &program.rules[r as usize];
    RuleResult {
        evaluator: program
            .evaluators
            .get(rule.evaluator as usize)
            .map_or_else(String::new, |e| e.name.clone()),
        rule_id: rule.id.clone(),
        title: rule.title.clone(),
        action: rule.action,
        priority: rule.priority,
        monitor: rule.monitor,
        reason: reason
            .or_else(|| rule.reason.clone())
            .unwrap_or_else(|| rule.title.clone()),
        matched,
        author: rule.author.clone(),
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
    let mut atoms = hit_atoms(engine, verdict, rule);
    // A validated match is the specific evidence (the card number, the
    // typosquatted name) beside a context pattern's (the file written).
    atoms.sort_by_key(|a| program.atoms[*a as usize].validator.is_none());
    for atom in atoms {
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
                    let text = &v[m.range()];
                    let mut shown: String = text.trim().chars().take(MAX_MATCH_CHARS).collect();
                    if let Some(why) = spec.validator.and_then(|c| c.explain(text)) {
                        shown = format!("{shown} ({why})");
                    }
                    found = Some(shown);
                }
            }
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The event with the redaction rules' matches redacted, starting from
/// what the transforms rewrote (`transformed`), if anything.
fn redact(
    engine: &Engine,
    event: &PreparedEvent,
    verdict: &Verdict<'_>,
    transformed: Option<&Event>,
) -> (Option<String>, Option<Value>) {
    let program = engine.program();
    let mut rewritten = transformed.unwrap_or(&event.event).clone();
    // Before the patterns rewrite the header that marks where a split key
    // begins.
    redact_split_keys(&mut rewritten);
    for &r in verdict.matched {
        let rule = &program.rules[r as usize];
        // A rule with transforms rewrites by them, not by its matches.
        if rule.action != Action::Redact || rule.monitor || !rule.transforms.is_empty() {
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
    let mut changed = redact_split_keys(event);
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
        // A transform rule's atoms are its conditions, not secrets.
        if rule.action == Action::Redact && rule.transforms.is_empty() {
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
