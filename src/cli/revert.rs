//! `parallax revert claudecode|codex`: takes out exactly what `setup` put
//! in (src/setup/).

use super::fail;
use super::setup::{places, report};
use crate::setup::{
    claudecode, codex, codex_mcp, codex_proxy, mcp_servers, openclaw, openclaw_proxy, Outcome,
};
use std::process::ExitCode;

/// The hooks of the scope's settings file and the scope's wrapped MCP
/// servers.
pub fn claudecode(scope: claudecode::Scope) -> ExitCode {
    match places() {
        Ok(p) => report(
            claudecode::revert(scope, &p.home, &p.project)
                .and_then(|out| join(out, mcp_servers::revert_claude(scope, &p.home, &p.project)?)),
        ),
        Err(e) => fail(e),
    }
}

fn join(mut out: Outcome, more: Outcome) -> Result<Outcome, String> {
    out.done.extend(more.done);
    out.todo.extend(more.todo);
    Ok(out)
}

/// All that `setup codex` can add: the hooks (hooks.json), the proxy
/// provider and the wrapped MCP servers (config.toml).
pub fn codex() -> ExitCode {
    let p = match places() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let home = codex::codex_home(std::env::var_os("CODEX_HOME").as_deref(), &p.home);
    let all = codex::revert(&home)
        .and_then(|out| join(out, codex_proxy::revert(&home)?))
        .and_then(|out| join(out, codex_mcp::revert(&home)?));
    report(all)
}

/// Both of what `setup openclaw` can add: the plugin and the proxy
/// provider.
pub fn openclaw() -> ExitCode {
    match places() {
        Ok(p) => {
            let config =
                openclaw::config_path(std::env::var_os("OPENCLAW_CONFIG_PATH").as_deref(), &p.home);
            report(
                openclaw::revert(&config)
                    .and_then(|out| join(out, openclaw_proxy::revert(&config)?)),
            )
        }
        Err(e) => fail(e),
    }
}
