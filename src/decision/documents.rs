//! Dropping the poisoned documents of a retrieval instead of refusing it.
//!
//! A retrieval (`retrieval.after`) brings back several documents, usually
//! from sources nobody on the agent's side wrote. When one of them carries
//! an injection, refusing the whole retrieval punishes the agent for one
//! bad page and tells the attacker their page is being read; dropping that
//! page lets the agent go on with the rest, and costs it little. So at
//! `retrieval.after` a document is *flagged* when a rule that judges
//! (`detect`, `approve` or `block`, not in monitor mode) matches it — a
//! redaction rule only rewrites — and when the compiled verdict on a
//! retrieval has such a rule, each document is judged alone:
//! - a flagged document is dropped;
//! - the documents left are judged together again (an attack split across
//!   two documents is a match only when they are read together), and if
//!   none is flagged, the answer is `redact` (at least) with
//!   `drop_documents` naming the dropped ones and `redacted_event` holding
//!   the rest (with their own redactions, if any);
//! - if nothing is dropped (the query, or documents only together, make
//!   the match) or what is left is still flagged, the whole verdict stands.
//!
//! Only matching retrievals pay for this (the common case is one scan);
//! the work is one scan per document plus one of the rest, under the same
//! deadline as the first evaluation: past it the whole verdict stands, so a
//! deadline can never let a poisoned document through.

use super::rules_in_force::RulesInForce;
use parallax_runtime::{Action, Event, PreparedEvent, Program, Report, RuleResult, Stage};
use serde_json::Value;
use std::time::Duration;

/// What judging the documents one by one found: which to drop and the
/// verdict on the rest.
#[derive(Debug)]
pub(super) struct Triage {
    /// Indices into the event's `documents`, ascending.
    drop: Vec<usize>,
    /// The rules each dropped document matched, reasons naming it.
    dropped: Vec<RuleResult>,
    /// The retrieval without the dropped documents.
    kept: Event,
    /// The verdict on `kept`.
    rest: Report,
}

/// Whether a rule with this action judges the text (a redaction only
/// rewrites it; a rule in monitor mode enforces nothing): what drops a
/// document.
fn judges(action: Action, monitor: bool) -> bool {
    !monitor && matches!(action, Action::Detect | Action::Approve | Action::Block)
}

/// Whether an event's verdict calls for judging its documents one by one:
/// a retrieval with documents that a judging rule matched (a retrieval
/// with only a redaction, a secret in one document, is rewritten in place
/// and costs no second look).
pub(super) fn wanted(event: &Event, program: &Program, matched: &[u32]) -> bool {
    event.stage == Stage::RetrievalAfter
        && event.documents.as_array().is_some_and(|d| !d.is_empty())
        && matched.iter().any(|&r| {
            program
                .rules
                .get(r as usize)
                .is_some_and(|rule| judges(rule.action, rule.monitor))
        })
}

/// Whether a report has a rule that judges the text.
pub(super) fn flags(report: &Report) -> bool {
    report.results.iter().any(|r| judges(r.action, r.monitor))
}

/// Judges each document of `event` alone, then the rest together; `None`
/// when the whole verdict must stand (nothing droppable, the rest still
/// flagged, or the deadline passed).
///
/// Each document is judged in a copy of the event without its documents
/// (and without the query, which concerns them all): copying the whole
/// retrieval per document would make the work quadratic in its size.
pub(super) fn triage(
    current: &RulesInForce,
    event: &Event,
    stop: Option<std::time::Instant>,
) -> Option<Triage> {
    let docs = event.documents.as_array()?;
    let engine = &current.engine;
    let mut scratch = current.take_scratch();
    scratch.set_deadline(stop);
    let mut judge = |e: Event| -> Option<Report> {
        let prepared = PreparedEvent::new(e);
        engine.evaluate(&prepared, &mut scratch);
        if scratch.timed_out() {
            return None;
        }
        let verdict = scratch.verdict();
        Some(Report::build(engine, &prepared, &verdict, Duration::ZERO))
    };
    let mut bare = event.clone_without_documents();
    bare.query = None;
    let mut keep = vec![true; docs.len()];
    let mut dropped = Vec::new();
    let mut timed_out = false;
    for (i, doc) in docs.iter().enumerate() {
        let mut one = bare.clone();
        one.documents = Value::Array(vec![doc.clone()]);
        let Some(report) = judge(one) else {
            timed_out = true;
            break;
        };
        if flags(&report) {
            keep[i] = false;
            for mut r in report.results {
                r.reason = format!("document {i} dropped: {}", r.reason);
                dropped.push(r);
            }
        }
    }
    let drop: Vec<usize> = (0..docs.len()).filter(|&i| !keep[i]).collect();
    let judged = (!timed_out && !drop.is_empty())
        .then(|| {
            let mut kept = event.clone_without_documents();
            kept.documents = Value::Array(
                docs.iter()
                    .zip(&keep)
                    .filter(|(_, k)| **k)
                    .map(|(d, _)| d.clone())
                    .collect(),
            );
            let rest = judge(kept.clone()).filter(|r| !flags(r))?;
            Some((kept, rest))
        })
        .flatten();
    scratch.set_deadline(None);
    current.put_scratch(scratch);
    let (kept, rest) = judged?;
    Some(Triage {
        drop,
        dropped,
        kept,
        rest,
    })
}

impl Triage {
    /// The answer with the dropped documents taken out: the rest's verdict,
    /// at least `redact`, the dropped documents' rules first.
    pub(super) fn apply(self, elapsed: Duration) -> Report {
        let Triage {
            drop,
            dropped,
            kept,
            rest,
        } = self;
        let mut results = dropped;
        results.extend(rest.results);
        let reasons = results
            .iter()
            .map(|r| format!("{}: {}", r.rule_id, r.reason))
            .collect();
        let redacted_event = rest.redacted_event.unwrap_or_else(|| kept.to_value());
        Report {
            action: rest.action.max(Action::Redact),
            blocked: false,
            would_block: false,
            reasons,
            results,
            redacted: rest.redacted,
            redacted_event: Some(redacted_event),
            rewritten_event: rest.rewritten_event,
            drop_documents: drop,
            elapsed_ms: elapsed.as_secs_f64() * 1000.0,
            failure: None,
            approval: None,
            held_rewrite: None,
        }
    }
}
