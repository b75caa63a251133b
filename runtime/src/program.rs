//! The compiled program: everything the compiler decided, in a form the
//! runtime loads without parsing any rule source.
//!
//! A baked binary embeds a `Program` as JSON next to the serialized DFAs and
//! the generated predicate functions; the dynamic backend builds the same
//! `Program` in memory. Automata are not part of it: DFAs travel as bytes
//! beside it and Aho-Corasick automata are rebuilt from [`LiteralPlan`]s at
//! start-up (the crate has no serialization; building takes milliseconds).

use crate::action::{Action, Priority};
use crate::check::Check;
use crate::field::FieldRef;
use crate::predicate::Predicate;
use crate::settings::ProgramSettings;
use crate::stage::StageSet;
use crate::validator::Validator;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The rule engines, in chain (cost) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Regex,
    Pattern,
    Cel,
    Sigma,
    /// Agent Threat Rules files (`<rules_dir>/atr/**`, `atr_dirs`): regex
    /// conditions over ATR fields, one evaluator per ATR category.
    Atr,
    /// parlok-style tool-call policies (`<rules_dir>/policy/*.yaml`,
    /// `policy_files`): first-match-wins policies lowered to CEL predicates,
    /// one evaluator per file.
    Policy,
    /// A compiled classifier's score over a field above a threshold
    /// (`<rules_dir>/classifier/*.yaml`), lowered to a CEL predicate
    /// calling `injection_score`.
    Classifier,
    /// Tool-argument JSON Schemas (`<rules_dir>/schema/*.yaml`): a tool
    /// whose name matches the rule's globs, called with arguments outside
    /// its schema (a [`crate::CheckOp::Schema`] check).
    Schema,
    // Other engines go above this line: `Sql` stays LAST.
    /// Temporal rules: SQL queries over the side-store of recent events
    /// (crate parallax-store). Last in the chain because they cost the most;
    /// their predicates are `Const(false)`, the store runs their queries.
    Sql,
}

impl EngineKind {
    pub const ALL: [EngineKind; 9] = [
        EngineKind::Regex,
        EngineKind::Pattern,
        EngineKind::Cel,
        EngineKind::Sigma,
        EngineKind::Atr,
        EngineKind::Policy,
        EngineKind::Classifier,
        EngineKind::Schema,
        EngineKind::Sql,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Regex => "regex",
            EngineKind::Pattern => "pattern",
            EngineKind::Cel => "cel",
            EngineKind::Sigma => "sigma",
            EngineKind::Atr => "atr",
            EngineKind::Policy => "policy",
            EngineKind::Classifier => "classifier",
            EngineKind::Schema => "schema",
            EngineKind::Sql => "sql",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// Hash of the canonical rule IR; decides whether a config matches the
    /// baked rules.
    pub fingerprint: String,
    /// The side-store's settings and the front doors' sections.
    pub settings: ProgramSettings,
    /// In chain order.
    pub evaluators: Vec<EvaluatorMeta>,
    /// Grouped by evaluator, in evaluator order.
    pub rules: Vec<RuleMeta>,
    pub atoms: Vec<Atom>,
    pub fields: Vec<FieldPlan>,
    /// Checked CEL expressions of `cel` rules, referenced by
    /// [`Predicate::Cel`]; their string-matching calls on event fields are
    /// replaced by atoms.
    #[serde(default)]
    pub cel: Vec<CelExpr>,
    /// Non-text conditions, indexed by [`Predicate::Check`].
    #[serde(default)]
    pub checks: Vec<Check>,
    /// The SQL rules' queries (engine `Sql`), in rule order. They produce no
    /// automata; both backends hand them to the side-store as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sql: Vec<SqlRuleSpec>,
}

/// One CEL rule's expression as the runtime evaluates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CelExpr {
    /// The source as written (for messages).
    pub source: String,
    /// The checked expression, atoms substituted.
    pub expr: parallax_cel::Expr,
    /// The field each atom in `expr` stands for: an atom is only valid
    /// when that field is present and a string, as the call it replaced
    /// required.
    pub atom_fields: Vec<(u32, FieldRef)>,
}

/// What the side-store needs to run one SQL rule. Checked at compile time
/// against the real schema, so loading it can only fail on a corrupt program.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SqlRuleSpec {
    /// Index into `Program::rules` (its id, action, stages and reason
    /// template live there).
    pub rule: u32,
    /// A single SELECT with named parameters (`:session_id`, `:now`, ...).
    pub query: String,
    /// A small CEL-style expression over the first row's columns.
    pub condition: String,
    /// The rule's cheap preconditions, found and proved by the compiler
    /// (`parallax_store::guard`): SQL expressions over the event's own
    /// fields, all of which must be true for the rule to fire. The
    /// decision service evaluates them without the store and skips the
    /// rule's query when one is false.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluatorMeta {
    pub name: String,
    pub engine: EngineKind,
    pub stages: StageSet,
    /// Where it was defined (a rule file, or the config for inline ones).
    pub source: String,
    /// Its rules: `rules[first_rule..first_rule + rule_count]`.
    pub first_rule: u32,
    pub rule_count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleMeta {
    pub id: String,
    pub title: String,
    pub description: String,
    pub action: Action,
    pub priority: Priority,
    /// Stages the rule runs at (its evaluator's, unless narrowed).
    pub stages: StageSet,
    pub evaluator: u32,
    pub reason: Option<String>,
    /// Threat category, for reports and the rules catalogue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub predicate: Predicate,
    /// Who wrote the rule, when its source says (Sigma's `author`); reported
    /// with every match, as the SigmaHQ rules' licence (DRL) requires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Monitor mode: the rule's hits are reported (`would_block`) but its
    /// action counts as at most `detect`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub monitor: bool,
    /// `action: approve` rules: who may decide, for how long, and what an
    /// expiry means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalSpec>,
    /// Rewrite transforms, applied when the rule matches (`redact` and
    /// `approve` rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transforms: Vec<crate::transform::Transform>,
    /// The one tenant this rule applies to (a tenant's own rule, or its
    /// copy of an operator rule it overrides; `tenants:`), for its test
    /// cases and reports. `None`: the operator's rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// A rule's approval terms (`approval:` on an `action: approve` rule).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalSpec {
    /// Names from `approvals.approver_tokens` who may decide; empty: any
    /// approver.
    #[serde(default)]
    pub approvers: Vec<String>,
    /// How long the approval waits; default `approvals.timeout_seconds`.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
    /// What an expired approval resolves to.
    #[serde(default)]
    pub on_timeout: TimeoutOutcome,
    /// Which notifiers are told (`slack`, `webhook`; `console`: none, the
    /// approval is decided through the API or the dashboard); empty: every
    /// configured notifier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
}

