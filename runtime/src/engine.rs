//! The evaluator chain over a loaded [`Program`].
//!
//! One evaluation: scan each field the stage needs (once, for all rules),
//! then run rule predicates evaluator by evaluator in chain order, stopping
//! after the first evaluator that blocks. Everything it writes lives in a
//! [`Scratch`] the caller reuses, so evaluating an already-prepared event
//! does not allocate.

use crate::action::Action;
use crate::bitset::BitSet;
use crate::cel::CelRuntime;
use crate::predicate::{CompiledPredicate, PredicateInput};
use crate::prepared::PreparedEvent;
use crate::program::Program;
use crate::scan::{FieldScanner, ScanBuildError, ShardDfa};
use crate::stage::Stage;
use regex_automata::meta;
use std::sync::OnceLock;

/// Which implementation of the rules is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Automata and predicates compiled into the binary at build time.
    Baked,
    /// Automata built at start-up, predicates interpreted from the IR.
    Dynamic,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Baked => "baked",
            Backend::Dynamic => "dynamic",
        }
    }
}

/// How rule predicates are evaluated.
pub enum Predicates {
    /// Generated functions, one per rule, in rule order.
    Compiled(&'static [CompiledPredicate]),
    /// Walk each rule's [`crate::Predicate`].
    Interpreted,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the program has {rules} rules but {predicates} compiled predicates")]
    PredicateCount { rules: usize, predicates: usize },
    #[error("the program has {fields} scanned fields but {got} sets of DFA shards")]
    FieldCount { fields: usize, got: usize },
    #[error(transparent)]
    Scan(#[from] ScanBuildError),
}

struct StagePlan {
    fields: Vec<usize>,
    evaluators: Vec<usize>,
}

pub struct Engine {
    program: Program,
    scanners: Vec<FieldScanner>,
    predicates: Predicates,
    backend: Backend,
    stages: Vec<StagePlan>,
    /// Per atom, built on first use: finds match spans for the `match`
    /// field and for redaction (the slow path, run only on atoms that hit).
    span_regexes: Vec<OnceLock<Option<meta::Regex>>>,
    /// The program's CEL expressions, ready to interpret.
    cel: CelRuntime,
}

/// Reusable per-evaluation memory.
pub struct Scratch {
    atoms: BitSet,
    candidates: BitSet,
    caches: Vec<Option<meta::Cache>>,
    matched: Vec<u32>,
}

/// The outcome of one evaluation, borrowing the scratch it was written to.
#[derive(Debug, Clone, Copy)]
pub struct Verdict<'s> {
    /// The action to take: rules in monitor mode count as `detect` at most.
    pub action: Action,
    /// The action had no rule been in monitor mode.
    pub would_action: Action,
    /// Indices of the matching rules, in chain order.
    pub matched: &'s [u32],
    /// The atoms that hit.
    pub atoms: &'s BitSet,
}

impl Engine {
    pub fn new(
        program: Program,
        dfas: Vec<Vec<ShardDfa>>,
        predicates: Predicates,
        backend: Backend,
    ) -> Result<Engine, EngineError> {
        if let Predicates::Compiled(p) = &predicates {
            if p.len() != program.rules.len() {
                return Err(EngineError::PredicateCount {
                    rules: program.rules.len(),
                    predicates: p.len(),
                });
            }
        }
        if dfas.len() != program.fields.len() {
            return Err(EngineError::FieldCount {
                fields: program.fields.len(),
                got: dfas.len(),
            });
        }
        let mut scanners = Vec::with_capacity(program.fields.len());
        let mut verifier_base = 0;
        for (plan, shard_dfas) in program.fields.iter().zip(dfas) {
            let s = FieldScanner::new(
                plan,
                shard_dfas,
                |a| {
                    let atom = &program.atoms[a as usize];
                    (atom.pattern.clone(), atom.validator)
                },
                verifier_base,
            )?;
            verifier_base += s.verifiers.len();
            scanners.push(s);
        }
        let stages = Stage::ALL
            .iter()
            .map(|&stage| {
                let evaluators: Vec<usize> = (0..program.evaluators.len())
                    .filter(|&e| program.evaluators[e].stages.contains(stage))
                    .collect();
                let mut fields = Vec::new();
                for &e in &evaluators {
                    for r in program.rules_of(e) {
                        let rule = &program.rules[r];
                        if rule.stages.contains(stage) {
                            let mut atoms = Vec::new();
                            rule.predicate.atoms(&mut atoms);
                            fields.extend(
                                atoms
                                    .iter()
                                    .map(|a| program.atoms[*a as usize].field as usize),
                            );
                        }
                    }
                }
                fields.sort_unstable();
                fields.dedup();
                StagePlan { fields, evaluators }
            })
            .collect();
        let span_regexes = program.atoms.iter().map(|_| OnceLock::new()).collect();
        let cel = CelRuntime::new(&program.cel);
        Ok(Engine {
            cel,
            program,
            scanners,
            predicates,
            backend,
            stages,
            span_regexes,
        })
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn new_scratch(&self) -> Scratch {
        Scratch {
            atoms: BitSet::new(self.program.atoms.len()),
            candidates: BitSet::new(self.scanners.iter().map(|s| s.verifiers.len()).sum()),
            caches: self.scanners.iter().flat_map(|s| s.new_caches()).collect(),
            matched: Vec::with_capacity(self.program.rules.len()),
        }
    }

    /// Runs the chain. Allocation-free once `scratch` exists.
    pub fn evaluate<'s>(&self, event: &PreparedEvent, scratch: &'s mut Scratch) -> Verdict<'s> {
        let stage = event.event.stage;
        let plan = &self.stages[stage.index()];
        scratch.atoms.clear();
        scratch.matched.clear();
        self.scan(plan.fields.iter().copied(), event, scratch);
        let mut action = Action::Allow;
        let mut would_action = Action::Allow;
        for &e in &plan.evaluators {
            let mut blocked = false;
            for r in self.program.rules_of(e) {
                let rule = &self.program.rules[r];
                if !rule.stages.contains(stage) {
                    continue;
                }
                if self.predicate(r, &scratch.atoms, event) {
                    scratch.matched.push(r as u32);
                    would_action = would_action.max(rule.action);
                    // A monitored block does not stop the chain: the rules
                    // after it still enforce.
                    if rule.monitor {
                        action = action.max(rule.action.min(Action::Detect));
                    } else {
                        action = action.max(rule.action);
                        blocked |= rule.action == Action::Block;
                    }
                }
            }
            if blocked {
                break;
            }
        }
        Verdict {
            action,
            would_action,
            matched: &scratch.matched,
            atoms: &scratch.atoms,
        }
    }

