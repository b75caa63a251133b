//! Running rules' own test cases (`tests: {match, no_match}`) and fixture
//! files against the compiled engine, for `parallax test`.
//!
//! A case is checked against its rule alone ([`Engine::rule_matches`]), so a
//! rule earlier in the chain that blocks cannot hide a later rule's result;
//! fixture files check whole verdicts instead. SQL rules judge a session,
//! so their cases are event sequences ([`crate::casework::session_cases`]).

use parallax_compiler::ir::{IrRule, RuleSet};
use parallax_runtime::{
    Canonical, Engine, EngineKind, Event, FieldRef, JsonRoot, PreparedEvent, Stage, TopField,
};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// One failed case, with enough context to find and fix it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub source: PathBuf,
    pub rule: String,
    pub case: String,
    pub why: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FAIL {}: {}: {}: {}",
            self.source.display(),
            self.rule,
            self.case,
            self.why
        )
    }
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub passed: usize,
    pub failures: Vec<Failure>,
    /// Rules with no test case at all.
    pub untested: Vec<String>,
}

impl Outcome {
    pub fn failed(&self) -> usize {
        self.failures.len()
    }
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out: String = s.chars().take(100).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}

/// The field a string case is placed in: the rule's first positive atom's.
fn case_field(rule: &IrRule, rules: &RuleSet) -> Option<FieldRef> {
    let mut atoms = Vec::new();
    rule.predicate.positive_atoms(&mut atoms);
    let field = atoms.first()?;
    Some(rules.fields[rules.atoms[*field as usize].field as usize].clone())
}

/// Builds an event holding `text` in `field`, at a stage the rule runs at.
pub fn event_for_text(rule: &IrRule, rules: &RuleSet, text: &str) -> Result<Value, String> {
    let field = case_field(rule, rules)
        .ok_or("the rule scans no field; give the case as an event (a mapping)")?;
    let stages: Vec<Stage> = rule.stages.iter().collect();
    let prefer = |want: &[Stage]| {
        want.iter()
            .copied()
            .find(|s| stages.contains(s))
            .or(stages.first().copied())
            .unwrap_or(Stage::ToolBefore)
    };
    let tool_stage = prefer(&[Stage::ToolBefore, Stage::ToolAfter]);
    let mut e = Map::new();
    let stage = match &field {
        FieldRef::Canonical(c) => {
            let (tool, key) = match c {
                Canonical::Command
                | Canonical::Executable
                | Canonical::Shell
                | Canonical::Argv
                | Canonical::Program
                | Canonical::Redirect
                | Canonical::Code
                | Canonical::Decoded => ("Bash", "command"),
                Canonical::ReadPath => ("Read", "file_path"),
                Canonical::Path => ("Read", "file_path"),
                Canonical::WritePath => ("Write", "file_path"),
                Canonical::Url => ("WebFetch", "url"),
                Canonical::Content => ("Write", "content"),
                Canonical::Query => ("sql", "query"),
                Canonical::Text => ("", ""),
            };
            if key.is_empty() {
                let stage = prefer(&[
                    Stage::MessageBefore,
                    Stage::ToolAfter,
                    Stage::ToolBefore,
                    Stage::ParamsBefore,
                ]);
                match stage {
                    Stage::MessageBefore => {
                        e.insert("message_text".into(), json!(text));
                    }
                    Stage::ToolAfter => {
                        e.insert("tool_name".into(), json!("Read"));
                        e.insert("tool_result".into(), json!(text));
                    }
                    Stage::ParamsBefore => {
                        e.insert("params".into(), json!({ "system": text }));
                    }
                    Stage::ResponseAfter => {
                        e.insert("response_text".into(), json!(text));
                    }
                    Stage::ToolBefore => {
                        e.insert("tool_name".into(), json!("mcp_tool"));
                        e.insert("tool_args".into(), json!({ "input": text }));
                    }
                    Stage::MemoryBefore => {
                        e.insert("memory_key".into(), json!("note"));
                        e.insert("memory_text".into(), json!(text));
                    }
                    Stage::RetrievalBefore => {
                        e.insert("query".into(), json!(text));
                    }
                    Stage::RetrievalAfter => {
                        e.insert("documents".into(), json!([{ "text": text }]));
                    }
                }
                stage
            } else {
                e.insert("tool_name".into(), json!(tool));
                e.insert("tool_args".into(), json!({ key: text }));
                tool_stage
            }
        }
        FieldRef::Top(t) => {
            let key = FieldRef::Top(*t).name();
            if *t == TopField::Stage {
                return Err("a string case cannot set the stage; give an event".into());
            }
            e.insert(key, json!(text));
            prefer(&[Stage::MessageBefore, Stage::ToolBefore])
        }
        FieldRef::Json { root, path } => {
            let mut v = json!(text);
            for seg in path.iter().rev() {
                v = json!({ seg.as_str(): v });
            }
            let (key, stage) = match root {
                JsonRoot::ToolArgs => ("tool_args", tool_stage),
                JsonRoot::ToolResult => ("tool_result", prefer(&[Stage::ToolAfter])),
                JsonRoot::Params => ("params", prefer(&[Stage::ParamsBefore])),
                JsonRoot::Documents => ("documents", prefer(&[Stage::RetrievalAfter])),
            };
            if *root == JsonRoot::Documents {
                // One document; it must have a `text` to be a document.
                let mut doc = match v {
                    Value::Object(m) => m,
                    other => {
                        let mut m = Map::new();
                        m.insert("text".into(), other);
                        m
                    }
                };
                doc.entry("text").or_insert_with(|| json!(""));
                v = json!([Value::Object(doc)]);
            }
            if *root == JsonRoot::Params && path.is_empty() {
                v = json!({ "value": text });
            }
            e.insert(key.into(), v);
            stage
        }
    };
    e.insert("stage".into(), json!(stage.as_str()));
    Ok(Value::Object(e))
}

