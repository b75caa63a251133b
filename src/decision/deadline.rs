//! The deadline on one evaluation (`server.eval_timeout_ms`).
//!
//! The compiled evaluators run synchronously; an evaluation cannot be
//! interrupted from outside. So an event big enough to take noticeable time
//! runs on tokio's blocking pool and the request awaits it under the
//! deadline: past it the request is answered by `fail_mode` and the async
//! worker is free for other requests (`/health` keeps answering), while the
//! evaluation finishes on its own thread and is discarded. Small events
//! stay inline: every scan is linear, so a few KiB take microseconds, and a
//! hand-off to another thread would cost more than the evaluation.

use parallax_runtime::Event;
use serde_json::Value;

/// Events with at most this much text are evaluated inline.
pub const INLINE_BYTES: usize = 16 * 1024;

/// Bytes of text the evaluators may scan in `event` (every string in it,
/// keys included), stopping early once past `limit`.
pub fn scanned_bytes(event: &Event, limit: usize) -> usize {
    let mut n = 0usize;
    for s in [&event.message_text, &event.response_text, &event.tool_name]
        .into_iter()
        .flatten()
    {
        n = n.saturating_add(s.len());
    }
    for v in [&event.tool_args, &event.tool_result, &event.params] {
        if n > limit {
            break;
        }
        n = n.saturating_add(json_text(v, limit.saturating_sub(n)));
    }
    n
}

/// Bytes of strings in `v`, stopping once past `limit`.
fn json_text(v: &Value, limit: usize) -> usize {
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        if n > limit {
            break;
        }
        match v {
            Value::String(s) => n = n.saturating_add(s.len()),
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => {
                for (k, v) in o {
                    n = n.saturating_add(k.len());
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_every_string_and_stops_past_the_limit() {
        let e = Event::from_value(json!({"stage": "tool.after", "tool_name": "Read",
            "tool_args": {"file_path": "abc"}, "tool_result": ["x".repeat(100), {"k": "yy"}]}))
        .unwrap();
        assert_eq!(scanned_bytes(&e, usize::MAX), 4 + 9 + 3 + 100 + 1 + 2);
        let big = Event::from_value(json!({"stage": "tool.after",
            "tool_result": vec!["z".repeat(1000); 1000]}))
        .unwrap();
        let n = scanned_bytes(&big, INLINE_BYTES);
        assert!(n > INLINE_BYTES && n < INLINE_BYTES + 2000, "{n}");
    }
}
