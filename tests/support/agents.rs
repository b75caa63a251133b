//! What the real-agent suites (tests/agents.rs, tests/agent_hooks.rs)
//! share: where the agents installed by `.ci/run` are, whether this machine
//! can run them in a loopback-only network namespace (a skip line, or a
//! failure under `CI=true`), and running a Python driver to its summary.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `PARALLAX_AGENTS_BIN` (relative to the repository), else `.ci/agents`'s
/// npm bin folder.
pub fn agents_bin() -> PathBuf {
    match std::env::var_os("PARALLAX_AGENTS_BIN").filter(|v| !v.is_empty()) {
        Some(dir) => Path::new(ROOT).join(dir),
        None => Path::new(ROOT).join(".ci/agents/node_modules/.bin"),
    }
}

/// Whether `cmd` runs and exits 0 within a few seconds.
pub fn runs(cmd: &[&str]) -> bool {
    Command::new("timeout")
        .arg("10")
        .args(cmd)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What is missing for `agent` to run here, if anything.
fn missing(agent: &str) -> Option<String> {
    let bin = agents_bin().join(agent);
    if !bin.is_file() {
        return Some(format!(
            "{} not installed (.ci/run installs it; set PARALLAX_AGENTS_BIN)",
            bin.display()
        ));
    }
    if !runs(&["python3", "-c", "pass"]) {
        return Some("python3 not found".into());
    }
    if !runs(&["unshare", "--net", "--", "ip", "link", "set", "lo", "up"]) {
        return Some(
            "`unshare --net` then `ip link set lo up` failed (needs root and iproute2)".into(),
        );
    }
    None
}

/// `false` once a line on stderr has said why `suite`'s test of `agent` is
/// skipped; panics instead under `CI=true`.
pub fn can_run(suite: &str, agent: &str) -> bool {
    let Some(why) = missing(agent) else {
        return true;
    };
    let msg = format!("{suite} ({agent}) — {why}");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}; with CI=true this fails instead of being skipped");
    }
    // Straight to the process's stderr: the harness hides a passing test's
    // captured output.
    let _ = writeln!(std::io::stderr(), "skipped: {msg}");
    false
}

/// Runs a driver (`driver` under tests/agents/, then `args`) bounded by
/// `timeout`, asserts it succeeded with no failures, and returns its
/// summary (the last line of its stdout). `label` names the run.
pub fn drive(driver: &str, args: &[&std::ffi::OsStr], label: &str) -> Value {
    let out = Command::new("timeout")
        .args(["-k", "5", "300", "python3"])
        .arg(Path::new(ROOT).join("tests/agents").join(driver))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run tests/agents/{driver}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    assert!(
        out.status.success() && summary["failures"] == Value::Array(vec![]),
        "{label} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let _ = writeln!(
        std::io::stderr(),
        "{label}: agent run {} s",
        summary["seconds"]
    );
    summary
}
