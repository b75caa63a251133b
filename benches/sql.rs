//! Latency the side-store adds per event, with the store at its default cap
//! of 100,000 rows and the shipped temporal rules loaded:
//! - `store/process`: record + every SQL rule, on the store's thread
//!   (what one event costs the store);
//! - `store/process_guarded`: the same with the rules' cheap
//!   preconditions applied (`parallax_store::guard`): a rule whose guard is
//!   false for the event runs no query;
//! - `store/record_only`: record, no rules (an event an earlier evaluator
//!   blocked);
//! - `handle/roundtrip`: `process` through the channel to the store thread
//!   and back (what a request waits for);
//! - `evaluate/*`: the whole evaluation with and without the side-store.
//!
//! Then our own loop times single evaluations through the side-store for
//! the `sql-event-p99` budget (`benches/budgets.toml`).
//!
//! `hot_session/*`: one session that never stops (a looping agent), its
//! next events' record + SQL rules after it has sent 0, 1,000, 10,000,
//! 100,000 and 1,000,000 events (store cap 1,000,000, so all of them were in
//! the window), and `hot_session/at_cap` with the store at its default cap
//! of 100,000 rows, deleting a row on every insert. The
//! `sql-hot-session-cap-vs-1k` budget holds the cost at the cap to 2× the
//! cost at 1,000 events: what one event costs must not grow with what one
//! session has sent.
//!
//! `mix`: the realistic mix (`benches/support/mix.rs`, what `loadgen
//! --write-mix` prints and `parallax eval` is measured on) turned into the
//! store requests the decision service sends (routing, guards and the
//! compiled evaluators' verdicts as in `parallax eval`), then replayed into
//! a fresh store on this thread with each step timed: the insert, the
//! bounds and every rule's query, so the table says which statement costs
//! what. `-- mix` runs it alone (also what callgrind is pointed at:
//! `PARALLAX_SQL_MIX=3000` sets the number of events).
//!
//! `cap`: the `store/*` benches' state (the store at its cap of 100,000
//! rows, 1,000 sessions) and their events with the guards applied, as
//! `process_guarded` sends them, replayed with each step timed as in
//! `mix`; then the routing (`SqlRouting::rules_for`) of the same events
//! alone. `-- cap` runs it alone; `PARALLAX_SQL_CAP` sets the number of
//! events (default 20,000). For callgrind, `--toggle-collect=*cap_run*`
//! counts the store's work on them and `--toggle-collect=*cap_route*`
//! the routing's.
//!
//! Run: `cargo bench --bench sql` (`-- hot_session` for those alone).

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/mix.rs"]
mod mix;
#[path = "support/timing.rs"]
mod timing;

use budgets::Budgets;
use criterion::{black_box, Criterion};
use parallax::backend::baked;
use parallax::decision::{DecisionService, Door, Origin};
use parallax_runtime::{Action, Event, PreparedEvent, Program, Report, StateSettings};
use parallax_store::{EventRow, ManualClock, Route, SqlRouting, Store, StoreHandle, StoreRequest};
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
        rules: None,
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

/// Runs the store benches; the p50 and p99 (µs) of a whole evaluation
/// through SQL rules with the store at its cap.
fn sql(c: &mut Criterion) -> (f64, f64) {
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
    // What the decision service sends: each rule's cheap precondition
    // (guard) decides whether its query runs at all.
    let routing = parallax_store::SqlRouting::of(&program);
    let guarded: Vec<StoreRequest> = requests
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.rules = routing.rules_for(&r.row);
            r.run_rules = r.rules.is_some();
            r
        })
        .collect();
    let before = store.queries_run();
    let mut calls = 0u64;
    g.bench_function("process_guarded", |b| {
        b.iter(|| {
            i += 1;
            calls += 1;
            clock.advance(0.01);
            black_box(store.process(&guarded[i % guarded.len()]).expect("process"))
        })
    });
    println!(
        "\nprocess_guarded: {:.2} rule queries per event ({} rules loaded)",
        (store.queries_run() - before) as f64 / calls.max(1) as f64,
        program.sql.len()
    );
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
    let kept = store.row_count().expect("count");
    assert!(
        (ROWS..=ROWS + parallax_store::cap_slack(ROWS)).contains(&kept),
        "the cap held: {kept} rows"
    );

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
    (d.p50 / 1000.0, d.p99 / 1000.0)
}

