//! The side-store's bounds on a real SQLite: the row cap holds (never more
//! than `cap_slack` rows over it, back to the cap at each batch) under a
//! million inserts and the database does not grow; retention drops
//! what is older than the window; a state file keeps the window across a
//! restart.

use parallax_runtime::{Action, Event, PreparedEvent, StateSettings};
use parallax_store::{cap_slack, EventRow, ManualClock, Store};
use serde_json::json;
use std::sync::Arc;

fn row(session: &str, i: u64) -> EventRow {
    let e = Event::from_value(json!({
        "stage": "tool.before",
        "session_id": session,
        "tool_name": "Bash",
        "tool_args": {"command": format!("ls -la /tmp/dir{}", i % 97)},
    }))
    .expect("valid event");
    EventRow::new(&PreparedEvent::new(e))
}

fn settings(max_rows: u64, retention_seconds: u64, path: Option<String>) -> StateSettings {
    StateSettings {
        path,
        retention_seconds,
        max_rows,
    }
}

#[test]
fn a_million_events_stay_at_the_row_cap_in_flat_memory() {
    const CAP: u64 = 100_000;
    let clock = ManualClock::new(1_000_000.0);
    // Retention far away: only the cap bounds the store here.
    let mut store = Store::new(&settings(CAP, 1_000_000_000, None), Arc::new(clock.clone()))
        .expect("open the store");
    // 64 sessions: each holds 1,562 rows at the cap, under its own budget.
    let rows: Vec<EventRow> = (0..64).map(|i| row(&format!("s{i}"), i)).collect();
    let mut bytes_at_cap = 0;
    for i in 0..1_000_000u64 {
        let now = 1_000_000.0 + i as f64 * 0.001;
        store
            .record(&rows[(i % 64) as usize], now, Action::Allow, &[])
            .expect("record");
        let n = i + 1;
        if n <= CAP + cap_slack(CAP) {
            // Until the first batch, every row stays.
        } else if n % 997 == 0 {
            let count = store.row_count().expect("count");
            assert!(
                (CAP..=CAP + cap_slack(CAP)).contains(&count),
                "row count {count} after {n} inserts"
            );
        }
        if n % 100_000 == 0 {
            let count = store.row_count().expect("count");
            let want = if n <= CAP + cap_slack(CAP) {
                n
            } else {
                // Back to the cap at insert cap + slack + 1, then a batch
                // every slack + 1 inserts.
                CAP + (n - CAP - cap_slack(CAP) - 1) % (cap_slack(CAP) + 1)
            };
            assert_eq!(count, want, "row count after {n} inserts");
            let bytes = store.database_bytes().expect("size");
            if n == 2 * CAP {
                bytes_at_cap = bytes;
            } else if n > 2 * CAP {
                // Pages of deleted rows are reused: no growth past the cap
                // beyond page-split noise.
                assert!(
                    bytes <= bytes_at_cap + bytes_at_cap / 20,
                    "database grew from {bytes_at_cap} to {bytes} bytes after {n} inserts"
                );
            }
        }
    }
    let kept = store.row_count().unwrap();
    assert!((CAP..=CAP + cap_slack(CAP)).contains(&kept), "{kept}");
    // The rows kept are the newest ones.
    let oldest: f64 = store
        .connection()
        .query_row("SELECT min(ts) FROM events", [], |r| r.get(0))
        .unwrap();
    let want = 1_000_000.0 + (1_000_000 - kept) as f64 * 0.001;
    assert!(
        (oldest - want).abs() < 1e-6,
        "oldest ts {oldest}, want {want}"
    );
}

#[test]
fn retention_drops_expired_events_amortised() {
    let clock = ManualClock::new(0.0);
    let mut store =
        Store::new(&settings(1_000_000, 60, None), Arc::new(clock.clone())).expect("open");
    let r = row("s", 1);
    for _ in 0..300 {
        store.record(&r, 1000.0, Action::Allow, &[]).unwrap();
    }
    assert_eq!(store.row_count().unwrap(), 300, "nothing has expired yet");
    // 20 minutes later: the amortised prune (every 256 inserts) drops the
    // expired rows the next time it runs.
    for _ in 0..256 {
        store.record(&r, 2200.0, Action::Allow, &[]).unwrap();
    }
    assert_eq!(store.row_count().unwrap(), 256);
    // And on demand.
    assert_eq!(store.prune_expired(2300.0).unwrap(), 256);
    assert_eq!(store.row_count().unwrap(), 0);
}

