//! `parallax revert claudecode|codex`: takes out exactly what `setup` put
//! in (src/setup/).

use super::fail;
use super::setup::{places, report};
use crate::setup::{claudecode, codex};
use std::process::ExitCode;

pub fn claudecode(scope: claudecode::Scope) -> ExitCode {
    match places() {
        Ok(p) => report(claudecode::revert(scope, &p.home, &p.project)),
        Err(e) => fail(e),
    }
}

pub fn codex() -> ExitCode {
    match places() {
        Ok(p) => report(codex::revert(&codex::codex_home(
            std::env::var_os("CODEX_HOME").as_deref(),
            &p.home,
        ))),
        Err(e) => fail(e),
    }
}
