//! Scanning one field: every atom of the field found in a single pass per
//! automaton, whatever the number of rules.
//!
//! Per value of the field, in order: each dense DFA shard walks the bytes
//! once and reports every pattern that matches anywhere; the Aho-Corasick
//! automata report every literal (atoms, and the required literals of
//! prefiltered atoms); then only the prefiltered atoms whose literals hit run
//! their own regex. All three are linear in the input: no input can push a
//! scan into super-linear time.

use crate::bitset::BitSet;
use crate::candidates::Candidates;
use crate::deadline::Deadline;
use crate::program::{FieldPlan, LiteralTarget};
use crate::shared_builds::SharedBuilds;
use crate::validator::Validator;
use aho_corasick::automaton::{Automaton as _, Candidate};
use aho_corasick::{Anchored, MatchKind, PatternID};
use regex_automata::dfa::{dense, Automaton};
use regex_automata::hybrid::dfa as lazy;
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::pool::Pool;
use regex_automata::{meta, Input, MatchKind as RegexMatchKind, PatternSet};
use regex_syntax::hir::Hir;
use std::sync::{Arc, OnceLock};

/// A DFA shard: borrowed from the binary (baked) or built at start-up.
pub enum ShardDfa {
    Static(dense::DFA<&'static [u32]>),
    Owned(dense::DFA<Vec<u32>>),
}

struct Shard {
    dfa: ShardDfa,
    atoms: Vec<u32>,
}

struct LiteralSet {
    /// The automaton itself rather than the `AhoCorasick` wrapper: the scan
    /// walks it by hand ([`literal_hits`]).
    ac: aho_corasick::dfa::DFA,
    targets: Vec<Vec<LiteralTarget>>,
}

/// A part of a field's scanner built on first use (see [`FieldScanner`]):
/// `Err` keeps why it could not be built, which makes its atoms count as
/// found (fail closed) and is reported by [`FieldScanner::build_all`].
type Lazy<T> = OnceLock<Result<T, ScanBuildError>>;

pub(crate) struct Verifier {
    pub atom: u32,
    pub prefiltered: bool,
    /// Runs only when a literal of its second group hit too (see
    /// [`crate::program::VerifierPlan::conjunctive`]).
    conjunctive: bool,
    /// Needs the bounded backtracking engine (look-around, backreferences).
    backtrack: bool,
    pattern: String,
    /// See [`crate::program::VerifierPlan::relaxed`].
    relaxed: Option<String>,
    matcher: Lazy<Matcher>,
    /// For text that is not all ASCII: the existence regex of the pattern
    /// (of the relaxed pattern for a backtracking one) with its Unicode word
    /// boundaries rewritten ([`crate::word_boundary`]). `None`: it has none (or
    /// they cannot be rewritten), the matcher serves all text. On ASCII
    /// text the matcher's own regex keeps its literal prefilter, which the
    /// rewrite's leading context character takes away.
    any_text: OnceLock<Option<AnyText>>,
    /// When set, the atom hits only if some match also passes it.
    pub validator: Option<Validator>,
}

/// An existence check for non-ASCII text ([`crate::word_boundary`]'s
/// rewrite of a pattern, or of a gate's members): a forward lazy DFA alone.
/// Nothing here needs spans, so the meta engine's reverse NFA, prefilter,
/// one-pass DFA and capture states (which it builds for every regex) would
/// only cost build time and memory. Without Unicode word assertions (the
/// rewrite removed them) and without a give-up threshold, this DFA never
/// quits: a search that fills its cache clears it and goes on (linear, if
/// slower); an error all the same falls back to the exact regex.
struct AnyText {
    dfa: lazy::DFA,
    /// Caches for verifiers (gates keep theirs in [`GateScratch`]).
    pool: Pool<lazy::Cache, CacheFn>,
}

type CacheFn =
    Box<dyn Fn() -> lazy::Cache + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe>;

impl AnyText {
    fn build(hirs: &[Hir], kind: RegexMatchKind, cache_capacity: usize) -> Option<AnyText> {
        let nfa = thompson::Compiler::new()
            .configure(existence_nfa())
            .build_many_from_hir(hirs)
            .ok()?;
        let dfa = lazy::Builder::new()
            .configure(
                lazy::Config::new()
                    .match_kind(kind)
                    .cache_capacity(cache_capacity),
            )
            .build_from_nfa(nfa)
            .ok()?;
        let for_pool = dfa.clone();
        Some(AnyText {
            dfa,
            pool: Pool::new(Box::new(move || for_pool.create_cache())),
        })
    }

