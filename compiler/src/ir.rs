//! The rule IR: every rule of every engine as a [`Predicate`] over atoms.
//!
//! An atom is one thing to find in one field — a literal or a regex. Atoms
//! are shared: two rules looking for the same text in the same field share
//! one atom, so the automata hold it once. The IR is also what the rules
//! fingerprint is taken over, so it is built deterministically from the
//! sources and never contains file-system detail.

use crate::source::RuleTests;
use parallax_runtime::{
    Action, CelExpr, Check, EngineKind, FieldRef, Predicate, Priority, ProgramSettings, StageSet,
    Validator,
};
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
    /// A regex in regex-automata syntax (flags inline, e.g. `(?i)`), whose
    /// matches must also pass `validator` when there is one.
    Regex {
        pattern: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        validator: Option<Validator>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AtomSpec {
    /// Index into [`RuleSet::fields`].
    pub field: u32,
    pub kind: AtomKind,
}

impl AtomSpec {
    pub fn validator(&self) -> Option<Validator> {
        match &self.kind {
            AtomKind::Regex { validator, .. } => *validator,
            AtomKind::Literal { .. } => None,
        }
    }

    /// A regex matching exactly what the atom matches.
    pub fn span_pattern(&self) -> String {
        match &self.kind {
            AtomKind::Regex { pattern, .. } => pattern.clone(),
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
    pub category: Option<String>,
    pub false_positives: Vec<String>,
    pub predicate: Predicate,
    /// Test cases; not part of the fingerprint (they change no verdict).
    #[serde(skip)]
    pub tests: RuleTests,
    /// Reported with matches (Sigma's `author`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// SQL rules only: the query and condition the side-store runs (their
    /// predicate is `Const(false)`: no automaton can see a time window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<IrSql>,
    /// Monitor mode (left out of the fingerprint input when false, so
    /// enforcing rule sets keep their fingerprints).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub monitor: bool,
    /// Approval terms of an `action: approve` rule (left out when absent,
    /// so other rule sets keep their fingerprints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<parallax_runtime::ApprovalSpec>,
    /// Rewrite transforms (left out when none, so other rule sets keep
    /// their fingerprints).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transforms: Vec<parallax_runtime::Transform>,
    /// No tenant may weaken it (`locked: true`; `crate::tenants`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub locked: bool,
    /// The one tenant it applies to, for a tenant's rule or its copy of an
    /// overridden one (its predicate says so too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IrSql {
    pub query: String,
    pub condition: String,
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
    pub settings: ProgramSettings,
    /// Enabled evaluators, in chain order.
    pub evaluators: Vec<IrEvaluator>,
    /// Evaluators that compiled but are switched off (for `lint`).
    pub disabled: Vec<IrEvaluator>,
    pub fields: Vec<FieldRef>,
    pub atoms: Vec<AtomSpec>,
    /// Expressions of CEL rules, referenced by `Predicate::Cel`.
    pub cel: Vec<CelExpr>,
    /// Non-text conditions, indexed by `Predicate::Check`.
    pub checks: Vec<Check>,
    /// Files and folders the rule set was read from.
    pub inputs: Vec<PathBuf>,
    /// Things that compile but deserve a look (a Sigma field no mapping
    /// covers, so conditions on it never match); `lint` prints them.
    pub warnings: Vec<String>,
    /// Rules left out by the config (`atr.exclude`), with its reasons.
    pub excluded: Vec<RuleNote>,
    /// Valid rules Parallax cannot evaluate (ATR correlation rules).
    pub unsupported: Vec<RuleNote>,
}

/// A rule that is not in the program, and why (`lint` lists these).
#[derive(Debug, Clone)]
pub struct RuleNote {
    pub path: PathBuf,
    pub rule: String,
    pub reason: String,
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
            cel: &'a [CelExpr],
            #[serde(skip_serializing_if = "<[Check]>::is_empty")]
            checks: &'a [Check],
        }
        let json = serde_json::to_vec(&Canonical {
            compiler: env!("CARGO_PKG_VERSION"),
            evaluators: &self.evaluators,
            fields: &self.fields,
            atoms: &self.atoms,
            cel: &self.cel,
            checks: &self.checks,
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
    /// CEL expressions of the rules lowered so far.
    pub cel: Vec<CelExpr>,
    field_ids: HashMap<FieldRef, u32>,
    atom_ids: HashMap<AtomSpec, u32>,
    pub checks: Vec<Check>,
    /// Keyed by the check's JSON (checks hold floats, so are not `Hash`).
    check_ids: HashMap<String, u32>,
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

    /// Interns a check; equal checks share an index.
    pub fn check(&mut self, check: Check) -> u32 {
        let key = serde_json::to_string(&check).unwrap_or_default();
        if let Some(id) = self.check_ids.get(&key) {
            return *id;
        }
        let id = self.checks.len() as u32;
        self.checks.push(check);
        self.check_ids.insert(key, id);
        id
    }
}
