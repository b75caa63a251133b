//! Running the ATR corpus's own test cases through the compiled engine
//! (`parallax test --atr DIR`, `tests/atr_conformance.rs`).
//!
//! Each ATR rule carries `true_positives`, `true_negatives` and (top level
//! or under `test_cases`) `evasion_tests`, each with an `expected` outcome.
//! A case's text goes into the ATR field the rule scans (or the fields the
//! case names: `tool_args`, `tool_response`, a `tool_call` …), each field
//! placed where Parallax reads it (see `docs/ATR.md`), one event per stage.
//! The case passes when "the rule matched in some event" equals the
//! expectation.
//!
//! The engine is compiled with every ATR action set to `detect`: the chain
//! stops after the first evaluator that blocks, and a test of rule X must
//! not depend on whether another category's rule blocked first.

use parallax_compiler::atr::{self, AtrRule};
use parallax_compiler::CompileErrors;
use parallax_runtime::{Engine, Event, PreparedEvent};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CasesError {
    #[error("ATR folder {0} does not exist (get the corpus first: see README, \"ATR rules\")")]
    Missing(PathBuf),
    #[error("{0}")]
    Io(String),
    #[error("the ATR rules do not compile:\n{0}")]
    Compile(#[from] CompileErrors),
    #[error("the compiled ATR rules do not load: {0}")]
    Engine(#[from] parallax_runtime::EngineError),
}

/// Which list a case came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CaseKind {
    TruePositive,
    TrueNegative,
    Evasion,
}

impl CaseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CaseKind::TruePositive => "true positive",
            CaseKind::TrueNegative => "true negative",
            CaseKind::Evasion => "evasion",
        }
    }
}

/// Pass/fail counts for one group of cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    /// Evasion cases documented as bypassing the rule that Parallax catches
    /// anyway (its normalised view folds zero-width characters, homoglyphs
    /// and full-width forms before matching). Not failures: better than
    /// the documented outcome.
    pub caught: usize,
}

impl Tally {
    fn describe(&self, kind: CaseKind) -> String {
        if kind == CaseKind::Evasion {
            format!(
                "{}: {} passed, {} caught, {} failed",
                kind.as_str(),
                self.passed,
                self.caught,
                self.failed
            )
        } else {
            format!(
                "{}: {} passed, {} failed",
                kind.as_str(),
                self.passed,
                self.failed
            )
        }
    }
}

/// A case whose outcome differed from its `expected`.
#[derive(Debug, Clone)]
pub struct Failure {
    pub rule: String,
    pub category: String,
    pub kind: CaseKind,
    pub index: usize,
    pub expected: bool,
    pub text: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text: String = self.text.chars().take(100).collect();
        if text.len() < self.text.len() {
            text.push('…');
        }
        write!(
            f,
            "{} {} #{}: expected {}, got {}: {:?}",
            self.rule,
            self.kind.as_str(),
            self.index,
            if self.expected {
                "triggered"
            } else {
                "not triggered"
            },
            if self.expected {
                "not triggered"
            } else {
                "triggered"
            },
            text
        )
    }
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Per category, per case kind.
    pub by_category: BTreeMap<String, BTreeMap<CaseKind, Tally>>,
    pub failures: Vec<Failure>,
    /// Rules in the folder that are not in the program (excluded by the
    /// config, or unsupported), with the reason: their cases are not run.
    pub skipped_rules: Vec<(String, String)>,
    pub rules: usize,
}

impl Summary {
    pub fn total(&self, kind: CaseKind) -> Tally {
        let mut t = Tally::default();
        for k in self.by_category.values() {
            if let Some(x) = k.get(&kind) {
                t.passed += x.passed;
                t.failed += x.failed;
                t.caught += x.caught;
            }
        }
        t
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = [
            CaseKind::TruePositive,
            CaseKind::TrueNegative,
            CaseKind::Evasion,
        ];
        for (cat, m) in &self.by_category {
            let parts: Vec<String> = kinds
                .iter()
                .map(|k| m.get(k).copied().unwrap_or_default().describe(*k))
                .collect();
            writeln!(f, "{cat:<24} {}", parts.join("; "))?;
        }
        let parts: Vec<String> = kinds.iter().map(|k| self.total(*k).describe(*k)).collect();
        writeln!(f, "{:<24} {}", "total", parts.join("; "))?;
        let all = kinds.iter().fold(Tally::default(), |a, k| {
            let t = self.total(*k);
            Tally {
                passed: a.passed + t.passed,
                failed: a.failed + t.failed,
                caught: a.caught + t.caught,
            }
        });
        writeln!(
            f,
            "{} rules; {} passed, {} caught, {} failed",
            self.rules, all.passed, all.caught, all.failed
        )?;
        for (id, why) in &self.skipped_rules {
            writeln!(f, "not run: {id}: {why}")?;
        }
        Ok(())
    }
}

