//! Tool-call counts per session answered beside SQLite, for the rules whose
//! whole query is "how many tool calls has this session made in the last
//! W seconds, counting to at most L" (sql-session-tool-rate, W 60 L 101;
//! sql-session-tool-pace, W 60 L 61).
//!
//! Why: those two rules run on every tool call (no guard can skip a pure
//! rate) and each walks up to L entries of the session index, 162 index
//! entries per call between them once a session is busy. The store keeps,
//! per session, the sorted `ts` of the rows it holds at stage
//! `tool.before`, in step with every insert and every delete (the deletes
//! return `session_id, ts, stage`), so the count is two binary searches.
//! Measured (callgrind, `parallax eval` of the 3,000-event mix, release):
//! `Store::process` 445.4 M -> 359.8 M instructions inclusive (148 k -> 120 k
//! per event), the whole process 1,204.9 M -> 1,120.0 M; output identical.
//!
//! What the rule means stays the SQL: [`RateCount::recognise`] accepts a
//! query only when its text (whitespace aside) is exactly the template
//! below, and the answer is defined from it: `ORDER BY ts DESC LIMIT L`
//! picks some L of the rows, whichever L they are the count is
//! `min(L, rows with session_id = :session_id, stage = 'tool.before' and
//! ts > :now - W)`, and `ts > now - W` is the same IEEE double comparison
//! SQLite makes (`ts` is REAL NOT NULL, `:now` is bound as a REAL). A
//! session-less event matches no row (`NULL = NULL` is not true).
//! tests/sql_window.rs checks the native count against SQLite's on the mix
//! and on adversarial sessions (equal timestamps, the clock going back,
//! window edges, pruning by retention, the row cap and the session budget).

use std::collections::{HashMap, VecDeque};

/// The query shape answered natively, `{C}` the column's name, `{W}` and
/// `{L}` integers; tokens as [`RateCount::recognise`] spaces them.
const TEMPLATE: &str = "SELECT count ( * ) AS {C} FROM ( SELECT 1 FROM events \
    WHERE session_id = :session_id AND ts > :now - {W} AND stage = 'tool.before' \
    ORDER BY ts DESC LIMIT {L} )";

/// A recognised rate query: count the session's tool calls newer than
/// `now - window`, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateCount {
    pub window: i64,
    pub limit: i64,
}

fn integer(s: &str) -> Option<i64> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

impl RateCount {
    /// `Some` when `query` is exactly [`TEMPLATE`] (tokens separated by any
    /// whitespace; a parenthesis may touch its neighbours).
    pub fn recognise(query: &str) -> Option<RateCount> {
        let spaced = query.replace('(', " ( ").replace(')', " ) ");
        let tokens: Vec<&str> = spaced.split_whitespace().collect();
        let template: Vec<&str> = TEMPLATE.split_whitespace().collect();
        if tokens.len() != template.len() {
            return None;
        }
        let (mut window, mut limit) = (None, None);
        for (t, want) in tokens.iter().zip(&template) {
            match *want {
                "{C}" => {
                    if !is_ident(t) {
                        return None;
                    }
                }
                "{W}" => window = Some(integer(t)?),
                "{L}" => limit = Some(integer(t)?),
                w if w == *t => {}
                _ => return None,
            }
        }
        Some(RateCount {
            window: window?,
            limit: limit?,
        })
    }
}

/// The `ts` of every `tool.before` row each session holds, sorted.
#[derive(Debug, Default)]
pub struct ToolCallWindow {
    sessions: HashMap<String, VecDeque<f64>, ahash::RandomState>,
}

impl ToolCallWindow {
    /// A row was inserted.
    pub fn insert(&mut self, session: &str, ts: f64) {
        let q = match self.sessions.get_mut(session) {
            Some(q) => q,
            None => self.sessions.entry(session.to_string()).or_default(),
        };
        // Usually the newest: the store's clock moves forward.
        if q.back().is_none_or(|&last| last <= ts) {
            q.push_back(ts);
        } else {
            let at = q.partition_point(|&t| t <= ts);
            q.insert(at, ts);
        }
    }

    /// A row was deleted.
    pub fn remove(&mut self, session: &str, ts: f64) {
        let Some(q) = self.sessions.get_mut(session) else {
            return;
        };
        let at = q.partition_point(|&t| t < ts);
        if q.get(at) == Some(&ts) {
            q.remove(at);
        }
        if q.is_empty() {
            self.sessions.remove(session);
        }
    }

    /// What the recognised query returns for `session` at `now`.
    pub fn count(&self, rate: RateCount, session: Option<&str>, now: f64) -> i64 {
        let Some(q) = session.and_then(|s| self.sessions.get(s)) else {
            return 0;
        };
        let edge = now - rate.window as f64;
        // Rows with ts > edge; with a NaN edge no comparison is true.
        let newer = if edge.is_nan() {
            0
        } else {
            q.len() - q.partition_point(|&t| t <= edge)
        };
        (newer as i64).min(rate.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_template_and_nothing_near_it() {
        let q = "SELECT count(*) AS cnt FROM (\n  SELECT 1 FROM events\n  WHERE session_id = :session_id\n    AND ts > :now - 60\n    AND stage = 'tool.before'\n  ORDER BY ts DESC\n  LIMIT 101)\n";
        assert_eq!(
            RateCount::recognise(q),
            Some(RateCount {
                window: 60,
                limit: 101
            })
        );
        for other in [
            q.replace("ts >", "ts >="),
            q.replace("'tool.before'", "'tool.after'"),
            q.replace("LIMIT 101)", "LIMIT 101) WHERE 1"),
            q.replace("count(*)", "count(1)"),
            q.replace("60", "60.5"),
            q.replace(":session_id", ":user_id"),
            q.replace("DESC", "ASC"),
        ] {
            assert_eq!(RateCount::recognise(&other), None, "{other}");
        }
    }

    #[test]
    fn counts_follow_inserts_and_removes() {
        let r = RateCount {
            window: 60,
            limit: 3,
        };
        let mut w = ToolCallWindow::default();
        for ts in [100.0, 100.0, 130.0, 90.0] {
            w.insert("s", ts);
        }
        assert_eq!(w.count(r, Some("s"), 150.0), 3);
        assert_eq!(w.count(r, Some("s"), 160.0), 1); // 100 is not > 100
        assert_eq!(w.count(r, Some("s"), 161.0), 1);
        assert_eq!(w.count(r, None, 150.0), 0);
        w.remove("s", 130.0);
        assert_eq!(w.count(r, Some("s"), 161.0), 0);
        w.remove("s", 100.0);
        assert_eq!(w.count(r, Some("s"), 150.0), 1);
        assert_eq!(w.count(r, Some("s"), 149.0), 2);
    }
}
