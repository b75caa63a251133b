//! A real Claude Code 2.1.328 run whose command hook waits on a human
//! approval, in a loopback-only network namespace: `parallax serve` with an
//! `action: approve` rule for approver `alice`, `parallax setup claudecode`,
//! and the fake model asking for two Bash commands the rule holds. While
//! the hooks wait, the test approves one over HTTP with alice's token and
//! denies the other: the approved command runs, the denied one never does,
//! the model is told who denied it, the agent's own token cannot decide
//! (403), and the audit log has both transitions. tests/agents/
//! approval_e2e.py does the work (its header has the details).
//!
//! Skipped with one line on stderr without the agent, python3, `ip` or a
//! permitted `unshare --net` (root); failing instead under `CI=true`.

mod support;

use std::ffi::OsStr;
use support::agents::{agents_bin, can_run};

#[test]
fn claude_code_hook_waits_for_the_approval() {
    if !can_run("agent approvals e2e", "claude") {
        return;
    }
    let bin = agents_bin();
    let args: [&OsStr; 4] = [
        "--parallax".as_ref(),
        env!("CARGO_BIN_EXE_parallax").as_ref(),
        "--agents-bin".as_ref(),
        bin.as_os_str(),
    ];
    let s = support::agents::drive("approval_e2e.py", &args, "claude hook approval");
    assert_eq!(s["exit"], 0, "{s}");
    assert_eq!(s["approved_ran"], true, "{s}");
    assert_eq!(s["denied_ran"], false, "{s}");
    assert_eq!(s["agent_token_decide_status"], 403, "{s}");
}
