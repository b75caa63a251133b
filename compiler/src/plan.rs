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
use crate::literals::{
    relax_backtracking, required_literal_groups, required_literal_groups_hir, required_literals_hir,
};
use crate::stats::{AtomStat, FieldStat, RuleStat, Stats};
use parallax_runtime::{
    Atom, AtomPath, EvaluatorMeta, FieldPlan, LiteralPlan, LiteralTarget, Program, RuleMeta,
    ShardPlan, SqlRuleSpec, VerifierPlan,
};
use regex_automata::dfa::{dense, StartKind};
use regex_automata::MatchKind;
use regex_syntax::hir::{Hir, HirKind};
use std::collections::{BTreeMap, HashMap};
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
    /// An atom whose DFA alone passes this, and which has required literals
    /// of at least `strong_literal_len` bytes, is cheaper to find through
    /// its literals than to carry in a shared DFA (big DFAs multiply when
    /// merged).
    pub prefer_prefilter_bytes: usize,
    pub strong_literal_len: usize,
    /// Above this many distinct regex patterns the planner goes literal
    /// first: an atom with required literals takes the prefilter path
    /// without a DFA attempt, because every shard is a pass over every byte
    /// and hundreds of shards cost more than verifying the few candidates
    /// one Aho-Corasick pass raises (the ATR corpus: 3,300 patterns).
    pub dfa_first_max_patterns: usize,
    /// In literal-first mode, a DFA is tried only for patterns whose NFA
    /// has at most this many states (larger ones rarely fit and each
    /// attempt costs build time up to the budget).
    pub max_nfa_states: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            atom_dfa_bytes: 64 * 1024,
            shard_dfa_bytes: 2 * 1024 * 1024,
            min_literal_len: 3,
            prefer_prefilter_bytes: 16 * 1024,
            strong_literal_len: 3,
            dfa_first_max_patterns: 256,
            max_nfa_states: 200,
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

/// Puts a regex atom on the verifier path, prefiltered by the required
/// literal groups of its pattern (or of its relaxation, for a backtracking
/// pattern) when it has any: a hit in the first group makes it a
/// candidate, and with a second group a hit there too is needed.
fn add_verifier(
    atom: u32,
    groups: Option<Vec<Vec<String>>>,
    backtrack: bool,
    literals: &mut BTreeMap<(String, bool), Vec<LiteralTarget>>,
    verifiers: &mut Vec<VerifierPlan>,
) -> AtomPath {
    let v = verifiers.len() as u32;
    let groups = groups.unwrap_or_default();
    let prefiltered = !groups.is_empty();
    let conjunctive = groups.len() > 1;
    for (g, group) in groups.into_iter().take(2).enumerate() {
        let target = if g == 0 {
            LiteralTarget::Verifier(v)
        } else {
            LiteralTarget::VerifierAlso(v)
        };
        for l in group {
            let targets = literals.entry((l, true)).or_default();
            // A literal in both groups is one target of each.
            targets.push(target);
        }
    }
    verifiers.push(VerifierPlan {
        atom,
        prefiltered,
        conjunctive,
        backtrack,
        relaxed: None,
    });
    match (backtrack, prefiltered) {
        (true, _) => AtomPath::Backtrack,
        (false, true) => AtomPath::Prefiltered,
        (false, false) => AtomPath::Verified,
    }
}

/// What the planner learnt about one pattern (shared by the atoms of every
/// field that pattern is scanned in).
#[derive(Clone)]
struct Analysis {
    /// DFA size when built alone within budget.
    dfa: Option<usize>,
    backtrack: bool,
    literals: Option<Vec<Vec<String>>>,
    note: Option<String>,
}

/// Why a pattern is not worth trying as a dense DFA, if it is not: each
/// attempt on an explosive pattern costs build time up to the budget, and
/// these shapes are known to explode or to be unsupported.
fn dfa_obstacle(hir: &Hir) -> Option<String> {
    if hir.properties().look_set().contains_word_unicode() {
        return Some("Unicode word boundary: no DFA".into());
    }
    fn gap(h: &Hir) -> Option<(u32, u32)> {
        match h.kind() {
            HirKind::Repetition(r) => match r.max {
                Some(max) if max - r.min > GAP_LIMIT && !is_single_literal(&r.sub) => {
                    Some((r.min, max))
                }
                _ => gap(&r.sub),
            },
            HirKind::Capture(c) => gap(&c.sub),
            HirKind::Concat(cs) | HirKind::Alternation(cs) => cs.iter().find_map(gap),
            _ => None,
        }
    }
    gap(hir).map(|(min, max)| format!("bounded gap {{{min},{max}}}: DFA would explode"))
}

