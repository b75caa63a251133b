//! One hot session must not take the server down (issue 21): a session
//! that has sent more events than the side-store's whole row cap, and keeps
//! sending from many connections, still leaves another session's request
//! answered — by the SQL rules, not by a timeout — within a bound.
//!
//! Real server on 127.0.0.1, shipped rules, default `state.max_rows`
//! (100,000). Bounded: a fixed number of requests, every one with an I/O
//! timeout; the only time bound is a generous one that proves "not
//! starved". Before the fix, each of the hot session's calls cost the
//! store tens of milliseconds once it held 100,000 rows (the lockout rule
//! walked them all), so a request queued behind 32 of them waited seconds.

mod support;

use parallax::decision::{Door, Origin};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

/// The hot session's senders, each sending one request at a time.
const HOT_CONNECTIONS: usize = 32;
/// Most requests each hot sender sends (they stop earlier once the other
/// session is done).
const HOT_MAX_EACH: usize = 2_000;
/// Requests of the other session, one after another.
const OTHER_REQUESTS: usize = 20;
/// The store's answer is awaited this long before the request fails
/// (`server.request_timeout_ms`): a starved request shows as a failure.
const STORE_TIMEOUT_MS: u64 = 3_000;
/// Generous: a request answered later than this was starved.
const NOT_STARVED: Duration = Duration::from_secs(5);

fn call(session: &str, command: &str) -> Value {
    json!({"stage": "tool.before", "session_id": session, "tool_name": "Bash",
           "tool_args": {"command": command}})
}

#[test]
fn a_second_session_is_answered_while_a_hot_one_floods_past_the_cap() {
    let server = TestServer::start(
        std::path::Path::new(CONFIG),
        |s| {
            assert_eq!(s.state.max_rows, 100_000, "the default cap");
            s.server.request_timeout_ms = STORE_TIMEOUT_MS;
        },
        |state, _| state,
    );
    let store = server
        .state
        .store()
        .expect("the shipped rules have SQL rules");

    // Fill: the hot session sends more events than the whole store holds,
    // through the real pipeline (compiled evaluators, then the SQL rules).
    let origin = Origin::door(Door::Library);
    let hot = call("hot", "ls -la");
    let fill = 100_000 + 5_000;
    let mut last = None;
    for _ in 0..fill {
        let event = parallax_runtime::Event::from_value(hot.clone()).expect("event");
        last = Some(server.state.decide(event, &origin, Instant::now()));
    }
    let last = last.expect("at least one event");
    assert!(
        last.failure.is_none(),
        "the store answered: {:?}",
        last.failure
    );
    assert_eq!(
        last.action.as_str(),
        "block",
        "the hot session is rate-limited"
    );
    let rows = futures_rows(&store);
    assert!(
        rows <= 100_000,
        "the store stays within its cap ({rows} rows)"
    );

    // The hot session keeps sending, from many connections at once...
    let stop = Arc::new(AtomicBool::new(false));
    let hot_sent = Arc::new(AtomicUsize::new(0));
    let addr = server.addr;
    let senders: Vec<_> = (0..HOT_CONNECTIONS)
        .map(|_| {
            let (stop, hot_sent, body) = (stop.clone(), hot_sent.clone(), hot.clone());
            std::thread::spawn(move || {
                for _ in 0..HOT_MAX_EACH {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Some(v) = try_evaluate(addr, &body) {
                        assert_eq!(v["action"], "block", "hot session: {v}");
                        hot_sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    // ...until it is in full flow.
    let flowing = Instant::now();
    while hot_sent.load(Ordering::Relaxed) < 200 && flowing.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }

    // Meanwhile another session's calls are judged by the SQL rules (no
    // failure, no timeout) and answered promptly.
    let mut slowest = Duration::ZERO;
    for i in 0..OTHER_REQUESTS {
        let t = Instant::now();
        let v = evaluate(
            server.addr,
            &call("quiet", &format!("cargo build -p crate_{i}")),
        );
        let took = t.elapsed();
        slowest = slowest.max(took);
        assert!(
            v.get("failure").is_none() && v["action"] == "allow",
            "request {i} of the quiet session: {v}"
        );
        assert!(
            took < NOT_STARVED,
            "request {i} of the quiet session took {took:?} while the hot one flooded"
        );
    }
    let during = hot_sent.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.join().expect("a hot sender failed");
    }
    println!(
        "quiet session: slowest of {OTHER_REQUESTS} requests {slowest:?}; \
         hot session: {during} requests answered meanwhile, store {} rows",
        futures_rows(&store)
    );
    assert!(
        during < HOT_CONNECTIONS * HOT_MAX_EACH,
        "the hot session was still sending when the quiet one finished \
         ({during} requests: its senders ran out first)"
    );
    server.stop();
}

/// Rows in the store now (its async count, run on a throwaway runtime).
fn futures_rows(store: &parallax_store::StoreHandle) -> u64 {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(store.row_count())
        .expect("row count")
}
