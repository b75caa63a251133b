//! Test cases for temporal (SQL) rules: a sequence of events, not one.
//!
//! A SQL rule judges a session's recent history, so its case replays a
//! short session through the whole pipeline — the compiled evaluators, then
//! a fresh in-memory side-store on a manual clock — and checks whether the
//! rule fires on the **last** event:
//!
//! ```yaml
//! tests:
//!   match:
//!     - steps:
//!         - {repeat: 101, every: 0.2, event: {tool_name: Bash, tool_args: {command: ls}}}
//!   no_match:
//!     - steps:
//!         - {repeat: 100, event: {tool_name: Bash, tool_args: {command: ls}}}
//! ```
//!
//! A step is `{event, repeat (default 1), every (seconds between repeats,
//! default 1)}` or `{wait: seconds}`. Events default to the rule's first
//! stage and to session `test-session`, so a case only states what matters.

use parallax_runtime::{Engine, Event, PreparedEvent, Stage, StateSettings};
use parallax_store::{ManualClock, Store, StoreRequest};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Where the replayed clock starts (any fixed epoch second will do; fixed so
/// a case replays identically every run).
const START: f64 = 1_800_000_000.0;

/// At most this many events per case: a typo'd `repeat` must not hang a run.
const MAX_EVENTS: u64 = 100_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SequenceCase {
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, untagged)]
enum Step {
    Wait {
        wait: f64,
    },
    Event {
        event: Value,
        #[serde(default = "one")]
        repeat: u64,
        #[serde(default = "second")]
        every: f64,
    },
}

fn one() -> u64 {
    1
}

fn second() -> f64 {
    1.0
}

/// Replays `case` for SQL rule `rule` (an index into the program's rules);
/// returns whether the rule fired on the last event.
pub fn run(
    engine: &Engine,
    rule: usize,
    default_stage: Stage,
    case: &Value,
) -> Result<bool, String> {
    let case: SequenceCase = serde_json::from_value(case.clone()).map_err(|e| {
        format!(
            "a SQL rule's case is `{{steps: [...]}}` where a step is `{{event, repeat, every}}` \
             or `{{wait: seconds}}`: {e}"
        )
    })?;
    let total: u64 = case
        .steps
        .iter()
        .map(|s| match s {
            Step::Event { repeat, .. } => *repeat,
            Step::Wait { .. } => 0,
        })
        .sum();
    if total == 0 {
        return Err("the case has no event".into());
    }
    if total > MAX_EVENTS {
        return Err(format!(
            "the case replays {total} events (at most {MAX_EVENTS})"
        ));
    }
    let (mut store, clock) = replay_store(engine)?;
    let mut scratch = engine.new_scratch();
    let mut fired_last = false;
    for step in &case.steps {
        match step {
            Step::Wait { wait } => {
                if !(wait.is_finite() && *wait >= 0.0) {
                    return Err(format!("`wait: {wait}` must be a non-negative number"));
                }
                clock.advance(*wait);
            }
            Step::Event {
                event,
                repeat,
                every,
            } => {
                if !(every.is_finite() && *every >= 0.0) {
                    return Err(format!("`every: {every}` must be a non-negative number"));
                }
                let event = with_defaults(event, default_stage)?;
                for _ in 0..*repeat {
                    clock.advance(*every);
                    let prepared = PreparedEvent::new(event.clone());
                    let verdict = engine.evaluate(&prepared, &mut scratch);
                    let req = StoreRequest::new(&prepared, &verdict, engine.program(), None);
                    let hits = store
                        .process(&req)
                        .map_err(|e| format!("side-store: {e}"))?;
                    fired_last = hits.iter().any(|h| h.rule as usize == rule);
                }
            }
        }
    }
    Ok(fired_last)
}

fn with_defaults(event: &Value, stage: Stage) -> Result<Event, String> {
    let Value::Object(m) = event else {
        return Err(format!("a step's `event` is a mapping, not {event}"));
    };
    let mut m = m.clone();
    m.entry("stage").or_insert_with(|| json!(stage.as_str()));
    m.entry("session_id")
        .or_insert_with(|| json!("test-session"));
    Event::from_value(Value::Object(m)).map_err(|e| e.to_string())
}

/// An in-memory side-store for `engine`'s SQL rules on a manual clock at
/// [`START`], which a case's replay advances step by step.
pub(crate) fn replay_store(engine: &Engine) -> Result<(Store, Arc<ManualClock>), String> {
    let clock = Arc::new(ManualClock::new(START));
    let settings = StateSettings {
        path: None,
        ..StateSettings::default()
    };
    let store = Store::open(engine.program(), &settings, clock.clone())
        .map_err(|e| format!("side-store: {e}"))?;
    Ok((store, clock))
}
