//! The typosquat check (issue 37): an install command naming ten
//! packages, its names read out of the shell analysis's `argv` and each
//! looked up among the ecosystem's most-used names
//! (`runtime/src/typosquat.rs`).
//!
//! - `typosquat/validator_ten_popular`: the `typosquat_command` check alone
//!   on `pip install` of ten popular names (each found by one probe);
//! - `typosquat/validator_ten_unknown`: ten names that are neither popular
//!   nor near a popular one (in-house packages): every deletion of every
//!   name probed, the slowest path, which the budget is written on;
//! - `typosquat/validator_ten_last_squat`: the same with the tenth name a
//!   typosquat;
//! - `typosquat/evaluate_ten_popular`: the whole evaluation (baked backend,
//!   prepare + evaluate) of the `tool.before` Bash event with that command,
//!   for scale.
//!
//! Then our own loop times single checks for the `typosquat-ten-names-p50`
//! budget (`benches/budgets.toml`). Run: `cargo bench --bench typosquat`.

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/timing.rs"]
mod timing;

use criterion::{black_box, Criterion};
use parallax::backend::baked;
use parallax_runtime::{Event, PreparedEvent, Validator};
use serde_json::json;
use std::time::Duration;

const TEN_POPULAR: &str = "pip install requests numpy pandas flask 'pydantic>=2' \
     sqlalchemy python-dateutil cryptography boto3 matplotlib";
const TEN_UNKNOWN: &str = "pip install acme-billing-core acme-ledger internal-auth-client \
     metrics-shipper-ng data-contracts orgtools-cli report-builder-x queue-workerd \
     featureflagz tenant-routing";
const TEN_LAST_SQUAT: &str = "pip install requests numpy pandas flask 'pydantic>=2' \
     sqlalchemy python-dateutil cryptography boto3 matplotllib";

fn main() {
    let check = Validator::TyposquatCommand;
    // Built once, on first use; not part of the figures.
    assert!(!check.check(TEN_POPULAR));
    assert!(!check.check(TEN_UNKNOWN));
    assert!(check.check(TEN_LAST_SQUAT));

    let engine = baked::engine().expect("baked engine");
    let mut scratch = engine.new_scratch();
    let event = json!({"stage": "tool.before", "tool_name": "Bash",
                       "tool_args": {"command": TEN_POPULAR}});

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("typosquat");
    group.bench_function("validator_ten_popular", |b| {
        b.iter(|| black_box(check.check(black_box(TEN_POPULAR))))
    });
    group.bench_function("validator_ten_unknown", |b| {
        b.iter(|| black_box(check.check(black_box(TEN_UNKNOWN))))
    });
    group.bench_function("validator_ten_last_squat", |b| {
        b.iter(|| black_box(check.check(black_box(TEN_LAST_SQUAT))))
    });
    group.bench_function("evaluate_ten_popular", |b| {
        b.iter(|| {
            let e = PreparedEvent::new(Event::from_value(event.clone()).expect("event"));
            black_box(engine.evaluate(&e, &mut scratch).action)
        })
    });
    group.finish();
    c.final_summary();

    for (what, text) in [("popular", TEN_POPULAR), ("unknown", TEN_UNKNOWN)] {
        let d = timing::sample(Duration::from_secs(1), || {
            black_box(check.check(black_box(text)));
        });
        println!(
            "typosquat check, ten {what} names: p50 {} p99 {}",
            timing::fmt_ns(d.p50),
            timing::fmt_ns(d.p99),
        );
    }
    let d = timing::sample(Duration::from_secs(2), || {
        black_box(check.check(black_box(TEN_UNKNOWN)));
    });
    println!("(clock read ~{})", timing::fmt_ns(timing::timer_overhead()));
    budgets::Budgets::load().check("typosquat-ten-names-p50", d.p50 / 1000.0);
}