    /// Whether the pattern matches in `hay`; `None`: the DFA could not say.
    fn is_match(&self, hay: &str) -> Option<bool> {
        let mut cache = self.pool.get();
        let input = Input::new(hay.as_bytes()).earliest(true);
        self.dfa
            .try_search_fwd(&mut cache, &input)
            .ok()
            .map(|m| m.is_some())
    }
}

struct Gate {
    set: meta::Regex,
    /// Pattern i of `set` is verifier `members[i]`.
    members: Vec<usize>,
    /// Gate members left out of `set`: a Unicode word boundary
    /// [`crate::word_boundary`] could not rewrite would make the whole set
    /// fall back to the PikeVM on any non-ASCII text, so they run alone.
    alone: Vec<usize>,
}

/// Per-evaluation memory of a field's gate (in [`crate::engine::Scratch`]):
/// for ASCII text, and for other text when the field has a gate of its own
/// for that (see [`FieldScanner::gate_any_text`]).
#[derive(Default)]
pub struct GateScratch {
    exact: Option<(meta::Cache, PatternSet)>,
    dfa: Option<(lazy::Cache, PatternSet)>,
    any_text: Option<(lazy::Cache, PatternSet)>,
}

/// The gate for non-ASCII text (see [`FieldScanner::gate_any_text`]).
struct AnyTextGate {
    set: AnyText,
    /// Pattern i of `set` is verifier `members[i]`.
    members: Vec<usize>,
    /// As [`Gate::alone`].
    alone: Vec<usize>,
}

/// How a verifier checks its atom.
pub(crate) enum Matcher {
    /// Linear time (lazy DFA / PikeVM under regex-automata's meta engine).
    Linear(meta::Regex),
    /// Look-around or backreferences: a backtracking engine whose step
    /// budget is [`BACKTRACK_LIMIT`], so no input can keep a request busy.
    /// `gate`: the linear regex of the relaxed pattern (see
    /// [`crate::program::VerifierPlan::relaxed`]), when it compiles.
    Backtrack {
        re: Box<fancy_regex::Regex>,
        gate: Option<meta::Regex>,
    },
}

/// Backtracking steps one backtracking atom may take on one value. Past it
/// the atom counts as found (fail closed): input built to exhaust the
/// budget is itself suspicious, and letting it through would make the
/// budget an evasion.
pub const BACKTRACK_LIMIT: usize = 200_000;

/// Scans one field.
///
/// Only the DFA shards (used in place from the binary, or built by the
/// compiler) exist when the scanner is made. The literal automata, each
/// verifier's regex and the gate are built the first time a scan needs
/// them: building all of them for every field is what made start-up take
/// ~0.2 s with the shipped rules and 9 s with the ATR corpus, while a
/// given event reads a few fields and runs a handful of verifiers. Each
/// part sits in its own [`OnceLock`], so a scan never waits on the
/// building of a field or verifier it does not use.
/// [`FieldScanner::build_all`] builds everything now (warm-up, checks).
pub(crate) struct FieldScanner {
    field: String,
    shards: Vec<Shard>,
    /// The literals of each automaton, cased then caseless.
    literal_plans: [Vec<LiteralPlanRef>; 2],
    literals: [Lazy<Option<LiteralSet>>; 2],
    pub verifiers: Vec<Verifier>,
    /// Verifiers without a prefilter that the gate does not cover (the
    /// backtracking ones): run on every value.
    unfiltered: Vec<usize>,
    /// The linear verifiers without a prefilter, as one multi-pattern
    /// regex: one pass over a value says which of them match at all,
    /// instead of one pass each (benign text usually matches none).
    /// Empty: no gate (see [`Gate::members`] for which pattern is which).
    gate_members: Vec<usize>,
    /// The gate as a forward lazy DFA alone (see [`FieldScanner::gate_dfa`]);
    /// `None` when it cannot be built (then [`FieldScanner::gate`] serves
    /// all text).
    gate_dfa: OnceLock<Option<lazy::DFA>>,
    /// The gate as an exact meta regex: built only for text the DFA gate
    /// cannot read (see [`FieldScanner::gate_pass`]).
    gate: Lazy<Gate>,
    /// The gate for text that is not all ASCII, when a member has a Unicode
    /// word boundary (`None`: the gate above serves all text).
    gate_any_text: OnceLock<Option<AnyTextGate>>,
    /// Index of this field's first verifier in the engine-wide numbering
    /// (candidate bits and regex caches in [`crate::engine::Scratch`]).
    pub verifier_base: usize,
    /// Regexes built once for every field that needs them.
    shared: Arc<SharedBuilds>,
}

/// One literal of an automaton: its text and what a hit on it means.
struct LiteralPlanRef {
    text: String,
    targets: Vec<LiteralTarget>,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ScanBuildError {
    #[error("field `{field}`: expected {expected} DFA shards, got {got}")]
    ShardCount {
        field: String,
        expected: usize,
        got: usize,
    },
    #[error("field `{field}`: literal automaton: {message}")]
    Literals { field: String, message: String },
    #[error("field `{field}`: verifier for atom {atom}: {message}")]
    Verifier {
        field: String,
        atom: u32,
        message: String,
    },
    #[error("field `{field}`: backtracking verifier for atom {atom}: {message}")]
    Backtrack {
        field: String,
        atom: u32,
        message: String,
    },
}

impl Verifier {
    /// The verifier's matcher, built on first use.
    fn matcher(&self, field: &str, shared: &SharedBuilds) -> Result<&Matcher, &ScanBuildError> {
        self.matcher
            .get_or_init(|| {
                if self.backtrack {
                    fancy_regex::RegexBuilder::new(&self.pattern)
                        .backtrack_limit(BACKTRACK_LIMIT)
                        .build()
                        .map(|r| Matcher::Backtrack {
                            re: Box::new(r),
                            gate: self.relaxed.as_deref().and_then(|p| shared.linear(p).ok()),
                        })
                        .map_err(|e| ScanBuildError::Backtrack {
                            field: field.to_string(),
                            atom: self.atom,
                            message: e.to_string(),
                        })
                } else {
                    // A validator reads each match's text: the exact spans.
                    shared
                        .linear(&self.pattern)
                        .map(Matcher::Linear)
                        .map_err(|message| ScanBuildError::Verifier {
                            field: field.to_string(),
                            atom: self.atom,
                            message,
                        })
                }
            })
            .as_ref()
    }

