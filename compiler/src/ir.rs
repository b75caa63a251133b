//! The rule IR: every rule of every engine as a [`Predicate`] over atoms.
//!
//! An atom is one thing to find in one field — a literal or a regex. Atoms
//! are shared: two rules looking for the same text in the same field share
//! one atom, so the automata hold it once. The IR is also what the rules
//! fingerprint is taken over, so it is built deterministically from the
//! sources and never contains file-system detail.

use parallax_runtime::{Action, EngineKind, FieldRef, Predicate, Priority, Settings, StageSet};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomKind {
    /// A substring; case-insensitive means ASCII case folding.
    Literal {
        text: String,
        case_insensitive: bool,
    },
    /// A regex in regex-automata syntax (flags inline, e.g. `(?i)`).
    Regex { pattern: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AtomSpec {
    /// Index into [`RuleSet::fields`].
    pub field: u32,
    pub kind: AtomKind,
}

impl AtomSpec {
    /// A regex matching exactly what the atom matches.
    pub fn span_pattern(&self) -> String {
        match &self.kind {
            AtomKind::Regex { pattern } => pattern.clone(),
            AtomKind::Literal {
                text,
                case_insensitive,
            } => {
                let escaped = regex_syntax::escape(text);
                if *case_insensitive {
                    format!("(?i-u:{escaped})")
                } else {
                    escaped
                }
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct IrRule {
    pub id: String,
    pub title: String,
    pub description: String,
    pub action: Action,
    pub priority: Priority,
    pub stages: StageSet,
    pub reason: Option<String>,
    pub predicate: Predicate,
    /// Monitor mode (left out of the fingerprint input when false, so
    /// enforcing rule sets keep their fingerprints).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub monitor: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct IrEvaluator {
    pub name: String,
    pub engine: EngineKind,
    /// The stages any of its rules run at.
    pub stages: StageSet,
    #[serde(skip)]
    pub source: PathBuf,
    #[serde(skip)]
    pub inline: bool,
    pub rules: Vec<IrRule>,
}

/// A configuration lowered to IR: what the planner turns into automata.
#[derive(Debug, Clone)]
pub struct RuleSet {
    pub config_path: PathBuf,
    pub settings: Settings,
    /// Enabled evaluators, in chain order.
    pub evaluators: Vec<IrEvaluator>,
    /// Evaluators that compiled but are switched off (for `lint`).
    pub disabled: Vec<IrEvaluator>,
    pub fields: Vec<FieldRef>,
    pub atoms: Vec<AtomSpec>,
    /// Files and folders the rule set was read from.
    pub inputs: Vec<PathBuf>,
}

impl RuleSet {
    /// A hash of the canonical IR: equal fingerprints mean equal verdicts.
    /// It covers the compiler version, so a compiler change invalidates it.
    pub fn fingerprint(&self) -> String {
        #[derive(Serialize)]
        struct Canonical<'a> {
            compiler: &'static str,
            evaluators: &'a [IrEvaluator],
            fields: &'a [FieldRef],
            atoms: &'a [AtomSpec],
        }
        let json = serde_json::to_vec(&Canonical {
            compiler: env!("CARGO_PKG_VERSION"),
            evaluators: &self.evaluators,
            fields: &self.fields,
            atoms: &self.atoms,
        })
        .unwrap_or_default();
        let digest = Sha256::digest(&json);
        digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    pub fn rule_count(&self) -> usize {
        self.evaluators.iter().map(|e| e.rules.len()).sum()
    }
}

/// Interns fields and atoms while rules are lowered.
#[derive(Debug, Default)]
pub struct AtomTable {
    pub fields: Vec<FieldRef>,
    pub atoms: Vec<AtomSpec>,
    field_ids: HashMap<FieldRef, u32>,
    atom_ids: HashMap<AtomSpec, u32>,
}

impl AtomTable {
    pub fn field(&mut self, f: FieldRef) -> u32 {
        if let Some(id) = self.field_ids.get(&f) {
            return *id;
        }
        let id = self.fields.len() as u32;
        self.fields.push(f.clone());
        self.field_ids.insert(f, id);
        id
    }

    pub fn atom(&mut self, field: FieldRef, kind: AtomKind) -> u32 {
        let spec = AtomSpec {
            field: self.field(field),
            kind,
        };
        if let Some(id) = self.atom_ids.get(&spec) {
            return *id;
        }
        let id = self.atoms.len() as u32;
        self.atoms.push(spec.clone());
        self.atom_ids.insert(spec, id);
        id
    }
}
