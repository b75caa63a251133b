//! The naive baseline: what an interpreter of the same rules does.
//!
//! Every regex atom is its own `regex::Regex`, every keyword is searched
//! with its own substring search, and each rule's predicate is walked with
//! short-circuiting, running an atom's search only when the walk reaches it.
//! Same rules, same chain order, same early stop after a blocking evaluator
//! as [`parallax_runtime::Engine`], so the verdicts agree and only the cost
//! differs.

// Each bench includes only what it uses of this shared module.
#![allow(dead_code)]

use parallax_compiler::ir::{AtomKind, RuleSet};
use parallax_runtime::cel::CelRuntime;
use parallax_runtime::{Action, BitSet, FieldRef, Predicate, PreparedEvent, Validator};

enum Matcher {
    Regex(regex::Regex, Option<Validator>),
    Keyword(String),
    /// Lower-cased keyword, compared with ASCII case folding.
    KeywordCaseless(String),
}

impl Matcher {
    fn matches(&self, hay: &str) -> bool {
        match self {
            Matcher::Regex(r, None) => r.is_match(hay),
            Matcher::Regex(r, Some(v)) => r.find_iter(hay).any(|m| v.check(m.as_str())),
            Matcher::Keyword(k) => hay.contains(k.as_str()),
            Matcher::KeywordCaseless(k) => hay
                .as_bytes()
                .windows(k.len())
                .any(|w| w.eq_ignore_ascii_case(k.as_bytes())),
        }
    }
}

pub struct Naive {
    rules: RuleSet,
    matchers: Vec<Matcher>,
    /// CEL rules are interpreted (their string calls are naive atoms).
    cel: CelRuntime,
}

impl Naive {
    pub fn new(rules: RuleSet) -> Naive {
        let matchers = rules
            .atoms
            .iter()
            .map(|a| match &a.kind {
                AtomKind::Regex { pattern, validator } => Matcher::Regex(
                    regex::Regex::new(pattern)
                        .unwrap_or_else(|e| panic!("naive baseline: `{pattern}`: {e}")),
                    *validator,
                ),
                AtomKind::Literal {
                    text,
                    case_insensitive: false,
                } => Matcher::Keyword(text.clone()),
                AtomKind::Literal { text, .. } => {
                    Matcher::KeywordCaseless(text.to_ascii_lowercase())
                }
            })
            .collect();
        let cel = CelRuntime::new(&rules.cel);
        Naive {
            rules,
            matchers,
            cel,
        }
    }

    fn atom(&self, event: &PreparedEvent, atom: u32) -> bool {
        let spec = &self.rules.atoms[atom as usize];
        let field: &FieldRef = &self.rules.fields[spec.field as usize];
        let matcher = &self.matchers[atom as usize];
        let mut hit = false;
        event.for_each_value(field, &mut |v| hit = hit || matcher.matches(v));
        hit
    }

    fn eval(&self, event: &PreparedEvent, p: &Predicate) -> bool {
        match p {
            Predicate::Const(b) => *b,
            Predicate::Atom(a) => self.atom(event, *a),
            Predicate::Not(q) => !self.eval(event, q),
            Predicate::And(qs) => qs.iter().all(|q| self.eval(event, q)),
            Predicate::Or(qs) => qs.iter().any(|q| self.eval(event, q)),
            Predicate::Check(c) => self.rules.checks[*c as usize].eval(event),
            Predicate::Cel { index, atoms, .. } => {
                let mut hits = BitSet::new(self.rules.atoms.len());
                for &a in atoms {
                    if self.atom(event, a) {
                        hits.insert(a as usize);
                    }
                }
                self.cel.eval(*index, &hits, event)
            }
        }
    }

    pub fn evaluate(&self, event: &PreparedEvent) -> Action {
        let stage = event.event.stage;
        let mut action = Action::Allow;
        for ev in &self.rules.evaluators {
            if !ev.stages.contains(stage) {
                continue;
            }
            let mut blocked = false;
            for rule in &ev.rules {
                if rule.stages.contains(stage) && self.eval(event, &rule.predicate) {
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
        action
    }
}
