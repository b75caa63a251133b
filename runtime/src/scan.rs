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
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex_automata::dfa::{dense, Automaton};
use regex_automata::{meta, Input};

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
    pub regex: meta::Regex,
}

pub(crate) struct FieldScanner {
    shards: Vec<Shard>,
    cased: Option<LiteralSet>,
    caseless: Option<LiteralSet>,
    pub verifiers: Vec<Verifier>,
    /// Verifiers without a prefilter (run on every value).
    unfiltered: Vec<usize>,
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
}

impl FieldScanner {
    pub fn new(
        plan: &FieldPlan,
        dfas: Vec<ShardDfa>,
        atom_pattern: impl Fn(u32) -> String,
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
                let regex = meta::Regex::new(&atom_pattern(v.atom)).map_err(|e| {
                    ScanBuildError::Verifier {
                        field: field.clone(),
                        atom: v.atom,
                        source: Box::new(e),
                    }
                })?;
                Ok(Verifier {
                    atom: v.atom,
                    prefiltered: v.prefiltered,
                    regex,
                })
            })
            .collect::<Result<Vec<_>, ScanBuildError>>()?;
        let unfiltered = verifiers
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.prefiltered)
            .map(|(i, _)| i)
            .collect();
        Ok(FieldScanner {
            shards,
            cased,
            caseless,
            verifiers,
            unfiltered,
            verifier_base,
        })
    }

    /// Records in `hits` every atom of this field found in `hay`.
    pub fn scan_value(
        &self,
        hay: &str,
        hits: &mut BitSet,
        candidates: &mut BitSet,
        caches: &mut [meta::Cache],
    ) {
        let bytes = hay.as_bytes();
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
            if range.contains(&slot) {
                self.verify(slot - self.verifier_base, bytes, hits, caches);
            }
        }
        for &i in &self.unfiltered {
            self.verify(i, bytes, hits, caches);
        }
    }

    fn verify(&self, i: usize, bytes: &[u8], hits: &mut BitSet, caches: &mut [meta::Cache]) {
        let v = &self.verifiers[i];
        if hits.contains(v.atom as usize) {
            return;
        }
        let input = Input::new(bytes).earliest(true);
        if v.regex
            .search_with(&mut caches[self.verifier_base + i], &input)
            .is_some()
        {
            hits.insert(v.atom as usize);
        }
    }

    pub fn new_caches(&self) -> impl Iterator<Item = meta::Cache> + '_ {
        self.verifiers.iter().map(|v| v.regex.create_cache())
    }
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
