//! The real agents end to end through the proxy: Claude Code (`claude -p`)
//! and Codex (`codex exec`), pinned npm versions installed by `.ci/run` into
//! `.ci/agents`, each pointed at `parallax serve --mode proxy` with the
//! shipped rules, in front of tests/python/fake_upstream.py, all inside a
//! loopback-only network namespace. The fake asks for `curl … | sh` (a
//! payload that deletes a canary directory; blocked by
//! dangerous-curl-pipe-shell) and a benign `touch` in one answer.
//!
//! tests/agents/e2e.py does the work (its header has the exact commands);
//! each test runs it twice: straight at the fake (control: the canary must
//! be destroyed, so the payload really would have run) and through the
//! proxy (the canary survives, the benign marker exists, the agent ends
//! normally, the audit log and /metrics show the block at door proxy).
//!
//! Without the agents, python3, `ip` or a permitted `unshare --net` (root), each
//! test says so in one line on stderr and passes; with `CI=true` that fails
//! instead. `PARALLAX_AGENTS_BIN` overrides where the agents are looked for.

mod support;

use serde_json::Value;
use std::ffi::OsStr;
use std::path::PathBuf;
use support::agents::{agents_bin, can_run};

fn parallax_bin() -> PathBuf {
    match std::env::var_os("PARALLAX_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => PathBuf::from(bin),
        None => PathBuf::from(env!("CARGO_BIN_EXE_parallax")),
    }
}

/// One driver run; its summary (the last line of its stdout).
fn drive(agent: &str, mode: &str) -> Value {
    let (parallax, bin) = (parallax_bin(), agents_bin());
    let args: [&OsStr; 8] = [
        "--agent".as_ref(),
        agent.as_ref(),
        "--mode".as_ref(),
        mode.as_ref(),
        "--parallax".as_ref(),
        parallax.as_os_str(),
        "--agents-bin".as_ref(),
        bin.as_os_str(),
    ];
    support::agents::drive("e2e.py", &args, &format!("{agent} {mode}"))
}

fn blocked_command_never_runs(agent: &str) {
    if !can_run("agents e2e", agent) {
        return;
    }
    let control = drive(agent, "control");
    assert_eq!(control["canary_intact"], false, "{control}");
    assert_eq!(control["marker"], true, "{control}");

    let proxied = drive(agent, "proxy");
    assert_eq!(proxied["exit"], 0, "{proxied}");
    assert_eq!(proxied["canary_intact"], true, "{proxied}");
    assert_eq!(proxied["marker"], true, "{proxied}");
    assert_eq!(proxied["audit_blocks"], 1, "{proxied}");
    assert_eq!(proxied["metrics_proxy_blocks"], "1", "{proxied}");
}

#[test]
fn claude_code_blocked_command_never_runs() {
    blocked_command_never_runs("claude");
}

#[test]
fn codex_blocked_command_never_runs() {
    blocked_command_never_runs("codex");
}

/// Codex configured by `parallax setup codex --mode proxy` over the user's
/// own provider (mode `setup` of e2e.py): blocked through the proxy, the
/// benign call runs, and `parallax revert codex` restores config.toml byte
/// for byte.
#[test]
fn codex_through_setup_codex_mode_proxy() {
    if !can_run("agents e2e", "codex") {
        return;
    }
    let s = drive("codex", "setup");
    assert_eq!(s["exit"], 0, "{s}");
    assert_eq!(s["canary_intact"], true, "{s}");
    assert_eq!(s["marker"], true, "{s}");
    assert_eq!(s["audit_blocks"], 1, "{s}");
    assert_eq!(s["restored"], true, "{s}");
}
