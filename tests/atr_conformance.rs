//! The ATR corpus's own test cases through the compiled engine (dynamic
//! backend): every true negative must stay quiet and every true positive
//! fire, except the cases listed in docs/ATR.md with their reasons. The
//! corpus is read in place from `atr/` under `PARALLAX_CONFORMANCE_DIR`
//! (by default `../shared/conformance`, beside the repository, as in CI);
//! without it the suite is skipped with a message, a failure under
//! `CI=true`.

use parallax::casework::atr_cases::{self, CaseKind};
use std::path::Path;

#[path = "support/conformance.rs"]
mod conformance;

const KNOWN_TP_FAILURES: [(&str, usize); 2] = [
    // The case gives its text as `user_input`; the condition that matches it
    // reads `tool_args`. Parallax keeps a user message and a tool argument
    // apart, so the rule does not fire on a message (see docs/ATR.md).
    ("ATR-2026-01610", 0),
    ("ATR-2026-01610", 1),
];

#[test]
fn atr_corpus_cases_pass() {
    let Some(corpus) = conformance::corpus("ATR conformance", "atr") else {
        return;
    };
    // Only its `atr:` section is read: the rules come from `corpus`.
    let config = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/atr/parallax.yaml"
    ));
    let engine = atr_cases::compile(&corpus, Some(config)).expect("the ATR corpus compiles");
    let summary = atr_cases::run(&engine, &corpus).expect("the cases run");
    println!("{summary}");
    // 785 rules, less one excluded (malformed); the six correlation rules
    // run on the side-store (replayed sessions).
    assert_eq!(summary.rules, 784, "{summary}");
    let tn = summary.total(CaseKind::TrueNegative);
    assert_eq!(
        tn.failed,
        0,
        "true negatives fired:\n{}",
        list(&summary, CaseKind::TrueNegative)
    );
    assert!(tn.passed > 3800, "{summary}");
    let mut tp_failures: Vec<(&str, usize)> = summary
        .failures
        .iter()
        .filter(|f| f.kind == CaseKind::TruePositive)
        .map(|f| (f.rule.as_str(), f.index))
        .collect();
    tp_failures.sort();
    assert_eq!(
        tp_failures,
        KNOWN_TP_FAILURES.to_vec(),
        "true positives that did not fire:\n{}",
        list(&summary, CaseKind::TruePositive)
    );
    assert!(
        summary.total(CaseKind::TruePositive).passed > 4000,
        "{summary}"
    );
    // Evasion cases record known bypasses; most failures are the rules' own
    // (Python's `re` gives the same outcome, see docs/ATR.md). A documented
    // bypass that Parallax's normalised view catches anyway counts as
    // caught, not failed. A floor catches regressions in the engine.
    let ev = summary.total(CaseKind::Evasion);
    assert!(ev.passed + ev.caught >= 1030, "{summary}");
    assert!(ev.caught >= 80, "{summary}");
}

fn list(summary: &atr_cases::Summary, kind: CaseKind) -> String {
    summary
        .failures
        .iter()
        .filter(|f| f.kind == kind)
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}
