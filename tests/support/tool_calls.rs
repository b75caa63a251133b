//! The `tool.before` events the SQL-rule suites build their sessions from.

use serde_json::{json, Value};

/// A Bash call of `command` in `session`.
pub fn bash(session: &str, command: &str) -> Value {
    json!({"stage": "tool.before", "session_id": session, "tool_name": "Bash",
           "tool_args": {"command": command}})
}

/// A Read call of `path` in `session`.
pub fn read(session: &str, path: &str) -> Value {
    json!({"stage": "tool.before", "session_id": session, "tool_name": "Read",
           "tool_args": {"file_path": path}})
}
