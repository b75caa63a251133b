//! Agent Threat Rules (ATR): loading the open rule format and lowering each
//! rule to one Parallax rule.
//!
//! ATR files are one rule each (`rules/<category>/ATR-*.yaml`), found under
//! `<rules_dir>/atr/` or any folder listed in `atr_dirs`. They are grouped
//! into one evaluator per ATR category (`atr-prompt-injection`, …) so a
//! verdict says which family fired without a new field in the program.
//!
//! Field mapping (see `docs/ATR.md`): an ATR field names a *kind of text*;
//! each maps to the Parallax field and the stage where that text appears.
//! Rules whose conditions need a session trace or metrics (`trace.*`,
//! `behavioral.*`) cannot be expressed as text matches and are reported as
//! unsupported — `lint` prints one line per rule — never silently dropped.

use crate::error::CompileError;
use crate::ir::{AtomKind, AtomTable, IrRule};
use parallax_runtime::{
    Action, Canonical, FieldRef, JsonRoot, Predicate, Priority, Stage, StageSet, TopField,
};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The `atr:` section of `parallax.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtrConfig {
    /// Severities whose rules may block (default: critical, high).
    #[serde(default = "default_block_severities")]
    pub block_severities: Vec<String>,
    /// A rule of such a severity blocks only if its `response.actions`
    /// names one of these (default: block_input, block_tool); otherwise it
    /// detects.
    #[serde(default = "default_block_actions")]
    pub block_actions: Vec<String>,
    /// Rules left out on purpose, each with the reason (a rule that cannot
    /// be compiled is an error unless it is listed here).
    #[serde(default)]
    pub exclude: Vec<Exclusion>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exclusion {
    pub id: String,
    pub reason: String,
}

fn default_block_severities() -> Vec<String> {
    vec!["critical".into(), "high".into()]
}

fn default_block_actions() -> Vec<String> {
    vec!["block_input".into(), "block_tool".into()]
}

impl Default for AtrConfig {
    fn default() -> Self {
        AtrConfig {
            block_severities: default_block_severities(),
            block_actions: default_block_actions(),
            exclude: Vec::new(),
        }
    }
}

/// The parts of an ATR rule Parallax reads. Unknown keys are allowed: the
/// format carries much metadata (compliance mappings, provenance) that has
/// no bearing on matching.
#[derive(Debug, Clone, Deserialize)]
pub struct AtrRule {
    pub id: String,
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    pub severity: Option<String>,
    /// Reported with matches, as Sigma's `author` is.
    pub author: Option<String>,
    #[serde(default)]
    pub tags: AtrTags,
    pub detection: AtrDetection,
    #[serde(default)]
    pub response: AtrResponse,
    #[serde(default)]
    pub test_cases: AtrTestCases,
    /// Older rules keep their evasion cases at the top level.
    #[serde(default)]
    pub evasion_tests: Vec<serde_yaml::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AtrTags {
    pub category: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AtrDetection {
    pub conditions: Vec<AtrCondition>,
    #[serde(default)]
    pub condition: Option<String>,
    /// Free text in the corpus; anything but strings is ignored.
    #[serde(default)]
    pub false_positives: Vec<serde_yaml::Value>,
    /// A correlation over a session's spans (`forbid`, `require`,
    /// `invariant`): lowered to SQL by [`crate::atr_trace`].
    #[serde(default)]
    pub trace: Option<serde_yaml::Value>,
    /// A count over a window (`behavioral`): lowered the same way.
    #[serde(default)]
    pub behavioral: Option<serde_yaml::Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AtrCondition {
    pub field: String,
    pub operator: String,
    pub value: String,
    #[serde(default)]
    pub case_sensitive: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AtrResponse {
    #[serde(default)]
    pub actions: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AtrTestCases {
    #[serde(default)]
    pub true_positives: Vec<serde_yaml::Value>,
    #[serde(default)]
    pub true_negatives: Vec<serde_yaml::Value>,
    #[serde(default)]
    pub evasion_tests: Vec<serde_yaml::Value>,
}

/// One ATR file as found on disk.
#[derive(Debug, Clone)]
pub struct AtrFile {
    pub path: PathBuf,
    pub category: String,
    pub value: serde_yaml::Value,
}

/// Every `*.yaml` / `*.yml` file under `dir`, recursively, in path order
/// (so the chain never depends on the file system).
pub fn find_files(dir: &Path, errors: &mut Vec<CompileError>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d).and_then(|rd| {
            rd.map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<Vec<_>>>()
        }) {
            Ok(e) => e,
            Err(source) => {
                errors.push(CompileError::Io { path: d, source });
                continue;
            }
        };
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Reads the ATR files under `dir`; unreadable or non-YAML files are errors.
pub fn load_dir(dir: &Path, errors: &mut Vec<CompileError>) -> Vec<AtrFile> {
    let mut out = Vec::new();
    for path in find_files(dir, errors) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(source) => {
                errors.push(CompileError::Io { path, source });
                continue;
            }
        };
        let value: serde_yaml::Value = match serde_yaml::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                errors.push(CompileError::file(&path, e.to_string()));
                continue;
            }
        };
        let category = value
            .get("tags")
            .and_then(|t| t.get("category"))
            .and_then(|c| c.as_str())
            .map(str::to_string)
            .or_else(|| {
                path.parent()
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "uncategorised".into());
        out.push(AtrFile {
            path,
            category,
            value,
        });
    }
    out
}

/// Where an ATR field's text lives in a Parallax event.
pub struct FieldMapping {
    pub fields: Vec<FieldRef>,
    pub stages: StageSet,
}

/// The Parallax fields and stages of an ATR field name, or `None` for the
/// correlation fields (`trace.*`, `behavioral.*`) Parallax cannot evaluate.
pub fn map_field(name: &str) -> Result<Option<FieldMapping>, String> {
    let all = StageSet::of(&Stage::ALL);
    let one = |f: FieldRef, s: &[Stage]| FieldMapping {
        fields: vec![f],
        stages: StageSet::of(s),
    };
    let tools = FieldRef::Json {
        root: JsonRoot::Params,
        path: vec!["tools".into()],
    };
    Ok(Some(match name {
        "user_input" => one(
            FieldRef::Top(TopField::MessageText),
            &[Stage::MessageBefore],
        ),
        "tool_response" => one(
            FieldRef::Json {
                root: JsonRoot::ToolResult,
                path: Vec::new(),
            },
            &[Stage::ToolAfter],
        ),
        // `tool_input` is a spelling of `tool_args` found in the corpus.
        "tool_args" | "tool_input" => one(
            FieldRef::Json {
                root: JsonRoot::ToolArgs,
                path: Vec::new(),
            },
            &[Stage::ToolBefore],
        ),
        "tool_name" => one(
            FieldRef::Top(TopField::ToolName),
            &[Stage::ToolBefore, Stage::ToolAfter],
        ),
        "tool_description" => one(tools, &[Stage::ParamsBefore]),
        "agent_output" => one(
            FieldRef::Top(TopField::ResponseText),
            &[Stage::ResponseAfter],
        ),
        "content" => FieldMapping {
            fields: vec![FieldRef::Canonical(Canonical::Text), tools],
            stages: all,
        },
        n if n.starts_with("trace.") || n.starts_with("behavioral.") => return Ok(None),
        other => {
            return Err(format!(
                "unknown ATR field `{other}` (known: user_input, tool_response, tool_args, \
                 tool_name, tool_description, agent_output, content)"
            ))
        }
    }))
}

/// The outcome of lowering one ATR rule.
pub enum Lowered {
    Rule(Box<IrRule>),
    /// A correlation rule: reported by `lint`, not compiled.
    Unsupported(String),
}

/// ATR patterns are written for JavaScript and Python engines, where an
/// unescaped `[` inside a class is a literal bracket; in the Rust syntax it
/// opens a nested class. Escaping it keeps the authors' meaning (the only
/// other rewrites are [`translate_surrogates`] and [`crate::any_char`]).
pub fn normalise_dialect(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(n) = chars.next() {
                    out.push(n);
                }
                class_start = false;
                continue;
            }
            '[' if in_class => out.push_str("\\["),
            '[' => {
                in_class = true;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                class_start = true;
                continue;
            }
            ']' if in_class && !class_start => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
        class_start = false;
    }
    out
}

/// ATR patterns written for JavaScript spell characters beyond the Basic
/// Multilingual Plane as UTF-16 surrogate pairs: `\uDB40\uDC41`, or a high
/// surrogate before a class of low ones, `\uDB40[\uDC00-\uDC7F]` (the tag
/// characters). A Rust regex matches Unicode scalar values, where a lone
/// surrogate is no character at all, so each pair is rewritten to the code
/// point it encodes (`\x{E0041}`, `[\x{E0000}-\x{E007F}]`). Anything else
/// is left as written (a lone surrogate then fails to compile, as before).
pub fn translate_surrogates(pattern: &str) -> String {
    if !pattern.contains("\\u") {
        return pattern.to_string();
    }
    let c: Vec<char> = pattern.chars().collect();
    let unit = |i: usize| -> Option<u32> {
        if c.get(i) != Some(&'\\') || c.get(i + 1) != Some(&'u') {
            return None;
        }
        let hex: String = c.get(i + 2..i + 6)?.iter().collect();
        u32::from_str_radix(&hex, 16).ok()
    };
    let high = |u: u32| (0xD800..=0xDBFF).contains(&u);
    let low = |u: u32| (0xDC00..=0xDFFF).contains(&u);
    let point = |h: u32, l: u32| 0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00);
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] != '\\' {
            out.push(c[i]);
            i += 1;
            continue;
        }
        if let Some(h) = unit(i).filter(|&u| high(u)) {
            let j = i + 6;
            if let Some(l) = unit(j).filter(|&u| low(u)) {
                out.push_str(&format!("\\x{{{:X}}}", point(h, l)));
                i = j + 6;
                continue;
            }
            if c.get(j) == Some(&'[') {
                if let Some((class, end)) = low_class(&c, j, &unit, &low) {
                    out.push('[');
                    for (a, b) in class {
                        out.push_str(&format!("\\x{{{:X}}}", point(h, a)));
                        if b != a {
                            out.push_str(&format!("-\\x{{{:X}}}", point(h, b)));
                        }
                    }
                    out.push(']');
                    i = end;
                    continue;
                }
            }
        }
        // Any other escape is copied whole, so an escaped backslash is
        // never read as the start of a `\u`.
        out.push(c[i]);
        if let Some(&n) = c.get(i + 1) {
            out.push(n);
        }
        i += 2;
    }
    out
}

/// A class made only of low surrogates and ranges of them, starting at the
/// `[` at `at`: its ranges and the index after its `]`.
fn low_class(
    c: &[char],
    at: usize,
    unit: &dyn Fn(usize) -> Option<u32>,
    low: &dyn Fn(u32) -> bool,
) -> Option<(Vec<(u32, u32)>, usize)> {
    let mut ranges = Vec::new();
    let mut i = at + 1;
    loop {
        if c.get(i) == Some(&']') {
            return (!ranges.is_empty()).then_some((ranges, i + 1));
        }
        let a = unit(i).filter(|&u| low(u))?;
        i += 6;
        let b = if c.get(i) == Some(&'-') {
            let b = unit(i + 1).filter(|&u| low(u) && u >= a)?;
            i += 7;
            b
        } else {
            a
        };
        ranges.push((a, b));
    }
}

/// An ATR regex in Rust syntax: surrogate pairs as code points, literal
/// brackets in classes escaped, and `[\s\S]` spelt `(?s:.)` (the same
/// class, without the case folding that made the corpus slow to compile:
/// [`crate::any_char`]).
fn rust_dialect(value: &str) -> String {
    crate::any_char::respell(&normalise_dialect(&translate_surrogates(value)))
}

/// The regex an ATR condition stands for.
fn condition_regex(c: &AtrCondition) -> Result<String, String> {
    let ci = !c.case_sensitive.unwrap_or(false);
    let esc = || regex_syntax::escape(&c.value);
    let flag = if ci { "(?i)" } else { "" };
    Ok(match c.operator.as_str() {
        // ATR matching is case-insensitive unless a condition says
        // `case_sensitive: true` (the schema's default, and what the
        // corpus's own cases expect: `\bhow\s+were` must match "How were").
        "regex" if ci && !c.value.starts_with("(?i)") => {
            format!("(?i){}", rust_dialect(&c.value))
        }
        "regex" => rust_dialect(&c.value),
        "contains" => format!("{flag}{}", esc()),
        "exact" => format!("{flag}^{}$", esc()),
        "starts_with" => format!("{flag}^{}", esc()),
        other => {
            return Err(format!(
                "unknown operator `{other}` (known: regex, contains, exact, starts_with)"
            ))
        }
    })
}

/// Whether a pattern compiles: in the linear engines, else in the bounded
/// backtracking one (look-around, backreferences). The error names both.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    let linear = match regex_syntax::ParserBuilder::new().build().parse(pattern) {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    match fancy_regex::Regex::new(pattern) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "malformed regex `{pattern}`: {e} (linear engine: {})",
            linear.to_string().lines().last().unwrap_or_default()
        )),
    }
}

fn priority(severity: Option<&str>) -> Result<Priority, String> {
    Ok(match severity.map(str::to_ascii_lowercase).as_deref() {
        Some("critical") => Priority::Critical,
        Some("high") => Priority::High,
        Some("medium") | None => Priority::Medium,
        Some("low") | Some("info") | Some("informational") => Priority::Low,
        Some(other) => {
            return Err(format!(
                "unknown severity `{other}` (known: critical, high, medium, low, informational)"
            ))
        }
    })
}

/// The action a rule gets under `config` (see [`AtrConfig`]).
pub fn action(rule: &AtrRule, config: &AtrConfig) -> Action {
    let severity = rule.severity.as_deref().unwrap_or("medium");
    let may_block = config
        .block_severities
        .iter()
        .any(|s| s.eq_ignore_ascii_case(severity));
    let asks_block = rule
        .response
        .actions
        .iter()
        .any(|a| config.block_actions.contains(a));
    if may_block && asks_block {
        Action::Block
    } else {
        Action::Detect
    }
}

/// Lowers one parsed ATR rule.
pub fn lower_rule(
    rule: &AtrRule,
    config: &AtrConfig,
    table: &mut AtomTable,
) -> Result<Lowered, String> {
    if rule.id.trim().is_empty() {
        return Err("`id` must not be empty".into());
    }
    if rule.detection.conditions.is_empty() {
        return Err("`detection.conditions` must not be empty".into());
    }
    let all = match rule.detection.condition.as_deref() {
        None | Some("any") => false,
        Some("all") => true,
        Some(other) => {
            return Err(format!(
                "`detection.condition` must be `any` or `all`, got `{other}`"
            ))
        }
    };
    let mut parts = Vec::new();
    let mut stages = StageSet::EMPTY;
    for (i, c) in rule.detection.conditions.iter().enumerate() {
        let mapping = match map_field(&c.field).map_err(|e| format!("condition {i}: {e}"))? {
            Some(m) => m,
            None => return lower_correlation(rule, config, &c.field),
        };
        let pattern = condition_regex(c).map_err(|e| format!("condition {i}: {e}"))?;
        check_pattern(&pattern).map_err(|e| format!("condition {i}: {e}"))?;
        stages = stages.union(mapping.stages);
        let atoms: Vec<Predicate> = mapping
            .fields
            .into_iter()
            .map(|f| {
                Predicate::Atom(table.atom(
                    f,
                    AtomKind::Regex {
                        pattern: pattern.clone(),
                        validator: None,
                    },
                ))
            })
            .collect();
        parts.push(one_or(atoms, false));
    }
    Ok(Lowered::Rule(Box::new(IrRule {
        id: rule.id.clone(),
        title: rule.title.clone().unwrap_or_else(|| rule.id.clone()),
        description: rule.description.trim().to_string(),
        action: action(rule, config),
        priority: priority(rule.severity.as_deref())?,
        stages,
        reason: None,
        category: rule_category(rule),
        false_positives: rule
            .detection
            .false_positives
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        tests: Default::default(),
        predicate: one_or(parts, all),
        author: rule.author.clone(),
        sql: None,
        monitor: false,
        approval: None,
        transforms: Vec::new(),
        locked: false,
        tenant: None,
    })))
}

/// A rule whose condition reads a trace or metric field: its `trace` or
/// `behavioral` block becomes a SQL rule over the session's window
/// ([`crate::atr_trace`]); without one, or with a construct that lowering
/// does not know, the rule is reported unsupported with the reason.
fn lower_correlation(rule: &AtrRule, config: &AtrConfig, field: &str) -> Result<Lowered, String> {
    let d = &rule.detection;
    let sql = match crate::atr_trace::lower(&rule.id, d.trace.as_ref(), d.behavioral.as_ref()) {
        Ok(Some(sql)) => sql,
        Ok(None) => {
            return Ok(Lowered::Unsupported(format!(
                "a condition reads `{field}`, a session-trace/metric field, and the rule has no \
                 `detection.trace` or `detection.behavioral` block to run instead"
            )))
        }
        Err(why) => {
            return Ok(Lowered::Unsupported(format!(
                "a condition reads `{field}`; its correlation block cannot run: {why}"
            )))
        }
    };
    parallax_store::check_rule(&sql.query, &sql.condition, None)
        .map_err(|e| format!("the SQL lowered from its correlation block: {e}"))?;
    let mut action = action(rule, config);
    if !matches!(action, Action::Block | Action::Detect) {
        action = Action::Detect;
    }
    Ok(Lowered::Rule(Box::new(IrRule {
        id: rule.id.clone(),
        title: rule.title.clone().unwrap_or_else(|| rule.id.clone()),
        description: rule.description.trim().to_string(),
        action,
        priority: priority(rule.severity.as_deref())?,
        stages: sql.stages,
        reason: None,
        category: rule_category(rule),
        false_positives: d
            .false_positives
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        tests: Default::default(),
        predicate: Predicate::Const(false),
        author: rule.author.clone(),
        sql: Some(crate::ir::IrSql {
            query: sql.query,
            condition: sql.condition,
        }),
        monitor: false,
        approval: None,
        transforms: Vec::new(),
        locked: false,
        tenant: None,
    })))
}

/// The Parallax category of an ATR category, so ATR matches are reported
/// and catalogued like every other rule's. ATR's categories are finer;
/// each maps to the Parallax category of the harm it leads to.
/// Parallax's category for the rule's ATR `tags.category`, when it maps.
fn rule_category(rule: &AtrRule) -> Option<String> {
    rule.tags
        .category
        .as_deref()
        .and_then(category)
        .map(str::to_string)
}

fn category(atr: &str) -> Option<&'static str> {
    Some(match atr {
        "prompt-injection" | "agent-manipulation" | "data-poisoning" => "prompt_injection",
        "context-exfiltration" => "data_exfiltration",
        "excessive-autonomy" => "dangerous_commands",
        "model-abuse" | "model-security" => "model_manipulation",
        "privilege-escalation" => "privilege_escalation",
        "skill-compromise" | "tool-poisoning" => "supply_chain",
        _ => return None,
    })
}

fn one_or(mut parts: Vec<Predicate>, all: bool) -> Predicate {
    if parts.len() == 1 {
        return parts.remove(0);
    }
    if all {
        Predicate::And(parts)
    } else {
        Predicate::Or(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(yaml: &str) -> AtrRule {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn action_follows_severity_and_response() {
        let c = AtrConfig::default();
        let r = |sev: &str, act: &str| {
            rule(&format!(
                "id: X\nseverity: {sev}\ndetection: {{conditions: [], condition: any}}\n\
                 response: {{actions: [{act}]}}"
            ))
        };
        assert_eq!(action(&r("critical", "block_input"), &c), Action::Block);
        assert_eq!(action(&r("high", "block_tool"), &c), Action::Block);
        assert_eq!(action(&r("high", "alert"), &c), Action::Detect);
        assert_eq!(action(&r("medium", "block_input"), &c), Action::Detect);
    }

    #[test]
    fn fields_map_to_stages() {
        let m = map_field("agent_output").unwrap().unwrap();
        assert!(m.stages.contains(Stage::ResponseAfter));
        assert!(map_field("trace.forbid_violation").unwrap().is_none());
        assert!(map_field("tool_argz").is_err());
    }

    #[test]
    fn malformed_patterns_are_errors_lookaround_is_not() {
        assert!(check_pattern(r"(?i)foo(?!bar)").is_ok());
        assert!(check_pattern(r"(a)\1").is_ok());
        assert!(check_pattern(r"(unclosed").is_err());
    }

    #[test]
    fn surrogate_pairs_become_code_points() {
        let tags = translate_surrogates(r"(?:\uDB40[\uDC00-\uDC7F]){3,}");
        assert_eq!(tags, r"(?:[\x{E0000}-\x{E007F}]){3,}");
        check_pattern(&tags).unwrap();
        let re = regex_automata::meta::Regex::new(&tags).unwrap();
        let smuggled: String = "abc"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        assert!(re.is_match(&format!("x{smuggled}y")));
        assert!(!re.is_match("plain text"));
        assert_eq!(translate_surrogates(r"\uD83D\uDE00"), r"\x{1F600}");
        assert_eq!(
            translate_surrogates(r"\uDB40[\uDC01\uDC20-\uDC7E]"),
            r"[\x{E0001}\x{E0020}-\x{E007E}]"
        );
        // Escaped backslashes, ordinary \u escapes and lone surrogates stay.
        assert_eq!(translate_surrogates(r"\\uDB40 \u200b"), r"\\uDB40 \u200b");
        assert_eq!(translate_surrogates(r"\uDB40x"), r"\uDB40x");
        assert!(check_pattern(r"\uDB40x").is_err());
    }

    #[test]
    fn brackets_inside_classes_are_literal() {
        assert_eq!(normalise_dialect(r"[^[\]]x"), r"[^\[\]]x");
        assert_eq!(normalise_dialect(r"[]a]"), r"[]a]");
        assert_eq!(normalise_dialect(r"\[[a-z]"), r"\[[a-z]");
    }
}