#[test]
fn a_state_file_keeps_the_window_across_a_restart() {
    let dir = std::env::temp_dir().join(format!(
        "parallax-store-restart-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.sqlite");
    let s = settings(100_000, 3600, Some(path.display().to_string()));
    let clock = Arc::new(ManualClock::new(5000.0));
    {
        let mut store = Store::new(&s, clock.clone()).expect("open the file");
        for i in 0..7 {
            store
                .record(
                    &row("restart", i),
                    5000.0 + i as f64,
                    Action::Block,
                    &["r1".into()],
                )
                .unwrap();
        }
    }
    let journal: String = {
        let store = Store::new(&s, clock.clone()).expect("reopen the file");
        assert_eq!(
            store.row_count().unwrap(),
            7,
            "the window survived the restart"
        );
        assert_eq!(store.session_row_count("restart"), 7, "counted on open");
        let (n, ids): (i64, String) = store
            .connection()
            .query_row(
                "SELECT count(*), max(rule_ids) FROM events WHERE session_id = 'restart' AND action = 'block'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((n, ids.as_str()), (7, r#"["r1"]"#));
        store
            .connection()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(journal, "wal");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_state_file_of_another_schema_is_refused() {
    let dir = std::env::temp_dir().join(format!("parallax-store-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.sqlite");
    let _ = std::fs::remove_file(&path);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, ts REAL); PRAGMA user_version = 0;",
        )
        .unwrap();
    }
    let s = settings(10, 60, Some(path.display().to_string()));
    let err = Store::new(&s, Arc::new(ManualClock::new(0.0)))
        .err()
        .expect("an old schema must be refused");
    assert!(err.to_string().contains("schema version 0"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_session_is_held_to_its_budget_and_cannot_evict_the_others() {
    let clock = ManualClock::new(0.0);
    let mut store =
        Store::new(&settings(2_000, 1_000_000, None), Arc::new(clock.clone())).expect("open");
    store.set_session_rows(500);
    // A quiet session's history...
    for i in 0..50 {
        store
            .record(&row("quiet", i), i as f64, Action::Block, &["r1".into()])
            .unwrap();
    }
    // ...then a hot one sends far more than the whole cap.
    for i in 0..5_000 {
        store
            .record(&row("hot", i), 100.0 + i as f64 * 0.01, Action::Allow, &[])
            .unwrap();
    }
    let count = |s: &str| -> i64 {
        store
            .connection()
            .query_row(
                "SELECT count(*) FROM events WHERE session_id = ?1",
                [s],
                |r| r.get(0),
            )
            .unwrap()
    };
    // Trimmed in batches of a 64th of the budget.
    assert!(
        (500..=507).contains(&count("hot")),
        "the hot session is held to its budget: {}",
        count("hot")
    );
    assert_eq!(count("quiet"), 50, "the quiet session's window is intact");
    assert_eq!(store.session_row_count("hot") as i64, count("hot"));
    assert_eq!(store.session_row_count("quiet"), 50);
    // The hot session keeps its newest rows.
    let oldest: f64 = store
        .connection()
        .query_row(
            "SELECT min(ts) FROM events WHERE session_id = 'hot'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let kept = count("hot") as f64;
    assert!(
        (oldest - (100.0 + (5_000.0 - kept) * 0.01)).abs() < 1e-6,
        "{oldest}"
    );
    // The counts follow the global cap's batches and retention's deletes
    // too. 2,100 more rows: past the cap and its slack, so the hot and
    // quiet sessions' rows (the oldest) are gone whatever the batch.
    for i in 0..2_100 {
        store
            .record(
                &row(&format!("many-{}", i % 10), i),
                200.0,
                Action::Allow,
                &[],
            )
            .unwrap();
    }
    let total = store.row_count().unwrap();
    assert!(
        (2_000..=2_000 + cap_slack(2_000)).contains(&total),
        "{total}"
    );
    assert_eq!(store.session_row_count("hot"), 0);
    assert_eq!(store.session_row_count("quiet"), 0);
    let many3: i64 = store
        .connection()
        .query_row(
            "SELECT count(*) FROM events WHERE session_id = 'many-3'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(many3 > 0);
    assert_eq!(store.session_row_count("many-3") as i64, many3);
    assert_eq!(store.prune_expired(1_000_201.0).unwrap() as u64, total);
    assert_eq!(store.session_row_count("many-3"), 0);
}
