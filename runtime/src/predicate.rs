//! The rule IR's boolean layer: a predicate over atoms.
//!
//! Every rule, whatever its source format, ends up as one [`Predicate`]. The
//! baked backend turns it into straight-line Rust at build time; the dynamic
//! backend walks it with [`Predicate::eval`]. The two must agree, which the
//! differential tests check.

use crate::bitset::BitSet;
use crate::cel::CelRuntime;
use crate::check::Check;
use crate::prepared::PreparedEvent;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Predicate {
    Const(bool),
    /// The atom with this index (into `Program::atoms`) hit the event.
    Atom(u32),
    Not(Box<Predicate>),
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    /// CEL expression `index` (into `Program::cel`) evaluates to `true`.
    /// `atoms` are the atoms it refers to (its fields are scanned);
    /// `positive` those not under a negation.
    Cel {
        index: u32,
        atoms: Vec<u32>,
        positive: Vec<u32>,
    },
    /// The check with this index (into `Program::checks`) holds.
    Check(u32),
}

/// What a compiled predicate may look at: the atoms that hit, and the event
/// itself (for comparisons that are not text matches).
pub struct PredicateInput<'a> {
    pub atoms: &'a BitSet,
    pub event: &'a PreparedEvent,
    /// The program's CEL expressions.
    pub cel: &'a CelRuntime,
    /// The program's checks, indexed by [`Predicate::Check`].
    pub checks: &'a [Check],
}

impl PredicateInput<'_> {
    #[inline]
    pub fn atom(&self, id: u32) -> bool {
        self.atoms.contains(id as usize)
    }

    /// For generated CEL code: atom `atom` of CEL expression `expr`, as the
    /// call it replaced answers (`None`: a CEL error).
    #[inline]
    pub fn cel_atom(&self, expr: u32, atom: u32) -> Option<bool> {
        self.cel.atom(expr, atom, self.atoms, self.event)
    }

    /// For generated CEL code: a sub-expression it does not specialise,
    /// interpreted.
    pub fn cel_node(&self, expr: u32, node: u32) -> Option<bool> {
        self.cel.eval_node(expr, node, self.atoms, self.event)
    }
}

/// The signature of a predicate generated at build time.
pub type CompiledPredicate = fn(&PredicateInput<'_>) -> bool;

impl Predicate {
    pub fn eval(&self, input: &PredicateInput<'_>) -> bool {
        match self {
            Predicate::Const(b) => *b,
            Predicate::Atom(a) => input.atom(*a),
            Predicate::Not(p) => !p.eval(input),
            Predicate::And(ps) => ps.iter().all(|p| p.eval(input)),
            Predicate::Or(ps) => ps.iter().any(|p| p.eval(input)),
            Predicate::Cel { index, .. } => input.cel.eval(*index, input.atoms, input.event),
            Predicate::Check(c) => input.checks[*c as usize].eval(input.event),
        }
    }

    /// Every atom the predicate mentions.
    pub fn atoms(&self, out: &mut Vec<u32>) {
        match self {
            Predicate::Const(_) | Predicate::Check(_) => {}
            Predicate::Atom(a) => out.push(*a),
            Predicate::Not(p) => p.atoms(out),
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|p| p.atoms(out)),
            Predicate::Cel { atoms, .. } => out.extend_from_slice(atoms),
        }
    }

    /// Atoms whose hit can make the predicate true (not under a `Not`): the
    /// ones whose text is the rule's match, and what redaction rewrites.
    pub fn positive_atoms(&self, out: &mut Vec<u32>) {
        fn go(p: &Predicate, negated: bool, out: &mut Vec<u32>) {
            match p {
                Predicate::Const(_) | Predicate::Check(_) => {}
                Predicate::Atom(a) => {
                    if !negated {
                        out.push(*a)
                    }
                }
                Predicate::Not(q) => go(q, !negated, out),
                Predicate::And(ps) | Predicate::Or(ps) => {
                    ps.iter().for_each(|q| go(q, negated, out))
                }
                Predicate::Cel {
                    positive, atoms, ..
                } => out.extend_from_slice(if negated { atoms } else { positive }),
            }
        }
        go(self, false, out)
    }
}