/// The folder holding the rule files: `dir/rules` when `dir` is the corpus
/// root, else `dir` itself.
pub fn rules_folder(dir: &Path) -> Result<PathBuf, CasesError> {
    if !dir.is_dir() {
        return Err(CasesError::Missing(dir.to_path_buf()));
    }
    let nested = dir.join("rules");
    Ok(if nested.is_dir() {
        nested
    } else {
        dir.to_path_buf()
    })
}

/// Compiles the ATR rules in `dir` (dynamic backend) with the `atr:`
/// section of `config` (for its exclusions), every action set to detect.
pub fn compile(dir: &Path, config: Option<&Path>) -> Result<Engine, CasesError> {
    let rules = rules_folder(dir)?;
    let abs = std::fs::canonicalize(&rules).map_err(|e| CasesError::Io(e.to_string()))?;
    let mut section = match config {
        Some(c) => {
            let text = std::fs::read_to_string(c)
                .map_err(|e| CasesError::Io(format!("cannot read {}: {e}", c.display())))?;
            let v: serde_yaml::Value = serde_yaml::from_str(&text)
                .map_err(|e| CasesError::Io(format!("{}: {e}", c.display())))?;
            v.get("atr").cloned().unwrap_or(serde_yaml::Value::Null)
        }
        None => serde_yaml::Value::Null,
    };
    if !section.is_mapping() {
        section = serde_yaml::Value::Mapping(Default::default());
    }
    if let serde_yaml::Value::Mapping(m) = &mut section {
        m.insert(
            "block_severities".into(),
            serde_yaml::Value::Sequence(vec![]),
        );
    }
    let cfg = json!({
        "evaluators": [],
        "atr_dirs": [abs.display().to_string()],
        "atr": serde_json::to_value(&section).map_err(|e| CasesError::Io(e.to_string()))?,
    });
    let tmp = std::env::temp_dir().join(format!(
        "parallax-atr-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(tmp.join("rules")).map_err(|e| CasesError::Io(e.to_string()))?;
    let path = tmp.join("parallax.yaml");
    std::fs::write(&path, cfg.to_string()).map_err(|e| CasesError::Io(e.to_string()))?;
    let compiled = parallax_compiler::compile_file(&path);
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(compiled?.into_engine()?)
}

/// Runs every case of every rule in `dir` through `engine`.
pub fn run(engine: &Engine, dir: &Path) -> Result<Summary, CasesError> {
    let folder = rules_folder(dir)?;
    let mut errors = Vec::new();
    let files = atr::load_dir(&folder, &mut errors);
    if !errors.is_empty() {
        return Err(CasesError::Compile(CompileErrors(errors)));
    }
    let index = engine.program().rule_index();
    let sql_rules: Vec<u32> = engine.program().sql.iter().map(|s| s.rule).collect();
    let mut summary = Summary::default();
    let mut scratch = engine.new_scratch();
    for f in files {
        let rule: AtrRule = match serde_yaml::from_value(f.value) {
            Ok(r) => r,
            Err(e) => return Err(CasesError::Io(format!("{}: {e}", f.path.display()))),
        };
        let Some(&ri) = index.get(rule.id.as_str()) else {
            summary.skipped_rules.push((
                rule.id.clone(),
                "not in the compiled program (excluded or unsupported; see `parallax lint`)".into(),
            ));
            continue;
        };
        summary.rules += 1;
        let scanned: Vec<String> = rule
            .detection
            .conditions
            .iter()
            .map(|c| c.field.clone())
            .collect();
        let evasions = rule
            .test_cases
            .evasion_tests
            .iter()
            .chain(&rule.evasion_tests);
        let cases = rule
            .test_cases
            .true_positives
            .iter()
            .map(|c| (CaseKind::TruePositive, c))
            .chain(
                rule.test_cases
                    .true_negatives
                    .iter()
                    .map(|c| (CaseKind::TrueNegative, c)),
            )
            .chain(evasions.map(|c| (CaseKind::Evasion, c)));
        let mut counters: HashMap<CaseKind, usize> = HashMap::new();
        for (kind, case) in cases {
            let n = counters.entry(kind).or_default();
            let idx = *n;
            *n += 1;
            let expected = match case.get("expected").and_then(|e| e.as_str()) {
                Some("triggered" | "trigger") => true,
                Some("not_triggered" | "no_trigger") => false,
                _ => kind == CaseKind::TruePositive,
            };
            let (events, text) = case_events(case, &scanned);
            let mut fired = false;
            // A correlation rule (lowered to SQL) judges a replayed session.
            let events = if sql_rules.contains(&(ri as u32)) {
                let input = case
                    .get("input")
                    .and_then(yaml_text)
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .unwrap_or(Value::Null);
                fired = super::atr_trace_cases::fires(engine, ri, &input)
                    .map_err(|e| CasesError::Io(format!("{} case {idx}: {e}", rule.id)))?;
                Vec::new()
            } else {
                events
            };
            for ev in events {
                let Ok(event) = Event::from_value(ev) else {
                    continue;
                };
                let prepared = PreparedEvent::new(event);
                // The rule alone: another category's block earlier in the
                // chain must not hide it, whatever the actions are.
                if engine.rule_matches(ri, &prepared, &mut scratch) {
                    fired = true;
                    break;
                }
            }
            let tally = summary
                .by_category
                .entry(f.category.clone())
                .or_default()
                .entry(kind)
                .or_default();
            if fired == expected {
                tally.passed += 1;
            } else if kind == CaseKind::Evasion && fired {
                tally.caught += 1;
            } else {
                tally.failed += 1;
                summary.failures.push(Failure {
                    rule: rule.id.clone(),
                    category: f.category.clone(),
                    kind,
                    index: idx,
                    expected,
                    text,
                });
            }
        }
    }
    Ok(summary)
}

fn yaml_text(v: &serde_yaml::Value) -> Option<String> {
    match v {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Null => None,
        other => serde_json::to_string(&serde_json::to_value(other).ok()?).ok(),
    }
}

const ATR_FIELDS: [&str; 8] = [
    "user_input",
    "tool_response",
    "tool_args",
    "tool_input",
    "tool_name",
    "tool_description",
    "agent_output",
    "content",
];

/// The events a case stands for, and its text (for failure reports).
fn case_events(case: &serde_yaml::Value, scanned: &[String]) -> (Vec<Value>, String) {
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    let mut input = None;
    match case.get("input") {
        Some(serde_yaml::Value::Mapping(m)) => {
            for (k, v) in m {
                if let (Some(k), Some(t)) = (k.as_str(), yaml_text(v)) {
                    // Some cases write a tool's result as `response`.
                    let k = if k == "response" { "tool_response" } else { k };
                    if let Some(f) = ATR_FIELDS.iter().find(|f| **f == k) {
                        fields.insert(f, t);
                    }
                }
            }
        }
        Some(v) => input = yaml_text(v),
        None => {}
    }
    for f in ATR_FIELDS {
        if let Some(t) = case.get(f).and_then(yaml_text) {
            fields.insert(f, t);
        }
    }
    if let Some(call) = case.get("tool_call") {
        if let Some(n) = call.get("name").and_then(yaml_text) {
            fields.insert("tool_name", n);
        }
        if let Some(a) = call
            .get("args")
            .or_else(|| call.get("arguments"))
            .and_then(yaml_text)
        {
            fields.insert("tool_args", a);
        }
    }
    if let Some(text) = &input {
        for f in scanned {
            if let Some(f) = ATR_FIELDS.iter().find(|x| **x == f.as_str()) {
                fields.entry(f).or_insert_with(|| text.clone());
            }
        }
    }
    let shown = input.clone().unwrap_or_else(|| {
        fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    });
    let get = |k: &str| fields.get(k).cloned();
    let mut events = Vec::new();
    let message = get("user_input").or_else(|| get("content"));
    if let Some(m) = message {
        events.push(json!({"stage": "message.before", "message_text": m}));
    }
    let tool_name = get("tool_name");
    let args = get("tool_args").or_else(|| get("tool_input"));
    if args.is_some() || tool_name.is_some() {
        let mut e = Map::new();
        e.insert("stage".into(), json!("tool.before"));
        if let Some(n) = &tool_name {
            e.insert("tool_name".into(), json!(n));
        }
        if let Some(a) = &args {
            e.insert("tool_args".into(), json!(a));
        }
        events.push(Value::Object(e));
    }
    if let Some(r) = get("tool_response") {
        let mut e = Map::new();
        e.insert("stage".into(), json!("tool.after"));
        if let Some(n) = &tool_name {
            e.insert("tool_name".into(), json!(n));
        }
        e.insert("tool_result".into(), json!(r));
        events.push(Value::Object(e));
    }
    if let Some(d) = get("tool_description") {
        events.push(json!({"stage": "params.before", "params": {"tools": d}}));
    }
    if let Some(o) = get("agent_output") {
        events.push(json!({"stage": "response.after", "response_text": o}));
    }
    (events, shown)
}