    /// The regex for text with non-ASCII characters, if it needs its own
    /// (see [`Verifier::any_text`]); built on first use.
    fn any_text(&self) -> Option<&AnyText> {
        self.any_text
            .get_or_init(|| {
                // A validator reads each match: spans must be exact.
                if self.validator.is_some() {
                    return None;
                }
                let source = if self.backtrack {
                    self.relaxed.as_deref()?
                } else {
                    self.pattern.as_str()
                };
                match crate::word_boundary::dfa_hir(source) {
                    Ok(Some(hir)) => AnyText::build(
                        &[hir],
                        RegexMatchKind::LeftmostFirst,
                        ANY_TEXT_VERIFIER_CACHE,
                    ),
                    _ => None,
                }
            })
            .as_ref()
    }
}

impl FieldScanner {
    pub fn new(
        plan: &FieldPlan,
        dfas: Vec<ShardDfa>,
        atom_spec: impl Fn(u32) -> (String, Option<Validator>),
        verifier_base: usize,
        shared: Arc<SharedBuilds>,
    ) -> Result<FieldScanner, ScanBuildError> {
        let field = plan.field.name();
        if dfas.len() != plan.shards.len() {
            return Err(ScanBuildError::ShardCount {
                field,
                expected: plan.shards.len(),
                got: dfas.len(),
            });
        }
        let shards = dfas
            .into_iter()
            .zip(&plan.shards)
            .map(|(dfa, p)| Shard {
                dfa,
                atoms: p.atoms.clone(),
            })
            .collect();
        let literal_plans = [false, true].map(|ci| {
            plan.literals
                .iter()
                .filter(|l| l.case_insensitive == ci)
                .map(|l| LiteralPlanRef {
                    text: l.text.clone(),
                    targets: l.targets.clone(),
                })
                .collect()
        });
        let verifiers: Vec<Verifier> = plan
            .verifiers
            .iter()
            .map(|v| {
                let (pattern, validator) = atom_spec(v.atom);
                Verifier {
                    atom: v.atom,
                    prefiltered: v.prefiltered,
                    conjunctive: v.conjunctive,
                    backtrack: v.backtrack,
                    pattern,
                    relaxed: v.relaxed.clone(),
                    matcher: OnceLock::new(),
                    any_text: OnceLock::new(),
                    validator,
                }
            })
            .collect();
        let (gated, mut unfiltered): (Vec<usize>, Vec<usize>) = verifiers
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.prefiltered)
            .map(|(i, _)| i)
            .partition(|&i| !verifiers[i].backtrack);
        let gate_members = if gated.len() > 1 {
            // In pattern order, so that fields with the same members (command
            // and shell) ask for the same gate (see SharedBuilds).
            let mut gated = gated;
            gated.sort_by(|&a, &b| verifiers[a].pattern.cmp(&verifiers[b].pattern));
            gated
        } else {
            // One linear verifier alone is its own gate.
            unfiltered.extend(gated);
            Vec::new()
        };
        Ok(FieldScanner {
            field,
            shards,
            literal_plans,
            literals: [OnceLock::new(), OnceLock::new()],
            verifiers,
            unfiltered,
            gate_members,
            gate_dfa: OnceLock::new(),
            gate: OnceLock::new(),
            gate_any_text: OnceLock::new(),
            verifier_base,
            shared,
        })
    }

