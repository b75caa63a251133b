//! `parallax setup|revert codex --mcp`: the stdio servers under
//! `[mcp_servers.NAME]` in `$CODEX_HOME/config.toml` started through
//! `parallax mcp wrap` (the rewrite is [`super::mcp_servers`]'s). The file
//! is edited with `toml_edit`: comments, order and spacing of everything
//! else stay as the user wrote them; only `command` and `args` of a
//! wrapped server change. Servers with a `url` (streamable HTTP) are left
//! alone and named in the output.
//!
//! Revert unwraps the entries; when that leaves what the backup holds, the
//! backup's bytes are put back.

use super::codex_proxy::{meaning, parse};
use super::mcp_servers::{unwrap, wrap, CommandLine, Tally};
use super::{backup_path, codex_proxy, read_optional, write_atomic, write_keeping_backup, Outcome};
use std::path::Path;
use toml_edit::{Array, DocumentMut, Item, TableLike, Value};

/// The command line of one `[mcp_servers.NAME]` table, when it has one.
fn toml_line(server: &dyn TableLike) -> Option<CommandLine> {
    let command = server.get("command")?.as_str()?.to_owned();
    let args = match server.get("args") {
        None => Vec::new(),
        Some(item) => item
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?,
    };
    Some(CommandLine { command, args })
}

/// Writes `line` into the table, keeping the decoration (comments, spacing)
/// around `command` and `args`; an empty `args` is removed.
fn set_toml_line(server: &mut dyn TableLike, line: &CommandLine) {
    if let Some(v) = server.get_mut("command").and_then(Item::as_value_mut) {
        let decor = v.decor().clone();
        *v = line.command.as_str().into();
        *v.decor_mut() = decor;
    }
    if line.args.is_empty() {
        server.remove("args");
        return;
    }
    let array: Array = line.args.iter().map(String::as_str).collect();
    match server.get_mut("args").and_then(Item::as_value_mut) {
        Some(v) => {
            let decor = v.decor().clone();
            *v = Value::Array(array);
            *v.decor_mut() = decor;
        }
        None => {
            server.insert("args", Item::Value(Value::Array(array)));
        }
    }
}

/// The `mcp_servers` table, if any (a table, inline table or dotted keys).
fn servers_mut<'a>(
    path: &Path,
    doc: &'a mut DocumentMut,
) -> Result<Option<&'a mut dyn TableLike>, String> {
    match doc.get_mut("mcp_servers") {
        None => Ok(None),
        Some(item) => item.as_table_like_mut().map(Some).ok_or_else(|| {
            format!(
                "{}: `mcp_servers` is not a table; nothing written",
                path.display()
            )
        }),
    }
}

pub fn setup(codex_home: &Path, exe: &Path) -> Result<Outcome, String> {
    let path = codex_proxy::config_path(codex_home);
    let mut out = Outcome::default();
    let Some(before) = read_optional(&path)? else {
        out.done.push(format!(
            "{} does not exist (no MCP servers); unchanged",
            path.display()
        ));
        Tally::default().report(&path, &mut out);
        return Ok(out);
    };
    let mut doc = parse(&path, &before)?;
    let mut tally = Tally::default();
    if let Some(servers) = servers_mut(&path, &mut doc)? {
        for (name, item) in servers.iter_mut() {
            let name = name.get().to_owned();
            let Some(server) = item.as_table_like_mut() else {
                tally.unknown.push(name);
                continue;
            };
            if let Some(line) = toml_line(server) {
                set_toml_line(server, &wrap(&line, exe, &name));
                tally.wrapped.push(name);
            } else if let Some(url) = server.get("url").and_then(Item::as_str) {
                tally.remote.push((name, url.to_owned()));
            } else {
                tally.unknown.push(name);
            }
        }
    }
    let after = doc.to_string();
    if after.as_bytes() == before.as_slice() {
        out.done.push(format!(
            "{} {}; unchanged",
            path.display(),
            if tally.wrapped.is_empty() {
                "has no stdio MCP servers to wrap"
            } else {
                "already starts its MCP servers through Parallax"
            }
        ));
    } else {
        write_keeping_backup(&path, Some(&before), after.as_bytes(), &mut out)?;
        out.done
            .push(format!("updated {}: [mcp_servers]", path.display()));
    }
    tally.report(&path, &mut out);
    if !tally.wrapped.is_empty() {
        out.todo
            .push("start a new Codex session: running ones keep the servers they started".into());
    }
    Ok(out)
}

pub fn revert(codex_home: &Path) -> Result<Outcome, String> {
    let path = codex_proxy::config_path(codex_home);
    let mut out = Outcome::default();
    let Some(before) = read_optional(&path)? else {
        out.done.push(format!(
            "{} does not exist; no MCP servers to revert",
            path.display()
        ));
        return Ok(out);
    };
    let mut doc = parse(&path, &before)?;
    let mut n = 0;
    if let Some(servers) = servers_mut(&path, &mut doc)? {
        for (_, item) in servers.iter_mut() {
            let Some(server) = item.as_table_like_mut() else {
                continue;
            };
            if let Some(inner) = toml_line(server).as_ref().and_then(unwrap) {
                set_toml_line(server, &inner);
                n += 1;
            }
        }
    }
    if n == 0 {
        out.done.push(format!(
            "{} has no MCP servers wrapped by Parallax; unchanged",
            path.display()
        ));
        return Ok(out);
    }
    let backup = backup_path(&path);
    let original = read_optional(&backup)?;
    match original {
        Some(bytes) if parse(&backup, &bytes).ok().as_ref().and_then(meaning) == meaning(&doc) => {
            write_atomic(&path, &bytes)?;
            std::fs::remove_file(&backup)
                .map_err(|e| format!("cannot remove {}: {e}", backup.display()))?;
            out.done.push(format!(
                "restored {} from {} (byte for byte)",
                path.display(),
                backup.display()
            ));
        }
        orig => {
            write_atomic(&path, doc.to_string().as_bytes())?;
            out.done.push(format!(
                "removed `parallax mcp wrap` from {n} MCP server(s) in {}; the rest is kept \
                 as it is now",
                path.display()
            ));
            if orig.is_some() {
                out.done.push(format!(
                    "{} (the file before setup) differs from it now and is left in place",
                    backup.display()
                ));
            }
        }
    }
    Ok(out)
}
