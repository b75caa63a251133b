//! From an event's tool arguments to its shell facts and read paths: which
//! values are commands (the same keys and shell tools as `command`), argv
//! arrays taken word for word, and the normalised files a call reads.

use super::ShellFacts;
use crate::normalize::normalized;
use crate::path_normalize::normalize_path;
use crate::prepared::{COMMAND_KEYS, SHELL_TOOLS};
use serde_json::Value;

/// The shell facts of a tool call's commands, or `None` without a command.
pub fn shell_facts(args: &Value, tool: &str) -> Option<ShellFacts> {
    let mut facts: Option<ShellFacts> = None;
    let mut add = |f: ShellFacts| match &mut facts {
        Some(all) => all.merge(f),
        None => facts = Some(f),
    };
    match args {
        Value::Object(map) => {
            for key in COMMAND_KEYS {
                match map.get(key) {
                    Some(Value::String(s)) => {
                        add(ShellFacts::from_command(s));
                        // Fullwidth letters, look-alikes and invisible
                        // characters: the normalised command is parsed too.
                        if let Some(n) = normalized(s) {
                            add(ShellFacts::from_command(&n));
                        }
                    }
                    Some(Value::Array(items))
                        if !items.is_empty() && items.iter().all(Value::is_string) =>
                    {
                        let argv: Vec<String> = items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect();
                        let normal: Vec<String> = argv
                            .iter()
                            .map(|a| normalized(a).unwrap_or_else(|| a.clone()))
                            .collect();
                        if normal != argv {
                            add(ShellFacts::from_argv(&normal));
                        }
                        add(ShellFacts::from_argv(&argv))
                    }
                    _ => {}
                }
            }
        }
        Value::String(s) if SHELL_TOOLS.contains(&tool.to_ascii_lowercase().as_str()) => {
            add(ShellFacts::from_command(s));
            if let Some(n) = normalized(s) {
                add(ShellFacts::from_command(&n));
            }
        }
        _ => {}
    }
    facts
}

/// Files a call reads or names, normalised: `paths` of a tool that does not
/// write, `file://` URLs, and the files its commands name.
pub fn read_paths(
    paths: &[String],
    urls: &[String],
    writes: bool,
    facts: Option<&ShellFacts>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |p: Option<String>| {
        if let Some(p) = p {
            if !out.contains(&p) && out.len() < 512 {
                out.push(p);
            }
        }
    };
    if !writes {
        for p in paths {
            add(normalize_path(p));
        }
    }
    for u in urls {
        // `file://…` and the one-slash `file:/…` (`get`: never slicing
        // inside a multi-byte character).
        if u.get(..6).is_some_and(|s| s.eq_ignore_ascii_case("file:/")) {
            add(normalize_path(u));
        }
    }
    if let Some(f) = facts {
        for p in &f.paths {
            add(Some(p.clone()));
        }
    }
    out
}

/// The normal forms of `paths` that differ from the value as sent, so a
/// rule on `path` or `write_path` sees `/etc/shadow` in `//etc/./shadow`.
pub fn normal_forms(paths: &[String]) -> Vec<String> {
    // A set for the look-up: an event may send thousands of paths, and a
    // scan of the list for each would make preparing it quadratic.
    let sent: std::collections::HashSet<&str> = paths.iter().map(String::as_str).collect();
    paths
        .iter()
        .filter_map(|p| normalize_path(p).filter(|n| n != p && !sent.contains(n.as_str())))
        .collect()
}