/// The hot session's events, in turn: a test loop (the same command over
/// and over), reads, results, doc fetches, and now and then a `curl` (so
/// the egress rule searches the window) and a `.env` read (so the sweep
/// rule does).
fn hot_event(i: usize) -> Event {
    let s = "hot";
    let v = match i % 8 {
        0 | 4 => json!({"stage":"tool.before","session_id":s,"tool_name":"Bash",
                        "tool_args":{"command":"cargo test"}}),
        1 | 5 => json!({"stage":"tool.after","session_id":s,"tool_name":"Bash",
                        "tool_result":"test result: ok. 12 passed"}),
        2 => json!({"stage":"tool.before","session_id":s,"tool_name":"Read",
                    "tool_args":{"file_path":format!("/work/app/src/mod_{}.rs", i % 50)}}),
        3 => json!({"stage":"tool.before","session_id":s,"tool_name":"WebFetch",
                    "tool_args":{"url":format!("https://docs.rs/crate/{}", i % 7)}}),
        6 => json!({"stage":"tool.before","session_id":s,"tool_name":"Bash",
                    "tool_args":{"command":"curl -s https://api.example.com/status"}}),
        _ => json!({"stage":"tool.before","session_id":s,"tool_name":"Read",
                    "tool_args":{"file_path":"/work/app/.env.example"}}),
    };
    Event::from_value(v).expect("valid event")
}

/// What a hot session's rows look like once it is over the rate limit:
/// every call blocked by the rate rule, every shell or network call by the
/// lockout too (the state the old lockout query walked row by row).
fn hot_verdict(row: &EventRow) -> (Action, Vec<String>) {
    if row.stage != parallax_runtime::Stage::ToolBefore {
        return (Action::Allow, Vec::new());
    }
    let mut ids = vec!["sql-session-tool-rate".to_string()];
    if row.command.is_some() || row.url.is_some() {
        ids.push("sql-blocked-retry-lockout".into());
    }
    (Action::Block, ids)
}

/// A store of `program`'s rules whose hot session has sent `sent` events
/// (10 ms apart, so 100 a second), interleaved with `background` events
/// of 100 other sessions per hot one; clock at the end.
fn hot_store(
    program: &Program,
    clock: &ManualClock,
    max_rows: u64,
    sent: usize,
    background: usize,
) -> Store {
    let settings = StateSettings {
        max_rows,
        ..settings()
    };
    let mut store = Store::open(program, &settings, Arc::new(clock.clone())).expect("open");
    let rows: Vec<EventRow> = (0..64)
        .map(|i| EventRow::new(&PreparedEvent::new(hot_event(i))))
        .collect();
    let others: Vec<EventRow> = (0..100)
        .map(|i| EventRow::new(&PreparedEvent::new(event(i, i))))
        .collect();
    let start = 1_800_000_000.0;
    for n in 0..sent {
        let now = start + n as f64 * 0.01;
        let row = &rows[n % rows.len()];
        let (action, ids) = hot_verdict(row);
        store.record(row, now, action, &ids).expect("prefill");
        for b in 0..background {
            let row = &others[(n * background + b) % others.len()];
            store.record(row, now, Action::Allow, &[]).expect("prefill");
        }
    }
    clock.set(start + sent as f64 * 0.01);
    store
}

/// Mean cost of one of the hot session's events (record + SQL rules), over
/// batches of 1,024 (so retention's amortised prune is in it), median of
/// the batches.
fn hot_cost(store: &mut Store, clock: &ManualClock, next: &mut usize) -> f64 {
    let reqs: Vec<StoreRequest> = (0..64)
        .map(|i| StoreRequest {
            row: EventRow::new(&PreparedEvent::new(hot_event(i))),
            action: Action::Allow,
            rule_ids: Vec::new(),
            run_rules: true,
            now: None,
            rules: None,
        })
        .collect();
    let mut batches: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..1024 {
                *next += 1;
                clock.advance(0.01);
                black_box(store.process(&reqs[*next % reqs.len()]).expect("process"));
            }
            t.elapsed().as_nanos() as f64 / 1024.0
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    batches[batches.len() / 2]
}

