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
                    LiteralTarget::Verifier(v) => plan.verifiers[v as usize].atom,
                };
                literals.entry(atom).or_default().push(lit.text.clone());
            }
        }
    }
    literals
}