/// Widest bounded repetition a DFA candidate may have.
const GAP_LIMIT: u32 = 12;

fn is_single_literal(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Literal(_))
}

fn analyse(pattern: &str, limits: &Limits, literal_first: bool) -> Analysis {
    let hir = match regex_syntax::ParserBuilder::new().build().parse(pattern) {
        Ok(h) => h,
        Err(_) => {
            // Lowering checked that the backtracking engine takes it.
            return Analysis {
                dfa: None,
                backtrack: true,
                literals: required_literal_groups(
                    &relax_backtracking(pattern),
                    limits.min_literal_len,
                ),
                note: Some("look-around/backreference: bounded backtracking".into()),
            };
        }
    };
    let literals = || required_literal_groups_hir(&hir, limits.min_literal_len);
    if literal_first {
        if let Some(l) = literals() {
            return Analysis {
                dfa: None,
                backtrack: false,
                literals: Some(l),
                note: None,
            };
        }
        let states = regex_automata::nfa::thompson::NFA::new(pattern)
            .map(|n| n.states().len())
            .unwrap_or(usize::MAX);
        if states > limits.max_nfa_states {
            return Analysis {
                dfa: None,
                backtrack: false,
                literals: None,
                note: Some(format!(
                    "no required literal; NFA of {} states too large for a DFA",
                    if states == usize::MAX {
                        "unknown".to_string()
                    } else {
                        states.to_string()
                    }
                )),
            };
        }
    }
    if let Some(why) = dfa_obstacle(&hir) {
        return Analysis {
            dfa: None,
            backtrack: false,
            literals: literals(),
            note: Some(why),
        };
    }
    match build_dfa(&[pattern], limits.atom_dfa_bytes) {
        // A big DFA with strong literals is cheaper found through them than
        // carried in a shared DFA (big DFAs multiply when merged).
        Ok(dfa)
            if dfa.memory_usage() > limits.prefer_prefilter_bytes
                && required_literals_hir(&hir, limits.strong_literal_len).is_some() =>
        {
            Analysis {
                dfa: None,
                backtrack: false,
                literals: literals(),
                note: Some(format!(
                    "DFA {} KiB; strong literals",
                    dfa.memory_usage() / 1024
                )),
            }
        }
        Ok(dfa) => Analysis {
            dfa: Some(dfa.memory_usage()),
            backtrack: false,
            literals: None,
            note: None,
        },
        Err(e) => Analysis {
            dfa: None,
            backtrack: false,
            literals: literals(),
            note: Some(if e.is_size_limit_exceeded() {
                format!("DFA over {} KiB", limits.atom_dfa_bytes / 1024)
            } else {
                format!("no DFA: {e}")
            }),
        },
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
        let Some(lits) = required_literal_groups(pattern, limits.min_literal_len) else {
            return true;
        };
        let ai = id as usize;
        atom_note[ai] = Some("prefiltered: the field's DFA atoms need several shards".into());
        atom_paths[ai] = add_verifier(id, Some(lits), false, literals, verifiers);
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
    let mut analyses: HashMap<&str, Analysis> = HashMap::new();
    let distinct: std::collections::HashSet<&str> = rules
        .atoms
        .iter()
        .filter_map(|a| match &a.kind {
            AtomKind::Regex { pattern, .. } => Some(pattern.as_str()),
            AtomKind::Literal { .. } => None,
        })
        .collect();
    let literal_first = distinct.len() > limits.dfa_first_max_patterns;
    for (fi, field) in rules.fields.iter().enumerate() {
        let mut literals: BTreeMap<(String, bool), Vec<LiteralTarget>> = BTreeMap::new();
        let mut cheap: Vec<(u32, &str)> = Vec::new();
        let mut verifiers = Vec::new();
        for (ai, atom) in rules.atoms.iter().enumerate() {
            if atom.field as usize != fi {
                continue;
            }
            if let AtomKind::Regex { pattern, .. } = &atom.kind {
                if !analyses.contains_key(pattern.as_str()) {
                    analyses.insert(pattern.as_str(), analyse(pattern, limits, literal_first));
                }
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
                // A validated atom must see each match, which only its own
                // regex can give: it is always verified.
                AtomKind::Regex {
                    pattern,
                    validator: Some(_),
                } => {
                    let a = &analyses[pattern.as_str()];
                    atom_note[ai] = Some("validated matches".into());
                    let lits = a
                        .literals
                        .clone()
                        .or_else(|| required_literal_groups(pattern, limits.min_literal_len));
                    atom_paths[ai] =
                        add_verifier(id, lits, a.backtrack, &mut literals, &mut verifiers);
                }
                AtomKind::Regex { pattern, .. } => {
                    let a = &analyses[pattern.as_str()];
                    match a.dfa {
                        Some(cost) => {
                            atom_paths[ai] = AtomPath::Dfa;
                            atom_cost[ai] = cost;
                            cheap.push((id, pattern));
                        }
                        None => {
                            atom_note[ai] = a.note.clone();
                            atom_paths[ai] = add_verifier(
                                id,
                                a.literals.clone(),
                                a.backtrack,
                                &mut literals,
                                &mut verifiers,
                            );
                        }
                    }
                }
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
            if let AtomKind::Regex { pattern, .. } = &rules.atoms[ai].kind {
                atom_note[ai] = Some("did not fit any shard".into());
                let lits = required_literal_groups(pattern, limits.min_literal_len);
                atom_paths[ai] = add_verifier(id, lits, false, &mut literals, &mut verifiers);
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
            // Measured only where stats are shown (see
            // `Compiled::stats_with_literal_bytes`): building the automata
            // here too doubled their cost for lint and every dynamic load.
            literal_bytes: 0,
        });
        for v in verifiers.iter_mut().filter(|v| v.backtrack) {
            if let AtomKind::Regex { pattern, .. } = &rules.atoms[v.atom as usize].kind {
                v.relaxed = Some(relax_backtracking(pattern));
            }
        }
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
            validator: a.validator(),
        })
        .collect();

    let mut evaluators = Vec::new();
    let mut metas = Vec::new();
    let mut rule_stats = Vec::new();
    let mut sql = Vec::new();
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
            if let Some(q) = &r.sql {
                sql.push(SqlRuleSpec {
                    rule: metas.len() as u32,
                    query: q.query.clone(),
                    condition: q.condition.clone(),
                    guards: parallax_store::preconditions(&q.query, &q.condition),
                });
            }
            metas.push(RuleMeta {
                id: r.id.clone(),
                title: r.title.clone(),
                description: r.description.clone(),
                action: r.action,
                priority: r.priority,
                stages: r.stages,
                evaluator: ei as u32,
                reason: r.reason.clone(),
                category: r.category.clone(),
                predicate: r.predicate.clone(),
                author: r.author.clone(),
                monitor: r.monitor,
                approval: r.approval.clone(),
                transforms: r.transforms.clone(),
                tenant: r.tenant.clone(),
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
        cel: rules.cel.clone(),
        checks: rules.checks.clone(),
        sql,
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

impl Compiled {
    /// The stats with each field's Aho-Corasick bytes measured: the
    /// automata are built once more for it, which costs seconds on the ATR
    /// corpus, so only the baked build's stats file and `compile --emit
    /// stats` pay for it, not lint or a dynamic load.
    pub fn stats_with_literal_bytes(&self) -> Stats {
        let mut stats = self.stats.clone();
        for (stat, field) in stats.fields.iter_mut().zip(&self.program.fields) {
            stat.literal_bytes = literal_bytes(&field.literals);
        }
        stats
    }
}

/// Heap size of the Aho-Corasick automata the runtime builds from `plans`
/// (built here once more, for stats only).
fn literal_bytes(plans: &[LiteralPlan]) -> usize {
    [false, true]
        .iter()
        .map(|ci| {
            let lits: Vec<&str> = plans
                .iter()
                .filter(|l| l.case_insensitive == *ci)
                .map(|l| l.text.as_str())
                .collect();
            if lits.is_empty() {
                return 0;
            }
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(*ci)
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(&lits)
                .map(|a| a.memory_usage())
                .unwrap_or(0)
        })
        .sum()
}
