//! Claude Code 2.1.328 as a real MCP client through `parallax mcp wrap`:
//! `parallax setup claudecode --mcp --scope user` rewrites a stdio server
//! in a fresh HOME's `~/.claude.json`, the scripted fake model asks for a
//! dangerous MCP tool call and a benign one, all inside a loopback-only
//! network namespace. tests/agents/mcp_e2e.py does the work (its header
//! has the details): the dangerous call is refused with the rule's reason
//! and never reaches the server (its own call log), the benign one's
//! result reaches the model unchanged, revert gives the entry back.
//!
//! Needs what tests/agent_hooks.rs needs plus the SDK venv (`.venv`, or
//! `PARALLAX_PYTHON_VENV`) with `mcp`; without them one `skipped:` line on
//! stderr, a failure under `CI=true`.

mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use support::agents::{agents_bin, can_run, runs, ROOT};

fn venv_python() -> PathBuf {
    let venv = std::env::var_os("PARALLAX_PYTHON_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".venv"));
    Path::new(ROOT).join(venv).join("bin/python")
}

#[test]
fn claude_code_mcp_calls_go_through_the_gateway() {
    if !can_run("agent mcp e2e", "claude") {
        return;
    }
    let python = venv_python();
    let py = python.display().to_string();
    if !runs(&[py.as_str(), "-c", "import mcp.server.mcpserver"]) {
        let msg = format!(
            "agent mcp e2e (claude) — no venv with the `mcp` SDK at {py} (.ci/run creates it)"
        );
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}; with CI=true this fails instead of being skipped");
        }
        eprintln!("skipped: {msg}");
        return;
    }
    let bin = agents_bin();
    let args: [&OsStr; 6] = [
        "--parallax".as_ref(),
        env!("CARGO_BIN_EXE_parallax").as_ref(),
        "--agents-bin".as_ref(),
        bin.as_os_str(),
        "--python".as_ref(),
        python.as_os_str(),
    ];
    let s = support::agents::drive("mcp_e2e.py", &args, "claude mcp wrap");
    assert_eq!(s["exit"], 0, "{s}");
    assert_eq!(s["restored"], true, "{s}");
    assert_eq!(
        s["server_calls"].as_array().map(Vec::len),
        Some(1),
        "only the benign call reaches the server: {s}"
    );
}
