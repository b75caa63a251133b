//! `parallax test --atr DIR`: run the ATR corpus's own test cases through
//! the compiled engine and print pass/fail counts per category.

use super::fail;
use crate::atr_cases;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(atr: Option<PathBuf>, config: Option<PathBuf>, failures: bool) -> ExitCode {
    let Some(dir) = atr else {
        return fail("nothing to test: pass --atr DIR (an ATR corpus or its rules/ folder)");
    };
    let started = Instant::now();
    let engine = match atr_cases::compile(&dir, config.as_deref()) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
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
        "compiled in {compiled_ms:.0} ms, cases run in {:.0} ms (dynamic backend)",
        started.elapsed().as_secs_f64() * 1000.0 - compiled_ms
    );
    let tp = summary.total(atr_cases::CaseKind::TruePositive);
    let tn = summary.total(atr_cases::CaseKind::TrueNegative);
    if tp.failed + tn.failed > 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
