//! The field scan under the whole ATR corpus against a reference: for every
//! linear atom the message stage reads, the engine's scan (DFA shards,
//! Aho-Corasick, gate, verifiers with their 16 MiB lazy DFA caches) must
//! report a hit exactly when the atom's own regex, built with the meta
//! engine's default settings (whose 2 MiB cache leaves the corpus's largest
//! patterns to the PikeVM), finds one in the message.
//!
//! The messages are the pathological bench's texts, shorter: each rule's
//! literals (those of the automata pointing at its atoms and its regexes'
//! required literals) repeated, spaced and cut one character short, to a
//! few hundred bytes, and each with a word that completes it; plus the
//! rule's own test inputs. Backtracking atoms (look-around,
//! back-references) have no linear regex and are left to
//! tests/atr_conformance.rs.

use parallax::backend;
use parallax_runtime::{Engine, Event, PreparedEvent, Stage};
use regex_automata::meta;
use serde_json::json;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};

#[path = "../benches/support/atom_literals.rs"]
mod atom_literals;
#[path = "support/atr_cases.rs"]
mod atr_cases;
#[path = "support/conformance.rs"]
mod conformance;

/// Bytes of each repeated text.
const TEXT: usize = 300;

fn repeated(unit: &str) -> String {
    let mut s = unit.repeat(TEXT / unit.len().max(1) + 1);
    let mut end = TEXT.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// Rule id → up to a few `input` texts of its own cases.
fn case_inputs(rules: &std::path::Path) -> BTreeMap<String, Vec<String>> {
    let mut out = atr_cases::case_texts(rules, &["test_cases"]);
    for texts in out.values_mut() {
        texts.retain(|t| t.len() > 12 && t.len() < 2_000);
        texts.truncate(4);
    }
    out
}

fn atr_engine(corpus: &std::path::Path) -> Engine {
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/atr/parallax.yaml"
    ))
    .expect("the ATR fixture");
    let mut settings: Value = serde_yaml::from_str(&fixture).expect("YAML");
    settings["atr_dirs"] = Value::Sequence(vec![corpus.display().to_string().into()]);
    let dir = std::env::temp_dir().join(format!("parallax-atr-sr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = dir.join("parallax.yaml");
    std::fs::write(&config, serde_yaml::to_string(&settings).expect("YAML")).expect("write");
    let engine = backend::dynamic_engine(&config).expect("the ATR corpus compiles");
    let _ = std::fs::remove_dir_all(&dir);
    engine
}

#[test]
fn atr_scan_agrees_with_each_atoms_default_regex() {
    let Some(corpus) = conformance::corpus("ATR scan reference", "atr/rules") else {
        return;
    };
    let engine = atr_engine(&corpus);
    let p = engine.program();
    let cases = case_inputs(&corpus);

    // Per atom, the literals that point at it (as the pathological bench).
    let literals = atom_literals::literals_by_atom(p);
    let both_groups = atom_literals::conjunctive_seeds(p);
    let mut texts = BTreeSet::new();
    for rule in &p.rules {
        let mut atoms = Vec::new();
        rule.predicate.atoms(&mut atoms);
        for a in atoms {
            // Both groups of a conjunctive verifier first: one group's
            // literal alone never makes it run.
            let mut seeds: Vec<String> = both_groups.get(&a).cloned().into_iter().collect();
            seeds.extend(literals.get(&a).cloned().unwrap_or_default());
            seeds.extend(
                parallax_compiler::literals::required_literals(&p.atoms[a as usize].pattern, 1)
                    .unwrap_or_default(),
            );
            for seed in seeds.iter().take(3) {
                let mut prefix = seed.clone();
                prefix.pop();
                texts.insert(repeated(seed));
                texts.insert(repeated(&format!("{seed} ")));
                texts.insert(repeated(&prefix));
                texts.insert(format!("{} {seed}", repeated(&prefix)));
            }
        }
        texts.extend(cases.get(&rule.id).into_iter().flatten().cloned());
    }

    // The atoms a message is scanned for, with their reference regex.
    let stage = Stage::MessageBefore;
    let mut reference: Vec<(usize, meta::Regex)> = Vec::new();
    for rule in &p.rules {
        let evaluator = &p.evaluators[rule.evaluator as usize];
        if !(rule.stages.contains(stage) && evaluator.stages.contains(stage)) {
            continue;
        }
        let mut atoms = Vec::new();
        rule.predicate.atoms(&mut atoms);
        for a in atoms {
            let a = a as usize;
            if reference.iter().any(|(b, _)| *b == a) {
                continue;
            }
            if let Ok(re) = meta::Regex::new(&p.atoms[a].pattern) {
                reference.push((a, re));
            }
        }
    }
    assert!(reference.len() > 1000, "only {} atoms", reference.len());

    let mut scratch = engine.new_scratch();
    let mut checked = 0usize;
    let mut differences = Vec::new();
    for text in &texts {
        let event = json!({"stage": "message.before", "message_text": text});
        let prepared = PreparedEvent::new(Event::from_value(event).expect("event"));
        let verdict = engine.evaluate(&prepared, &mut scratch);
        for (a, re) in &reference {
            let atom = &p.atoms[*a];
            let mut expected = false;
            prepared.for_each_value(&p.fields[atom.field as usize].field, &mut |v| {
                expected |= re.is_match(v)
            });
            checked += 1;
            if verdict.atoms.contains(*a) != expected && differences.len() < 20 {
                differences.push(format!(
                    "atom {a} `{}`: scan {}, reference {expected}, on {text:?}",
                    atom.pattern, !expected
                ));
            }
        }
    }
    println!(
        "{} texts, {} atoms, {checked} checks, {} differences",
        texts.len(),
        reference.len(),
        differences.len()
    );
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