/// One hot session at growing sizes; returns cost at the cap / cost at
/// 1,000 events.
fn hot_session(c: &mut Criterion, program: &Program) -> f64 {
    let mut g = c.benchmark_group("hot_session");
    let mut at_1k = f64::NAN;
    let mut at_cap = f64::NAN;
    let mut next = 0usize;
    let mut figures = Vec::new();
    let cases: [(&str, u64, usize, usize); 6] = [
        ("0", 1_000_000, 0, 0),
        ("1k", 1_000_000, 1_000, 0),
        ("10k", 1_000_000, 10_000, 0),
        ("100k", 1_000_000, 100_000, 0),
        ("1M", 1_000_000, 1_000_000, 0),
        // 100,000 hot events among 900,000 of other sessions: the store at
        // its default cap, one row deleted per insert.
        ("at_cap", ROWS, 100_000, 9),
    ];
    for (name, max_rows, sent, background) in cases {
        let clock = ManualClock::new(0.0);
        let mut store = hot_store(program, &clock, max_rows, sent, background);
        let held = store.session_row_count("hot");
        let rows = store.row_count().expect("count");
        let cost = hot_cost(&mut store, &clock, &mut next);
        if name == "1k" {
            at_1k = cost;
        }
        if name == "at_cap" {
            at_cap = cost;
        }
        figures.push(format!(
            "  {name:>6}: {:>10} per event (session holds {held} rows, store {rows})",
            fmt_ns(cost)
        ));
        g.bench_function(name, |b| {
            let reqs: Vec<StoreRequest> = (0..64)
                .map(|i| StoreRequest {
                    row: EventRow::new(&PreparedEvent::new(hot_event(i))),
                    action: Action::Allow,
                    rule_ids: Vec::new(),
                    run_rules: true,
                    now: None,
                    rules: None,
                })
                .collect();
            b.iter(|| {
                next += 1;
                clock.advance(0.01);
                black_box(store.process(&reqs[next % reqs.len()]).expect("process"))
            })
        });
        if name == "at_cap" {
            g.finish();
            // Where the time goes: each rule alone, same store state.
            for spec in &program.sql {
                let mut one = program.clone();
                one.sql = vec![spec.clone()];
                store.load_rules(&one).expect("load one rule");
                let cost = hot_cost(&mut store, &clock, &mut next);
                figures.push(format!(
                    "  at_cap, {:<28} alone: {:>10} per event",
                    program.rules[spec.rule as usize].id,
                    fmt_ns(cost)
                ));
            }
            store
                .load_rules(&Program {
                    sql: Vec::new(),
                    ..program.clone()
                })
                .expect("no rules");
            let cost = hot_cost(&mut store, &clock, &mut next);
            figures.push(format!(
                "  at_cap, record only: {:>10} per event",
                fmt_ns(cost)
            ));
            println!(
                "\none hot session, record + SQL rules per event (mean of 1,024, median of 7):\n{}",
                figures.join("\n")
            );
            return at_cap / at_1k;
        }
    }
    unreachable!("the last case is at_cap")
}

/// The store requests `parallax eval` of `n` mix events sends, in order:
/// what the decision service builds (its route, the guards' mask, the
/// compiled evaluators' verdict, the event's own timestamp as the clock).
fn mix_requests(n: usize) -> Vec<StoreRequest> {
    let engine = baked::engine().expect("baked engine");
    let program = engine.program();
    let routing = SqlRouting::of(program);
    let mut scratch = engine.new_scratch();
    let mut out = Vec::new();
    for v in mix::realistic_mix(n, 20, 1_800_000_000.0) {
        let prepared = PreparedEvent::new(Event::from_value(v).expect("a mix event"));
        let verdict = engine.evaluate(&prepared, &mut scratch);
        let e = &prepared.event;
        let mut route = routing.route(e.stage, e.session_id.is_some(), verdict.action);
        if route == Route::Skip {
            continue;
        }
        let mut req = StoreRequest::new(&prepared, &verdict, program, e.timestamp);
        if route == Route::Judge {
            req.rules = routing.rules_for(&req.row);
            if req.rules.is_none() {
                route = Route::Record;
            }
        }
        req.run_rules &= route == Route::Judge;
        out.push(req);
    }
    out
}

