//! Field references: how a rule names the part of an event it looks at.
//!
//! A rule names a field by a dotted path (`tool_args.options.force`) or by a
//! canonical name (`command`, `path`, …) that the engine derives from whatever
//! vocabulary the agent framework uses, so one rule covers every agent. The
//! mapping from framework shapes to canonical fields lives in
//! [`crate::prepared`]; see `docs/FIELDS.md`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Fields derived from the event, independent of the agent framework.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Canonical {
    /// The shell command a tool call would run.
    Command,
    /// File paths a tool call reads, writes or edits.
    Path,
    /// File paths a tool call writes, edits, creates or patches (the subset
    /// of `path` that belongs to writing tools).
    WritePath,
    /// URLs a tool call fetches or posts to.
    Url,
    /// Text being written to a file.
    Content,
    /// A SQL statement.
    Query,
    /// All the event's text: the message, every string in the arguments,
    /// every string in the result and the model's response.
    Text,
    /// The program each segment of `command` runs (its first word), so that
    /// process-creation rules (Sigma's `Image`) can look at it alone.
    Executable,
    /// Each script of `command` (and every script nested in it) rendered as
    /// the shell reads it: quotes removed, variables substituted, wrappers
    /// unwrapped, program basenames (`runtime/src/shell/`).
    Shell,
    /// Each simple command of `command`: program basename, then arguments.
    Argv,
    /// The basename of every program `command` starts, wrappers included.
    Program,
    /// Redirect targets of `command`, normalised.
    Redirect,
    /// Code handed to an interpreter (`python3 -c`, `perl -e`, piped in).
    Code,
    /// Literals a command decodes in place (base64, hex, escapes).
    Decoded,
    /// Every file a call reads or names, normalised: `path` values of
    /// tools that do not write, `file://` URLs, files named in `command`.
    ReadPath,
}

/// How many [`TopField`]s there are (per-field tables are indexed by
/// `TopField as usize`).
pub const TOP_FIELD_COUNT: usize = TopField::Tenant as usize + 1;

/// Plain string fields at the top of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopField {
    Stage,
    SessionId,
    Channel,
    UserId,
    MessageText,
    ToolName,
    Model,
    /// The model's output, at `response.after`.
    ResponseText,
    /// The key a memory is written under, at `memory.before`.
    MemoryKey,
    /// The text a memory write stores, at `memory.before`.
    MemoryText,
    /// The retrieval query (the event's `query`), at `retrieval.before`
    /// and `retrieval.after`. Named apart from the canonical `query`, which
    /// is a SQL statement a tool call runs.
    RetrievalQuery,
    /// The tenant whose token the front door authenticated (`tenants:`);
    /// never read from the event's JSON, so a client cannot claim one.
    Tenant,
}

/// JSON-valued parts of an event that a dotted path can walk into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonRoot {
    ToolArgs,
    ToolResult,
    Params,
    /// The retrieved documents (`documents.text`, `documents.source`).
    Documents,
}

/// A field a rule scans or compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldRef {
    Canonical(Canonical),
    Top(TopField),
    /// A path into a JSON part; an empty path means every string under the root.
    Json {
        root: JsonRoot,
        path: Vec<String>,
    },
}

/// A field name that does not name any part of an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown field `{name}`: {why}")]
pub struct UnknownField {
    pub name: String,
    pub why: String,
}

/// Canonical field names as rules and CEL expressions write them.
pub const CANONICAL_NAMES: [(&str, Canonical); 15] = [
    ("command", Canonical::Command),
    ("path", Canonical::Path),
    ("write_path", Canonical::WritePath),
    ("url", Canonical::Url),
    ("content", Canonical::Content),
    ("query", Canonical::Query),
    ("text", Canonical::Text),
    ("executable", Canonical::Executable),
    ("shell", Canonical::Shell),
    ("argv", Canonical::Argv),
    ("program", Canonical::Program),
    ("redirect", Canonical::Redirect),
    ("code", Canonical::Code),
    ("decoded", Canonical::Decoded),
    ("read_path", Canonical::ReadPath),
];

