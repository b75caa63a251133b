//! `parallax test`: every rule's own cases, plus fixture files; with
//! `--atr DIR`, an ATR corpus's own cases, with pass/fail counts per
//! category.

use super::fail;
use crate::backend;
use crate::casework::{atr_cases, rule_cases};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(config: Option<PathBuf>, fixtures: Vec<PathBuf>) -> ExitCode {
    let path = match super::required_config(config.as_deref(), "test") {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let rules = match parallax_compiler::load(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let engine = match backend::engine_for(&rules, false, &path) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let mut outcome = rule_cases::run_rule_tests(&rules, &engine);
    for f in &fixtures {
        let o = rule_cases::run_fixture(f, &engine);
        outcome.passed += o.passed;
        outcome.failures.extend(o.failures);
    }
    for f in &outcome.failures {
        println!("{f}");
    }
    if !outcome.untested.is_empty() {
        println!(
            "note: {} rule(s) have no test cases: {}",
            outcome.untested.len(),
            outcome.untested.join(", ")
        );
    }
    println!("{} passed, {} failed", outcome.passed, outcome.failed());
    if outcome.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `parallax test --atr DIR`.
pub fn run_atr(dir: PathBuf, config: Option<PathBuf>, failures: bool, baked: bool) -> ExitCode {
    let started = Instant::now();
    let engine = if baked {
        match crate::backend::baked::engine() {
            Ok(e) if e.program().rules.iter().any(|r| r.id.starts_with("ATR-")) => e,
            Ok(_) => {
                return fail(
                    "--baked: this binary's rules hold no ATR rule; build it with \
                     PARALLAX_CONFIG pointing at a config that loads the corpus \
                     (e.g. tests/fixtures/atr/parallax.yaml)",
                )
            }
            Err(e) => return fail(e),
        }
    } else {
        match atr_cases::compile(&dir, config.as_deref()) {
            Ok(e) => e,
            Err(e) => return fail(e),
        }
    };
    let backend = engine.backend().as_str();
    let compiled_ms = started.elapsed().as_secs_f64() * 1000.0;
    let summary = match atr_cases::run(&engine, &dir) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    print!("{summary}");
    if failures {
        for f in &summary.failures {
            println!("FAIL {f}");
        }
    } else if !summary.failures.is_empty() {
        println!("(--failures lists the failing cases)");
    }
    println!(
        "compiled in {compiled_ms:.0} ms, cases run in {:.0} ms ({backend} backend)",
        started.elapsed().as_secs_f64() * 1000.0 - compiled_ms
    );
    let tp = summary.total(atr_cases::CaseKind::TruePositive);
    let tn = summary.total(atr_cases::CaseKind::TrueNegative);
    if tp.failed + tn.failed > 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
