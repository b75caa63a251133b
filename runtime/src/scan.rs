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
use crate::program::{FieldPlan, LiteralTarget};
use crate::validator::Validator;
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex_automata::dfa::{dense, Automaton};
use regex_automata::{meta, Input, MatchKind as RegexMatchKind, PatternSet};

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
    ac: AhoCorasick,
    targets: Vec<Vec<LiteralTarget>>,
}

pub(crate) struct Verifier {
    pub atom: u32,
    pub prefiltered: bool,
    pub matcher: Matcher,
    /// When set, the atom hits only if some match also passes it.
    pub validator: Option<Validator>,
}

struct Gate {
    set: meta::Regex,
    /// Pattern i of `set` is verifier `members[i]`.
    members: Vec<usize>,
}

/// Per-evaluation memory of a field's gate (in [`crate::engine::Scratch`]).
pub struct GateScratch {
    cache: meta::Cache,
    found: PatternSet,
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

pub(crate) struct FieldScanner {
    shards: Vec<Shard>,
    cased: Option<LiteralSet>,
    caseless: Option<LiteralSet>,
    pub verifiers: Vec<Verifier>,
    /// Verifiers without a prefilter that the gate does not cover (the
    /// backtracking ones): run on every value.
    unfiltered: Vec<usize>,
    /// The linear verifiers without a prefilter, as one multi-pattern
    /// regex: one pass over a value says which of them match at all,
    /// instead of one pass each (benign text usually matches none).
    gate: Option<Gate>,
    /// Index of this field's first verifier in the engine-wide numbering
    /// (candidate bits and regex caches in [`crate::engine::Scratch`]).
    pub verifier_base: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ScanBuildError {
    #[error("field `{field}`: expected {expected} DFA shards, got {got}")]
    ShardCount {
        field: String,
        expected: usize,
        got: usize,
    },
    #[error("field `{field}`: literal automaton: {source}")]
    Literals {
        field: String,
        source: aho_corasick::BuildError,
    },
    #[error("field `{field}`: verifier for atom {atom}: {source}")]
    Verifier {
        field: String,
        atom: u32,
        source: Box<regex_automata::meta::BuildError>,
    },
    #[error("field `{field}`: backtracking verifier for atom {atom}: {source}")]
    Backtrack {
        field: String,
        atom: u32,
        source: Box<fancy_regex::Error>,
    },
}

impl FieldScanner {
    pub fn new(
        plan: &FieldPlan,
        dfas: Vec<ShardDfa>,
        atom_spec: impl Fn(u32) -> (String, Option<Validator>),
        verifier_base: usize,
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
        let literal_set = |ci: bool| -> Result<Option<LiteralSet>, ScanBuildError> {
            let lits: Vec<_> = plan
                .literals
                .iter()
                .filter(|l| l.case_insensitive == ci)
                .collect();
            if lits.is_empty() {
                return Ok(None);
            }
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .ascii_case_insensitive(ci)
                .kind(Some(AhoCorasickKind::DFA))
                .build(lits.iter().map(|l| l.text.as_bytes()))
                .map_err(|source| ScanBuildError::Literals {
                    field: field.clone(),
                    source,
                })?;
            Ok(Some(LiteralSet {
                ac,
                targets: lits.iter().map(|l| l.targets.clone()).collect(),
            }))
        };
        let cased = literal_set(false)?;
        let caseless = literal_set(true)?;
        let verifiers = plan
            .verifiers
            .iter()
            .map(|v| {
                let (pattern, validator) = atom_spec(v.atom);
                let matcher = if v.backtrack {
                    fancy_regex::RegexBuilder::new(&pattern)
                        .backtrack_limit(BACKTRACK_LIMIT)
                        .build()
                        .map(|r| Matcher::Backtrack {
                            re: Box::new(r),
                            gate: v.relaxed.as_deref().and_then(|p| linear_regex(p).ok()),
                        })
                        .map_err(|e| ScanBuildError::Backtrack {
                            field: field.clone(),
                            atom: v.atom,
                            source: Box::new(e),
                        })?
                } else {
                    linear_regex(&pattern).map(Matcher::Linear).map_err(|e| {
                        ScanBuildError::Verifier {
                            field: field.clone(),
                            atom: v.atom,
                            source: e,
                        }
                    })?
                };
                Ok(Verifier {
                    atom: v.atom,
                    prefiltered: v.prefiltered,
                    matcher,
                    validator,
                })
            })
            .collect::<Result<Vec<_>, ScanBuildError>>()?;
        let (gated, mut unfiltered): (Vec<usize>, Vec<usize>) = verifiers
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.prefiltered)
            .map(|(i, _)| i)
            .partition(|&i| matches!(verifiers[i].matcher, Matcher::Linear(_)));
        let gate = if gated.len() > 1 {
            let patterns: Vec<String> = gated
                .iter()
                .map(|&i| atom_spec(verifiers[i].atom).0)
                .collect();
            let set = meta::Builder::new()
                .configure(
                    meta::Config::new()
                        .match_kind(RegexMatchKind::All)
                        .nfa_size_limit(Some(NFA_SIZE_LIMIT)),
                )
                .build_many(&patterns)
                .map_err(|e| ScanBuildError::Verifier {
                    field: field.clone(),
                    atom: verifiers[gated[0]].atom,
                    source: Box::new(e),
                })?;
            Some(Gate {
                set,
                members: gated,
            })
        } else {
            // One linear verifier alone is its own gate.
            unfiltered.extend(gated);
            None
        };
        Ok(FieldScanner {
            shards,
            cased,
            caseless,
            verifiers,
            unfiltered,
            gate,
            verifier_base,
        })
    }

