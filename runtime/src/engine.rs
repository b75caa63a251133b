//! The evaluator chain over a loaded [`Program`].
//!
//! One evaluation: scan each field the stage needs (once, for all rules),
//! then run rule predicates evaluator by evaluator in chain order, stopping
//! after the first evaluator that blocks. Everything it writes lives in a
//! [`Scratch`] the caller reuses, so evaluating an already-prepared event
//! does not allocate.

use crate::action::Action;
use crate::bitset::BitSet;
use crate::candidates::Candidates;
use crate::cel::CelRuntime;
use crate::deadline::Deadline;
use crate::predicate::{CompiledPredicate, Predicate, PredicateInput};
use crate::prepared::PreparedEvent;
use crate::program::Program;
use crate::scan::{FieldScanner, ScanBuildError, ShardDfa};
use crate::shared_builds::SharedBuilds;
use crate::stage::Stage;
use crate::tally::Tally;
use regex_automata::meta;
use std::sync::{Arc, OnceLock};

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
    /// The atoms of the rules that run at this stage: a verifier whose atom
    /// is not among them need not run (a field's automata serve every
    /// stage; a rule of another stage must not cost this one a regex run).
    atoms: BitSet,
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
    /// Regexes the scanners and span finding build once between them (a
    /// verifier's regex is the same as its atom's span regex).
    shared: Arc<SharedBuilds>,
    /// The program's CEL expressions, ready to interpret.
    cel: CelRuntime,
    /// Per atom, the rules that can only hold when one of their atoms hit
    /// and that mention it.
    atom_rules: Vec<Vec<u32>>,
    /// Rules that may hold with no atom hit (under a `Not`, a constant, or a
    /// predicate kind that looks at the event itself): always evaluated.
    always_rules: BitSet,
}

/// Whether `p` is false whenever none of its atoms hit, so that its rule
/// needs evaluating only when one did. Conservative: any form it does not
/// know is assumed able to hold on its own.
fn needs_an_atom(p: &Predicate) -> bool {
    match p {
        Predicate::Const(b) => !b,
        Predicate::Atom(_) => true,
        Predicate::And(ps) => ps.iter().any(needs_an_atom),
        Predicate::Or(ps) => ps.iter().all(needs_an_atom),
        _ => false,
    }
}

