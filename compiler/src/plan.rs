//! Planning: which path each atom takes, and the automata per field.
//!
//! Dense DFAs are the fastest scan there is, but bounded gaps (`.{0,80}`)
//! make unanchored DFAs explode, and one explosive pattern would poison a
//! shared automaton. So each regex atom is first built alone under a budget:
//! - within it, the atom is cheap and joins the field's DFA shards, which
//!   are filled greedily and split in two whenever a shard passes its own
//!   budget (so every shard fits, in as few shards as the budget allows);
//! - past it (or with syntax a DFA cannot take, like Unicode `\b`), the atom
//!   takes the prefilter path — its required literals join the field's
//!   Aho-Corasick automaton and its own regex runs only on a literal hit;
//!   with no usable literal it is verified on every value.
//!
//! Every path is linear in the input; none drops an atom.

use crate::ir::{AtomKind, RuleSet};
use crate::literals::required_literals;
use crate::stats::{AtomStat, FieldStat, RuleStat, Stats};
use parallax_runtime::{
    Atom, AtomPath, EvaluatorMeta, FieldPlan, LiteralPlan, LiteralTarget, Program, RuleMeta,
    ShardPlan, VerifierPlan,
};
use regex_automata::dfa::{dense, StartKind};
use regex_automata::MatchKind;
use std::collections::BTreeMap;
use std::time::Instant;

/// Size budgets for the automata.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// An atom whose DFA alone passes this takes the prefilter path.
    pub atom_dfa_bytes: usize,
    /// No shard's DFA passes this.
    pub shard_dfa_bytes: usize,
    /// Shortest literal worth prefiltering on.
    pub min_literal_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            atom_dfa_bytes: 512 * 1024,
            shard_dfa_bytes: 8 * 1024 * 1024,
            min_literal_len: 3,
        }
    }
}

/// A compiled rule set: the program plus its DFAs, ready to run in memory
/// (dynamic backend) or to be written out for baking.
pub struct Compiled {
    pub program: Program,
    /// Per field, per shard.
    pub dfas: Vec<Vec<dense::DFA<Vec<u32>>>>,
    pub stats: Stats,
}

fn dfa_config(limit: usize) -> dense::Config {
    dense::Config::new()
        .match_kind(MatchKind::All)
        .start_kind(StartKind::Unanchored)
        .dfa_size_limit(Some(limit))
        .determinize_size_limit(Some(limit.saturating_mul(2)))
}

fn build_dfa(
    patterns: &[&str],
    limit: usize,
) -> Result<dense::DFA<Vec<u32>>, Box<dense::BuildError>> {
    dense::Builder::new()
        .configure(dfa_config(limit))
        .build_many(patterns)
        .map_err(Box::new)
}

/// Builds shard DFAs for `atoms`, splitting any group that passes the
/// budget. A lone atom that still does not fit is handed back in `rejected`
/// (it cannot happen while the atom budget is below the shard budget, but an
/// atom must never be lost).
fn build_shards(
    atoms: &[(u32, &str)],
    limit: usize,
    out: &mut Vec<(Vec<u32>, dense::DFA<Vec<u32>>)>,
    rejected: &mut Vec<u32>,
) {
    let patterns: Vec<&str> = atoms.iter().map(|a| a.1).collect();
    match build_dfa(&patterns, limit) {
        Ok(dfa) => out.push((atoms.iter().map(|a| a.0).collect(), dfa)),
        Err(_) if atoms.len() > 1 => {
            let (a, b) = atoms.split_at(atoms.len() / 2);
            build_shards(a, limit, out, rejected);
            build_shards(b, limit, out, rejected);
        }
        Err(_) => rejected.extend(atoms.iter().map(|a| a.0)),
    }
}