/// The event of a case: a mapping as given (stage defaulting to the rule's
/// first), or a string placed by [`event_for_text`].
fn case_event(rule: &IrRule, rules: &RuleSet, case: &Value) -> Result<Value, String> {
    match case.clone() {
        Value::String(s) => event_for_text(rule, rules, &s),
        Value::Object(mut m) => {
            if !m.contains_key("stage") {
                let stage = rule.stages.iter().next().unwrap_or(Stage::ToolBefore);
                m.insert("stage".into(), json!(stage.as_str()));
            }
            Ok(Value::Object(m))
        }
        other => Err(format!("a case is a string or an event, not {other}")),
    }
}

/// Runs every rule's own cases.
pub fn run_rule_tests(rules: &RuleSet, engine: &Engine) -> Outcome {
    let index = engine.program().rule_index();
    let mut scratch = engine.new_scratch();
    let mut out = Outcome::default();
    // A tenant's copy of a rule has the rule's id: the program's rules are
    // the rule set's in the same order, so the position names it.
    let mut position = 0usize;
    for ev in &rules.evaluators {
        for rule in &ev.rules {
            let here = position;
            position += 1;
            if rule.tests.matches.is_empty() && rule.tests.no_match.is_empty() {
                if rule.tenant.is_none() {
                    out.untested.push(rule.id.clone());
                }
                continue;
            }
            let same = engine
                .program()
                .rules
                .get(here)
                .is_some_and(|r| r.id == rule.id && r.tenant == rule.tenant);
            let found = if same {
                Some(here)
            } else {
                index.get(rule.id.as_str()).copied()
            };
            let Some(ri) = found else {
                out.failures.push(Failure {
                    source: ev.source.clone(),
                    rule: rule.id.clone(),
                    case: String::new(),
                    why: "the engine does not have this rule (rules differ from the engine's)"
                        .into(),
                });
                continue;
            };
            let cases = rule
                .tests
                .matches
                .iter()
                .map(|c| (c, true))
                .chain(rule.tests.no_match.iter().map(|c| (c, false)));
            for (case, expect) in cases {
                let label = format!(
                    "{} {}",
                    if expect { "match" } else { "no_match" },
                    short(case)
                );
                let fail = |why: String| Failure {
                    source: ev.source.clone(),
                    rule: rule.id.clone(),
                    case: label.clone(),
                    why,
                };
                if ev.engine == EngineKind::Sql {
                    let stage = rule.stages.iter().next().unwrap_or(Stage::ToolBefore);
                    match crate::casework::session_cases::run(engine, ri, stage, case) {
                        Ok(got) if got == expect => out.passed += 1,
                        Ok(true) => out.failures.push(fail(
                            "expected no match on the last event; the rule fired".into(),
                        )),
                        Ok(false) => out.failures.push(fail(
                            "expected the rule to fire on the last event; it did not".into(),
                        )),
                        Err(why) => out.failures.push(fail(why)),
                    }
                    continue;
                }
                let event = match case_event(rule, rules, case)
                    .and_then(|v| Event::from_value(v).map_err(|e| e.to_string()))
                {
                    Ok(e) => e,
                    Err(why) => {
                        out.failures.push(fail(why));
                        continue;
                    }
                };
                let mut event = event;
                // A tenant's rule is tested as that tenant's call.
                event.tenant.clone_from(&rule.tenant);
                let prepared = PreparedEvent::new(event);
                let got = engine.rule_matches(ri, &prepared, &mut scratch);
                if got == expect {
                    out.passed += 1;
                } else if expect {
                    out.failures
                        .push(fail("expected the rule to match; it did not".into()));
                } else {
                    out.failures
                        .push(fail("expected no match; the rule matched".into()));
                }
            }
        }
    }
    out
}