/// Per stage, the fields to scan and the atoms that matter: those of the
/// rules that run at it (and that `keep` keeps).
fn stage_plans(program: &Program, keep: impl Fn(usize) -> bool) -> Vec<StagePlan> {
    Stage::ALL
        .iter()
        .map(|&stage| {
            let evaluators: Vec<usize> = (0..program.evaluators.len())
                .filter(|&e| program.evaluators[e].stages.contains(stage))
                .collect();
            let mut fields = Vec::new();
            let mut stage_atoms = BitSet::new(program.atoms.len());
            for &e in &evaluators {
                for r in program.rules_of(e) {
                    let rule = &program.rules[r];
                    if rule.stages.contains(stage) && keep(r) {
                        let mut atoms = Vec::new();
                        rule.predicate.atoms(&mut atoms);
                        atoms.iter().for_each(|&a| stage_atoms.insert(a as usize));
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
            StagePlan {
                fields,
                atoms: stage_atoms,
            }
        })
        .collect()
}

/// Reusable per-evaluation memory.
pub struct Scratch {
    atoms: BitSet,
    /// Rules to evaluate this time (see [`Engine::evaluate`]).
    rules: BitSet,
    candidates: Candidates,
    caches: Vec<Option<meta::Cache>>,
    /// Per field: its verifier gate's memory.
    gates: Vec<Option<crate::scan::GateScratch>>,
    matched: Vec<u32>,
    /// The last evaluation's tally: with `matched` and `atoms` it is the
    /// verdict, kept here so a caller can hold the scratch across a wait
    /// (the SQL side-store) and read the verdict again with
    /// [`Scratch::verdict`].
    tally: Tally,
    /// The time limit of the next evaluations ([`Scratch::set_deadline`]).
    deadline: Deadline,
    /// Rules this scratch never evaluates, and the stage plans without
    /// them: set only by [`Scratch::bench_skip_engine`], which nothing but
    /// benches calls; `None` in every scratch [`Engine::new_scratch`] makes.
    skip: Option<(BitSet, Vec<StagePlan>)>,
}

impl Scratch {
    /// Evaluations on this scratch stop once `at` has passed (`None`: no
    /// limit), leaving [`Scratch::timed_out`] true and the verdict
    /// incomplete. See [`crate::deadline`].
    pub fn set_deadline(&mut self, at: Option<std::time::Instant>) {
        self.deadline = at.map_or_else(Deadline::none, Deadline::at);
    }

    /// For benches only: evaluations on this scratch skip every rule of
    /// the evaluators of `kind`, as if they were not in the chain: their
    /// rules are not evaluated, and a field or a verifier only they read
    /// is not scanned (the shard DFAs and literal passes of a field still
    /// run whole, as they were compiled with those atoms in them). Issue 19's
    /// in-process budgets are judged on the shipped chain without the
    /// learned injection score (`EngineKind::Classifier`), which issue 23
    /// budgets on its own; see `benches/evaluate.rs`. Not reachable from a
    /// config or a request: the decision service, the proxy, the gateways
    /// and `parallax eval` never call it, and a scratch from
    /// [`Engine::new_scratch`] skips nothing.
    #[doc(hidden)]
    pub fn bench_skip_engine(&mut self, engine: &Engine, kind: crate::program::EngineKind) {
        let program = engine.program();
        let mut skip = BitSet::new(program.rules.len());
        for (r, rule) in program.rules.iter().enumerate() {
            if program.evaluators[rule.evaluator as usize].engine == kind {
                skip.insert(r);
            }
        }
        let plans = stage_plans(program, |r| !skip.contains(r));
        self.skip = Some((skip, plans));
    }

    /// Whether the last evaluation stopped at its deadline: its verdict
    /// is incomplete and must not be used as a decision.
    pub fn timed_out(&self) -> bool {
        self.deadline.was_passed()
    }

    /// The verdict of the last [`Engine::evaluate`] run on this scratch.
    pub fn verdict(&self) -> Verdict<'_> {
        Verdict {
            action: self.tally.action,
            would_action: self.tally.would_action,
            matched: &self.matched,
            atoms: &self.atoms,
        }
    }
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

/// A verdict copied out of its scratch, so the scratch can go back to its
/// pool while the caller waits for something else (the SQL side-store).
/// Holding the scratch itself across that wait made the pool grow to the
/// peak number of requests in flight, each scratch a few MB of regex
/// caches (RSS 160 MB after 32 connections).
#[derive(Debug, Clone)]
pub struct OwnedVerdict {
    pub action: Action,
    pub would_action: Action,
    pub matched: Vec<u32>,
    pub atoms: BitSet,
}

impl OwnedVerdict {
    pub fn verdict(&self) -> Verdict<'_> {
        Verdict {
            action: self.action,
            would_action: self.would_action,
            matched: &self.matched,
            atoms: &self.atoms,
        }
    }
}

impl Verdict<'_> {
    /// The verdict, owning its data.
    pub fn to_owned_verdict(&self) -> OwnedVerdict {
        OwnedVerdict {
            action: self.action,
            would_action: self.would_action,
            matched: self.matched.to_vec(),
            atoms: self.atoms.clone(),
        }
    }
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
        let shared = Arc::new(SharedBuilds::default());
        for (plan, shard_dfas) in program.fields.iter().zip(dfas) {
            let s = FieldScanner::new(
                plan,
                shard_dfas,
                |a| {
                    let atom = &program.atoms[a as usize];
                    (atom.pattern.clone(), atom.validator)
                },
                verifier_base,
                shared.clone(),
            )?;
            verifier_base += s.verifiers.len();
            scanners.push(s);
        }
        let stages = stage_plans(&program, |_| true);
        let span_regexes = program.atoms.iter().map(|_| OnceLock::new()).collect();
        let cel = CelRuntime::new(&program.cel);
        let mut atom_rules: Vec<Vec<u32>> = vec![Vec::new(); program.atoms.len()];
        let mut always_rules = BitSet::new(program.rules.len());
        for (r, rule) in program.rules.iter().enumerate() {
            if !needs_an_atom(&rule.predicate) {
                always_rules.insert(r);
                continue;
            }
            let mut atoms = Vec::new();
            rule.predicate.atoms(&mut atoms);
            atoms.sort_unstable();
            atoms.dedup();
            for a in atoms {
                atom_rules[a as usize].push(r as u32);
            }
        }
        Ok(Engine {
            cel,
            program,
            scanners,
            predicates,
            backend,
            stages,
            span_regexes,
            shared,
            atom_rules,
            always_rules,
        })
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Builds now what the scanners otherwise build on first use (literal
    /// automata, verifier regexes, gates), field after field, and returns
    /// the first part that cannot be built. A server calls it on a thread
    /// of its own after start, so start-up does not wait for it and later
    /// requests do not pay for it; `lint` calls it to prove every part
    /// builds.
    pub fn build_all(&self) -> Result<(), EngineError> {
        self.build(true)
    }

    /// The literal automata and gates of every field, built now, and with
    /// `verifiers` every verifier too (else each is built on first use).
    pub fn build(&self, verifiers: bool) -> Result<(), EngineError> {
        let mut first = None;
        for s in &self.scanners {
            if let Err(e) = s.build(verifiers) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), |e| Err(EngineError::Scan(e)))
    }

    /// The CEL expressions (for a matched rule's classifier evidence).
    pub(crate) fn cel(&self) -> &CelRuntime {
        &self.cel
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn new_scratch(&self) -> Scratch {
        Scratch {
            atoms: BitSet::new(self.program.atoms.len()),
            rules: BitSet::new(self.program.rules.len()),
            candidates: Candidates::new(self.scanners.iter().map(|s| s.verifiers.len()).sum()),
            caches: self.scanners.iter().flat_map(|s| s.new_caches()).collect(),
            gates: self.scanners.iter().map(|s| s.new_gate_scratch()).collect(),
            matched: Vec::with_capacity(self.program.rules.len()),
            tally: Tally::default(),
            deadline: Deadline::none(),
            skip: None,
        }
    }

    /// Runs the chain. Allocation-free once `scratch` exists.
    pub fn evaluate<'s>(&self, event: &PreparedEvent, scratch: &'s mut Scratch) -> Verdict<'s> {
        // A bench's skip (None otherwise) is moved out for the run, so the
        // plan can borrow it while the run writes the scratch.
        let skip = scratch.skip.take();
        self.run(event, scratch, skip.as_ref());
        scratch.skip = skip;
        scratch.verdict()
    }

    /// [`Engine::evaluate`]'s work: leaves the verdict in `scratch`.
    fn run(
        &self,
        event: &PreparedEvent,
        scratch: &mut Scratch,
        skip: Option<&(BitSet, Vec<StagePlan>)>,
    ) {
        let stage = event.event.stage;
        let plan = match skip {
            Some((_, plans)) => &plans[stage.index()],
            None => &self.stages[stage.index()],
        };
        scratch.atoms.clear();
        scratch.matched.clear();
        self.scan(
            plan.fields.iter().copied(),
            Some(&plan.atoms),
            event,
            scratch,
        );
        if scratch.deadline.passed() {
            // Abandoned: no rule is evaluated on a partial scan.
            scratch.tally = Tally::default();
            return;
        }
        // Only rules that can hold: those of the atoms that hit, and those
        // that need none. Walking every rule would make each evaluation cost
        // O(rules) however little text matched. Rules are numbered in chain
        // order, so the ascending walk keeps evaluators in order, and the
        // chain stops at the first evaluator boundary after a block.
        let Scratch {
            atoms,
            rules,
            matched,
            ..
        } = &mut *scratch;
        rules.copy_from(&self.always_rules);
        for a in atoms.iter() {
            for &r in &self.atom_rules[a] {
                rules.insert(r as usize);
            }
        }
        let mut tally = Tally::default();
        let mut evaluator = None;
        for r in rules.iter() {
            let rule = &self.program.rules[r];
            if skip.is_some_and(|(s, _)| s.contains(r)) {
                continue;
            }
            if !rule.stages.contains(stage)
                || !self.program.evaluators[rule.evaluator as usize]
                    .stages
                    .contains(stage)
            {
                continue;
            }
            if evaluator != Some(rule.evaluator) {
                if tally.stopped {
                    break;
                }
                evaluator = Some(rule.evaluator);
            }
            if self.predicate(r, atoms, event) {
                matched.push(r as u32);
                tally.add(rule.action, rule.monitor);
            }
        }
        scratch.tally = tally;
    }

    /// Scans `fields` (indices into the program's field plans) of `event`,
    /// adding the atoms that hit to the scratch.
    fn scan(
        &self,
        fields: impl Iterator<Item = usize>,
        relevant: Option<&BitSet>,
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
                gates,
                deadline,
                ..
            } = &mut *scratch;
            if deadline.passed() {
                return;
            }
            let gate = &mut gates[f];
            event.for_each_value(field, &mut |v| {
                if !deadline.passed() {
                    scanner.scan_value(v, atoms, candidates, caches, gate, relevant, deadline);
                }
                candidates.clear();
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
        self.scan(fields.into_iter(), None, event, scratch);
        self.predicate(rule, &scratch.atoms, event)
    }

    /// The regex that finds the spans of `atom` (None only if the pattern no
    /// longer compiles, which the compiler rules out).
    pub fn span_regex(&self, atom: u32) -> Option<&meta::Regex> {
        self.span_regexes[atom as usize]
            .get_or_init(|| {
                self.shared
                    .linear(&self.program.atoms[atom as usize].pattern)
                    .ok()
            })
            .as_ref()
    }
}
