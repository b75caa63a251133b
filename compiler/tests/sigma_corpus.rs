//! Every rule of the SigmaHQ corpus (`../shared/conformance/sigma/rules`,
//! read in place, never copied: DRL licence) must compile, and the compiled
//! set must plan into automata like any rule set.

use parallax_compiler::sigma::lint::lint_dir;
use parallax_compiler::sigma::mapping::SigmaContext;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/conformance/sigma/rules"
    ));
    if dir.is_dir() {
        return dir;
    }
    panic!(
        "the SigmaHQ corpus is missing: expected `shared/conformance/sigma/rules` beside the \
         repository (../shared/conformance/sigma/rules from the repo root)"
    );
}

#[test]
fn every_sigmahq_rule_compiles() {
    let report = lint_dir(&corpus(), &SigmaContext::default()).expect("corpus readable");
    for f in &report.failures {
        eprintln!("{f}");
    }
    eprintln!(
        "{} files, {} compiled, {} failed, {:.0} ms; {} unmapped field names; {} rules hold for every event",
        report.files,
        report.compiled,
        report.failures.len(),
        report.elapsed_ms,
        report.unmapped.len(),
        report.always_true.len()
    );
    for r in &report.always_true {
        eprintln!("always true: {r}");
    }
    assert!(report.files >= 3754, "only {} files found", report.files);
    assert!(
        report.failures.is_empty(),
        "{} rules failed",
        report.failures.len()
    );
    assert_eq!(report.compiled, 3754);
    // Authors travel with the rules (DRL attribution).
    assert!(report.rules.evaluators[0]
        .rules
        .iter()
        .all(|r| r.author.is_some()));
}