/// Runs a fixture file: JSON lines `{"name"?, "event", "action"?, "rules"?,
/// "not_rules"?}` checked against the whole chain's verdict.
pub fn run_fixture(path: &Path, engine: &Engine) -> Outcome {
    let mut out = Outcome::default();
    let fail = |line: usize, case: String, why: String| Failure {
        source: path.to_path_buf(),
        rule: format!("line {line}"),
        case,
        why,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            out.failures
                .push(fail(0, String::new(), format!("cannot read: {e}")));
            return out;
        }
    };
    let mut scratch = engine.new_scratch();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() || line.trim_start().starts_with("//") {
            continue;
        }
        let case: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                out.failures
                    .push(fail(line_no, String::new(), format!("malformed JSON: {e}")));
                continue;
            }
        };
        let name = case
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| short(&case["event"]));
        let event = match Event::from_value(case["event"].clone()) {
            Ok(e) => PreparedEvent::new(e),
            Err(e) => {
                out.failures.push(fail(line_no, name, e.to_string()));
                continue;
            }
        };
        let verdict = engine.evaluate(&event, &mut scratch);
        let matched: Vec<&str> = verdict
            .matched
            .iter()
            .map(|r| engine.program().rules[*r as usize].id.as_str())
            .collect();
        let mut problems = Vec::new();
        if let Some(want) = case.get("action").and_then(Value::as_str) {
            if verdict.action.as_str() != want {
                problems.push(format!("action {} (expected {want})", verdict.action));
            }
        }
        for (key, present) in [("rules", true), ("not_rules", false)] {
            for id in case
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if matched.contains(&id) != present {
                    problems.push(format!(
                        "rule {id} {}",
                        if present { "did not match" } else { "matched" }
                    ));
                }
            }
        }
        if problems.is_empty() {
            out.passed += 1;
        } else {
            out.failures.push(fail(
                line_no,
                name,
                format!("{} (matched: {matched:?})", problems.join("; ")),
            ));
        }
    }
    out
}
