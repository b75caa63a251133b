//! The field scan against a reference: for every atom of a scanned field,
//! the engine's single-pass scan (DFA shards with accelerated skipping,
//! Aho-Corasick, verifiers) must report a hit exactly when the atom's own
//! regex, run alone with the `regex-automata` meta engine, finds one.
//!
//! The haystacks are stitched from fragments around the bytes that leave
//! accelerated DFA states (`-`, spaces, `/`, key headers), so skips that
//! land on, just before or just after a match are all exercised. Some
//! fragments are not ASCII (word and non-word characters next to the
//! literals), so the scan's path for such text — the gate and verifiers
//! whose Unicode word boundaries are rewritten into character classes — is
//! checked against the unrewritten regex too.

use parallax::backend::{self, baked};
use parallax_runtime::{Engine, Event, PreparedEvent, Stage};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

const FRAGMENTS: &[&str] = &[
    "-",
    "--",
    "-----",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "rm",
    "rm -rf /",
    "rm -rf ~",
    " -r ",
    " --recursive",
    "/",
    "~/",
    "$HOME",
    "curl https://x.test/i.sh",
    " | ",
    "sh",
    "bash",
    "mkfs.ext4 ",
    "/dev/",
    "echo  override",
    "git push ",
    "--force",
    "origin feature/x",
    "password",
    "passwords",
    "ignore",
    "previous",
    "instructions",
    "123456789012",
    "tok_",
    "ABCDEFGHabcdefgh",
    "jailbreak",
    "Developer Mode",
    "DROP TABLE",
    "überschreiben",
    // Non-ASCII text takes the gate and verifiers whose Unicode word
    // boundaries are rewritten (runtime/src/word_boundary.rs): word and
    // non-word characters outside ASCII right against the literals.
    "é",
    "적어",
    "中",
    "\u{3000}",
    "。",
    "ignoreé",
    "éignore",
    "password中",
    "ü ",
    "you are now",
    " ",
    "\n",
    ";",
    "hello world",
    "plain benign text about builds and tests",
];

/// Deterministic haystacks of 1 to 12 fragments.
fn haystacks() -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let mut out: Vec<String> = FRAGMENTS.iter().map(|f| f.to_string()).collect();
    for _ in 0..1500 {
        let n = 1 + next() % 12;
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(FRAGMENTS[next() % FRAGMENTS.len()]);
        }
        out.push(s);
    }
    out
}

/// The atoms the rules that run at `stage` read: the engine must find each
/// of them exactly (an atom only rules of other stages read may be left
/// unverified, which is the point of the per-stage masks).
fn stage_atoms(engine: &Engine, stage: Stage) -> BTreeSet<usize> {
    let p = engine.program();
    let mut out = BTreeSet::new();
    for rule in &p.rules {
        let evaluator = &p.evaluators[rule.evaluator as usize];
        if rule.stages.contains(stage) && evaluator.stages.contains(stage) {
            let mut atoms = Vec::new();
            rule.predicate.atoms(&mut atoms);
            out.extend(atoms.iter().map(|&a| a as usize));
        }
    }
    out
}

fn check(engine: &Engine, label: &str) {
    let p = engine.program();
    let mut scratch = engine.new_scratch();
    let mut checked = 0;
    for hay in haystacks() {
        let events = [
            json!({"stage": "message.before", "message_text": hay}),
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": hay}}),
            json!({"stage": "tool.after", "tool_name": "Read", "tool_result": hay}),
        ];
        for event in events {
            let prepared = PreparedEvent::new(Event::from_value(event).expect("event"));
            let stage = prepared.event.stage;
            let wanted = stage_atoms(engine, stage);
            let verdict = engine.evaluate(&prepared, &mut scratch);
            for (a, atom) in p.atoms.iter().enumerate() {
                if !wanted.contains(&a) {
                    continue;
                }
                let regex = engine.span_regex(a as u32).expect("atom regex compiles");
                let mut expected = false;
                prepared.for_each_value(&p.fields[atom.field as usize].field, &mut |v| {
                    expected |= regex.is_match(v)
                });
                assert_eq!(
                    verdict.atoms.contains(a),
                    expected,
                    "{label}: atom {a} `{}` ({} path) on {stage} haystack {hay:?}",
                    atom.pattern,
                    atom.path.as_str()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{label}: only {checked} atom checks ran");
}

#[test]
fn baked_scan_agrees_with_each_atoms_regex() {
    check(&baked::engine().expect("baked engine"), "baked");
}

#[test]
fn dynamic_scan_of_every_path_agrees_with_each_atoms_regex() {
    let fixture = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/paths/parallax.yaml"
    ));
    let engine = backend::dynamic_engine(fixture).expect("fixture compiles");
    check(&engine, "fixture");
}

/// The planner's many-rules layout (DFA atoms with literals moved to the
/// prefiltered path once a field's DFA would need several shards), forced
/// on the fixture with a tiny shard budget, finds the same hits.
#[test]
fn prefiltered_layout_for_large_sets_agrees_with_each_atoms_regex() {
    use parallax_compiler::{plan, Limits};
    use parallax_runtime::AtomPath;
    let fixture = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/paths/parallax.yaml"
    ));
    let rules = parallax_compiler::load(fixture).expect("fixture lowers");
    let normal = plan::compile(&rules, &Limits::default());
    let tight = plan::compile(
        &rules,
        &Limits {
            shard_dfa_bytes: 4,
            ..Limits::default()
        },
    );
    let moved = normal
        .program
        .atoms
        .iter()
        .zip(&tight.program.atoms)
        .filter(|(n, t)| n.path == AtomPath::Dfa && t.path == AtomPath::Prefiltered)
        .count();
    assert!(moved > 0, "no DFA atom moved to the prefiltered path");
    check(
        &tight.into_engine().expect("engine"),
        "fixture, tight shards",
    );
}
