//! The native tool-call counts (store/src/window.rs) against SQLite's
//! answer to the same query, after every insert of adversarial sessions:
//! equal timestamps, the clock going back and jumping forward, rows exactly
//! on the window's edge, other stages and session-less events, and rows
//! leaving through retention, the global row cap and the session budget.
//! Also: the shipped rate rules are the ones recognised.

use parallax_runtime::{Action, Event, PreparedEvent, StateSettings};
use parallax_store::window::RateCount;
use parallax_store::{EventRow, ManualClock, Store};
use serde_json::json;
use std::sync::Arc;

fn row(stage: &str, session: Option<&str>, i: u64) -> EventRow {
    let mut v = json!({
        "stage": stage,
        "tool_name": if i.is_multiple_of(3) { "Read" } else { "Bash" },
        "tool_args": {"command": format!("ls {}", i % 7)},
    });
    if let Some(s) = session {
        v["session_id"] = json!(s);
    }
    EventRow::new(&PreparedEvent::new(Event::from_value(v).expect("event")))
}

fn query(window: i64, limit: i64) -> String {
    format!(
        "SELECT count(*) AS cnt FROM (\n  SELECT 1 FROM events\n  WHERE session_id = :session_id\n    AND ts > :now - {window}\n    AND stage = 'tool.before'\n  ORDER BY ts DESC\n  LIMIT {limit})"
    )
}

fn sqlite_count(store: &Store, rate: RateCount, session: Option<&str>, now: f64) -> i64 {
    store
        .connection()
        .query_row(
            &query(rate.window, rate.limit),
            rusqlite::named_params! {":session_id": session, ":now": now},
            |r| r.get(0),
        )
        .expect("query")
}

/// A deterministic pseudo-random walk (no dependency): xorshift.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn run(max_rows: u64, retention: u64, session_rows: u64, seed: u64, steps: u64) -> u64 {
    let settings = StateSettings {
        path: None,
        retention_seconds: retention,
        max_rows,
    };
    let mut store = Store::new(&settings, Arc::new(ManualClock::new(1000.0))).expect("open");
    store.set_session_rows(session_rows);
    let rates = [
        RateCount {
            window: 60,
            limit: 101,
        },
        RateCount {
            window: 60,
            limit: 61,
        },
        RateCount {
            window: 2,
            limit: 5,
        },
        RateCount {
            window: 0,
            limit: 1000,
        },
    ];
    let sessions = [Some("a"), Some("b"), Some("c"), None];
    let mut rng = Rng(seed);
    let mut now = 1000.0f64;
    let mut compared = 0;
    for i in 0..steps {
        // Mostly forward in quarter seconds; equal stamps; the clock going
        // back; a jump past the window.
        now += match rng.next() % 20 {
            0..=9 => 0.25,
            10..=13 => 0.0,
            14 | 15 => -3.0,
            16 => 61.0,
            17 => 60.0,
            _ => 0.5,
        };
        let stage = if rng.next().is_multiple_of(4) {
            "tool.after"
        } else {
            "tool.before"
        };
        let session = sessions[(rng.next() % 4) as usize];
        store
            .record(&row(stage, session, i), now, Action::Allow, &[])
            .expect("record");
        for s in sessions {
            for rate in rates {
                // Now, and the edges: a row exactly `window` old is out.
                for at in [now, now + 60.0, now - 1.0, now + 0.25] {
                    assert_eq!(
                        store.tool_call_count(rate, s, at),
                        sqlite_count(&store, rate, s, at),
                        "seed {seed} step {i} session {s:?} {rate:?} at {at}"
                    );
                    compared += 1;
                }
            }
        }
    }
    compared
}

#[test]
fn native_counts_equal_sqlite_through_every_bound() {
    // Unbounded, then each bound tight enough to delete often.
    assert!(run(1_000_000, 1_000_000, 1_000_000, 1, 1500) > 0);
    run(50, 1_000_000, 1_000_000, 2, 1500);
    run(1_000_000, 30, 1_000_000, 3, 1500);
    run(1_000_000, 1_000_000, 64, 4, 1500);
    run(40, 20, 30, 5, 1500);
}

#[test]
fn a_state_file_brings_its_tool_calls() {
    let dir = std::env::temp_dir().join(format!("parallax-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("state.db");
    let settings = StateSettings {
        path: Some(path.to_string_lossy().into_owned()),
        retention_seconds: 1_000_000,
        max_rows: 1_000_000,
    };
    let rate = RateCount {
        window: 60,
        limit: 101,
    };
    {
        let mut store = Store::new(&settings, Arc::new(ManualClock::new(0.0))).expect("open");
        for i in 0..30 {
            store
                .record(
                    &row("tool.before", Some("s"), i),
                    10.0 + i as f64,
                    Action::Allow,
                    &[],
                )
                .expect("record");
        }
    }
    let store = Store::new(&settings, Arc::new(ManualClock::new(0.0))).expect("reopen");
    assert_eq!(store.tool_call_count(rate, Some("s"), 45.0), 30);
    assert_eq!(
        store.tool_call_count(rate, Some("s"), 45.0),
        sqlite_count(&store, rate, Some("s"), 45.0)
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The queries of the shipped rules, read from the YAML text (a block
/// scalar after `query: |`).
fn shipped_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rules/sql/temporal.yaml"
    ))
    .expect("temporal.yaml");
    let mut out = Vec::new();
    let mut id = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.trim_start().strip_prefix("- id: ") {
            id = rest.trim().to_string();
        }
        if line.trim() == "query: |" {
            let indent = line.len() - line.trim_start().len();
            let mut q = String::new();
            while let Some(next) = lines.peek() {
                if !next.trim().is_empty() && next.len() - next.trim_start().len() <= indent {
                    break;
                }
                q.push_str(next.trim());
                q.push('\n');
                lines.next();
            }
            out.push((id.clone(), q));
        }
    }
    out
}

#[test]
fn the_shipped_rate_rules_are_recognised_and_no_other() {
    let recognised: Vec<(String, RateCount)> = shipped_queries()
        .into_iter()
        .filter_map(|(id, q)| RateCount::recognise(&q).map(|r| (id, r)))
        .collect();
    assert_eq!(
        recognised,
        vec![
            (
                "sql-session-tool-rate".to_string(),
                RateCount {
                    window: 60,
                    limit: 101
                }
            ),
            (
                "sql-session-tool-pace".to_string(),
                RateCount {
                    window: 60,
                    limit: 61
                }
            ),
        ]
    );
}
