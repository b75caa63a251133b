//! `parallax setup|revert <framework>`: the agents' settings files, with
//! Parallax's hooks added or taken out again.
//!
//! Claude Code's settings and Codex's `hooks.json` share one shape,
//! `{"hooks": {"<Event>": [{"matcher"?, "hooks": [handler...]}]}}`, so one
//! editor ([`hooks_file`]) serves both; [`claudecode`] and [`codex`] say
//! which file and which handlers. Every edit:
//!
//! - refuses a file it cannot parse (the error names it; nothing written);
//! - keeps every member the user wrote, in their order ([`json`]);
//! - replaces Parallax's own groups rather than adding them twice, so a
//!   second run with the same options changes nothing;
//! - keeps the user's original as `<file>.parallax-backup` (the first
//!   time), which `revert` puts back byte for byte when taking Parallax's
//!   groups out leaves exactly it; otherwise `revert` writes the file
//!   without Parallax's groups and keeps the rest as it is now.

pub mod claudecode;
pub mod codex;
pub mod codex_mcp;
pub mod codex_proxy;
pub mod hooks_file;
pub mod json;
pub mod mcp_servers;
pub mod openclaw;
pub mod openclaw_proxy;

use std::path::{Path, PathBuf};

/// What `setup` puts in front of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The agent's hooks run `parallax hook` on every tool call and prompt.
    Hooks,
    /// The agent's model traffic goes through Parallax's model-API proxy.
    Proxy,
}

/// What a setup or revert did, for the user.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One line per thing done (or left alone).
    pub done: Vec<String>,
    /// What the user still has to do.
    pub todo: Vec<String>,
}

/// The backup of `path`: `<path>.parallax-backup`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".parallax-backup");
    PathBuf::from(s)
}

/// Writes `bytes` to `path` through a temporary file beside it and a
/// rename, so a crash never leaves half a settings file; creates the
/// parent folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".parallax-tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// The write step of every setup: the file as it was (`before`, `None`
/// when there was none) is kept in its backup unless a backup exists
/// already — the first setup's backup is the user's own file, which revert
/// gives back byte for byte however many setups ran since — then `after`
/// is written in its place. Returns `"updated"` or `"created"`, for the
/// caller's line saying what changed.
pub fn write_keeping_backup(
    path: &Path,
    before: Option<&[u8]>,
    after: &[u8],
    out: &mut Outcome,
) -> Result<&'static str, String> {
    if let Some(b) = before {
        let backup = backup_path(path);
        if !backup.exists() {
            write_atomic(&backup, b)?;
            out.done
                .push(format!("kept the original as {}", backup.display()));
        }
    }
    write_atomic(path, after)?;
    Ok(if before.is_some() {
        "updated"
    } else {
        "created"
    })
}

/// The file's bytes, `None` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, String> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The last step of a revert: `root` is the file at `path` with
/// Parallax's entries taken out (`what`, for the message). If that is
/// exactly the file as it was before setup (its backup), the backup's bytes
/// are put back and the backup removed; if setup created the file and
/// nothing else is in it, it is removed; otherwise what is left is written,
/// and a backup that no longer matches is left in place, said so.
pub fn finish_revert(
    path: &Path,
    root: &json::Json,
    parse: impl Fn(&Path, &[u8]) -> Result<json::Json, String>,
    what: &str,
    out: &mut Outcome,
) -> Result<(), String> {
    let backup = backup_path(path);
    match read_optional(&backup)? {
        Some(orig) if parse(&backup, &orig).ok().as_ref() == Some(root) => {
            write_atomic(path, &orig)?;
            std::fs::remove_file(&backup)
                .map_err(|e| format!("cannot remove {}: {e}", backup.display()))?;
            out.done.push(format!(
                "restored {} from {} (byte for byte)",
                path.display(),
                backup.display()
            ));
        }
        None if root.is_empty_container() => {
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
            out.done.push(format!(
                "removed {} (setup created it; nothing else was in it)",
                path.display()
            ));
        }
        orig => {
            write_atomic(path, root.pretty().as_bytes())?;
            out.done.push(format!(
                "removed {what} from {}; the rest is kept as it is now",
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
    Ok(())
}

/// `s` quoted for a POSIX shell when it needs it (hook commands run
/// through `sh -c`).
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command a hook runs: this binary, `hook <framework>`, and the
/// options that differ from the defaults.
pub fn hook_command(exe: &Path, framework: &str, url: &str, fail_closed: bool) -> String {
    let mut cmd = format!(
        "{} hook {framework}",
        shell_quote(&exe.display().to_string())
    );
    if url != crate::hooks::client::DEFAULT_URL {
        cmd.push_str(&format!(" --url {}", shell_quote(url)));
    }
    if fail_closed {
        cmd.push_str(" --fail-closed");
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/usr/bin/parallax"), "/usr/bin/parallax");
        assert_eq!(shell_quote("/a b/it's"), "'/a b/it'\\''s'");
        let cmd = hook_command(Path::new("/x/parallax"), "codex", "http://h:1", true);
        assert_eq!(cmd, "/x/parallax hook codex --url http://h:1 --fail-closed");
        let cmd = hook_command(
            Path::new("/x/parallax"),
            "codex",
            crate::hooks::client::DEFAULT_URL,
            false,
        );
        assert_eq!(cmd, "/x/parallax hook codex");
    }
}

#[cfg(test)]
mod golden;

#[cfg(test)]
mod golden_mcp;
