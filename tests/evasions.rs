//! The evasion corpus (tests/fixtures/evasions/*.yaml): per threat class,
//! evasions that must be caught by the shipped rules and benign look-alikes
//! that must be neither blocked nor rewritten. Prints each class's rates
//! and holds the targets: evasions caught ≥ 0.90, benign untouched
//! ≥ 0.95. Single-event only (two-step sequences are the SQL rules' own
//! cases in rules/sql/shell_sequences.yaml).

use parallax::backend::baked;
use parallax_runtime::{Action, Event, PreparedEvent};
use serde_json::{json, Value};
use std::path::Path;

fn event_of(case: &serde_yaml::Value) -> Value {
    let v: Value = serde_json::to_value(case).expect("YAML case as JSON");
    let mut e = match v {
        Value::String(cmd) => json!({"tool_name": "Bash", "tool_args": {"command": cmd}}),
        Value::Object(_) => v,
        other => panic!("a case is a command string or an event mapping, not {other}"),
    };
    if e.get("stage").is_none() {
        e["stage"] = json!("tool.before");
    }
    e
}

#[test]
fn evasions_are_caught_and_benign_work_is_untouched() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/evasions");
    let engine = baked::engine().expect("baked engine");
    let mut scratch = engine.new_scratch();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("evasion corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let (mut caught, mut evasions, mut untouched, mut benign) = (0, 0, 0, 0);
    let mut missed = Vec::new();
    let mut touched = Vec::new();
    for file in &files {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(file).unwrap()).expect("corpus YAML");
        let class = doc["class"].as_str().unwrap_or("?").to_string();
        let mut verdict = |case: &serde_yaml::Value| {
            let event = event_of(case);
            let prepared =
                PreparedEvent::new(Event::from_value(event.clone()).expect("a valid event"));
            let v = engine.evaluate(&prepared, &mut scratch);
            let rules: Vec<String> = v
                .matched
                .iter()
                .map(|r| engine.program().rules[*r as usize].id.clone())
                .collect();
            (v.action, rules, event)
        };
        let (mut c, mut n) = (0, 0);
        for case in doc["evasions"].as_sequence().into_iter().flatten() {
            let (action, _, event) = verdict(case);
            n += 1;
            if action != Action::Allow {
                c += 1;
            } else {
                missed.push(format!("{class}: {}", event["tool_args"]));
            }
        }
        let (mut u, mut b) = (0, 0);
        for case in doc["benign"].as_sequence().into_iter().flatten() {
            let (action, rules, event) = verdict(case);
            b += 1;
            if matches!(action, Action::Block | Action::Redact) {
                touched.push(format!("{class}: {} by {rules:?}", event["tool_args"]));
            } else {
                u += 1;
            }
        }
        println!("{class}: evasions caught {c}/{n}, benign untouched {u}/{b}");
        caught += c;
        evasions += n;
        untouched += u;
        benign += b;
    }
    let catch_rate = caught as f64 / evasions as f64;
    let benign_rate = untouched as f64 / benign as f64;
    println!(
        "all: evasions caught {caught}/{evasions} = {catch_rate:.3}, benign untouched {untouched}/{benign} = {benign_rate:.3}"
    );
    for m in &missed {
        println!("missed: {m}");
    }
    for t in &touched {
        println!("touched: {t}");
    }
    assert!(
        evasions >= 80 && benign >= 60,
        "{evasions} evasions, {benign} benign"
    );
    assert!(
        catch_rate >= 0.90,
        "evasions caught {catch_rate:.3}: {missed:#?}"
    );
    assert!(
        benign_rate >= 0.95,
        "benign untouched {benign_rate:.3}: {touched:#?}"
    );
}