/// Replays the mix's store requests into a fresh store with every step
/// timed, and prints where the time went.
fn mix_profile(program: &Program) {
    let n: usize = std::env::var("PARALLAX_SQL_MIX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let requests = mix_requests(n);
    let judged = requests.iter().filter(|r| r.run_rules).count();
    let mut best: Option<(f64, parallax_store::Profile, usize)> = None;
    for _ in 0..3 {
        let mut store = Store::open(
            program,
            &StateSettings::default(),
            Arc::new(ManualClock::new(0.0)),
        )
        .expect("open");
        store.set_profiling(true);
        let started = Instant::now();
        let mut hits = 0usize;
        // Transactions of 256 events, as the store's thread commits them
        // under steady traffic (group commit, `parallax_store::service`).
        for batch in requests.chunks(256) {
            store.begin_batch();
            for r in batch {
                hits += store.process(r).expect("process").len();
            }
            store.end_batch();
        }
        let wall = started.elapsed().as_secs_f64();
        let profile = store.profile().expect("profiling").clone();
        if best.as_ref().is_none_or(|(w, _, _)| wall < *w) {
            best = Some((wall, profile, hits));
        }
    }
    let Some((wall, p, hits)) = best else { return };
    let per = |ns: u64| fmt_ns(ns as f64 / requests.len().max(1) as f64);
    println!(
        "\nmix of {n} events: {} sent to the store, {judged} judged, {hits} SQL hits; \
         best of 3: {:.1} ms, {} per stored event ({:.0} stored events/s)",
        requests.len(),
        wall * 1e3,
        fmt_ns(wall * 1e9 / requests.len().max(1) as f64),
        requests.len() as f64 / wall
    );
    println!("  insert: {} per stored event", per(p.insert_ns));
    println!("  bounds: {} per stored event", per(p.bounds_ns));
    for (id, runs, ns) in &p.rules {
        println!(
            "  {id:<30} {runs:>6} runs, {:>10} per run, {:>10} per stored event",
            fmt_ns(*ns as f64 / (*runs).max(1) as f64),
            per(*ns)
        );
    }
}

/// The store's work on `requests`, one after another, 10 ms apart, in
/// transactions of 256 events as the store's thread commits them under
/// steady traffic (group commit, `parallax_store::service`).
#[inline(never)]
fn cap_run(store: &mut Store, clock: &ManualClock, requests: &[StoreRequest], n: usize) -> usize {
    let mut hits = 0;
    for i in 0..n {
        if i % 256 == 0 {
            store.begin_batch();
        }
        clock.advance(0.01);
        hits += store
            .process(&requests[i % requests.len()])
            .expect("process")
            .len();
        if i % 256 == 255 {
            store.end_batch();
        }
    }
    store.end_batch();
    hits
}

/// The routing of `rows` (what the decision service runs per judged event
/// before anything reaches the store).
#[inline(never)]
fn cap_route(routing: &SqlRouting, rows: &[EventRow], n: usize) -> usize {
    (0..n)
        .filter(|i| {
            routing
                .rules_for(black_box(&rows[i % rows.len()]))
                .is_some()
        })
        .count()
}

/// See the module doc (`cap`).
fn cap_profile(program: &Program) {
    let n: usize = std::env::var("PARALLAX_SQL_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let routing = SqlRouting::of(program);
    let requests: Vec<StoreRequest> = (0..4096)
        .map(|i| {
            let mut r = request(i % SESSIONS, i);
            r.rules = routing.rules_for(&r.row);
            r.run_rules = r.rules.is_some();
            r
        })
        .collect();
    let clock = ManualClock::new(0.0);
    let mut store = full_store(program, &clock);
    store.set_profiling(true);
    let queries = store.queries_run();
    let started = Instant::now();
    let hits = cap_run(&mut store, &clock, &requests, n);
    let wall = started.elapsed().as_secs_f64();
    let p = store.profile().expect("profiling").clone();
    let per = |ns: u64| fmt_ns(ns as f64 / n.max(1) as f64);
    println!(
        "\nstore at its cap ({ROWS} rows), {n} events: {hits} SQL hits, {:.2} rule queries \
         an event; {:.1} ms, {} per event",
        (store.queries_run() - queries) as f64 / n.max(1) as f64,
        wall * 1e3,
        fmt_ns(wall * 1e9 / n.max(1) as f64)
    );
    println!("  insert: {} per event", per(p.insert_ns));
    println!("  bounds: {} per event", per(p.bounds_ns));
    for (id, runs, ns) in &p.rules {
        println!(
            "  {id:<30} {runs:>6} runs, {:>10} per run, {:>10} per event",
            fmt_ns(*ns as f64 / (*runs).max(1) as f64),
            per(*ns)
        );
    }
    let rows: Vec<EventRow> = requests.iter().map(|r| r.row.clone()).collect();
    let started = Instant::now();
    let judged = cap_route(&routing, &rows, n);
    println!(
        "  routing (rules_for): {} per event ({judged} of {n} judged)",
        fmt_ns(started.elapsed().as_nanos() as f64 / n.max(1) as f64)
    );
    let kept = store.row_count().expect("count");
    assert!(
        (ROWS..=ROWS + parallax_store::cap_slack(ROWS)).contains(&kept),
        "the cap held: {kept} rows"
    );
}

fn main() {
    let budgets = Budgets::load();
    if std::env::args().any(|a| a == "cap") {
        let program = baked::engine().expect("baked engine").program().clone();
        cap_profile(&program);
        return;
    }
    if std::env::args().any(|a| a == "mix") {
        let program = baked::engine().expect("baked engine").program().clone();
        mix_profile(&program);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    // `-- hot_session` runs that group alone (its set-up is most of the
    // time, so skip the other's too).
    let only_hot = std::env::args().any(|a| a == "hot_session");
    let event_us = (!only_hot).then(|| sql(&mut c));
    let program = baked::engine().expect("baked engine").program().clone();
    let ratio = hot_session(&mut c, &program);
    c.final_summary();
    match event_us {
        Some((p50, p99)) => {
            budgets.check("sql-event-p50", p50);
            budgets.check("sql-event-p99", p99);
        }
        None => {
            budgets.not_measured("sql-event-p50", "run without `hot_session`");
            budgets.not_measured("sql-event-p99", "run without `hot_session`");
        }
    }
    budgets.check("sql-hot-session-cap-vs-1k", ratio);
}