    /// Scans `fields` (indices into the program's field plans) of `event`,
    /// adding the atoms that hit to the scratch.
    fn scan(
        &self,
        fields: impl Iterator<Item = usize>,
        event: &PreparedEvent,
        scratch: &mut Scratch,
    ) {
        for f in fields {
            let scanner = &self.scanners[f];
            let field = &self.program.fields[f].field;
            let Scratch {
                atoms,
                candidates,
                caches,
                ..
            } = &mut *scratch;
            event.for_each_value(field, &mut |v| {
                scanner.scan_value(v, atoms, candidates, caches);
                for i in 0..scanner.verifiers.len() {
                    candidates.remove(scanner.verifier_base + i);
                }
            });
        }
    }

    #[inline]
    fn predicate(&self, rule: usize, atoms: &BitSet, event: &PreparedEvent) -> bool {
        let input = PredicateInput {
            atoms,
            event,
            cel: &self.cel,
            checks: &self.program.checks,
        };
        match &self.predicates {
            Predicates::Compiled(p) => p[rule](&input),
            Predicates::Interpreted => self.program.rules[rule].predicate.eval(&input),
        }
    }

    /// Whether one rule matches `event` on its own, whatever the rest of the
    /// chain would decide (rule tests use it: an earlier blocking evaluator
    /// must not hide a later rule's result).
    pub fn rule_matches(&self, rule: usize, event: &PreparedEvent, scratch: &mut Scratch) -> bool {
        let meta = &self.program.rules[rule];
        if !meta.stages.contains(event.event.stage) {
            return false;
        }
        let mut atoms = Vec::new();
        meta.predicate.atoms(&mut atoms);
        let mut fields: Vec<usize> = atoms
            .iter()
            .map(|a| self.program.atoms[*a as usize].field as usize)
            .collect();
        fields.sort_unstable();
        fields.dedup();
        scratch.atoms.clear();
        self.scan(fields.into_iter(), event, scratch);
        self.predicate(rule, &scratch.atoms, event)
    }

    /// The regex that finds the spans of `atom` (None only if the pattern no
    /// longer compiles, which the compiler rules out).
    pub fn span_regex(&self, atom: u32) -> Option<&meta::Regex> {
        self.span_regexes[atom as usize]
            .get_or_init(|| {
                crate::scan::linear_regex(&self.program.atoms[atom as usize].pattern).ok()
            })
            .as_ref()
    }
}