    /// Records in `hits` every atom of this field found in `hay`.
    pub fn scan_value(
        &self,
        hay: &str,
        hits: &mut BitSet,
        candidates: &mut BitSet,
        caches: &mut [Option<meta::Cache>],
        gate_scratch: &mut Option<GateScratch>,
        relevant: Option<&BitSet>,
    ) {
        let bytes = hay.as_bytes();
        // Verifiers of atoms no rule at this stage reads are skipped.
        let wanted = |v: &Verifier| relevant.is_none_or(|r| r.contains(v.atom as usize));
        for shard in &self.shards {
            match &shard.dfa {
                ShardDfa::Static(d) => scan_dfa(d, &shard.atoms, bytes, hits),
                ShardDfa::Owned(d) => scan_dfa(d, &shard.atoms, bytes, hits),
            }
        }
        for set in [&self.cased, &self.caseless].into_iter().flatten() {
            for m in set.ac.find_overlapping_iter(bytes) {
                for t in &set.targets[m.pattern().as_usize()] {
                    match *t {
                        LiteralTarget::Atom(a) => hits.insert(a as usize),
                        LiteralTarget::Verifier(v) => {
                            candidates.insert(self.verifier_base + v as usize)
                        }
                    }
                }
            }
        }
        // Only the verifiers that may run: the prefiltered ones whose
        // literals hit (the candidate bits just set; the engine clears them
        // after each value), then those without literals. Looping over every
        // verifier instead costs ~2 ns each per value, which thousands of
        // prefiltered rules turn into microseconds on text that hits none.
        let range = self.verifier_base..self.verifier_base + self.verifiers.len();
        for slot in candidates.iter() {
            if range.contains(&slot) && wanted(&self.verifiers[slot - self.verifier_base]) {
                self.verify(slot - self.verifier_base, hay, hits, caches);
            }
        }
        if let (Some(gate), Some(g)) = (&self.gate, gate_scratch.as_mut()) {
            g.found.clear();
            gate.set
                .which_overlapping_matches_with(&mut g.cache, &Input::new(bytes), &mut g.found);
            for p in g.found.iter() {
                let i = gate.members[p.as_usize()];
                let v = &self.verifiers[i];
                // The set proved a match; only a validator needs the matches.
                if v.validator.is_none() {
                    hits.insert(v.atom as usize);
                } else if wanted(v) {
                    self.verify(i, hay, hits, caches);
                }
            }
        }
        for &i in &self.unfiltered {
            if wanted(&self.verifiers[i]) {
                self.verify(i, hay, hits, caches);
            }
        }
    }

    /// The gate's per-evaluation memory (`None`: this field has no gate).
    pub fn new_gate_scratch(&self) -> Option<GateScratch> {
        self.gate.as_ref().map(|g| GateScratch {
            cache: g.set.create_cache(),
            found: PatternSet::new(g.set.pattern_len()),
        })
    }

    /// Runs verifier `i` (of this field) on `hay`.
    fn verify(&self, i: usize, hay: &str, hits: &mut BitSet, caches: &mut [Option<meta::Cache>]) {
        let v = &self.verifiers[i];
        if hits.contains(v.atom as usize) {
            return;
        }
        let slot = self.verifier_base + i;
        let found = match (&v.matcher, v.validator) {
            (Matcher::Linear(re), None) => {
                let input = Input::new(hay.as_bytes()).earliest(true);
                match &mut caches[slot] {
                    Some(cache) => re.search_with(cache, &input).is_some(),
                    None => re.search(&input).is_some(),
                }
            }
            (Matcher::Linear(re), Some(check)) => match &mut caches[slot] {
                Some(cache) => any_valid_match(re, cache, hay, check),
                None => any_valid_match(re, &mut re.create_cache(), hay, check),
            },
            // Err: the step budget ran out (see BACKTRACK_LIMIT): fail closed.
            // Cannot match where its superset does not: the backtracking
            // engine is spared benign text.
            (Matcher::Backtrack { gate: Some(g), .. }, _) if !g.is_match(hay) => false,
            (Matcher::Backtrack { re, .. }, None) => re.is_match(hay).unwrap_or(true),
            (Matcher::Backtrack { re, .. }, Some(check)) => re.find_iter(hay).any(|m| match m {
                Ok(m) => check.check(m.as_str()),
                Err(_) => true,
            }),
        };
        if found {
            hits.insert(v.atom as usize);
        }
    }

    /// One cache slot per verifier (none for backtracking verifiers:
    /// fancy-regex keeps its own state).
    pub fn new_caches(&self) -> impl Iterator<Item = Option<meta::Cache>> + '_ {
        self.verifiers.iter().map(|v| match &v.matcher {
            Matcher::Linear(re) => Some(re.create_cache()),
            Matcher::Backtrack { .. } => None,
        })
    }
}

/// Whether any match of `regex` in `hay` passes `check`; walks the matches
/// left to right with the caller's cache, so it does not allocate.
fn any_valid_match(
    regex: &meta::Regex,
    cache: &mut meta::Cache,
    hay: &str,
    check: Validator,
) -> bool {
    let mut input = Input::new(hay);
    while let Some(m) = regex.search_with(cache, &input) {
        if check.check(&hay[m.range()]) {
            return true;
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

/// A linear-time regex for verification and span finding.
pub fn linear_regex(pattern: &str) -> Result<meta::Regex, Box<meta::BuildError>> {
    meta::Builder::new()
        .configure(meta::Config::new().nfa_size_limit(Some(NFA_SIZE_LIMIT)))
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
