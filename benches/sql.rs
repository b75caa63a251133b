//! Latency the side-store adds per event, with the store at its default cap
//! of 100,000 rows and the shipped temporal rules loaded:
//! - `store/process`: record + every SQL rule, on the store's thread
//!   (what one event costs the store);
//! - `store/record_only`: record, no rules (an event an earlier evaluator
//!   blocked);
//! - `handle/roundtrip`: `process` through the channel to the store thread
//!   and back (what a request waits for);
//! - `evaluate/*`: the whole evaluation with and without the side-store.
//!
//! Then our own loop times single evaluations through the side-store for
//! the `sql-event-p99` budget (`benches/budgets.toml`).
//!
//! Run: `cargo bench --bench sql`.

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/timing.rs"]
mod timing;

use budgets::Budgets;
use criterion::{black_box, Criterion};
use parallax::backend::baked;
use parallax::decision::{DecisionService, Door, Origin};
use parallax_runtime::{Action, Event, PreparedEvent, Program, Report, StateSettings};
use parallax_store::{EventRow, ManualClock, Store, StoreHandle, StoreRequest};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use timing::{fmt_ns, sample};

const ROWS: u64 = 100_000;
const SESSIONS: usize = 1000;

fn settings() -> StateSettings {
    // Retention out of the way so the store stays at the cap however long
    // criterion runs (the benched clock moves 10 ms per event).
    StateSettings {
        path: None,
        retention_seconds: 1_000_000_000,
        max_rows: ROWS,
    }
}

fn event(session: usize, i: usize) -> Event {
    let v = match i % 4 {
        0 => json!({"stage":"tool.before","session_id":format!("s{session}"),"tool_name":"Bash",
                    "tool_args":{"command":format!("cargo test -p crate_{}", i % 13)}}),
        1 => json!({"stage":"tool.before","session_id":format!("s{session}"),"tool_name":"Read",
                    "tool_args":{"file_path":format!("/work/app/src/mod_{i}.rs")}}),
        2 => json!({"stage":"tool.after","session_id":format!("s{session}"),"tool_name":"Read",
                    "tool_result":"fn main() {}"}),
        _ => {
            json!({"stage":"tool.before","session_id":format!("s{session}"),"tool_name":"WebFetch",
                    "tool_args":{"url":format!("https://docs.rs/crate/{i}")}})
        }
    };
    Event::from_value(v).expect("valid event")
}

fn request(session: usize, i: usize) -> StoreRequest {
    StoreRequest {
        row: EventRow::new(&PreparedEvent::new(event(session, i))),
        action: Action::Allow,
        rule_ids: Vec::new(),
        run_rules: true,
        now: None,
    }
}

/// A store of `program`'s rules filled to the cap, its clock at the end of
/// the prefilled history.
fn full_store(program: &Program, clock: &ManualClock) -> Store {
    let mut store = Store::open(program, &settings(), Arc::new(clock.clone())).expect("open");
    let start = 1_800_000_000.0;
    for n in 0..ROWS as usize {
        let r = request(n % SESSIONS, n);
        store
            .record(&r.row, start + n as f64 * 0.01, Action::Allow, &[])
            .expect("prefill");
    }
    clock.set(start + ROWS as f64 * 0.01);
    assert_eq!(store.row_count().expect("count"), ROWS);
    store
}

fn sql(c: &mut Criterion) -> f64 {
    let engine = baked::engine().expect("baked engine");
    let program = engine.program().clone();
    assert!(
        !program.sql.is_empty(),
        "the shipped rules include SQL rules"
    );
    let requests: Vec<StoreRequest> = (0..4096).map(|i| request(i % SESSIONS, i)).collect();

    let clock = ManualClock::new(0.0);
    let mut store = full_store(&program, &clock);
    let mut g = c.benchmark_group("store");
    let mut i = 0usize;
    g.bench_function("process", |b| {
        b.iter(|| {
            i += 1;
            clock.advance(0.01);
            black_box(
                store
                    .process(&requests[i % requests.len()])
                    .expect("process"),
            )
        })
    });
    g.bench_function("record_only", |b| {
        b.iter(|| {
            i += 1;
            clock.advance(0.01);
            let mut r = requests[i % requests.len()].clone();
            r.run_rules = false;
            black_box(store.process(&r).expect("process"))
        })
    });
    g.finish();
    assert_eq!(store.row_count().expect("count"), ROWS, "the cap held");

    let clock = ManualClock::new(0.0);
    let handle = StoreHandle::spawn(full_store(&program, &clock)).expect("store thread");
    let mut g = c.benchmark_group("handle");
    g.bench_function("roundtrip", |b| {
        b.iter(|| {
            i += 1;
            clock.advance(0.01);
            black_box(
                handle
                    .process_blocking(requests[i % requests.len()].clone())
                    .expect("process"),
            )
        })
    });
    g.finish();
    drop(handle);

    // The whole evaluation, compiled evaluators only versus with the
    // side-store (at the cap) behind them.
    let events: Vec<Event> = (0..4096).map(|i| event(i % SESSIONS, i)).collect();
    let settings_with = parallax::settings::Settings {
        state: settings(),
        ..Default::default()
    };
    let with_store = DecisionService::new(baked::engine().expect("engine"), settings_with)
        .expect("state")
        .replaying();
    let mut t = 1_800_000_000.0;
    for n in 0..ROWS as usize {
        let mut e = events[n % events.len()].clone();
        t += 0.01;
        e.timestamp = Some(t);
        with_store.decide(e, &Origin::door(Door::Library), Instant::now());
    }
    let mut g = c.benchmark_group("evaluate");
    g.bench_function("with_store", |b| {
        b.iter(|| {
            i += 1;
            t += 0.01;
            let mut e = events[i % events.len()].clone();
            e.timestamp = Some(t);
            black_box(
                with_store
                    .decide(e, &Origin::door(Door::Library), Instant::now())
                    .action,
            )
        })
    });
    let engine = baked::engine().expect("engine");
    let mut scratch = engine.new_scratch();
    let started = Instant::now();
    g.bench_function("compiled_only", |b| {
        b.iter(|| {
            i += 1;
            let e = PreparedEvent::new(events[i % events.len()].clone());
            let verdict = engine.evaluate(&e, &mut scratch);
            black_box(Report::build(&engine, &e, &verdict, started.elapsed()).action)
        })
    });
    g.finish();

    // The budget: one whole evaluation whose SQL rules run against the
    // store at its cap, through the store's thread, call by call.
    let d = sample(Duration::from_secs(2), || {
        i += 1;
        t += 0.01;
        let mut e = events[i % events.len()].clone();
        e.timestamp = Some(t);
        black_box(
            with_store
                .decide(e, &Origin::door(Door::Library), Instant::now())
                .action,
        );
    });
    println!(
        "\nevaluation with SQL rules, store at {ROWS} rows: p50 {} p99 {}",
        fmt_ns(d.p50),
        fmt_ns(d.p99)
    );
    d.p99 / 1000.0
}

fn main() {
    let budgets = Budgets::load();
    let mut c = Criterion::default().configure_from_args();
    let p99_us = sql(&mut c);
    c.final_summary();
    budgets.check("sql-event-p99", p99_us);
}