/// Puts a regex atom on the verifier path, prefiltered by its required
/// literals when it has any.
fn add_verifier(
    atom: u32,
    pattern: &str,
    limits: &Limits,
    literals: &mut BTreeMap<(String, bool), Vec<LiteralTarget>>,
    verifiers: &mut Vec<VerifierPlan>,
) -> AtomPath {
    let v = verifiers.len() as u32;
    let lits = required_literals(pattern, limits.min_literal_len);
    let prefiltered = lits.is_some();
    for l in lits.into_iter().flatten() {
        literals
            .entry((l, true))
            .or_default()
            .push(LiteralTarget::Verifier(v));
    }
    verifiers.push(VerifierPlan { atom, prefiltered });
    if prefiltered {
        AtomPath::Prefiltered
    } else {
        AtomPath::Verified
    }
}

/// Keeps a field's DFA atoms in one shard's worth when it can.
///
/// Every shard is one more walk over every value of the field, so a field
/// whose DFA atoms need several shards makes evaluation cost grow with the
/// number of rules (10,000 synthetic rules: 166 shards, 24× the time of 100
/// rules). Past one shard's budget, the atoms that have required literals
/// take the prefiltered path instead: their literals join the field's single
/// Aho-Corasick pass and their regex runs only on a literal hit, which
/// benign text rarely gives. Atoms without usable literals stay in the DFA.
fn prefilter_when_sharded(
    cheap: &mut Vec<(u32, &str)>,
    atom_cost: &[usize],
    limits: &Limits,
    atom_paths: &mut [AtomPath],
    atom_note: &mut [Option<String>],
    literals: &mut BTreeMap<(String, bool), Vec<LiteralTarget>>,
    verifiers: &mut Vec<VerifierPlan>,
) {
    let total: usize = cheap.iter().map(|a| atom_cost[a.0 as usize]).sum();
    if total <= limits.shard_dfa_bytes / 4 {
        return;
    }
    cheap.retain(|&(id, pattern)| {
        if required_literals(pattern, limits.min_literal_len).is_none() {
            return true;
        }
        let ai = id as usize;
        atom_note[ai] = Some("prefiltered: the field's DFA atoms need several shards".into());
        atom_paths[ai] = add_verifier(id, pattern, limits, literals, verifiers);
        false
    });
}

