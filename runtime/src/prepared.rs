//! An event made ready for evaluation: canonical fields derived once, so the
//! evaluation itself only reads.
//!
//! Every framework names things its own way — Claude Code's `Bash{command}`,
//! Codex's `shell{command: [argv…]}`, OpenClaw's `exec{command}`, `file_path`
//! versus `path`, Codex's `apply_patch` carrying paths and content inside a
//! patch. Deriving the canonical fields here is what lets one rule on
//! `command` or `path` cover every agent. The mapping is documented in
//! `docs/FIELDS.md`; keep the two in step.

use crate::event::Event;
use crate::field::{Canonical, FieldRef, JsonRoot, TopField};
use serde_json::Value;

/// Argument keys that carry a shell command.
pub const COMMAND_KEYS: [&str; 3] = ["command", "cmd", "script"];
/// Tool names whose bare-string arguments are a shell command.
pub const SHELL_TOOLS: [&str; 8] = [
    "bash",
    "shell",
    "exec",
    "sh",
    "terminal",
    "run_shell_command",
    "execute_command",
    "run_command",
];
/// Argument keys that carry a file path (a string or an array of strings).
pub const PATH_KEYS: [&str; 10] = [
    "file_path",
    "path",
    "filename",
    "notebook_path",
    "file",
    "target_file",
    "source_path",
    "destination",
    "dest",
    "paths",
];
/// Argument keys that carry a URL.
pub const URL_KEYS: [&str; 4] = ["url", "uri", "href", "endpoint"];
/// Argument keys that carry text being written.
pub const CONTENT_KEYS: [&str; 5] = ["content", "new_string", "new_source", "file_text", "text"];
/// Argument keys that carry a SQL statement.
pub const QUERY_KEYS: [&str; 3] = ["sql", "query", "statement"];

/// Patch headers that name a file in Codex's `apply_patch` format.
const PATCH_FILE_HEADERS: [&str; 4] = [
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
];

#[derive(Debug, Clone)]
pub struct PreparedEvent {
    pub event: Event,
    command: Vec<String>,
    path: Vec<String>,
    url: Vec<String>,
    content: Vec<String>,
    query: Vec<String>,
}

impl PreparedEvent {
    pub fn new(event: Event) -> PreparedEvent {
        let mut p = PreparedEvent {
            command: Vec::new(),
            path: Vec::new(),
            url: Vec::new(),
            content: Vec::new(),
            query: Vec::new(),
            event,
        };
        p.derive();
        p
    }

    fn derive(&mut self) {
        let args = &self.event.tool_args;
        let tool = self
            .event
            .tool_name
            .as_deref()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match args {
            Value::Object(map) => {
                for key in COMMAND_KEYS {
                    if let Some(cmd) = map.get(key).and_then(command_text) {
                        self.command.push(cmd);
                    }
                }
                for key in PATH_KEYS {
                    push_strings(map.get(key), &mut self.path);
                }
                for key in URL_KEYS {
                    push_strings(map.get(key), &mut self.url);
                }
                for key in CONTENT_KEYS {
                    push_strings(map.get(key), &mut self.content);
                }
                if let Some(Value::Array(edits)) = map.get("edits") {
                    for edit in edits {
                        push_strings(edit.get("new_string"), &mut self.content);
                    }
                }
                for key in QUERY_KEYS {
                    push_strings(map.get(key), &mut self.query);
                }
                // Codex sends patches as `{input: "*** Begin Patch…"}` or inside
                // the shell argv (`["apply_patch", "*** Begin Patch…"]`).
                let mut patches: Vec<String> = Vec::new();
                for v in map.values() {
                    match v {
                        Value::String(s) if is_patch(s) => patches.push(s.clone()),
                        Value::Array(items) => patches.extend(
                            items
                                .iter()
                                .filter_map(Value::as_str)
                                .filter(|s| is_patch(s))
                                .map(str::to_string),
                        ),
                        _ => {}
                    }
                }
                for patch in &patches {
                    self.add_patch(patch);
                }
            }
            Value::String(s) if SHELL_TOOLS.contains(&tool.as_str()) => {
                self.command.push(s.clone())
            }
            Value::String(s) if is_patch(s) => {
                let s = s.clone();
                self.add_patch(&s);
            }
            _ => {}
        }
    }

    fn add_patch(&mut self, patch: &str) {
        let mut added = String::new();
        for line in patch.lines() {
            if let Some(p) = PATCH_FILE_HEADERS.iter().find_map(|h| line.strip_prefix(h)) {
                self.path.push(p.trim().to_string());
            } else if let Some(l) = line.strip_prefix('+') {
                added.push_str(l);
                added.push('\n');
            }
        }
        if !added.is_empty() {
            self.content.push(added);
        }
    }