    /// Builds the lazily built parts now — the literal automata and the
    /// gate, and with `verifiers` the verifiers too (else each on its first
    /// use) — and returns the first that cannot be built. For warm-up after
    /// start (so the first requests do not pay) and for checks.
    pub fn build(&self, verifiers: bool) -> Result<(), ScanBuildError> {
        let mut first = None;
        let mut keep = |r: Result<(), &ScanBuildError>| {
            if let Err(e) = r {
                first.get_or_insert_with(|| e.clone());
            }
        };
        for ci in 0..2 {
            keep(self.literal_set(ci).map(|_| ()));
        }
        if !self.gate_members.is_empty() {
            // The DFA gate reads every ASCII text of the field: built now.
            // The exact gate (text the DFA cannot read, or no DFA) and the
            // any-text gate (non-ASCII text) are what the verifiers are:
            // built now only with `verifiers`, else on first need.
            let dfa = self.gate_dfa().is_some();
            if verifiers || !dfa {
                keep(self.gate().map(|_| ()));
            }
            if verifiers {
                // Best effort: without it the exact gate serves all text.
                self.gate_any_text();
            }
        }
        if verifiers {
            for v in &self.verifiers {
                keep(v.matcher(&self.field, &self.shared).map(|_| ()));
                v.any_text();
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Automaton `ci` (0 cased, 1 caseless), built on first use; `None`
    /// when the field has no such literal.
    fn literal_set(&self, ci: usize) -> Result<Option<&LiteralSet>, &ScanBuildError> {
        self.literals[ci]
            .get_or_init(|| {
                let lits = &self.literal_plans[ci];
                if lits.is_empty() {
                    return Ok(None);
                }
                let ac = aho_corasick::dfa::Builder::new()
                    .match_kind(MatchKind::Standard)
                    .ascii_case_insensitive(ci == 1)
                    .build(lits.iter().map(|l| l.text.as_bytes()))
                    .map_err(|e| ScanBuildError::Literals {
                        field: self.field.clone(),
                        message: e.to_string(),
                    })?;
                Ok(Some(LiteralSet {
                    ac,
                    targets: lits.iter().map(|l| l.targets.clone()).collect(),
                }))
            })
            .as_ref()
            .map(Option::as_ref)
    }

    /// The gate as a forward lazy DFA, built on first use (only called when
    /// it has members); `None` when it cannot be built.
    ///
    /// A gate only asks which members match anywhere, which one forward
    /// pass answers. The meta regex ([`FieldScanner::gate`]) also compiles a
    /// reverse NFA, capture states, prefilters and a one-pass DFA for every
    /// gate, none of which that question uses: building the shipped rules'
    /// gates that way was 257 M of the 485 M instructions `parallax eval`
    /// spent building scanners on the first 3,000 events of the mix.
    /// Unicode word boundaries run heuristically (exact on ASCII; the DFA
    /// stops at the first non-ASCII byte and the exact gate takes over).
    /// Like [`AnyText`], it never gives up on a thrashing cache: it clears
    /// it and goes on, linear if slower.
    fn gate_dfa(&self) -> Option<&lazy::DFA> {
        self.gate_dfa
            .get_or_init(|| {
                let patterns = self.gate_patterns();
                self.shared.gate(&patterns)
            })
            .as_ref()
    }

    /// The gate's member patterns, pattern i being member i.
    fn gate_patterns(&self) -> Vec<&str> {
        self.gate_members
            .iter()
            .map(|&i| self.verifiers[i].pattern.as_str())
            .collect()
    }

    /// The exact gate, built on first use (only called when it has members):
    /// for text the DFA gate cannot read, or when it cannot be built.
    fn gate(&self) -> Result<&Gate, &ScanBuildError> {
        self.gate
            .get_or_init(|| {
                let patterns = self.gate_patterns();
                gate_builder()
                    .build_many(&patterns)
                    .map(|set| Gate {
                        set,
                        members: self.gate_members.clone(),
                        alone: Vec::new(),
                    })
                    .map_err(|e| ScanBuildError::Verifier {
                        field: self.field.clone(),
                        atom: self.verifiers[self.gate_members[0]].atom,
                        message: e.to_string(),
                    })
            })
            .as_ref()
    }

    /// The gate for text with non-ASCII characters, built on the first
    /// such text: every member's Unicode word boundaries rewritten
    /// ([`crate::word_boundary`]), so the lazy DFA runs it instead of the PikeVM
    /// (which a single Unicode `\b` in the set forces on such text, at tens
    /// of µs a byte). `None`: no member has one, [`FieldScanner::gate`]
    /// serves all text; also when it cannot be built (then the exact gate
    /// runs, slower but right).
    fn gate_any_text(&self) -> Option<&AnyTextGate> {
        self.gate_any_text
            .get_or_init(|| {
                let mut members = Vec::new();
                let mut alone = Vec::new();
                let mut hirs = Vec::new();
                let mut rewritten = false;
                for &i in &self.gate_members {
                    match crate::word_boundary::dfa_hir(&self.verifiers[i].pattern) {
                        Ok(Some(hir)) => {
                            rewritten = true;
                            members.push(i);
                            hirs.push(hir);
                        }
                        Ok(None) => {
                            members.push(i);
                            hirs.push(regex_syntax::parse(&self.verifiers[i].pattern).ok()?);
                        }
                        Err(_) => alone.push(i),
                    }
                }
                if !rewritten && alone.is_empty() {
                    return None;
                }
                // The split word classes make many more DFA states: in
                // the default 2 MiB cache they do not fit (the meta engine
                // gave up and ran the PikeVM: 21 µs/byte on CJK text for the
                // shipped text gate; this DFA would clear its cache over and
                // over); 8 MiB holds them (2.8 ns/byte). The cache grows
                // only as states are made.
                let set = AnyText::build(&hirs, RegexMatchKind::All, ANY_TEXT_GATE_CACHE)?;
                Some(AnyTextGate {
                    set,
                    members,
                    alone,
                })
            })
            .as_ref()
    }

    /// Records in `hits` every atom of this field found in `hay`. Between
    /// its passes it checks `deadline` and returns early once it passed
    /// (the caller then discards the incomplete result).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_value(
        &self,
        hay: &str,
        hits: &mut BitSet,
        candidates: &mut Candidates,
        caches: &mut [Option<meta::Cache>],
        gate_scratch: &mut Option<GateScratch>,
        relevant: Option<&BitSet>,
        deadline: &Deadline,
    ) {
        let bytes = hay.as_bytes();
        // Verifiers of atoms no rule at this stage reads are skipped.
        let wanted = |v: &Verifier| relevant.is_none_or(|r| r.contains(v.atom as usize));
        // Unicode word boundaries run in the lazy DFA only on ASCII text;
        // other text takes the rewritten regexes.
        let ascii = hay.is_ascii();
        for shard in &self.shards {
            match &shard.dfa {
                ShardDfa::Static(d) => scan_dfa(d, &shard.atoms, bytes, hits),
                ShardDfa::Owned(d) => scan_dfa(d, &shard.atoms, bytes, hits),
            }
        }
        for ci in 0..2 {
            let set = match self.literal_set(ci) {
                Ok(Some(set)) => set,
                Ok(None) => continue,
                Err(_) => {
                    // No automaton: every target of its literals counts as
                    // found (atoms) or must be checked (verifiers).
                    for t in self.literal_plans[ci].iter().flat_map(|l| &l.targets) {
                        self.mark(*t, hits, candidates);
                    }
                    continue;
                }
            };
            literal_hits(&set.ac, bytes, |pattern| {
                for t in &set.targets[pattern.as_usize()] {
                    self.mark(*t, hits, candidates);
                }
            });
        }
        if deadline.passed() {
            return;
        }
        // Only the verifiers that may run: the prefiltered ones whose
        // literals hit (the candidate bits just set, in each group of a
        // conjunctive one; the engine clears them after each value), then
        // those without literals. Looping over every verifier instead costs
        // ~2 ns each per value, which thousands of prefiltered rules turn
        // into microseconds on text that hits none.
        let range = self.verifier_base..self.verifier_base + self.verifiers.len();
        for slot in candidates.first_hits() {
            if !range.contains(&slot) {
                continue;
            }
            let v = &self.verifiers[slot - self.verifier_base];
            if wanted(v) && (!v.conjunctive || candidates.second_hit(slot)) {
                if deadline.passed() {
                    return;
                }
                self.verify(
                    slot - self.verifier_base,
                    hay,
                    ascii,
                    hits,
                    caches,
                    deadline,
                );
            }
        }
        if !self.gate_members.is_empty() {
            let g = gate_scratch.get_or_insert_with(GateScratch::default);
            match self.gate_pass(bytes, ascii, g) {
                Some((members, alone, found)) => self.gate_found(
                    members, alone, found, hay, ascii, hits, caches, relevant, deadline,
                ),
                // No gate could be built: its members run one by one.
                None => {
                    for &i in &self.gate_members {
                        if wanted(&self.verifiers[i]) && !deadline.passed() {
                            self.verify(i, hay, ascii, hits, caches, deadline);
                        }
                    }
                }
            }
        }
        for &i in &self.unfiltered {
            if wanted(&self.verifiers[i]) {
                if deadline.passed() {
                    return;
                }
                self.verify(i, hay, ascii, hits, caches, deadline);
            }
        }
    }

    /// One pass of the field's gate over `bytes`: the set of members that
    /// match, which member each pattern of the set is, and the members the
    /// set left out (they run alone). Tries, in order, the gate for
    /// non-ASCII text (only on such text, when the field has one), the
    /// forward DFA gate, then the exact gate; each passes on what it cannot
    /// read. `None`: no gate could be built, so the caller runs the members
    /// one by one.
    fn gate_pass<'s>(
        &'s self,
        bytes: &[u8],
        ascii: bool,
        g: &'s mut GateScratch,
    ) -> Option<(&'s [usize], &'s [usize], &'s PatternSet)> {
        let GateScratch {
            exact,
            dfa,
            any_text,
        } = g;
        let input = Input::new(bytes);
        // Built on the first such text only.
        if let Some(gate) = (!ascii).then(|| self.gate_any_text()).flatten() {
            let (cache, found) = any_text.get_or_insert_with(|| {
                (
                    gate.set.dfa.create_cache(),
                    PatternSet::new(gate.set.dfa.pattern_len()),
                )
            });
            // An error (never expected: see AnyText) leaves the gates below
            // to run.
            if which_members_match(&gate.set.dfa, cache, bytes, found).is_ok() {
                return Some((&gate.members, &gate.alone, found));
            }
        }
        if let Some(gate) = self.gate_dfa() {
            let (cache, found) = dfa
                .get_or_insert_with(|| (gate.create_cache(), PatternSet::new(gate.pattern_len())));
            // An error: a Unicode word boundary met a non-ASCII byte (the
            // DFA's quit bytes); the exact gate reads such text.
            if which_members_match(gate, cache, bytes, found).is_ok() {
                return Some((&self.gate_members, &[], found));
            }
        }
        let gate = self.gate().ok()?;
        let (cache, found) = exact.get_or_insert_with(|| {
            (
                gate.set.create_cache(),
                PatternSet::new(gate.set.pattern_len()),
            )
        });
        found.clear();
        gate.set
            .which_overlapping_matches_with(cache, &input, found);
        Some((&gate.members, &gate.alone, found))
    }

    /// What a gate's pass found: each member it proved matches is a hit
    /// (or, with a validator, verified); the members left out of the set
    /// run alone.
    #[allow(clippy::too_many_arguments)]
    fn gate_found(
        &self,
        members: &[usize],
        alone: &[usize],
        found: &PatternSet,
        hay: &str,
        ascii: bool,
        hits: &mut BitSet,
        caches: &mut [Option<meta::Cache>],
        relevant: Option<&BitSet>,
        deadline: &Deadline,
    ) {
        let wanted = |v: &Verifier| relevant.is_none_or(|r| r.contains(v.atom as usize));
        for p in found.iter() {
            let i = members[p.as_usize()];
            let v = &self.verifiers[i];
            // The set proved a match; only a validator needs the matches.
            if v.validator.is_none() {
                hits.insert(v.atom as usize);
            } else if wanted(v) {
                self.verify(i, hay, ascii, hits, caches, deadline);
            }
        }
        for &i in alone {
            if wanted(&self.verifiers[i]) && !deadline.passed() {
                self.verify(i, hay, ascii, hits, caches, deadline);
            }
        }
    }

    /// A literal hit: its atom is found, or its verifier a candidate.
    fn mark(&self, t: LiteralTarget, hits: &mut BitSet, candidates: &mut Candidates) {
        match t {
            LiteralTarget::Atom(a) => hits.insert(a as usize),
            LiteralTarget::Verifier(v) => candidates.hit_first(self.verifier_base + v as usize),
            LiteralTarget::VerifierAlso(v) => {
                candidates.hit_second(self.verifier_base + v as usize)
            }
        }
    }

    /// The gate's per-evaluation memory: made on the gate's first use.
    pub fn new_gate_scratch(&self) -> Option<GateScratch> {
        None
    }

    /// Runs verifier `i` (of this field) on `hay`.
    fn verify(
        &self,
        i: usize,
        hay: &str,
        ascii: bool,
        hits: &mut BitSet,
        caches: &mut [Option<meta::Cache>],
        deadline: &Deadline,
    ) {
        let v = &self.verifiers[i];
        if hits.contains(v.atom as usize) {
            return;
        }
        let slot = self.verifier_base + i;
        let found = match (v.matcher(&self.field, &self.shared), v.validator) {
            // Not buildable (the compiler rules this out): fail closed.
            (Err(_), _) => true,
            (Ok(Matcher::Linear(re)), None) => {
                let input = Input::new(hay.as_bytes()).earliest(true);
                // Rare (non-ASCII text, a Unicode `\b`): the check's own
                // cache pool rather than a scratch slot.
                match v
                    .any_text()
                    .filter(|_| !ascii)
                    .and_then(|a| a.is_match(hay))
                {
                    Some(found) => found,
                    None => {
                        let cache = caches[slot].get_or_insert_with(|| re.create_cache());
                        re.search_with(cache, &input).is_some()
                    }
                }
            }
            (Ok(Matcher::Linear(re)), Some(check)) => {
                let cache = caches[slot].get_or_insert_with(|| re.create_cache());
                any_valid_match(re, cache, hay, check, deadline)
            }
            // Err: the step budget ran out (see BACKTRACK_LIMIT): fail closed.
            // Cannot match where its superset does not: the backtracking
            // engine is spared benign text.
            (Ok(Matcher::Backtrack { gate: Some(g), .. }), _)
                if !v
                    .any_text()
                    .filter(|_| !ascii)
                    .and_then(|a| a.is_match(hay))
                    .unwrap_or_else(|| g.is_match(hay)) =>
            {
                false
            }
            (Ok(Matcher::Backtrack { re, .. }), None) => re.is_match(hay).unwrap_or(true),
            (Ok(Matcher::Backtrack { re, .. }), Some(check)) => {
                re.find_iter(hay).any(|m| match m {
                    Ok(m) => check.check(m.as_str()) || deadline.passed(),
                    Err(_) => true,
                })
            }
        };
        if found {
            hits.insert(v.atom as usize);
        }
    }

    /// One cache slot per verifier, empty until the verifier first runs
    /// (backtracking verifiers never fill theirs: fancy-regex keeps its
    /// own state).
    pub fn new_caches(&self) -> impl Iterator<Item = Option<meta::Cache>> + '_ {
        self.verifiers.iter().map(|_| None)
    }
}

/// Whether any match of `regex` in `hay` passes `check`; walks the matches
/// left to right with the caller's cache, so it does not allocate.
///
/// Each search may read far ahead, so many short matches over a long value
/// cost more than one pass: `deadline` is checked every few matches, and
/// once it passed the walk stops (the evaluation is being abandoned).
fn any_valid_match(
    regex: &meta::Regex,
    cache: &mut meta::Cache,
    hay: &str,
    check: Validator,
    deadline: &Deadline,
) -> bool {
    let mut input = Input::new(hay);
    let mut seen = 0u32;
    while let Some(m) = regex.search_with(cache, &input) {
        if check.check(&hay[m.range()]) {
            return true;
        }
        seen = seen.wrapping_add(1);
        if seen.is_multiple_of(64) && deadline.passed() {
            return false;
        }
        let next = if m.is_empty() { m.end() + 1 } else { m.end() };
        if next > hay.len() {
            return false;
        }
        input.set_start(next);
    }
    false
}

/// Walks the DFA over the whole haystack once, recording every pattern whose
/// match ends anywhere. The shards are built unanchored with `MatchKind::All`
/// and without quit bytes, so the start state always exists and match states
/// name every pattern that matches there.
///
/// Accelerated states (at most three bytes lead out of them; every other
/// byte loops back) are left with a memchr jump to the next such byte
/// instead of a table lookup per byte. The unanchored start state of a
/// shard whose patterns all begin with a rare byte is one, so benign text
/// is mostly skipped at memchr speed; without this the walk costs about
/// 1.5 ns per byte whatever the text.
fn scan_dfa<A: Automaton>(dfa: &A, atoms: &[u32], hay: &[u8], hits: &mut BitSet) {
    let Ok(mut sid) = dfa.start_state_forward(&Input::new(hay)) else {
        return;
    };
    let record = |sid, hits: &mut BitSet| {
        for i in 0..dfa.match_len(sid) {
            hits.insert(atoms[dfa.match_pattern(sid, i).as_usize()] as usize);
        }
    };
    let mut at = 0;
    while at < hay.len() {
        sid = dfa.next_state(sid, hay[at]);
        at += 1;
        if dfa.is_special_state(sid) {
            if dfa.is_match_state(sid) {
                record(sid, hits);
            } else if dfa.is_dead_state(sid) || dfa.is_quit_state(sid) {
                return;
            }
            // A match state can be accelerated too: the bytes skipped loop
            // back to it, so it would only record the same patterns again.
            if dfa.is_accel_state(sid) {
                at = next_exit(dfa.accelerator(sid), hay, at);
            }
        }
    }
    sid = dfa.next_eoi_state(sid);
    if dfa.is_match_state(sid) {
        record(sid, hits);
    }
}

/// Compiled NFA size a verifier may reach. regex-automata's default (10 MiB)
/// is too small for a few long case-insensitive Unicode rules of the ATR
/// corpus; this only bounds memory, never match time.
const NFA_SIZE_LIMIT: usize = 64 << 20;

/// Lazy DFA cache of a gate for non-ASCII text (see
/// [`FieldScanner::gate_any_text`]).
const ANY_TEXT_GATE_CACHE: usize = 8 << 20;

/// Lazy DFA cache of one verifier's check for non-ASCII text (the lazy
/// DFA's default).
const ANY_TEXT_VERIFIER_CACHE: usize = 2 << 20;

/// Lazy DFA cache capacity of a verifier's (and span finding's) meta
/// regex. The meta engine's default, 2 MiB, is below the minimum its lazy
/// DFA needs for the ATR corpus's largest patterns (`(?i)` Unicode classes
/// repeated `{0,300}`: 25,000–68,000 NFA states, a reverse NFA larger
/// still): it then has no lazy DFA at all and runs every search in the
/// PikeVM. On 1 MiB of "os.system" repeated, the 64k-state ADB pattern
/// took 124 ns/byte (PikeVM) with 2 MiB, 1.8 with 16 MiB (2.0 and 3.7
/// with 4 and 8 MiB: still the PikeVM for some). Over the corpus's 2,640
/// linear patterns on 64 KiB of benign text (load 6–9), 28 took over 20
/// ns/byte with the default; with 16 MiB every pattern of over 20,000 NFA
/// states took at most 5.5. A cache grows only as states are made (the
/// largest after that text: 5.9 MB), so the capacity costs nothing where it
/// is not used.
const VERIFIER_DFA_CACHE: usize = 16 << 20;

/// As [`VERIFIER_DFA_CACHE`], for a gate: all its members' NFAs in one.
const GATE_DFA_CACHE: usize = 32 << 20;

/// The builder of a gate: every member that matches anywhere.
fn gate_builder() -> meta::Builder {
    let mut b = meta::Builder::new();
    b.configure(
        meta::Config::new()
            .match_kind(RegexMatchKind::All)
            .nfa_size_limit(Some(NFA_SIZE_LIMIT))
            .hybrid_cache_capacity(GATE_DFA_CACHE),
    );
    b
}

/// The NFA of a check that only asks whether there is a match (a gate, a
/// non-ASCII check): no capture states, nothing a forward DFA would not use.
fn existence_nfa() -> thompson::Config {
    thompson::Config::new()
        .nfa_size_limit(Some(NFA_SIZE_LIMIT))
        .which_captures(WhichCaptures::None)
}

/// A gate's member patterns as one forward lazy DFA (see
/// [`FieldScanner::gate_dfa`]); `None` when it cannot be built.
pub(crate) fn dfa_gate(patterns: &[&str]) -> Option<lazy::DFA> {
    let nfa = thompson::Compiler::new()
        .configure(existence_nfa())
        .build_many(patterns)
        .ok()?;
    lazy::Builder::new()
        .configure(
            lazy::Config::new()
                .match_kind(RegexMatchKind::All)
                .unicode_word_boundary(true)
                .cache_capacity(GATE_DFA_CACHE),
        )
        .build_from_nfa(nfa)
        .ok()
}

/// Calls `hit` with every literal of `ac` that occurs in `hay`, once per
/// occurrence (overlapping ones included), in one forward walk.
///
/// The crate's overlapping iterator reports the same occurrences, but it
/// returns to its caller at every one and resumes from a saved state:
/// on prose, where the prefilters' common words hit every few dozen bytes,
/// that cost 21 instructions a byte on the shipped 1 KB bench message.
/// Here a match state's literals are taken where the walk stands. With a
/// prefilter (small literal sets) the start state is special, and the walk
/// jumps to the next place a literal may start, as the crate's own search
/// does; no occurrence can begin in the bytes skipped.
fn literal_hits(ac: &aho_corasick::dfa::DFA, hay: &[u8], mut hit: impl FnMut(PatternID)) {
    // Unanchored searches are always supported by a DFA built unanchored
    // (the default); the literals are never empty, so the start state is
    // not a match state.
    let Ok(start) = ac.start_state(Anchored::No) else {
        return;
    };
    let prefilter = ac.prefilter();
    let mut sid = start;
    let mut at = 0;
    while at < hay.len() {
        sid = ac.next_state(Anchored::No, sid, hay[at]);
        if ac.is_special(sid) {
            if ac.is_dead(sid) {
                return;
            } else if ac.is_match(sid) {
                for i in 0..ac.match_len(sid) {
                    hit(ac.match_pattern(sid, i));
                }
            } else if let Some(pre) = prefilter {
                // Special and neither dead nor a match: the start state,
                // special only because a prefilter is on.
                match pre.find_in(hay, aho_corasick::Span::from(at..hay.len())) {
                    Candidate::None => return,
                    Candidate::Match(m) if m.start() > at => {
                        at = m.start();
                        continue;
                    }
                    Candidate::PossibleStartOfMatch(i) if i > at => {
                        at = i;
                        continue;
                    }
                    _ => {}
                }
            }
        }
        at += 1;
    }
}

/// Fills `found` with every pattern of a gate's DFA that matches anywhere
/// in `hay`, in one forward walk.
///
/// regex-automata's overlapping search answers the same question, but it
/// returns to its caller at every match and is written for results with
/// many matches (it keeps a resumable state, tracks progress for the
/// give-up heuristic, checks a prefilter): on the shipped 1 KB bench
/// message it cost 27 instructions a byte. This walk does one transition
/// and one tag check a byte and takes every pattern of a match state as it
/// passes it. Matches are reported one byte late (a DFA enters the match
/// state on the byte after the match), hence the end-of-input transition.
/// The gates never give up on their cache (see [`dfa_gate`]), and a cache
/// cleared mid-walk keeps the state being left, so the walk goes on.
fn which_members_match(
    dfa: &lazy::DFA,
    cache: &mut lazy::Cache,
    hay: &[u8],
    found: &mut PatternSet,
) -> Result<(), regex_automata::MatchError> {
    use regex_automata::MatchError;
    found.clear();
    let mut sid = dfa.start_state_forward(cache, &Input::new(hay))?;
    let mut take = |dfa: &lazy::DFA, cache: &lazy::Cache, sid| {
        for i in 0..dfa.match_len(cache, sid) {
            // Cannot fail: the set has room for every pattern of the DFA.
            let _ = found.try_insert(dfa.match_pattern(cache, sid, i));
        }
    };
    for (at, &byte) in hay.iter().enumerate() {
        sid = dfa
            .next_state(cache, sid, byte)
            .map_err(|_| MatchError::gave_up(at))?;
        if sid.is_tagged() {
            if sid.is_match() {
                take(dfa, cache, sid);
            } else if sid.is_dead() {
                return Ok(());
            } else if sid.is_quit() {
                return Err(MatchError::quit(byte, at));
            }
        }
    }
    sid = dfa
        .next_eoi_state(cache, sid)
        .map_err(|_| MatchError::gave_up(hay.len()))?;
    if sid.is_match() {
        take(dfa, cache, sid);
    }
    Ok(())
}

/// A linear-time regex for verification and span finding.
pub fn linear_regex(pattern: &str) -> Result<meta::Regex, Box<meta::BuildError>> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                .hybrid_cache_capacity(VERIFIER_DFA_CACHE),
        )
        .build(pattern)
        .map_err(Box::new)
}

