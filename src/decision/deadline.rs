//! The deadline on one evaluation (`server.eval_timeout_ms`).
//!
//! An event big enough to take noticeable time runs on tokio's blocking
//! pool and the request awaits it under the deadline: past it the request
//! is answered by `fail_mode` (`failure.kind: timeout`) and the async
//! worker is free for other requests (`/health` keeps answering). The
//! same instant is handed to the engine ([`parallax_runtime::deadline`]),
//! which checks it between fields, values, verifiers and every few matches
//! of a long match walk and stops there, so the blocking thread is freed
//! too instead of finishing a result nobody reads; [`Running`] counts the
//! evaluations still on the pool (`parallax_bounded_evaluations_running`).
//! Small events stay inline: every scan is linear, so a few KiB take
//! microseconds, and a hand-off to another thread would cost more than the
//! evaluation.

use crate::metrics::MetricsSource;
use parallax_runtime::Event;
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Evaluations running on the blocking pool under the deadline, as a
/// metrics gauge: after a burst of timed-out requests it falls back to 0
/// as soon as each evaluation has noticed its deadline.
#[derive(Debug, Default)]
pub struct Running(AtomicU64);

/// Held while one bounded evaluation runs; dropping it (also on a panic)
/// counts it out.
pub struct RunningGuard(Arc<Running>);

impl Running {
    pub fn enter(self: &Arc<Self>) -> RunningGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        RunningGuard(self.clone())
    }

    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl MetricsSource for Running {
    fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP parallax_bounded_evaluations_running Evaluations of large events running \
             on the blocking pool under server.eval_timeout_ms (a timed-out one stops at its \
             deadline).\n\
             # TYPE parallax_bounded_evaluations_running gauge\n\
             parallax_bounded_evaluations_running {}",
            self.now()
        );
    }
}

/// Events with at most this much text are evaluated inline.
pub const INLINE_BYTES: usize = 16 * 1024;

/// Bytes of text the evaluators may scan in `event` (every string in it,
/// keys included), stopping early once past `limit`.
pub fn scanned_bytes(event: &Event, limit: usize) -> usize {
    let mut n = 0usize;
    for s in [
        &event.message_text,
        &event.response_text,
        &event.tool_name,
        &event.memory_key,
        &event.memory_text,
        &event.query,
    ]
    .into_iter()
    .flatten()
    {
        n = n.saturating_add(s.len());
    }
    for v in [
        &event.tool_args,
        &event.tool_result,
        &event.params,
        &event.documents,
    ] {
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
