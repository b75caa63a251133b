//! `parallax revert claudecode|codex`: takes out exactly what `setup` put
//! in (src/setup/).

use super::fail;
use super::setup::{places, report};
use crate::setup::{claudecode, codex, codex_proxy, openclaw};
use std::process::ExitCode;

pub fn claudecode(scope: claudecode::Scope) -> ExitCode {
    match places() {
        Ok(p) => report(claudecode::revert(scope, &p.home, &p.project)),
        Err(e) => fail(e),
    }
}

/// Both of what `setup codex` can add: the hooks (hooks.json) and the
/// proxy provider (config.toml).
pub fn codex() -> ExitCode {
    let p = match places() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let home = codex::codex_home(std::env::var_os("CODEX_HOME").as_deref(), &p.home);
    let both = codex::revert(&home).and_then(|mut out| {
        let proxy = codex_proxy::revert(&home)?;
        out.done.extend(proxy.done);
        out.todo.extend(proxy.todo);
        Ok(out)
    });
    report(both)
}

pub fn openclaw() -> ExitCode {
    match places() {
        Ok(p) => report(openclaw::revert(&openclaw::config_path(
            std::env::var_os("OPENCLAW_CONFIG_PATH").as_deref(),
            &p.home,
        ))),
        Err(e) => fail(e),
    }
}
