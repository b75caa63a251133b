//! `parallax setup claudecode --mcp` / `setup codex --mcp`: every stdio MCP
//! server the agent starts is started through `parallax mcp wrap` instead,
//! so each `tools/call`, `tools/list` and result passes the gateway.
//!
//! The rewrite keeps everything it needs to undo itself inside the entry:
//! `{"command": "npx", "args": ["-y", "srv"]}` becomes
//! `{"command": "<parallax>", "args": ["mcp", "wrap", "--name", "<NAME>",
//! "--", "npx", "-y", "srv"]}` — the original command line is what follows
//! `--`. Revert needs no side file and works even after the user edited
//! other entries; a second setup unwraps and wraps again, so it changes
//! nothing. `env`, `cwd`, `type` and every other member stay as written.
//!
//! HTTP (and SSE) servers are left alone and named in the output:
//! `parallax mcp proxy` is a listener the user must keep running (setup
//! cannot start one per server), and pointing the agent at a local URL
//! would move the origin that remote OAuth sign-in and tokens are bound to.
//! The output gives the command to put one behind the proxy by hand.
//!
//! This file holds the command-line rewrite both agents share and the
//! Claude Code files (`.mcp.json`, `~/.claude.json`); Codex's TOML is in
//! [`super::codex_mcp`].

use super::claudecode::Scope;
use super::hooks_file::parse;
use super::json::Json;
use super::{read_optional, write_keeping_backup, Outcome};
use std::path::{Path, PathBuf};

/// The `parallax` arguments before the server's command line.
fn wrap_prefix(name: &str) -> [String; 5] {
    [
        "mcp".into(),
        "wrap".into(),
        "--name".into(),
        name.into(),
        "--".into(),
    ]
}

/// A server's command line, `command` and `args`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandLine {
    pub command: String,
    pub args: Vec<String>,
}

/// Whether `line` is one setup wrote: `<…parallax…> mcp wrap … -- CMD …`;
/// then the original command line.
pub fn unwrap(line: &CommandLine) -> Option<CommandLine> {
    let exe_name = Path::new(&line.command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if !exe_name.starts_with("parallax") {
        return None;
    }
    if line.args.len() < 3 || line.args[0] != "mcp" || line.args[1] != "wrap" {
        return None;
    }
    let dash = line.args.iter().position(|a| a == "--")?;
    let command = line.args.get(dash + 1)?.clone();
    Some(CommandLine {
        command,
        args: line.args[dash + 2..].to_vec(),
    })
}

/// `line` run through `exe mcp wrap --name NAME --`; a line already
/// wrapped is unwrapped first, so wrapping twice is wrapping once.
pub fn wrap(line: &CommandLine, exe: &Path, name: &str) -> CommandLine {
    let inner = unwrap(line).unwrap_or_else(|| line.clone());
    let mut args: Vec<String> = wrap_prefix(name).into();
    args.push(inner.command);
    args.extend(inner.args);
    CommandLine {
        command: exe.display().to_string(),
        args,
    }
}

/// What a setup found in one file, for the output.
#[derive(Debug, Default)]
pub struct Tally {
    /// Servers now started through `mcp wrap`.
    pub wrapped: Vec<String>,
    /// HTTP/SSE servers, with their URL, left as they are.
    pub remote: Vec<(String, String)>,
    /// Entries that are neither (no `command`, no `url`), left alone.
    pub unknown: Vec<String>,
}

impl Tally {
    /// The lines the user reads: what was wrapped, what was not and why.
    pub fn report(&self, file: &Path, out: &mut Outcome) {
        if self.wrapped.is_empty() && self.remote.is_empty() && self.unknown.is_empty() {
            out.todo.push(format!(
                "{} lists no MCP servers: add them as usual and run this setup again",
                file.display()
            ));
        }
        if !self.wrapped.is_empty() {
            out.done.push(format!(
                "stdio MCP servers started through `parallax mcp wrap`: {}",
                self.wrapped.join(", ")
            ));
        }
        for (name, url) in &self.remote {
            out.todo.push(format!(
                "`{name}` is an HTTP MCP server ({url}) and was left unchanged: setup does not \
                 rewrite remote servers (the proxy is a listener you keep running, and a local \
                 URL would move the origin its sign-in is bound to). To guard it, run `parallax \
                 mcp proxy --upstream {url} --name {name} --port PORT` and point the entry at \
                 http://127.0.0.1:PORT"
            ));
        }
        for name in &self.unknown {
            out.todo.push(format!(
                "`{name}` has neither `command` nor `url`; left unchanged"
            ));
        }
    }
}

/// Where a Claude Code scope keeps its MCP servers: the file, and the path
/// of keys to the `mcpServers` object inside it.
pub fn claude_location(scope: Scope, home: &Path, project: &Path) -> (PathBuf, Vec<String>) {
    match scope {
        Scope::Project => (project.join(".mcp.json"), vec!["mcpServers".into()]),
        Scope::User => (home.join(".claude.json"), vec!["mcpServers".into()]),
        Scope::Local => (
            home.join(".claude.json"),
            vec![
                "projects".into(),
                project.display().to_string(),
                "mcpServers".into(),
            ],
        ),
    }
}

/// The `mcpServers` object at `keys` inside `root`, if there is one.
fn servers_mut<'a>(
    path: &Path,
    root: &'a mut Json,
    keys: &[String],
) -> Result<Option<&'a mut Vec<(String, Json)>>, String> {
    let mut node = root;
    for k in keys {
        match node.get_mut(k) {
            Some(next) => node = next,
            None => return Ok(None),
        }
    }
    match node {
        Json::Object(m) => Ok(Some(m)),
        _ => Err(format!(
            "{}: `{}` is not an object; nothing written",
            path.display(),
            keys.join(".")
        )),
    }
}