/// What an approval nobody decided in time resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeoutOutcome {
    /// Fail closed: the call does not happen.
    #[default]
    Deny,
    Allow,
}

/// One thing to look for in one field.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Atom {
    /// Index into `Program::fields`.
    pub field: u32,
    /// A regex (regex-automata syntax) matching exactly what the atom
    /// matches; used to find match spans once the atom is known to hit.
    pub pattern: String,
    /// How the hot path finds out that the atom hit.
    pub path: AtomPath,
    /// A check every match must also pass (e.g. a card number's Luhn digit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validator: Option<Validator>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomPath {
    /// A literal in the field's Aho-Corasick automaton.
    Literal,
    /// A pattern of one of the field's dense DFA shards.
    Dfa,
    /// Too costly for a DFA: its required literals are in the field's
    /// Aho-Corasick automaton, and its own regex verifies a candidate.
    Prefiltered,
    /// Too costly for a DFA and without a usable literal: its own
    /// (linear-time) regex runs on every value of the field.
    Verified,
    /// Syntax no automaton can take (look-around, backreferences): a
    /// backtracking regex with a step limit, run only when its required
    /// literals hit (or on every value when it has none).
    Backtrack,
}

impl AtomPath {
    pub fn as_str(self) -> &'static str {
        match self {
            AtomPath::Literal => "literal",
            AtomPath::Dfa => "dfa",
            AtomPath::Prefiltered => "prefiltered",
            AtomPath::Verified => "verified",
            AtomPath::Backtrack => "backtrack",
        }
    }
}

/// How one field is scanned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldPlan {
    pub field: FieldRef,
    /// One dense DFA per shard; pattern `i` of shard `s` is atom
    /// `shards[s].atoms[i]`.
    pub shards: Vec<ShardPlan>,
    pub literals: Vec<LiteralPlan>,
    /// Atoms checked by their own regex (paths `Prefiltered`, `Verified`).
    pub verifiers: Vec<VerifierPlan>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPlan {
    pub atoms: Vec<u32>,
    /// Serialized size, for stats.
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiteralPlan {
    pub text: String,
    /// ASCII case-insensitive (the automaton's only folding mode; non-ASCII
    /// case-insensitive literals are compiled as regex atoms instead).
    pub case_insensitive: bool,
    pub targets: Vec<LiteralTarget>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LiteralTarget {
    /// The literal is the atom: a hit is a hit.
    Atom(u32),
    /// The literal is required by this verifier (index into the field's
    /// `verifiers`): a hit makes it a candidate (a conjunctive verifier's
    /// first group; see [`VerifierPlan::conjunctive`]).
    Verifier(u32),
    /// The literal is in a conjunctive verifier's second group: the
    /// verifier is a candidate only when a literal of each group hit.
    VerifierAlso(u32),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifierPlan {
    pub atom: u32,
    /// Runs only when one of its literals hit; otherwise on every value.
    pub prefiltered: bool,
    /// Its literals come in two groups (targets `Verifier` and
    /// `VerifierAlso`), each from a different piece every match contains:
    /// it runs only when a literal of each group hit in the value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conjunctive: bool,
    /// Needs the bounded backtracking engine (look-around, backreferences).
    #[serde(default)]
    pub backtrack: bool,
    /// For a backtracking verifier: its pattern with look-arounds dropped
    /// and each backreference read as a copy of its group (or `.*`), a
    /// linear-time superset (`parallax_compiler::relax`). When it does not
    /// match, the backtracking engine need not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaxed: Option<String>,
}

impl Program {
    pub fn rules_of(&self, evaluator: usize) -> std::ops::Range<usize> {
        let e = &self.evaluators[evaluator];
        e.first_rule as usize..(e.first_rule + e.rule_count) as usize
    }

    /// Rule id → index into `rules`, for callers that look rules up by id.
    /// Each rule id's first rule: the operator's, when a tenant has a copy
    /// of it or its own rule of that id (`tenants:`).
    pub fn rule_index(&self) -> std::collections::HashMap<&str, usize> {
        let mut index = std::collections::HashMap::with_capacity(self.rules.len());
        for (i, r) in self.rules.iter().enumerate() {
            index.entry(r.id.as_str()).or_insert(i);
        }
        index
    }
}