/// Plain event field names as rules and CEL expressions write them.
pub const TOP_FIELD_NAMES: [(&str, TopField); 12] = [
    ("stage", TopField::Stage),
    ("session_id", TopField::SessionId),
    ("channel", TopField::Channel),
    ("user_id", TopField::UserId),
    ("message_text", TopField::MessageText),
    ("tool_name", TopField::ToolName),
    ("model", TopField::Model),
    ("response_text", TopField::ResponseText),
    ("memory_key", TopField::MemoryKey),
    ("memory_text", TopField::MemoryText),
    ("retrieval_query", TopField::RetrievalQuery),
    ("tenant", TopField::Tenant),
];

const ROOTS: [(&str, JsonRoot); 4] = [
    ("tool_args", JsonRoot::ToolArgs),
    ("tool_result", JsonRoot::ToolResult),
    ("params", JsonRoot::Params),
    ("documents", JsonRoot::Documents),
];

impl FieldRef {
    /// Parses a dotted field name as rules write it.
    pub fn parse(name: &str) -> Result<FieldRef, UnknownField> {
        let err = |why: &str| UnknownField {
            name: name.to_string(),
            why: why.to_string(),
        };
        let mut parts = name.split('.');
        let head = parts.next().unwrap_or_default();
        let rest: Vec<String> = parts.map(str::to_string).collect();
        if rest.iter().any(String::is_empty) {
            return Err(err("empty path segment"));
        }
        if let Some((_, c)) = CANONICAL_NAMES.iter().find(|(n, _)| *n == head) {
            return if rest.is_empty() {
                Ok(FieldRef::Canonical(*c))
            } else {
                Err(err("canonical fields have no sub-fields"))
            };
        }
        if let Some((_, t)) = TOP_FIELD_NAMES.iter().find(|(n, _)| *n == head) {
            return if rest.is_empty() {
                Ok(FieldRef::Top(*t))
            } else {
                Err(err("this field is a plain string and has no sub-fields"))
            };
        }
        if let Some((_, r)) = ROOTS.iter().find(|(n, _)| *n == head) {
            return Ok(FieldRef::Json {
                root: *r,
                path: rest,
            });
        }
        Err(err(
            "expected a canonical field (command, path, write_path, url, content, query, text, executable, \
             shell, argv, program, redirect, code, decoded, read_path), \
             an event field (stage, session_id, channel, user_id, message_text, tool_name, model, response_text, \
             memory_key, memory_text, retrieval_query) \
             or a path under tool_args, tool_result, params or documents",
        ))
    }

    /// The name rules use for this field (inverse of [`FieldRef::parse`]).
    pub fn name(&self) -> String {
        match self {
            FieldRef::Canonical(c) => CANONICAL_NAMES
                .iter()
                .find(|(_, x)| x == c)
                .map(|(n, _)| n.to_string())
                .unwrap_or_default(),
            FieldRef::Top(t) => TOP_FIELD_NAMES
                .iter()
                .find(|(_, x)| x == t)
                .map(|(n, _)| n.to_string())
                .unwrap_or_default(),
            FieldRef::Json { root, path } => {
                let mut s = ROOTS
                    .iter()
                    .find(|(_, x)| x == root)
                    .map(|(n, _)| n.to_string())
                    .unwrap_or_default();
                for p in path {
                    s.push('.');
                    s.push_str(p);
                }
                s
            }
        }
    }
}

impl fmt::Display for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_round_trip() {
        for name in [
            "command",
            "text",
            "tool_name",
            "tool_args",
            "tool_args.options.force",
            "params.temperature",
        ] {
            assert_eq!(FieldRef::parse(name).unwrap().name(), name);
        }
    }

    #[test]
    fn rejects_unknown_and_malformed() {
        assert!(FieldRef::parse("tool_arg").is_err());
        assert!(FieldRef::parse("command.x").is_err());
        assert!(FieldRef::parse("tool_args..x").is_err());
    }
}
