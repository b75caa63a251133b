//! Golden files for `setup claudecode --mcp` and `setup codex --mcp`
//! (tests/fixtures/setup/*-mcp-*): from no file and from a user's file, a
//! second setup changing nothing, revert restoring the file byte for byte.
//! Regenerate with `PARALLAX_UPDATE_GOLDEN=1` and review the diff.

use super::claudecode::Scope;
use super::golden::{fixtures, golden_file as golden, tmp};
use super::{backup_path, codex_mcp, codex_proxy, mcp_servers, Outcome};
use std::path::{Path, PathBuf};

const EXE: &str = "/opt/parallax/bin/parallax";

/// setup → golden, setup again → unchanged, revert → the user's bytes.
fn round_trip(
    golden_name: &str,
    file: &Path,
    user: &[u8],
    setup: &dyn Fn() -> Result<Outcome, String>,
    revert: &dyn Fn() -> Result<Outcome, String>,
) -> Outcome {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, user).unwrap();
    let out = setup().unwrap();
    let written = std::fs::read(file).unwrap();
    golden(golden_name, &written);
    assert!(backup_path(file).exists(), "{golden_name}: no backup");
    let again = setup().unwrap();
    assert!(again.done[0].contains("unchanged"), "{:?}", again.done);
    assert_eq!(std::fs::read(file).unwrap(), written);
    let back = revert().unwrap();
    assert!(
        back.done.iter().any(|l| l.contains("byte for byte")),
        "{:?}",
        back.done
    );
    assert_eq!(std::fs::read(file).unwrap(), user, "{golden_name}: revert");
    assert!(!backup_path(file).exists(), "{golden_name}: backup left");
    let nothing = revert().unwrap();
    assert!(nothing.done[0].contains("unchanged"), "{:?}", nothing.done);
    out
}

#[test]
fn claude_code_project_mcp_json() {
    let dir = tmp("mcp-claude-project");
    let (home, proj) = (dir.join("home"), dir.join("proj"));
    let user = std::fs::read(fixtures().join("claudecode-mcp-user.json")).unwrap();
    let file = proj.join(".mcp.json");
    let out = round_trip(
        "claudecode-mcp-project.golden.json",
        &file,
        &user,
        &|| mcp_servers::setup_claude(Scope::Project, &home, &proj, Path::new(EXE)),
        &|| mcp_servers::revert_claude(Scope::Project, &home, &proj),
    );
    assert!(
        out.done.iter().any(|l| l.contains("files, notes")),
        "{:?}",
        out.done
    );
    // The HTTP server is named, with the way to guard it by hand.
    assert!(
        out.todo
            .iter()
            .any(|l| l.contains("`sentry`") && l.contains("parallax mcp proxy --upstream")),
        "{:?}",
        out.todo
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn claude_code_user_and_local_scopes_in_claude_json() {
    let dir = tmp("mcp-claude-json");
    let home = dir.join("home");
    let proj = PathBuf::from("/home/me/proj");
    let user = std::fs::read(fixtures().join("claude-json-user.json")).unwrap();
    let file = home.join(".claude.json");
    for (scope, name) in [
        (Scope::User, "claude-json-user.golden.json"),
        (Scope::Local, "claude-json-local.golden.json"),
    ] {
        round_trip(
            name,
            &file,
            &user,
            &|| mcp_servers::setup_claude(scope, &home, &proj, Path::new(EXE)),
            &|| mcp_servers::revert_claude(scope, &home, &proj),
        );
    }
    // Claude Code rewrites ~/.claude.json all the time: what it changed
    // after setup survives revert, and only the wrap is taken out.
    mcp_servers::setup_claude(Scope::User, &home, &proj, Path::new(EXE)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("\"numStartups\": 12", "\"numStartups\": 13"),
    )
    .unwrap();
    mcp_servers::revert_claude(Scope::User, &home, &proj).unwrap();
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.contains("\"numStartups\": 13"), "{after}");
    assert!(!after.contains("\"wrap\""), "{after}");
    assert!(after.contains("\"command\": \"uvx\""), "{after}");
    assert!(backup_path(&file).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn claude_code_without_a_file_writes_nothing() {
    let dir = tmp("mcp-claude-none");
    let (home, proj) = (dir.join("home"), dir.join("proj"));
    let out = mcp_servers::setup_claude(Scope::Project, &home, &proj, Path::new(EXE)).unwrap();
    assert!(out.done[0].contains("does not exist"), "{:?}", out.done);
    assert!(!proj.join(".mcp.json").exists());
    assert!(!out.todo.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn claude_code_refuses_what_it_cannot_parse() {
    let dir = tmp("mcp-claude-bad");
    let (home, proj) = (dir.join("home"), dir.join("proj"));
    let file = proj.join(".mcp.json");
    std::fs::create_dir_all(&proj).unwrap();
    for bad in [&b"{\"mcpServers\": "[..], b"[]", b"{\"mcpServers\": []}"] {
        std::fs::write(&file, bad).unwrap();
        let e =
            mcp_servers::setup_claude(Scope::Project, &home, &proj, Path::new(EXE)).unwrap_err();
        assert!(
            e.contains(".mcp.json") && e.contains("nothing written"),
            "{e}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), bad);
        assert!(!backup_path(&file).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn codex_mcp_servers() {
    let dir = tmp("mcp-codex");
    let home = dir.join("codex-home");
    let user = std::fs::read(fixtures().join("codex-mcp-user.toml")).unwrap();
    let file = codex_proxy::config_path(&home);
    let out = round_trip(
        "codex-mcp-existing.golden.toml",
        &file,
        &user,
        &|| codex_mcp::setup(&home, Path::new(EXE)),
        &|| codex_mcp::revert(&home),
    );
    assert!(
        out.done.iter().any(|l| l.contains("files, time")),
        "{:?}",
        out.done
    );
    assert!(
        out.todo.iter().any(|l| l.contains("`docs`")),
        "{:?}",
        out.todo
    );
    // What Codex reads: the wrapped command line.
    codex_mcp::setup(&home, Path::new(EXE)).unwrap();
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let files = &v["mcp_servers"]["files"];
    assert_eq!(files["command"].as_str(), Some(EXE));
    let args: Vec<&str> = files["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        args,
        [
            "mcp",
            "wrap",
            "--name",
            "files",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/srv/data"
        ]
    );
    assert_eq!(files["env"]["LOG"].as_str(), Some("debug"));
    // With the proxy provider on top, revert of both ends byte for byte.
    codex_proxy::setup(&home, "http://127.0.0.1:9920").unwrap();
    codex_proxy::revert(&home).unwrap();
    codex_mcp::revert(&home).unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), user);
    assert!(!backup_path(&file).exists());
    // No config.toml: nothing written.
    std::fs::remove_file(&file).unwrap();
    let none = codex_mcp::setup(&home, Path::new(EXE)).unwrap();
    assert!(none.done[0].contains("does not exist"), "{:?}", none.done);
    assert!(!file.exists());
    for bad in [&b"[mcp_servers\n"[..], b"mcp_servers = 3\n"] {
        std::fs::write(&file, bad).unwrap();
        let e = codex_mcp::setup(&home, Path::new(EXE)).unwrap_err();
        assert!(
            e.contains("config.toml") && e.contains("nothing written"),
            "{e}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), bad);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
