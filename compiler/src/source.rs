//! Rule sources as authors write them, one struct per engine.
//!
//! Unknown keys are errors (`deny_unknown_fields`): a misspelt `feilds:` must
//! not silently fall back to scanning the default field.

use parallax_runtime::{Action, ApprovalSpec, Priority, Stage, Validator};
use serde::Deserialize;

/// A rule's own test cases: each an event (a mapping) or, for text rules, a
/// string placed in the field the rule scans.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleTests {
    #[serde(default, rename = "match")]
    pub matches: Vec<serde_json::Value>,
    #[serde(default)]
    pub no_match: Vec<serde_json::Value>,
}

fn default_action() -> Action {
    Action::Detect
}

fn default_priority() -> Priority {
    Priority::Medium
}

/// What every rule has, whatever its engine.
#[derive(Debug, Clone)]
pub struct Common {
    pub id: String,
    pub title: Option<String>,
    pub description: String,
    pub action: Action,
    pub priority: Priority,
    /// Shown to the agent instead of the title.
    pub reason: Option<String>,
    /// Replaces the evaluator's stages for this rule.
    pub stages: Option<Vec<Stage>>,
    /// Threat category (defaults to the evaluator's).
    pub category: Option<String>,
    /// Legitimate activity the rule is known to catch, for the catalogue.
    pub false_positives: Vec<String>,
    pub tests: RuleTests,
    /// Replaces the evaluator's mode for this rule.
    pub mode: Option<RuleMode>,
    /// `action: approve` only: who decides, how long, what expiry means.
    pub approval: Option<ApprovalSpec>,
    /// Rewrite transforms (`redact` and `approve` rules).
    pub transforms: Vec<TransformSource>,
    /// No tenant may weaken it (`crate::tenants`).
    pub locked: bool,
}

/// One entry of a rule's `transforms:` as written: a call such as
/// `clamp_length(500)` or `replace('\d{4}', 'NNNN')`, applied to the
/// rule's default fields, or `{apply: <call>, fields: [...]}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum TransformSource {
    Call(String),
    WithFields(TransformWithFields),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformWithFields {
    pub apply: String,
    pub fields: Vec<String>,
}

/// Whether a rule's action is enforced or only reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleMode {
    #[default]
    Enforce,
    /// Report what the rule would do; its action counts as `detect` at most.
    Monitor,
}

/// Declares an engine's rule struct with the [`Common`] keys added.
///
/// serde's `flatten` cannot be combined with `deny_unknown_fields`, and
/// rejecting unknown keys matters more than the repetition this saves.
macro_rules! rule_source {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            pub id: String,
            pub title: Option<String>,
            #[serde(default)]
            pub description: String,
            #[serde(default = "default_action")]
            pub action: Action,
            #[serde(default = "default_priority")]
            pub priority: Priority,
            pub reason: Option<String>,
            pub stages: Option<Vec<Stage>>,
            pub category: Option<String>,
            #[serde(default)]
            pub false_positives: Vec<String>,
            #[serde(default)]
            pub tests: RuleTests,
            pub mode: Option<RuleMode>,
            pub approval: Option<ApprovalSpec>,
            #[serde(default)]
            pub transforms: Vec<TransformSource>,
            /// Where the facts a rule encodes come from (a tool's
            /// documentation, a GTFOBins/LOLBAS page, an ATT&CK technique).
            #[serde(default)]
            pub references: Vec<String>,
            /// No tenant may disable, replace, lower or monitor it.
            #[serde(default)]
            pub locked: bool,
            $($(#[$fm])* pub $f: $t,)*
        }

        impl $name {
            pub fn common(&self) -> Common {
                Common {
                    id: self.id.clone(),
                    title: self.title.clone(),
                    description: self.description.clone(),
                    action: self.action,
                    priority: self.priority,
                    reason: self.reason.clone(),
                    stages: self.stages.clone(),
                    category: self.category.clone(),
                    false_positives: self.false_positives.clone(),
                    tests: self.tests.clone(),
                    mode: self.mode,
                    approval: self.approval.clone(),
                    transforms: self.transforms.clone(),
                    locked: self.locked,
                }
            }
        }
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    #[default]
    Any,
    All,
}

/// A pattern of a regex rule: a bare regex, or one with options.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PatternSpec {
    Bare(String),
    Full(PatternOptions),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternOptions {
    pub pattern: String,
    /// The condition holds when the pattern is *not* found.
    #[serde(default)]
    pub negate: bool,
    /// Scan this field instead of the rule's `fields`.
    pub field: Option<String>,
    /// A check each match of this pattern must also pass (instead of the
    /// rule's `validate`, which applies to every positive pattern).
    pub validate: Option<Validator>,
}

rule_source! {
    /// `rules/regex/*.yaml`: regular expressions over fields.
    pub struct RegexRule {
        pub pattern: Option<String>,
        pub patterns: Option<Vec<PatternSpec>>,
        #[serde(default, rename = "match")]
        pub match_mode: MatchMode,
        pub fields: Option<Vec<String>>,
        /// A check each match of the (positive) patterns must also pass.
        pub validate: Option<Validator>,
    }
}

rule_source! {
    /// `rules/pattern/*.yaml`: keyword (literal substring) search.
    pub struct PatternRule {
        pub keywords: Vec<String>,
        #[serde(default)]
        pub case_sensitive: bool,
        #[serde(default, rename = "match")]
        pub match_mode: MatchMode,
        pub fields: Option<Vec<String>>,
    }
}

rule_source! {
    /// `rules/cel/*.yaml`: a CEL expression over the event's fields.
    pub struct CelRule {
        pub expr: String,
    }
}

rule_source! {
    /// `rules/classifier/*.yaml`: a compiled classifier's score of a field
    /// at or above `threshold`, and `when` (a CEL condition) if given.
    pub struct ClassifierRule {
        pub classifier: String,
        pub threshold: f64,
        /// The field scored (default `text`: the message, the tool's
        /// arguments and result, the response).
        pub field: Option<String>,
        pub when: Option<String>,
    }
}

rule_source! {
    /// `rules/sql/*.yaml`: a query over the side-store's recent events and a
    /// condition on its first row (temporal rules: rates, loops, chains).
    pub struct SqlRule {
        pub query: String,
        pub condition: String,
    }
}

rule_source! {
    /// `rules/schema/*.yaml`: the JSON Schema a tool's arguments must
    /// conform to (`crate::schema`).
    pub struct SchemaRule {
        /// The tool names it applies to: exact names or globs (`*` any
        /// run of characters, `?` one), one or a list.
        pub tool: ToolNames,
        /// The schema (draft 2020-12 unless its `$schema` says otherwise).
        pub schema: serde_json::Value,
        /// Where in the event the arguments are: `tool_args` (the default)
        /// or a path below it.
        pub field: Option<String>,
    }
}

/// One tool name or glob, or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ToolNames {
    One(String),
    Many(Vec<String>),
}

impl ToolNames {
    pub fn as_slice(&self) -> &[String] {
        match self {
            ToolNames::One(s) => std::slice::from_ref(s),
            ToolNames::Many(v) => v,
        }
    }
}

rule_source! {
    /// A `policy` engine rule, generated from a parlok policy file
    /// (`crate::policy`): it matches when `expr` holds and none of
    /// `unless` (the file's earlier policies) does.
    pub struct PolicyRule {
        pub expr: String,
        #[serde(default)]
        pub unless: Vec<String>,
    }
}
