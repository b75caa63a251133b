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

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn agents_bin() -> PathBuf {
    match std::env::var_os("PARALLAX_AGENTS_BIN").filter(|v| !v.is_empty()) {
        Some(dir) => Path::new(ROOT).join(dir),
        None => Path::new(ROOT).join(".ci/agents/node_modules/.bin"),
    }
}

fn runs(cmd: &[&str]) -> bool {
    Command::new("timeout")
        .arg("10")
        .args(cmd)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn can_run(agent: &str) -> bool {
    let bin = agents_bin().join(agent);
    let why = if !bin.is_file() {
        format!(
            "{} not installed (.ci/run installs it; set PARALLAX_AGENTS_BIN)",
            bin.display()
        )
    } else if !runs(&["python3", "-c", "pass"]) {
        "python3 not found".into()
    } else if !runs(&["unshare", "--net", "--", "ip", "link", "set", "lo", "up"]) {
        "`unshare --net` then `ip link set lo up` failed (needs root and iproute2)".into()
    } else {
        return true;
    };
    let msg = format!("agent hooks e2e ({agent}) — {why}");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}; with CI=true this fails instead of being skipped");
    }
    let _ = writeln!(std::io::stderr(), "skipped: {msg}");
    false
}

/// One driver run; its summary (the last line of its stdout).
fn drive(agent: &str, mode: &str, start: &str) -> Value {
    let out = Command::new("timeout")
        .args(["-k", "5", "300", "python3"])
        .arg(Path::new(ROOT).join("tests/agents/hooks_e2e.py"))
        .args(["--agent", agent, "--mode", mode, "--start", start])
        .arg("--parallax")
        .arg(env!("CARGO_BIN_EXE_parallax"))
        .arg("--agents-bin")
        .arg(agents_bin())
        .output()
        .expect("run tests/agents/hooks_e2e.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    assert!(
        out.status.success() && summary["failures"] == Value::Array(vec![]),
        "{agent} {mode} {start} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let _ = writeln!(
        std::io::stderr(),
        "{agent} hooks {mode} ({start}): agent run {} s",
        summary["seconds"]
    );
    summary
}

fn blocked_through_hooks(agent: &str) {
    if !can_run(agent) {
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
