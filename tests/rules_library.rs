//! The shipped rule library: every rule's own cases pass on the baked
//! engine, every rule is tested both ways, the categories are covered, the
//! same attacks are caught in every agent's vocabulary, and docs/RULES.md is
//! the catalogue the rules generate.

use parallax::backend::{self, baked};
use parallax::casework::rule_cases;
use parallax::rules_catalogue;
use parallax_compiler::ir::RuleSet;
use std::collections::BTreeMap;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn shipped() -> RuleSet {
    parallax_compiler::load(&root().join("parallax.yaml")).expect("shipped config compiles")
}

#[test]
fn every_rule_case_passes_on_the_baked_engine() {
    let rules = shipped();
    assert_eq!(
        rules.fingerprint(),
        baked::FINGERPRINT,
        "the shipped rules are the ones compiled into this binary"
    );
    let engine = baked::engine().unwrap();
    let outcome = rule_cases::run_rule_tests(&rules, &engine);
    let failures: Vec<String> = outcome.failures.iter().map(|f| f.to_string()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        outcome.untested.is_empty(),
        "untested: {:?}",
        outcome.untested
    );
    println!("{} passed, {} failed", outcome.passed, outcome.failed());
}

#[test]
fn every_rule_has_two_cases_each_way() {
    for ev in &shipped().evaluators {
        for r in &ev.rules {
            assert!(
                r.tests.matches.len() >= 2 && r.tests.no_match.len() >= 2,
                "{}: {} match and {} no_match cases (at least 2 of each)",
                r.id,
                r.tests.matches.len(),
                r.tests.no_match.len()
            );
        }
    }
}

#[test]
fn categories_are_known_and_covered() {
    let rules = shipped();
    let mut per_category: BTreeMap<String, usize> = BTreeMap::new();
    for ev in &rules.evaluators {
        for r in &ev.rules {
            let cat = r
                .category
                .clone()
                .unwrap_or_else(|| panic!("{} has no category", r.id));
            assert!(
                rules_catalogue::CATEGORIES.iter().any(|(id, _)| *id == cat),
                "{}: unknown category {cat}",
                r.id
            );
            *per_category.entry(cat).or_default() += 1;
        }
    }
    assert!(rules.rule_count() >= 60, "{} rules", rules.rule_count());
    for (cat, n) in &per_category {
        assert!(*n >= 3, "category {cat} has only {n} rules");
    }
}

#[test]
fn attacks_are_caught_in_every_agents_vocabulary() {
    let engine = baked::engine().unwrap();
    let outcome = rule_cases::run_fixture(&root().join("tests/fixtures/frameworks.jsonl"), &engine);
    let failures: Vec<String> = outcome.failures.iter().map(|f| f.to_string()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(outcome.passed >= 20);
}

#[test]
fn dynamic_backend_passes_the_same_cases() {
    let rules = shipped();
    let engine = backend::dynamic_engine(&root().join("parallax.yaml")).unwrap();
    let outcome = rule_cases::run_rule_tests(&rules, &engine);
    assert!(
        outcome.failures.is_empty(),
        "{:?}",
        outcome.failures.first()
    );
}

#[test]
fn rules_catalogue_is_up_to_date() {
    let want = rules_catalogue::rules_markdown(&shipped());
    let have = std::fs::read_to_string(root().join("docs/RULES.md")).unwrap_or_default();
    assert!(
        have == want,
        "docs/RULES.md is out of date: run `cargo run -- docs rules > docs/RULES.md`"
    );
}
