//! The real agents end to end through Parallax's hooks: Claude Code
//! (`claude -p`) and Codex (`codex exec --dangerously-bypass-hook-trust`),
//! installed by `.ci/run` into `.ci/agents`, set up with `parallax setup`
//! in a fresh HOME over a settings file the user already had, talking to
//! tests/python/fake_upstream.py, all inside a loopback-only network
//! namespace. The fake asks for `curl … | sh` (a payload that deletes a
//! canary directory; blocked by dangerous-curl-pipe-shell) and a benign
//! `touch` in one answer.
//!
//! tests/agents/hooks_e2e.py does the work (its header has the details):
//! with the server up, the canary survives, the marker exists, the model is
//! told the rule, the audit log has the block and the benign allow at door
//! `hook` with the framework named; with the server down, the hook's
//! in-process fallback still blocks. Each run ends with `parallax revert`
//! restoring the settings file byte for byte (absent, for a run that
//! starts without one).
//!
//! Skipped with one line on stderr without the agents, python3, `ip` or a
//! permitted `unshare --net` (root); failing instead under `CI=true`.
//! `PARALLAX_AGENTS_BIN` overrides where the agents are looked for.

mod support;

use serde_json::Value;
use std::ffi::OsStr;
use support::agents::{agents_bin, can_run};

/// One driver run; its summary (the last line of its stdout).
fn drive(agent: &str, mode: &str, start: &str) -> Value {
    let bin = agents_bin();
    let args: [&OsStr; 10] = [
        "--agent".as_ref(),
        agent.as_ref(),
        "--mode".as_ref(),
        mode.as_ref(),
        "--start".as_ref(),
        start.as_ref(),
        "--parallax".as_ref(),
        env!("CARGO_BIN_EXE_parallax").as_ref(),
        "--agents-bin".as_ref(),
        bin.as_os_str(),
    ];
    support::agents::drive(
        "hooks_e2e.py",
        &args,
        &format!("{agent} hooks {mode} ({start})"),
    )
}

fn blocked_through_hooks(agent: &str) {
    if !can_run("agent hooks e2e", agent) {
        return;
    }
    for (mode, start) in [
        ("hook", "existing"),
        ("hook", "empty"),
        ("down", "existing"),
    ] {
        let s = drive(agent, mode, start);
        assert_eq!(s["exit"], 0, "{s}");
        assert_eq!(s["canary_intact"], true, "{s}");
        assert_eq!(s["marker"], true, "{s}");
        assert_eq!(s["restored"], true, "{s}");
        if mode == "hook" {
            let framework = if agent == "claude" {
                "claudecode"
            } else {
                "codex"
            };
            assert_eq!(s["audit_frameworks"], serde_json::json!([framework]), "{s}");
        }
    }
}

#[test]
fn claude_code_hooks_block_and_revert() {
    blocked_through_hooks("claude");
}

#[test]
fn codex_hooks_block_and_revert() {
    blocked_through_hooks("codex");
}
