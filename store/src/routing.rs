//! Which events need the side-store, and whether the caller must wait.
//!
//! Every event used to make a round trip to the store thread, even events
//! no SQL rule could match: that round trip was most of the cost of an
//! event. What the program's SQL rules say decides it instead:
//!
//! - **Skip**: the event has no session and every SQL rule is keyed on the
//!   session (its query filters on `session_id = :session_id`). No rule can
//!   match the event (it judges sessions) and no rule can ever read its row
//!   (`NULL = NULL` is not true in SQL), so it is neither judged nor
//!   recorded.
//! - **Record**: no SQL rule runs at the event's stage, or an earlier
//!   evaluator blocked it. Its row must be in the window (a rate rule
//!   counts blocked retries; an egress rule reads what a `tool.after`
//!   result touched), but nothing in the answer depends on the store, so
//!   the row is queued and the caller does not wait. The store thread keeps
//!   each session's order, so the session's next event still sees it.
//! - **Judge**: the event is recorded and the rules at its stage run on
//!   it; the caller waits for their hits.
//!
//! A judged event then goes through the rules' cheap preconditions
//! ([`crate::guard`], found by the compiler): a rule whose guard is false
//! for the event cannot fire, so its query is not run ([`RuleMask`]). When
//! no rule at the stage is left, the event is only recorded, as above.

use crate::guard::Guard;
use crate::request::EventRow;
use parallax_runtime::{Action, Program, Stage, StageSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// What to do with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Skip,
    Record,
    Judge,
}

/// Which of a program's SQL rules (by position in `Program::sql`) to run
/// on one event. `program` is [`fingerprint`] of the rules it was computed
/// for: during a reload the store may already hold other rules, and then
/// runs all of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleMask {
    pub program: u64,
    bits: Vec<u64>,
}

impl RuleMask {
    /// Whether rule `i` of `Program::sql` runs.
    pub fn runs(&self, i: usize) -> bool {
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
}

/// Identifies a program's SQL rules (their queries, conditions and order),
/// so a [`RuleMask`] is only applied to the rules it was made for.
pub fn fingerprint(program: &Program) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    program.sql.hash(&mut h);
    h.finish()
}

/// One SQL rule as routing sees it.
#[derive(Debug)]
struct Gate {
    stages: StageSet,
    guards: Vec<Guard>,
}

/// The facts about a program's SQL rules that routing needs, computed once
/// per program (start-up and each reload).
#[derive(Debug, Clone)]
pub struct SqlRouting {
    /// Stages at which some SQL rule runs.
    stages: StageSet,
    /// Every SQL rule's query is keyed on the event's session.
    session_keyed: bool,
    /// The program has SQL rules at all.
    any: bool,
    /// Each rule's stages and guards, in `Program::sql` order.
    gates: Arc<[Gate]>,
    program: u64,
}

impl SqlRouting {
    pub fn of(program: &Program) -> SqlRouting {
        let mut stages = StageSet::EMPTY;
        let mut session_keyed = true;
        let mut gates = Vec::with_capacity(program.sql.len());
        for spec in &program.sql {
            let rule_stages = program
                .rules
                .get(spec.rule as usize)
                .map(|m| m.stages)
                .unwrap_or(StageSet::EMPTY);
            stages = stages.union(rule_stages);
            session_keyed &= keyed_on_session(&spec.query);
            // A guard the compiler wrote always reads back; one that does
            // not (a program from another build) is dropped, and the rule
            // then runs on every event of its stages.
            let guards = spec
                .guards
                .iter()
                .filter_map(|g| match Guard::parse(g) {
                    Ok(g) => Some(g),
                    Err(e) => {
                        tracing::warn!(guard = %g, error = %e, "SQL rule guard ignored");
                        None
                    }
                })
                .collect();
            gates.push(Gate {
                stages: rule_stages,
                guards,
            });
        }
        SqlRouting {
            stages,
            session_keyed,
            any: !program.sql.is_empty(),
            gates: gates.into(),
            program: fingerprint(program),
        }
    }

