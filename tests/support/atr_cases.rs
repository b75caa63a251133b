//! The texts an ATR rule carries for its own tests: what the ATR suites
//! that compare the scan or a rewrite against a reference take as their
//! realistic inputs, read in one way.

use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Every string anywhere under `v` (a case may nest its input in a map).
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Sequence(s) => s.iter().for_each(|v| strings(v, out)),
        Value::Mapping(m) => m.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Rule id → every string under the rule's `keys` (e.g. `test_cases`,
/// `evasion_tests`), in file order. Files that do not load are skipped
/// here: the conformance suite is where a corpus that does not load fails.
pub fn case_texts(rules: &Path, keys: &[&str]) -> BTreeMap<String, Vec<String>> {
    let mut errors = Vec::new();
    let mut out = BTreeMap::new();
    for file in parallax_compiler::atr::load_dir(rules, &mut errors) {
        let Some(id) = file.value.get("id").and_then(Value::as_str) else {
            continue;
        };
        let mut texts = Vec::new();
        for key in keys {
            if let Some(v) = file.value.get(*key) {
                strings(v, &mut texts);
            }
        }
        out.insert(id.to_string(), texts);
    }
    out
}
