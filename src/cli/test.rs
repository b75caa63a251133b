//! `parallax test`: every rule's own cases, plus fixture files.

use super::fail;
use crate::{loader, ruletest};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(config: Option<PathBuf>, fixtures: Vec<PathBuf>) -> ExitCode {
    let path = match loader::config_path(config.as_deref()) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(format!(
                "no config to test: pass -c PATH or run where {} is",
                loader::DEFAULT_CONFIG
            ))
        }
        Err(e) => return fail(e),
    };
    let rules = match parallax_compiler::load(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let engine = match loader::engine_for(&rules, false, &path) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let mut outcome = ruletest::run_rule_tests(&rules, &engine);
    for f in &fixtures {
        let o = ruletest::run_fixture(f, &engine);
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
