//! `parallax lint`: validate the configuration and list its evaluators.

use super::fail;
use crate::loader;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(config: Option<PathBuf>) -> ExitCode {
    let path = match loader::config_path(config.as_deref()) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(format!(
                "no config to lint: pass -c PATH or run where {} is",
                loader::DEFAULT_CONFIG
            ))
        }
        Err(e) => return fail(e),
    };
    let rules = match parallax_compiler::load(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("parallax: {} error(s) in {}", e.0.len(), path.display());
            return ExitCode::FAILURE;
        }
    };
    let problems = crate::validate::problems(&rules.settings);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("error: {}: {p}", path.display());
        }
        eprintln!(
            "parallax: {} error(s) in {}",
            problems.len(),
            path.display()
        );
        return ExitCode::FAILURE;
    }
    let compiled = parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
    println!("{}", path.display());
    for ev in &rules.evaluators {
        println!(
            "  {:<28} {:<8} {:>4} rules  stages {}  ({})",
            ev.name,
            ev.engine.as_str(),
            ev.rules.len(),
            ev.stages,
            ev.source.display()
        );
    }
    for ev in &rules.disabled {
        println!(
            "  {:<28} {:<8} {:>4} rules  disabled  ({})",
            ev.name,
            ev.engine.as_str(),
            ev.rules.len(),
            ev.source.display()
        );
    }
    let baked = if compiled.program.fingerprint == crate::baked::FINGERPRINT {
        "identical to the baked rules"
    } else {
        "differs from the baked rules: serve would compile them at start-up"
    };
    println!(
        "ok: {} rules in {} evaluators compiled ({} DFA shards, {:.1} ms); fingerprint {} {}",
        rules.rule_count(),
        rules.evaluators.len(),
        compiled.dfas.iter().map(Vec::len).sum::<usize>(),
        compiled.stats.build_ms,
        compiled.program.fingerprint,
        baked
    );
    ExitCode::SUCCESS
}
