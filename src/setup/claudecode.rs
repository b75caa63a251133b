//! `parallax setup|revert claudecode`: Parallax's hooks in a Claude Code
//! settings file — `<project>/.claude/settings.json` (scope project),
//! `<project>/.claude/settings.local.json` (local) or
//! `~/.claude/settings.json` (user) — on PreToolUse and PostToolUse (every
//! tool: matcher `*`) and UserPromptSubmit.

use super::hooks_file::{self, Group};
use super::json::Json;
use super::{hook_command, Outcome};
use std::path::{Path, PathBuf};

pub const FRAMEWORK: &str = "claudecode";
/// Seconds Claude Code gives the hook: the approval wait, the server's
/// timeout and the in-process fallback fit inside it.
pub const HOOK_TIMEOUT_S: u64 = crate::hooks::client::HOOK_TIMEOUT_S;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// `<project>/.claude/settings.json`, shared with the project.
    Project,
    /// `~/.claude/settings.json`, every project of this user.
    User,
    /// `<project>/.claude/settings.local.json`, this checkout only.
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// A command hook: `parallax hook claudecode` (falls back to the
    /// built-in rules when the server is down).
    Command,
    /// An HTTP hook to `POST /hooks/claudecode` (fails open when the
    /// server is down).
    Http,
}

pub struct Options {
    pub scope: Scope,
    pub url: String,
    pub fail_closed: bool,
    pub transport: Transport,
    /// The parallax binary the command hook runs.
    pub exe: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
}

pub fn settings_path(scope: Scope, home: &Path, project: &Path) -> PathBuf {
    match scope {
        Scope::Project => project.join(".claude/settings.json"),
        Scope::Local => project.join(".claude/settings.local.json"),
        Scope::User => home.join(".claude/settings.json"),
    }
}

pub fn groups(opts: &Options) -> Vec<Group> {
    let handler = match opts.transport {
        Transport::Command => Json::obj(vec![
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
        ]),
        Transport::Http => Json::obj(vec![
            ("type", Json::str("http")),
            (
                "url",
                Json::String(format!(
                    "{}/hooks/{FRAMEWORK}",
                    opts.url.trim_end_matches('/')
                )),
            ),
            ("timeout", Json::Number(HOOK_TIMEOUT_S.into())),
        ]),
    };
    [
        ("PreToolUse", Some("*")),
        ("PostToolUse", Some("*")),
        ("UserPromptSubmit", None),
    ]
    .into_iter()
    .map(|(event, matcher)| Group {
        event,
        matcher,
        handler: handler.clone(),
    })
    .collect()
}

pub fn setup(opts: &Options) -> Result<Outcome, String> {
    let path = settings_path(opts.scope, &opts.home, &opts.project);
    let mut out = hooks_file::apply(&path, &groups(opts), FRAMEWORK)?;
    match opts.transport {
        Transport::Command => {
            out.todo.push(format!(
                "run `parallax serve` at {} for audited decisions with every rule; while it is \
                 down the hook decides with the rules built into parallax{}",
                opts.url,
                if opts.fail_closed {
                    " — no: with --fail-closed it denies every tool call and prompt"
                } else {
                    " (temporal rules skipped)"
                }
            ));
            if std::env::var_os("PARALLAX_AUTH_TOKEN").is_none() {
                out.todo.push(
                    "if the server sets server.auth_token, export PARALLAX_AUTH_TOKEN where \
                     Claude Code runs"
                        .into(),
                );
            }
        }
        Transport::Http => out.todo.push(format!(
            "run `parallax serve` at {}: an HTTP hook FAILS OPEN — while the server is down or \
             erroring, Claude Code runs every tool unchecked (use --transport command for a hook \
             that falls back to the built-in rules); the HTTP hook sends no token, so the server \
             must not set server.auth_token",
            opts.url
        )),
    }
    out.todo
        .push("restart Claude Code (running sessions keep the hooks they started with)".into());
    Ok(out)
}

pub fn revert(scope: Scope, home: &Path, project: &Path) -> Result<Outcome, String> {
    hooks_file::revert(&settings_path(scope, home, project), FRAMEWORK)
}
