//! `parallax setup|revert codex`: Parallax's hooks in Codex's
//! `$CODEX_HOME/hooks.json` (`~/.codex/hooks.json` by default), on
//! PreToolUse, PostToolUse and UserPromptSubmit. No matcher: Codex runs a
//! group without one for every tool.

use super::hooks_file::{self, Group};
use super::json::Json;
use super::{hook_command, Outcome};
use std::path::{Path, PathBuf};

pub const FRAMEWORK: &str = "codex";
pub const HOOK_TIMEOUT_S: u64 = crate::hooks::client::HOOK_TIMEOUT_S;

pub struct Options {
    pub url: String,
    pub fail_closed: bool,
    pub exe: PathBuf,
    pub codex_home: PathBuf,
}

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home(env: Option<&std::ffi::OsStr>, home: &Path) -> PathBuf {
    match env.filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => home.join(".codex"),
    }
}

pub fn hooks_path(codex_home: &Path) -> PathBuf {
    codex_home.join("hooks.json")
}

pub fn groups(opts: &Options) -> Vec<Group> {
    let handler = Json::obj(vec![
        ("type", Json::str("command")),
        (
            "command",
            Json::String(hook_command(
                &opts.exe,
                FRAMEWORK,
                &opts.url,
                opts.fail_closed,
            )),
        ),
        ("timeout", Json::Number(HOOK_TIMEOUT_S.into())),
    ]);
    ["PreToolUse", "PostToolUse", "UserPromptSubmit"]
        .into_iter()
        .map(|event| Group {
            event,
            matcher: None,
            handler: handler.clone(),
        })
        .collect()
}

pub fn setup(opts: &Options) -> Result<Outcome, String> {
    let path = hooks_path(&opts.codex_home);
    let mut out = hooks_file::apply(&path, &groups(opts), FRAMEWORK)?;
    out.todo.push(
        "Codex skips hooks it has not been told to trust: start `codex` and trust the new \
         hooks when it asks; headless `codex exec` runs you control need \
         --dangerously-bypass-hook-trust"
            .into(),
    );
    out.todo.push(format!(
        "run `parallax serve` at {} for audited decisions with every rule; while it is down the \
         hook {}",
        opts.url,
        if opts.fail_closed {
            "denies every command and prompt (--fail-closed)"
        } else {
            "decides with the rules built into parallax (temporal rules skipped)"
        }
    ));
    Ok(out)
}

pub fn revert(codex_home: &Path) -> Result<Outcome, String> {
    hooks_file::revert(&hooks_path(codex_home), FRAMEWORK)
}
