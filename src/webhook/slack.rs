//! `webhook_format: slack`: a Slack incoming-webhook message (`text` with
//! Slack's mrkdwn) built from the audit record, so secrets are already
//! masked in anything quoted.

use serde_json::{json, Value};

/// Slack's `<`, `>` and `&` escaping for message text.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn message(record: &Value) -> Value {
    let s = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or("-");
    let mut text = format!(
        "*Parallax {}* at `{}` (tool `{}`, session `{}`, user `{}`)",
        s("action"),
        s("stage"),
        escape(s("tool_name")),
        escape(s("session_id")),
        escape(s("user_id")),
    );
    if record.get("would_block").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n_monitor mode: would have blocked_");
    }
    for m in record
        .get("matches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let g = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("-");
        text.push_str(&format!(
            "\n• `{}` {} ({}, {})",
            escape(g("rule_id")),
            escape(g("title")),
            g("action"),
            g("priority"),
        ));
        if let Some(t) = m.get("match").and_then(Value::as_str) {
            text.push_str(&format!(": `{}`", escape(t).replace('`', "'")));
        }
    }
    json!({ "text": text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_rules_and_escapes() {
        let m = message(&json!({
            "action": "block", "stage": "tool.before", "tool_name": "exec<1>",
            "matches": [{"rule_id": "r1", "title": "T", "action": "block",
                         "priority": "high", "match": "rm -rf /"}]
        }));
        let t = m["text"].as_str().unwrap();
        assert!(t.starts_with("*Parallax block* at `tool.before` (tool `exec&lt;1&gt;`"));
        assert!(t.contains("• `r1` T (block, high): `rm -rf /`"));
    }
}
