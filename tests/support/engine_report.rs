//! One event through an engine, the way the decision service does it
//! (prepare, evaluate, build the report), for tests that score rules
//! without a server: fixtures compiled by the dynamic backend, corpora on
//! the baked one.

use parallax::backend;
use parallax_runtime::{Engine, Event, PreparedEvent, Report, Scratch};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The fixture config at `relative` (to the crate root), compiled by the
/// dynamic backend; panics with the compiler's message if it does not.
pub fn dynamic_fixture(relative: &str) -> Engine {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    backend::dynamic_engine(&p)
        .unwrap_or_else(|e| panic!("fixture {} does not compile: {e}", p.display()))
}

/// The report for `event` with a fresh scratch.
pub fn report(engine: &Engine, event: Value) -> Report {
    report_with(engine, &mut engine.new_scratch(), event)
}

/// The report for `event`, reusing `scratch` (a corpus of many events).
/// Panics naming the problem when `event` is not a valid event.
pub fn report_with(engine: &Engine, scratch: &mut Scratch, event: Value) -> Report {
    let shown = event.to_string();
    let event = Event::from_value(event).unwrap_or_else(|e| panic!("bad event {shown}: {e}"));
    let prepared = PreparedEvent::new(event);
    let verdict = engine.evaluate(&prepared, scratch);
    Report::build(engine, &prepared, &verdict, Duration::ZERO)
}

/// The ids of the rules that fired, in report order.
pub fn rule_ids(report: &Report) -> Vec<&str> {
    report.results.iter().map(|x| x.rule_id.as_str()).collect()
}