/// The command line of a Claude Code entry, when it is a stdio server.
fn json_line(entry: &Json) -> Option<CommandLine> {
    let kind = entry.get("type").and_then(Json::as_str).unwrap_or("stdio");
    if kind != "stdio" {
        return None;
    }
    let command = entry.get("command")?.as_str()?.to_owned();
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Json::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?,
        Some(_) => return None,
    };
    Some(CommandLine { command, args })
}

/// Writes `line` into `entry`: `command` in place, `args` in place or
/// right after `command`; an empty `args` is removed (the unwrapped form of
/// an entry that had none).
fn set_json_line(entry: &mut Json, line: &CommandLine) {
    let Json::Object(m) = entry else { return };
    let at = m.iter().position(|(k, _)| k == "command").unwrap_or(0);
    m[at].1 = Json::String(line.command.clone());
    let args = Json::Array(line.args.iter().map(|a| Json::str(a)).collect());
    match m.iter().position(|(k, _)| k == "args") {
        Some(i) if line.args.is_empty() => {
            m.remove(i);
        }
        Some(i) => m[i].1 = args,
        None if line.args.is_empty() => {}
        None => m.insert(at + 1, ("args".into(), args)),
    }
}

/// Unwraps every entry setup wrapped; how many.
fn strip_json(servers: &mut [(String, Json)]) -> usize {
    let mut n = 0;
    for (_, entry) in servers.iter_mut() {
        if let Some(inner) = json_line(entry).as_ref().and_then(unwrap) {
            set_json_line(entry, &inner);
            n += 1;
        }
    }
    n
}

/// `setup claudecode --mcp`: the scope's MCP servers through `mcp wrap`.
pub fn setup_claude(
    scope: Scope,
    home: &Path,
    project: &Path,
    exe: &Path,
) -> Result<Outcome, String> {
    let (path, keys) = claude_location(scope, home, project);
    let before = read_optional(&path)?;
    let mut root = match &before {
        Some(b) => parse(&path, b)?,
        None => Json::Object(Vec::new()),
    };
    let original = root.clone();
    let mut tally = Tally::default();
    if let Some(servers) = servers_mut(&path, &mut root, &keys)? {
        for (name, entry) in servers.iter_mut() {
            if !matches!(entry, Json::Object(_)) {
                tally.unknown.push(name.clone());
            } else if let Some(line) = json_line(entry) {
                set_json_line(entry, &wrap(&line, exe, name));
                tally.wrapped.push(name.clone());
            } else if let Some(url) = entry.get("url").and_then(Json::as_str) {
                tally.remote.push((name.clone(), url.to_owned()));
            } else {
                tally.unknown.push(name.clone());
            }
        }
    }
    let mut out = Outcome::default();
    // Compared as data: a file with nothing to wrap is not rewritten in
    // Parallax's formatting.
    if before.is_none() || root == original {
        out.done.push(format!(
            "{} {}; unchanged",
            path.display(),
            if before.is_none() {
                "does not exist (no MCP servers in this scope)"
            } else if tally.wrapped.is_empty() {
                "has no stdio MCP servers to wrap"
            } else {
                "already starts its MCP servers through Parallax"
            }
        ));
    } else {
        write_keeping_backup(&path, before.as_deref(), root.pretty().as_bytes(), &mut out)?;
        out.done
            .push(format!("updated {}: {}", path.display(), keys.join(".")));
    }
    tally.report(&path, &mut out);
    if !tally.wrapped.is_empty() {
        out.todo.push(
            "restart Claude Code: running sessions keep the servers they started; \
             `claude mcp list` shows the new commands"
                .into(),
        );
    }
    Ok(out)
}

/// `revert claudecode`: the scope's MCP servers started directly again.
pub fn revert_claude(scope: Scope, home: &Path, project: &Path) -> Result<Outcome, String> {
    let (path, keys) = claude_location(scope, home, project);
    let mut out = Outcome::default();
    let Some(before) = read_optional(&path)? else {
        out.done.push(format!(
            "{} does not exist; no MCP servers to revert",
            path.display()
        ));
        return Ok(out);
    };
    let mut root = parse(&path, &before)?;
    let n = match servers_mut(&path, &mut root, &keys)? {
        Some(servers) => strip_json(servers),
        None => 0,
    };
    if n == 0 {
        out.done.push(format!(
            "{} has no MCP servers wrapped by Parallax; unchanged",
            path.display()
        ));
        return Ok(out);
    }
    super::finish_revert(
        &path,
        &root,
        parse,
        &format!("`parallax mcp wrap` of {n} MCP server(s)"),
        &mut out,
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(c: &str, a: &[&str]) -> CommandLine {
        CommandLine {
            command: c.into(),
            args: a.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn wrap_and_unwrap_are_inverse_and_wrap_is_idempotent() {
        let exe = Path::new("/opt/parallax/bin/parallax");
        let orig = line("npx", &["-y", "srv", "--", "x"]);
        let w = wrap(&orig, exe, "files");
        assert_eq!(w.command, "/opt/parallax/bin/parallax");
        assert_eq!(
            w.args,
            ["mcp", "wrap", "--name", "files", "--", "npx", "-y", "srv", "--", "x"]
        );
        assert_eq!(unwrap(&w), Some(orig.clone()));
        assert_eq!(wrap(&w, exe, "files"), w);
        // Another program's `mcp wrap` is not ours.
        assert_eq!(
            unwrap(&line("/bin/other", &["mcp", "wrap", "--", "x"])),
            None
        );
        assert_eq!(unwrap(&orig), None);
    }
}
