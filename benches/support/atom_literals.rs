//! Per atom, the literal texts of a compiled program's automata that point
//! at it (directly, or through the verifier it has): what the
//! pathological bench builds its inputs from and what the ATR scan
//! reference test repeats, read in one way.

use parallax_runtime::{LiteralTarget, Program};
use std::collections::BTreeMap;

/// Atom index → the literal texts that lead the scan to it.
pub fn literals_by_atom(program: &Program) -> BTreeMap<u32, Vec<String>> {
    let mut literals: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for plan in &program.fields {
        for lit in &plan.literals {
            for t in &lit.targets {
                let atom = match *t {
                    LiteralTarget::Atom(a) => a,
                    LiteralTarget::Verifier(v) | LiteralTarget::VerifierAlso(v) => {
                        plan.verifiers[v as usize].atom
                    }
                };
                literals.entry(atom).or_default().push(lit.text.clone());
            }
        }
    }
    literals
}

/// Atom index → a text that holds a literal of each group of its
/// conjunctive verifier (the first literal of each, space-separated): a
/// seed repeating one group's literal alone never makes such a verifier
/// run, so the pathological bench and the ATR scan reference add this one.
pub fn conjunctive_seeds(program: &Program) -> BTreeMap<u32, String> {
    let mut groups: BTreeMap<u32, [Option<String>; 2]> = BTreeMap::new();
    for plan in &program.fields {
        for lit in &plan.literals {
            for t in &lit.targets {
                let (v, g) = match *t {
                    LiteralTarget::Verifier(v) => (v, 0),
                    LiteralTarget::VerifierAlso(v) => (v, 1),
                    LiteralTarget::Atom(_) => continue,
                };
                let verifier = &plan.verifiers[v as usize];
                if verifier.conjunctive {
                    groups.entry(verifier.atom).or_default()[g].get_or_insert(lit.text.clone());
                }
            }
        }
    }
    groups
        .into_iter()
        .filter_map(|(atom, [a, b])| Some((atom, format!("{} {}", a?, b?))))
        .collect()
}