    /// The rules to run on a judged event: those at its stage whose guards
    /// all hold. `None` when there are none (the event is then only
    /// recorded, [`Route::Record`]).
    pub fn rules_for(&self, row: &EventRow) -> Option<RuleMask> {
        let mut bits = vec![0u64; self.gates.len().div_ceil(64)];
        let mut any = false;
        for (i, gate) in self.gates.iter().enumerate() {
            if gate.stages.contains(row.stage) && gate.guards.iter().all(|g| g.holds(row)) {
                bits[i / 64] |= 1u64 << (i % 64);
                any = true;
            }
        }
        any.then_some(RuleMask {
            program: self.program,
            bits,
        })
    }

    /// How many of the program's SQL rules have a guard.
    pub fn guarded(&self) -> usize {
        self.gates.iter().filter(|g| !g.guards.is_empty()).count()
    }

    /// The route of an event at `stage`, with or without a session, after
    /// the compiled evaluators gave `action`.
    pub fn route(&self, stage: Stage, has_session: bool, action: Action) -> Route {
        if !self.any || (!has_session && self.session_keyed) {
            return Route::Skip;
        }
        if action == Action::Block || !self.stages.contains(stage) {
            return Route::Record;
        }
        Route::Judge
    }

    /// Every SQL rule is keyed on the session (see [`keyed_on_session`]).
    pub fn session_keyed(&self) -> bool {
        self.session_keyed
    }
}

/// Whether `query` filters the window on the event's session: it compares
/// `session_id` with `:session_id` with `=` (either way round, any
/// spacing, any case). Such a query reads no row of another session, and
/// with no session it reads no row at all.
///
/// The test is on the text, so it is conservative in one direction only: a
/// query that compares them inside an `OR` would count as keyed. The shipped
/// rules and the ones docs/SQL.md describes key with a plain `AND`
/// conjunct; a rule that must see events without a session simply does not
/// mention `:session_id` this way.
pub fn keyed_on_session(query: &str) -> bool {
    // One space for each run of whitespace, none around `=`: identifiers
    // keep their boundaries, comparisons read one way.
    let lower = query.to_ascii_lowercase();
    let q = lower
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" =", "=")
        .replace("= ", "=");
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // `session_id = :session_id`: the column is a whole name (not
    // `other_session_id`), optionally qualified (`e.session_id`).
    let direct = q
        .match_indices("session_id=:session_id")
        .any(|(at, n)| !q[..at].ends_with(ident) && !q[at + n.len()..].starts_with(ident));
    // `:session_id = session_id` (or `= e.session_id`).
    let reversed = q.match_indices(":session_id=").any(|(at, n)| {
        let col: String = q[at + n.len()..]
            .chars()
            .take_while(|&c| ident(c) || c == '.')
            .collect();
        col == "session_id" || col.ends_with(".session_id")
    });
    direct || reversed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_a_session_key_written_either_way() {
        assert!(keyed_on_session(
            "SELECT count(*) AS n FROM events WHERE session_id = :session_id AND ts > :now - 60"
        ));
        assert!(keyed_on_session(
            "SELECT 1 FROM events e WHERE e.session_id=:session_id"
        ));
        assert!(keyed_on_session(
            "SELECT 1 FROM events WHERE :session_id =\n  session_id"
        ));
        assert!(keyed_on_session(
            "select 1 from events where SESSION_ID = :SESSION_ID"
        ));
    }

    #[test]
    fn a_query_without_the_key_is_not_keyed() {
        assert!(!keyed_on_session(
            "SELECT count(*) AS n FROM events WHERE user_id = :user_id"
        ));
        assert!(!keyed_on_session(
            "SELECT count(*) AS n FROM events WHERE other_session_id = :session_id"
        ));
        assert!(!keyed_on_session(
            "SELECT :session_id AS s, count(*) AS n FROM events"
        ));
    }
}