/// Compiles a rule set into a program and its automata.
pub fn compile(rules: &RuleSet, limits: &Limits) -> Compiled {
    let started = Instant::now();
    let mut atom_paths = vec![AtomPath::Literal; rules.atoms.len()];
    let mut atom_cost = vec![0usize; rules.atoms.len()];
    let mut atom_note: Vec<Option<String>> = vec![None; rules.atoms.len()];
    let mut fields = Vec::with_capacity(rules.fields.len());
    let mut dfas = Vec::with_capacity(rules.fields.len());
    let mut field_stats = Vec::new();
    for (fi, field) in rules.fields.iter().enumerate() {
        let mut literals: BTreeMap<(String, bool), Vec<LiteralTarget>> = BTreeMap::new();
        let mut cheap: Vec<(u32, &str)> = Vec::new();
        let mut verifiers = Vec::new();
        for (ai, atom) in rules.atoms.iter().enumerate() {
            if atom.field as usize != fi {
                continue;
            }
            let id = ai as u32;
            match &atom.kind {
                AtomKind::Literal {
                    text,
                    case_insensitive,
                } => {
                    literals
                        .entry((text.clone(), *case_insensitive))
                        .or_default()
                        .push(LiteralTarget::Atom(id));
                }
                AtomKind::Regex { pattern } => match build_dfa(&[pattern], limits.atom_dfa_bytes) {
                    Ok(dfa) => {
                        atom_paths[ai] = AtomPath::Dfa;
                        atom_cost[ai] = dfa.memory_usage();
                        cheap.push((id, pattern));
                    }
                    Err(e) => {
                        atom_note[ai] = Some(if e.is_size_limit_exceeded() {
                            format!("DFA over {} KiB", limits.atom_dfa_bytes / 1024)
                        } else {
                            format!("no DFA: {e}")
                        });
                        atom_paths[ai] =
                            add_verifier(id, pattern, limits, &mut literals, &mut verifiers);
                    }
                },
            }
        }
        prefilter_when_sharded(
            &mut cheap,
            &atom_cost,
            limits,
            &mut atom_paths,
            &mut atom_note,
            &mut literals,
            &mut verifiers,
        );
        // Greedy groups by estimated cost; the builder splits what overflows.
        let mut groups: Vec<Vec<(u32, &str)>> = Vec::new();
        let mut cost = 0;
        for a in cheap {
            let c = atom_cost[a.0 as usize];
            if groups.is_empty() || cost + c > limits.shard_dfa_bytes / 4 {
                groups.push(Vec::new());
                cost = 0;
            }
            cost += c;
            if let Some(g) = groups.last_mut() {
                g.push(a);
            }
        }
        let mut built = Vec::new();
        let mut rejected = Vec::new();
        for g in &groups {
            build_shards(g, limits.shard_dfa_bytes, &mut built, &mut rejected);
        }
        for id in rejected {
            let ai = id as usize;
            if let AtomKind::Regex { pattern } = &rules.atoms[ai].kind {
                atom_note[ai] = Some("did not fit any shard".into());
                atom_paths[ai] = add_verifier(id, pattern, limits, &mut literals, &mut verifiers);
            }
        }
        let shards: Vec<ShardPlan> = built
            .iter()
            .map(|(atoms, dfa)| ShardPlan {
                atoms: atoms.clone(),
                bytes: dfa.memory_usage(),
            })
            .collect();
        let literal_plans: Vec<LiteralPlan> = literals
            .into_iter()
            .map(|((text, case_insensitive), targets)| LiteralPlan {
                text,
                case_insensitive,
                targets,
            })
            .collect();
        field_stats.push(FieldStat {
            field: field.name(),
            shard_bytes: shards.iter().map(|s| s.bytes).collect(),
            literals: literal_plans.len(),
            verifiers: verifiers.len(),
        });
        fields.push(FieldPlan {
            field: field.clone(),
            shards,
            literals: literal_plans,
            verifiers,
        });
        dfas.push(built.into_iter().map(|(_, d)| d).collect());
    }

    let atoms: Vec<Atom> = rules
        .atoms
        .iter()
        .zip(&atom_paths)
        .map(|(a, p)| Atom {
            field: a.field,
            pattern: a.span_pattern(),
            path: *p,
        })
        .collect();

    let mut evaluators = Vec::new();
    let mut metas = Vec::new();
    let mut rule_stats = Vec::new();
    for (ei, ev) in rules.evaluators.iter().enumerate() {
        evaluators.push(EvaluatorMeta {
            name: ev.name.clone(),
            engine: ev.engine,
            stages: ev.stages,
            source: ev.source.display().to_string(),
            first_rule: metas.len() as u32,
            rule_count: ev.rules.len() as u32,
        });
        for r in &ev.rules {
            let mut ids = Vec::new();
            r.predicate.atoms(&mut ids);
            ids.sort_unstable();
            ids.dedup();
            rule_stats.push(RuleStat {
                id: r.id.clone(),
                evaluator: ev.name.clone(),
                engine: ev.engine,
                dfa_cost: ids.iter().map(|a| atom_cost[*a as usize]).sum(),
                atoms: ids
                    .iter()
                    .map(|a| AtomStat {
                        field: rules.fields[rules.atoms[*a as usize].field as usize].name(),
                        path: atom_paths[*a as usize],
                        note: atom_note[*a as usize].clone(),
                    })
                    .collect(),
            });
            metas.push(RuleMeta {
                id: r.id.clone(),
                title: r.title.clone(),
                description: r.description.clone(),
                action: r.action,
                priority: r.priority,
                stages: r.stages,
                evaluator: ei as u32,
                reason: r.reason.clone(),
                predicate: r.predicate.clone(),
            });
        }
    }
    let program = Program {
        fingerprint: rules.fingerprint(),
        settings: rules.settings.clone(),
        evaluators,
        rules: metas,
        atoms,
        fields,
    };
    let stats = Stats {
        fingerprint: program.fingerprint.clone(),
        build_ms: started.elapsed().as_secs_f64() * 1000.0,
        evaluators: program.evaluators.len(),
        rules: rule_stats,
        fields: field_stats,
    };
    Compiled {
        program,
        dfas,
        stats,
    }
}
