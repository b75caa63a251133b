//! Evaluation latency of the shipped rules, baked versus dynamic backend.
//! (The full budget suite lands with the benchmarks issue.)

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use parallax::{baked, loader};
use parallax_runtime::{Engine, Event, PreparedEvent};
use serde_json::json;
use std::path::Path;

fn events() -> Vec<(&'static str, PreparedEvent)> {
    let benign_1k = "Summarise the design document and list open questions. ".repeat(18);
    [
        ("tool_call_200b", json!({"stage":"tool.before","tool_name":"Bash","tool_args":{"command":"cargo test --workspace -- --nocapture 2>&1 | tail -n 40"}})),
        ("message_1k", json!({"stage":"message.before","message_text": benign_1k})),
        ("block_rm_rf", json!({"stage":"tool.before","tool_name":"exec","tool_args":{"command":"rm -rf /"}})),
        ("result_64k", json!({"stage":"tool.after","tool_name":"Read","tool_result": "fn main() { println!(\"hello\"); }\n".repeat(2000)})),
    ]
    .into_iter()
    .map(|(n, v)| (n, PreparedEvent::new(Event::from_value(v).unwrap())))
    .collect()
}

fn bench_engine(c: &mut Criterion, name: &str, engine: &Engine) {
    let mut group = c.benchmark_group(name);
    let mut scratch = engine.new_scratch();
    for (event_name, event) in events() {
        group.bench_function(event_name, |b| {
            b.iter(|| black_box(engine.evaluate(black_box(&event), &mut scratch).action))
        });
    }
    group.finish();
}

fn evaluate(c: &mut Criterion) {
    let baked = baked::engine().unwrap();
    let dynamic = loader::dynamic_engine(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/parallax.yaml"
    )))
    .unwrap();
    bench_engine(c, "baked", &baked);
    bench_engine(c, "dynamic", &dynamic);
}

criterion_group!(benches, evaluate);
criterion_main!(benches);
