//! Parallax against the naive baseline, in one run on one machine: the
//! table docs/PERFORMANCE.md "Against a naive engine" is made from.
//!
//! The naive engine (`support/naive.rs`) is what an interpreter of the same
//! rules does: one `regex::Regex` per regex atom, one substring search per
//! keyword, each rule's predicate walked in chain order. It gives the same
//! verdicts (checked below before anything is timed), so the two columns
//! compare the same work done two ways.
//!
//! Both sides start from the parsed event and pay for deriving its fields
//! (`PreparedEvent::new`); Parallax also builds its report (spans,
//! redaction), which the naive engine has no equivalent of. So the ratio
//! understates what compiling buys, never overstates it.
//!
//! The events are the benchmark events of `support/events.rs` and three
//! adversarial ones: the PEM-header flood issue 19 was filed with (486 KB,
//! once 11.9 s), a 64 KB message of a CJK seed the pathological harness
//! found slowest, and 64 KB of every keyword the shipped rules look for.
//!
//! Run: `cargo bench --bench comparison` (about a minute).

#[path = "support/events.rs"]
mod events;
#[path = "support/naive.rs"]
mod naive;
#[path = "support/timing.rs"]
mod timing;

use naive::Naive;
use parallax::backend::baked;
use parallax_compiler::ir::AtomKind;
use parallax_runtime::{Action, Engine, Event, PreparedEvent, Report, Scratch};
use serde_json::{json, Value};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};
use timing::{fmt_ns, sample_min};

/// One row of the table.
struct Case {
    name: String,
    event: Event,
    text_bytes: usize,
}

/// `unit` repeated until the text is at least `bytes` long.
fn repeated(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes.div_ceil(unit.len().max(1)))
}

fn adversarial(keywords: &[String]) -> Vec<(String, Value)> {
    let pem = repeated("-----BEGIN PRIVATE KEY-----", 486_000);
    let cjk = repeated("적어 ", 64 * 1024);
    let soup = repeated(&(keywords.join(" ") + " "), 64 * 1024);
    vec![
        (
            "pem_headers_486k".into(),
            json!({"stage": "tool.after", "session_id": "bench-1", "tool_name": "Read",
                   "tool_args": {"file_path": "keys.txt"}, "tool_result": pem}),
        ),
        (
            "cjk_seed_64k".into(),
            json!({"stage": "message.before", "session_id": "bench-1", "message_text": cjk}),
        ),
        (
            "keyword_soup_64k".into(),
            json!({"stage": "tool.after", "session_id": "bench-1", "tool_name": "Read",
                   "tool_args": {"file_path": "notes.txt"}, "tool_result": soup}),
        ),
    ]
}

/// Bytes of text an event carries (its message, command, result).
fn text_bytes(v: &Value) -> usize {
    ["message_text", "tool_result", "response_text"]
        .iter()
        .filter_map(|k| v.get(k).and_then(Value::as_str))
        .map(str::len)
        .sum::<usize>()
        + v.pointer("/tool_args/command")
            .and_then(Value::as_str)
            .map_or(0, str::len)
}

/// Parallax's in-process path from a parsed event: derive fields,
/// evaluate, build the report.
fn parallax_path(engine: &Engine, scratch: &mut Scratch, event: &Event) -> Action {
    let started = Instant::now();
    let prepared = PreparedEvent::new(event.clone());
    let verdict = engine.evaluate(&prepared, scratch);
    Report::build(engine, &prepared, &verdict, started.elapsed()).action
}

fn naive_path(naive: &Naive, event: &Event) -> Action {
    naive.evaluate(&PreparedEvent::new(event.clone()))
}

fn main() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("parallax.yaml");
    let rules = parallax_compiler::load(&config).expect("shipped rules lower");
    let keywords: Vec<String> = rules
        .atoms
        .iter()
        .filter_map(|a| match &a.kind {
            AtomKind::Literal { text, .. } => Some(text.clone()),
            AtomKind::Regex { .. } => None,
        })
        .collect();
    let naive = Naive::new(rules);
    let engine = baked::engine().expect("baked engine");
    engine
        .build_all()
        .expect("every scanner of the shipped rules builds");
    let mut scratch = engine.new_scratch();

    let mut cases: Vec<Case> = events::all()
        .into_iter()
        .map(|e| Case {
            name: e.name.to_string(),
            event: Event::from_value(e.json).expect("bench events are valid"),
            text_bytes: e.text_bytes,
        })
        .collect();
    for (name, v) in adversarial(&keywords) {
        cases.push(Case {
            name,
            text_bytes: text_bytes(&v),
            event: Event::from_value(v).expect("adversarial events are valid"),
        });
    }

    // The same verdicts, or the columns compare different work.
    for c in &cases {
        let p = engine
            .evaluate(&PreparedEvent::new(c.event.clone()), &mut scratch)
            .action;
        let n = naive_path(&naive, &c.event);
        assert_eq!(p, n, "{}: parallax {p}, naive {n}", c.name);
    }

    let per = Duration::from_millis(1500);
    println!(
        "| event | text | Parallax p50 | Parallax MB/s | naive p50 | naive MB/s | naive ÷ Parallax |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for c in &cases {
        let p = sample_min(per, 20, || {
            black_box(parallax_path(&engine, &mut scratch, black_box(&c.event)));
        });
        let n = sample_min(per, 20, || {
            black_box(naive_path(&naive, black_box(&c.event)));
        });
        let mbs = |ns: f64| c.text_bytes as f64 / ns * 1e3;
        println!(
            "| {} | {} B | {} | {:.0} | {} | {:.0} | {:.1}× |",
            c.name,
            c.text_bytes,
            fmt_ns(p.p50),
            mbs(p.p50),
            fmt_ns(n.p50),
            mbs(n.p50),
            n.p50 / p.p50
        );
    }
}
