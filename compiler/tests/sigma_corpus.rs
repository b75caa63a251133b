//! Every rule of the SigmaHQ corpus (`sigma/rules` under
//! `PARALLAX_CONFORMANCE_DIR`, by default `../shared/conformance`; read in
//! place, never copied: DRL licence) must compile, and the compiled set
//! must plan into automata like any rule set. Without the corpus the suite
//! is skipped with a message (a failure under `CI=true`).

use parallax_compiler::sigma::lint::lint_dir;
use parallax_compiler::sigma::mapping::SigmaContext;
use std::path::PathBuf;

#[path = "../../tests/support/conformance.rs"]
mod conformance;

fn corpus() -> Option<PathBuf> {
    conformance::corpus("SigmaHQ corpus compilation", "sigma/rules")
}

#[test]
fn every_sigmahq_rule_compiles() {
    let Some(corpus) = corpus() else {
        return;
    };
    let report = lint_dir(&corpus, &SigmaContext::default()).expect("corpus readable");
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

/// Lowers and plans the rules under `dir` into one program, as a config
/// holding them would be; checks every atom got a scan path.
fn plan(dir: &std::path::Path) -> usize {
    let report = lint_dir(dir, &SigmaContext::default()).expect("corpus readable");
    assert!(report.failures.is_empty());
    let started = std::time::Instant::now();
    let compiled =
        parallax_compiler::plan::compile(&report.rules, &parallax_compiler::Limits::default());
    let p = &compiled.program;
    let shards: usize = p.fields.iter().map(|f| f.shards.len()).sum();
    let bytes: usize = p
        .fields
        .iter()
        .flat_map(|f| &f.shards)
        .map(|s| s.bytes)
        .sum();
    eprintln!(
        "{}: planned {} rules: {} atoms, {} checks, {} fields, {} DFA shards ({} KiB), {:.0} ms",
        dir.display(),
        p.rules.len(),
        p.atoms.len(),
        p.checks.len(),
        p.fields.len(),
        shards,
        bytes / 1024,
        started.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(p.rules.len(), report.compiled);
    // Every atom has a path: nothing was dropped on the way to automata.
    let mut placed = vec![false; p.atoms.len()];
    for f in &p.fields {
        for s in &f.shards {
            s.atoms.iter().for_each(|a| placed[*a as usize] = true);
        }
        f.verifiers
            .iter()
            .for_each(|v| placed[v.atom as usize] = true);
        for l in &f.literals {
            for t in &l.targets {
                if let parallax_runtime::LiteralTarget::Atom(a) = t {
                    placed[*a as usize] = true;
                }
            }
        }
    }
    assert!(placed.iter().all(|p| *p), "an atom has no scan path");
    p.rules.len()
}

/// The rules a team would run against agents' shell commands and files.
#[test]
fn linux_and_macos_rules_plan_into_automata() {
    let Some(corpus) = corpus() else {
        return;
    };
    let base = corpus.join("rules");
    assert!(plan(&base.join("linux")) > 200);
    assert!(plan(&base.join("macos")) > 50);
}

/// All 3,754 rules in one program: about 17,000 atoms and five minutes of
/// DFA construction on a small machine, so it runs on request only
/// (`cargo test -p parallax-compiler --test sigma_corpus -- --ignored`).
#[test]
#[ignore]
fn the_whole_corpus_plans_into_automata() {
    let Some(corpus) = corpus() else {
        return;
    };
    assert_eq!(plan(&corpus), 3754);
}