/// The position of the first byte at or after `from` that leaves an
/// accelerated state (`needles`: one to three bytes), or the end.
fn next_exit(needles: &[u8], hay: &[u8], from: usize) -> usize {
    let rest = &hay[from..];
    let found = match *needles {
        [a] => memchr::memchr(a, rest),
        [a, b] => memchr::memchr2(a, b, rest),
        [a, b, c] => memchr::memchr3(a, b, c, rest),
        // Not accelerated after all: step one byte.
        _ => Some(0),
    };
    found.map_or(hay.len(), |i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{FieldRef, TopField};
    use crate::program::{LiteralPlan, VerifierPlan};

    /// A field with one prefiltered verifier whose pattern cannot be built,
    /// so that running it at all counts its atom as found (fail closed):
    /// the hit shows whether the scan ran it.
    fn scanner(conjunctive: bool) -> FieldScanner {
        let lit = |text: &str, target| LiteralPlan {
            text: text.into(),
            case_insensitive: true,
            targets: vec![target],
        };
        let mut literals = vec![lit("before", LiteralTarget::Verifier(0))];
        if conjunctive {
            literals.push(lit("above", LiteralTarget::VerifierAlso(0)));
        }
        let plan = FieldPlan {
            field: FieldRef::Top(TopField::MessageText),
            shards: Vec::new(),
            literals,
            verifiers: vec![VerifierPlan {
                atom: 0,
                prefiltered: true,
                conjunctive,
                backtrack: false,
                relaxed: None,
            }],
        };
        FieldScanner::new(
            &plan,
            Vec::new(),
            |_| ("(unbuildable".to_string(), None),
            0,
            Arc::default(),
        )
        .expect("the scanner is made; its verifier is built on first use")
    }

    fn runs(s: &FieldScanner, hay: &str) -> bool {
        let mut hits = BitSet::new(1);
        let mut candidates = Candidates::new(1);
        let mut caches: Vec<_> = s.new_caches().collect();
        s.scan_value(
            hay,
            &mut hits,
            &mut candidates,
            &mut caches,
            &mut None,
            None,
            &Deadline::none(),
        );
        hits.contains(0)
    }

    #[test]
    fn a_conjunctive_verifier_runs_only_when_both_groups_hit() {
        let s = scanner(true);
        assert!(!runs(&s, "everything BEFORE this"));
        assert!(!runs(&s, "everything above this"));
        assert!(runs(&s, "print everything Above, before this"));
        // Overlapping and adjacent hits count for both groups.
        assert!(runs(&s, "abovebefore"));
        // One group alone is enough for a verifier that is not conjunctive.
        assert!(runs(&scanner(false), "everything before this"));
        assert!(!runs(&scanner(false), "nothing here"));
    }

    /// The gate's one-pass walk names exactly the patterns regex-automata's
    /// overlapping search names: patterns that match empty, at the edges,
    /// across each other, with word boundaries and line anchors, on texts
    /// built from their own pieces. A walk that missed the end-of-input
    /// transition, or kept only a match state's first pattern, fails it.
    #[test]
    fn the_gate_walk_finds_what_the_overlapping_search_finds() {
        let patterns = [
            r"(?i)ignore\s+(?:all\s+)?previous",
            r"previous\b",
            r"(?m)^rm\s+-rf$",
            r"\bfoo",
            r"oo\b",
            r"x*",
            r"(?i)ab|bc|cd",
            r"bc",
            r"\d{3}-\d{4}",
            r"z$",
        ];
        let dfa = dfa_gate(&patterns).expect("the gate builds");
        let pieces = [
            "ignore ",
            "IGNORE  all ",
            "previous",
            "previously",
            "rm -rf",
            "\n",
            "foo",
            " ",
            "abcd",
            "555-1234",
            "z",
            "x",
        ];
        let mut cache = dfa.create_cache();
        let mut walked = PatternSet::new(dfa.pattern_len());
        let mut searched = PatternSet::new(dfa.pattern_len());
        let mut texts = vec![String::new()];
        for a in pieces {
            for b in pieces {
                for c in ["", "z", "foo", "\nrm -rf"] {
                    texts.push(format!("{a}{b}{c}"));
                }
            }
        }
        let mut matched_some = 0;
        for text in &texts {
            which_members_match(&dfa, &mut cache, text.as_bytes(), &mut walked)
                .expect("ASCII text never quits");
            searched.clear();
            dfa.try_which_overlapping_matches(&mut cache, &Input::new(text), &mut searched)
                .expect("ASCII text never quits");
            let w: Vec<_> = walked.iter().collect();
            let o: Vec<_> = searched.iter().collect();
            assert_eq!(w, o, "{text:?}");
            matched_some += usize::from(w.len() > 1);
        }
        assert!(
            matched_some > texts.len() / 2,
            "the texts exercise the gate"
        );
    }

    /// The literal walk reports every occurrence the crate's overlapping
    /// iterator reports, the same number of times: for a small literal set
    /// (a prefilter on, so the walk jumps) and a large one (none), cased
    /// and caseless, with literals inside and across each other. A walk
    /// that took only a match state's first literal, or jumped past a
    /// prefilter's candidate, fails it.
    #[test]
    fn the_literal_walk_finds_what_the_overlapping_iterator_finds() {
        let small = ["token", "oke", "before", "for"];
        let mut large: Vec<String> = small.iter().map(|s| s.to_string()).collect();
        for a in ["ab", "bc", "ca", "xy", "act", "refactor"] {
            for b in ["", "s", "ing", "ion"] {
                large.push(format!("{a}{b}"));
            }
        }
        let texts = [
            "",
            "Token tokens TOKENIZER before BEFOREHAND forfor",
            "refactoring the acting abcab caxyz actions",
            "nothing to see here",
            "tokentokenoke forbeforefor",
        ];
        for ci in [false, true] {
            let small_lits: Vec<String> = small.iter().map(|s| s.to_string()).collect();
            for lits in [&small_lits, &large] {
                let dfa = aho_corasick::dfa::Builder::new()
                    .match_kind(MatchKind::Standard)
                    .ascii_case_insensitive(ci)
                    .build(lits)
                    .expect("the automaton builds");
                if !ci && lits.len() == small.len() {
                    assert!(dfa.prefilter().is_some(), "the jumps are exercised");
                }
                let reference = aho_corasick::AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .ascii_case_insensitive(ci)
                    .build(lits)
                    .expect("the automaton builds");
                let mut long = String::new();
                for t in texts {
                    long.push_str(t);
                    long.push_str(&"z".repeat(300));
                }
                for text in texts.iter().copied().chain([long.as_str()]) {
                    let mut walked = Vec::new();
                    literal_hits(&dfa, text.as_bytes(), |p| walked.push(p.as_usize()));
                    let mut expected: Vec<usize> = reference
                        .find_overlapping_iter(text)
                        .map(|m| m.pattern().as_usize())
                        .collect();
                    walked.sort_unstable();
                    expected.sort_unstable();
                    assert_eq!(walked, expected, "{text:?} ci={ci} {} literals", lits.len());
                }
            }
        }
    }
}