    /// Calls `f` with each string value of `field` (an array of strings gives
    /// one call per element). Never allocates.
    pub fn for_each_value(&self, field: &FieldRef, f: &mut dyn FnMut(&str)) {
        let e = &self.event;
        match field {
            FieldRef::Canonical(c) => match c {
                Canonical::Command => self.command.iter().for_each(|s| f(s)),
                Canonical::Path => self.path.iter().for_each(|s| f(s)),
                Canonical::Url => self.url.iter().for_each(|s| f(s)),
                Canonical::Content => self.content.iter().for_each(|s| f(s)),
                Canonical::Query => self.query.iter().for_each(|s| f(s)),
                Canonical::Text => {
                    if let Some(m) = &e.message_text {
                        f(m);
                    }
                    each_string(&e.tool_args, f);
                    each_string(&e.tool_result, f);
                    if let Some(r) = &e.response_text {
                        f(r);
                    }
                }
            },
            FieldRef::Top(t) => {
                let v = match t {
                    TopField::Stage => Some(e.stage.as_str()),
                    TopField::SessionId => e.session_id.as_deref(),
                    TopField::Channel => e.channel.as_deref(),
                    TopField::UserId => e.user_id.as_deref(),
                    TopField::MessageText => e.message_text.as_deref(),
                    TopField::ToolName => e.tool_name.as_deref(),
                    TopField::Model => e.model.as_deref(),
                    TopField::ResponseText => e.response_text.as_deref(),
                };
                if let Some(v) = v {
                    f(v);
                }
            }
            FieldRef::Json { root, path } => {
                let v = match root {
                    JsonRoot::ToolArgs => &e.tool_args,
                    JsonRoot::ToolResult => &e.tool_result,
                    JsonRoot::Params => &e.params,
                };
                walk(v, path, f);
            }
        }
    }

    /// The derived canonical values, for tests and for `docs/FIELDS.md`
    /// examples.
    pub fn canonical(&self, c: Canonical) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_value(&FieldRef::Canonical(c), &mut |s| out.push(s.to_string()));
        out
    }
}

fn is_patch(s: &str) -> bool {
    s.trim_start().starts_with("*** Begin Patch")
}

/// A command given as a string, or as an argv array joined with spaces.
fn command_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

fn push_strings(v: Option<&Value>, out: &mut Vec<String>) {
    match v {
        Some(Value::String(s)) => out.push(s.clone()),
        Some(Value::Array(items)) => {
            out.extend(items.iter().filter_map(Value::as_str).map(str::to_string))
        }
        _ => {}
    }
}

/// Every string leaf under `v`, depth first.
pub fn each_string(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|i| each_string(i, f)),
        Value::Object(map) => map.values().for_each(|i| each_string(i, f)),
        _ => {}
    }
}

/// Follows a dotted path; an array in the way is walked element by element
/// (or indexed, when the segment is a number).
fn walk(v: &Value, path: &[String], f: &mut dyn FnMut(&str)) {
    let Some((seg, rest)) = path.split_first() else {
        return each_string(v, f);
    };
    match v {
        Value::Object(map) => {
            if let Some(child) = map.get(seg.as_str()) {
                walk(child, rest, f);
            }
        }
        Value::Array(items) => match seg.parse::<usize>() {
            Ok(i) => {
                if let Some(child) = items.get(i) {
                    walk(child, rest, f);
                }
            }
            Err(_) => items.iter().for_each(|i| walk(i, path, f)),
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prep(v: Value) -> PreparedEvent {
        PreparedEvent::new(Event::from_value(v).unwrap())
    }

    #[test]
    fn command_from_every_framework() {
        let claude = prep(
            json!({"stage":"tool.before","tool_name":"Bash","tool_args":{"command":"rm -rf /"}}),
        );
        let openclaw = prep(
            json!({"stage":"tool.before","tool_name":"exec","tool_args":{"command":"rm -rf /"}}),
        );
        let codex = prep(
            json!({"stage":"tool.before","tool_name":"shell","tool_args":{"command":["rm","-rf","/"]}}),
        );
        for p in [claude, openclaw, codex] {
            assert_eq!(p.canonical(Canonical::Command), vec!["rm -rf /"]);
        }
    }

    #[test]
    fn codex_patch_gives_paths_and_content() {
        let patch =
            "*** Begin Patch\n*** Add File: /etc/cron.d/x\n+* * * * * root sh\n*** End Patch";
        let p = prep(
            json!({"stage":"tool.before","tool_name":"apply_patch","tool_args":{"input": patch}}),
        );
        assert_eq!(p.canonical(Canonical::Path), vec!["/etc/cron.d/x"]);
        assert_eq!(p.canonical(Canonical::Content), vec!["* * * * * root sh\n"]);
    }

    #[test]
    fn dotted_paths_walk_arrays() {
        let p = prep(
            json!({"stage":"tool.before","tool_args":{"edits":[{"new_string":"a"},{"new_string":"b"}]}}),
        );
        let mut got = Vec::new();
        p.for_each_value(
            &FieldRef::parse("tool_args.edits.new_string").unwrap(),
            &mut |s| got.push(s.to_string()),
        );
        assert_eq!(got, vec!["a", "b"]);
        assert_eq!(p.canonical(Canonical::Content), vec!["a", "b"]);
    }
}
