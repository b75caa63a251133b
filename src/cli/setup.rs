//! `parallax setup claudecode|codex`: Parallax's hooks into the agent's
//! settings (src/setup/), then what changed and what is left to do.

use super::fail;
use crate::setup::{
    claudecode, codex, codex_mcp, codex_proxy, mcp_servers, openclaw, openclaw_proxy, Mode, Outcome,
};
use std::path::PathBuf;
use std::process::ExitCode;

/// `$HOME`, the current directory and this binary.
pub(crate) struct Places {
    pub home: PathBuf,
    pub project: PathBuf,
    pub exe: PathBuf,
}

pub(crate) fn places() -> Result<Places, String> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or("HOME is not set: cannot find the user's settings")?;
    let project =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("cannot tell where this parallax binary is: {e}"))?;
    Ok(Places { home, project, exe })
}

pub fn claudecode(
    scope: claudecode::Scope,
    url: String,
    fail_closed: bool,
    transport: claudecode::Transport,
    mcp: bool,
) -> ExitCode {
    let p = match places() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    if mcp {
        return report(mcp_servers::setup_claude(
            scope, &p.home, &p.project, &p.exe,
        ));
    }
    report(claudecode::setup(&claudecode::Options {
        scope,
        url,
        fail_closed,
        transport,
        exe: p.exe,
        home: p.home,
        project: p.project,
    }))
}

pub fn codex(url: String, fail_closed: bool, mode: Mode, mcp: bool) -> ExitCode {
    let p = match places() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let codex_home = codex::codex_home(std::env::var_os("CODEX_HOME").as_deref(), &p.home);
    if mcp {
        return report(codex_mcp::setup(&codex_home, &p.exe));
    }
    match mode {
        Mode::Hooks => report(codex::setup(&codex::Options {
            url,
            fail_closed,
            exe: p.exe,
            codex_home,
        })),
        Mode::Proxy => report(codex_proxy::setup(&codex_home, &url)),
    }
}

pub fn openclaw(
    url: String,
    fail_open: bool,
    mode: openclaw_proxy::OpenclawMode,
    api: openclaw_proxy::Api,
    model: Option<String>,
    key_env: Option<String>,
) -> ExitCode {
    let p = match places() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let config =
        openclaw::config_path(std::env::var_os("OPENCLAW_CONFIG_PATH").as_deref(), &p.home);
    match mode {
        openclaw_proxy::OpenclawMode::Plugin => report(openclaw::setup(&config, &url, fail_open)),
        openclaw_proxy::OpenclawMode::Proxy => {
            let Some(model) = model.filter(|m| !m.trim().is_empty()) else {
                return fail("--mode proxy needs --model ID (the model OpenClaw asks for)");
            };
            report(openclaw_proxy::setup(
                &config,
                &openclaw_proxy::Options {
                    url,
                    api,
                    key_env: key_env.unwrap_or_else(|| api.default_key_env().to_owned()),
                    model,
                },
            ))
        }
    }
}

/// Prints an outcome; the exit status of the command.
pub(crate) fn report(outcome: Result<Outcome, String>) -> ExitCode {
    match outcome {
        Ok(o) => {
            for line in &o.done {
                println!("{line}");
            }
            if !o.todo.is_empty() {
                println!("still to do:");
                for line in &o.todo {
                    println!("  - {line}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
