//! `parallax lint`: validate the configuration and list its evaluators.

use super::fail;
use crate::backend;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(config: Option<PathBuf>) -> ExitCode {
    let path = match super::required_config(config.as_deref(), "lint") {
        Ok(p) => p,
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
    let settings = match crate::settings::read(&rules.settings) {
        Ok(s) => s,
        Err(problems) => return report_problems(&path, &problems),
    };
    let compiled = parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
    let via = crate::settings::checks::via_problems(&settings, &compiled.program);
    let bare_policy = parallax_compiler::is_policy_file(&path);
    if !via.is_empty() && !bare_policy {
        return report_problems(&path, &via);
    }
    println!("{}", path.display());
    if bare_policy {
        println!("  a parlok policy file: its policies are the whole program");
        for v in &via {
            println!(
                "warning: {v}; with the policy file alone, held calls wait to be decided \
                 through the approvals API, the dashboard or the embedded engine \
                 (Firewall.approve / deny): name it in a parallax.yaml's policy_files with \
                 approvals configured to notify"
            );
        }
    }
    for w in &rules.warnings {
        println!("warning: {w}");
    }
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
    for n in &rules.excluded {
        println!(
            "  excluded: {} ({}): {}",
            n.rule,
            n.path.display(),
            n.reason
        );
    }
    for n in &rules.unsupported {
        println!(
            "  unsupported: {} ({}): {}",
            n.rule,
            n.path.display(),
            n.reason
        );
    }
    let baked = if compiled.program.fingerprint == crate::backend::baked::FINGERPRINT {
        "identical to the baked rules"
    } else {
        "differs from the baked rules: serve would compile them at start-up"
    };
    let ok = format!(
        "ok: {} rules in {} evaluators compiled ({} DFA shards, {:.1} ms); fingerprint {} {}",
        rules.rule_count(),
        rules.evaluators.len(),
        compiled.dfas.iter().map(Vec::len).sum::<usize>(),
        compiled.stats.build_ms,
        compiled.program.fingerprint,
        baked
    );
    // The engine builds its literal automata and verifier regexes on first
    // use; lint builds every one, so a part that cannot be built is an
    // error here rather than atoms failing closed in a running server.
    if let Err(e) = compiled.into_engine().and_then(|engine| engine.build_all()) {
        return report_problems(&path, &[format!("the rules compile but cannot run: {e}")]);
    }
    println!("{ok}");
    ExitCode::SUCCESS
}

fn report_problems(path: &std::path::Path, problems: &[String]) -> ExitCode {
    for p in problems {
        eprintln!("error: {}: {p}", path.display());
    }
    eprintln!(
        "parallax: {} error(s) in {}",
        problems.len(),
        path.display()
    );
    ExitCode::FAILURE
}

/// `parallax lint --sigma DIR`: one line per rule that fails, a summary of
/// unmapped fields, and `N compiled, N failed`.
pub fn run_sigma(config: Option<PathBuf>, dir: &std::path::Path) -> ExitCode {
    if !dir.is_dir() {
        return fail(format!("--sigma {}: not a directory", dir.display()));
    }
    let ctx = match backend::config_path(config.as_deref()) {
        Ok(Some(p)) => match parallax_compiler::config::load(&p) {
            Ok(sources) => sources.sigma,
            Err(e) => {
                eprintln!("{e}");
                return fail(format!("cannot read the config {}", p.display()));
            }
        },
        Ok(None) => parallax_compiler::sigma::mapping::SigmaContext::default(),
        Err(e) => return fail(e),
    };
    let report = match parallax_compiler::sigma::lint::lint_dir(dir, &ctx) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    for f in &report.failures {
        println!("error: {f}");
    }
    let mut unmapped: Vec<(&String, &usize)> = report.unmapped.iter().collect();
    unmapped.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (field, rules) in unmapped {
        println!(
            "warning: field `{field}` ({rules} rules) is not mapped to an event field; \
             conditions on it never match (map it under sigma.field_mappings)"
        );
    }
    for r in &report.always_true {
        println!("warning: {r}: the condition holds for every event");
    }
    println!(
        "{} compiled, {} failed ({} files, {:.0} ms)",
        report.compiled,
        report.failures.len(),
        report.files,
        report.elapsed_ms
    );
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
