//! Pathological inputs: for every rule, text built from the rule's own
//! literals repeated to 1 MiB, evaluated through the real engine (the
//! event prepared, every scan and verifier, the report with its match
//! spans and redaction). An engine that is linear in its input spends
//! about the same time per byte on any of them; a superlinear path (a
//! verifier re-searching from every match, span finding restarting at
//! each candidate) shows as a per-byte cost that grows with the size.
//!
//! Seeds per atom of each rule: the literals of its field's automata that
//! point at it (its own literal, or the required literals of its
//! verifier), and the required literals of its regex
//! (`parallax_compiler::literals`). Per seed three texts: the seed
//! repeated, the seed and a space repeated, and the seed without its last
//! character repeated (a prefix that keeps an automaton one byte short of
//! a match). Each goes into the event shape that carries the atom's field.
//!
//! The sweep times every text (twice, the faster kept) at
//! `PATHOLOGICAL_SWEEP_BYTES` (default 32 KiB for the shipped rules, 4 KiB
//! for the ATR corpus's 30,000-odd texts; `PATHOLOGICAL_SHIPPED_SWEEP_BYTES` / `PATHOLOGICAL_ATR_SWEEP_BYTES`
//! set one alone); the worst are re-timed at 1 MiB (best of three) and the
//! worst three of those go through criterion. `PATHOLOGICAL_ONLY=part`
//! keeps the rules whose id contains `part`. The budget line is the worst
//! 1 MiB ns/byte. Rule sets: the shipped rules (baked), and the ATR corpus
//! (dynamic) when `PARALLAX_CONFORMANCE_DIR` has it (`PATHOLOGICAL_ATR=0`
//! skips it).
//!
//! `cargo bench --bench pathological`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use parallax::backend;
use parallax_runtime::{Engine, Event, FieldRef, PreparedEvent, Report};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/atom_literals.rs"]
mod atom_literals;
#[path = "support/budgets.rs"]
mod budgets;
#[path = "../tests/support/conformance.rs"]
mod conformance;

const MIB: usize = 1 << 20;
/// How many of the sweep's worst are re-timed at 1 MiB.
const RETIME: usize = 12;
/// An evaluation stops here (the engine's own deadline), so one truly
/// quadratic input cannot hold the bench for hours; a stopped one is
/// reported as at least this slow.
const CAP: Duration = Duration::from_secs(20);

/// One pathological text: which rule's seed, how it was built, where it goes.
#[derive(Clone)]
struct Case {
    rule: String,
    field: String,
    kind: &'static str,
    seed: String,
    shape: Shape,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum Shape {
    Message,
    Response,
    Command,
    WriteContent,
    Url,
    ReadPath,
    WritePath,
    Query,
    ToolResult,
    ToolArgs,
    Params,
}

/// Where a field's text comes from in an event (docs/FIELDS.md).
fn shapes(field: &FieldRef) -> Vec<Shape> {
    let name = field.name();
    let root = name.split('.').next().unwrap_or_default();
    match root {
        "command" | "shell" | "argv" | "program" | "redirect" | "code" | "decoded"
        | "executable" => vec![Shape::Command],
        "content" => vec![Shape::WriteContent],
        "url" => vec![Shape::Url],
        "path" | "read_path" => vec![Shape::ReadPath],
        "write_path" => vec![Shape::WritePath],
        "query" => vec![Shape::Query],
        "message_text" => vec![Shape::Message],
        "response_text" => vec![Shape::Response],
        "tool_args" | "tool_name" => vec![Shape::ToolArgs],
        "tool_result" => vec![Shape::ToolResult],
        "params" => vec![Shape::Params],
        // `text` and anything else: a message and a tool result.
        _ => vec![Shape::Message, Shape::ToolResult],
    }
}

/// The event of `shape` carrying `text`; `field` names the JSON key for
/// the JSON-rooted shapes.
fn event(shape: Shape, field: &str, text: &str) -> Value {
    let key = field.split('.').nth(1).unwrap_or("data");
    match shape {
        Shape::Message => json!({"stage": "message.before", "message_text": text}),
        Shape::Response => json!({"stage": "response.after", "response_text": text}),
        Shape::Command => {
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": text}})
        }
        Shape::WriteContent => json!({"stage": "tool.before", "tool_name": "Write",
            "tool_args": {"file_path": "/tmp/notes.txt", "content": text}}),
        Shape::Url => {
            json!({"stage": "tool.before", "tool_name": "WebFetch", "tool_args": {"url": text}})
        }
        Shape::ReadPath => {
            json!({"stage": "tool.before", "tool_name": "Read", "tool_args": {"file_path": text}})
        }
        Shape::WritePath => json!({"stage": "tool.before", "tool_name": "Write",
            "tool_args": {"file_path": text, "content": "x"}}),
        Shape::Query => {
            json!({"stage": "tool.before", "tool_name": "sql", "tool_args": {"query": text}})
        }
        Shape::ToolResult => {
            json!({"stage": "tool.after", "tool_name": "Read", "tool_result": text})
        }
        Shape::ToolArgs => {
            json!({"stage": "tool.before", "tool_name": "http_request", "tool_args": {key: text}})
        }
        Shape::Params => json!({"stage": "params.before", "params": {key: text}}),
    }
}

/// `unit` repeated to at most `bytes` (cut on a character boundary).
fn repeated(unit: &str, bytes: usize) -> String {
    if unit.is_empty() {
        return String::new();
    }
    let mut s = unit.repeat(bytes / unit.len() + 1);
    let mut end = bytes.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

fn text_of(case: &Case, bytes: usize) -> String {
    match case.kind {
        "repeat" => repeated(&case.seed, bytes),
        "spaced" => repeated(&format!("{} ", case.seed), bytes),
        _ => {
            let mut prefix = case.seed.clone();
            prefix.pop();
            repeated(&prefix, bytes)
        }
    }
}

/// Every rule's cases, deduplicated on (seed, kind, shape).
fn cases(engine: &Engine) -> Vec<Case> {
    let program = engine.program();
    // Per atom: the literals that point at it.
    let literals = atom_literals::literals_by_atom(program);
    let both_groups = atom_literals::conjunctive_seeds(program);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for rule in &program.rules {
        let mut atoms = Vec::new();
        rule.predicate.atoms(&mut atoms);
        for a in atoms {
            let atom = &program.atoms[a as usize];
            let field = &program.fields[atom.field as usize].field;
            let mut seeds = literals.get(&a).cloned().unwrap_or_default();
            seeds.extend(both_groups.get(&a).cloned());
            seeds.extend(
                parallax_compiler::literals::required_literals(&atom.pattern, 1)
                    .unwrap_or_default(),
            );
            for seed in seeds {
                for kind in ["repeat", "spaced", "prefix"] {
                    if kind == "prefix" && seed.chars().count() < 2 {
                        continue;
                    }
                    for shape in shapes(field) {
                        if seen.insert((seed.clone(), kind, shape)) {
                            out.push(Case {
                                rule: rule.id.clone(),
                                field: field.name(),
                                kind,
                                seed: seed.clone(),
                                shape,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// Prepares, evaluates and reports `v` once; the time taken.
fn run_once(
    engine: &Engine,
    scratch: &mut parallax_runtime::Scratch,
    v: &Value,
) -> (Duration, bool) {
    let e = Event::from_value(v.clone()).expect("a valid event");
    let started = Instant::now();
    scratch.set_deadline(Some(started + CAP));
    let prepared = PreparedEvent::new(e);
    let verdict = engine.evaluate(&prepared, scratch);
    let report = Report::build(engine, &prepared, &verdict, started.elapsed());
    black_box(&report);
    let took = started.elapsed();
    let stopped = scratch.timed_out();
    scratch.set_deadline(None);
    (took, stopped)
}

fn ns_per_byte(d: Duration, bytes: usize) -> f64 {
    d.as_nanos() as f64 / bytes.max(1) as f64
}

/// Sweeps, re-times and benches one rule set; returns its worst 1 MiB
/// ns/byte.
fn rule_set(c: &mut Criterion, name: &str, engine: &Engine, sweep_default: usize) -> f64 {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
    let sweep: usize = env(&format!("PATHOLOGICAL_{}_SWEEP_BYTES", name.to_uppercase()))
        .or_else(|| env("PATHOLOGICAL_SWEEP_BYTES"))
        .unwrap_or(sweep_default);
    let mut all = cases(engine);
    // `PATHOLOGICAL_ONLY=rule-id-part`: only those rules (for profiling).
    if let Ok(only) = std::env::var("PATHOLOGICAL_ONLY") {
        all.retain(|c| c.rule.contains(&only));
    }
    let mut scratch = engine.new_scratch();
    let started = Instant::now();
    let mut timed: Vec<(f64, Case)> = all
        .iter()
        .map(|case| {
            let v = event(case.shape, &case.field, &text_of(case, sweep));
            // Twice, the faster kept: the first evaluation of a field or
            // verifier also makes its caches (a 2026-12-02 sweep put cases
            // at 180,000 ns/byte at 4 KiB that took 400 at 1 MiB), which
            // would fill the re-timed dozen with first uses instead of the
            // slowest per byte.
            let (first, _) = run_once(engine, &mut scratch, &v);
            let (second, _) = run_once(engine, &mut scratch, &v);
            (ns_per_byte(first.min(second), sweep), case.clone())
        })
        .collect();
    timed.sort_by(|a, b| b.0.total_cmp(&a.0));
    eprintln!(
        "{name}: {} rules, {} texts swept at {} bytes in {:.1} s",
        engine.program().rules.len(),
        all.len(),
        sweep,
        started.elapsed().as_secs_f64()
    );
    let mut worst: Vec<(f64, f64, bool, Case)> = timed
        .iter()
        .take(RETIME)
        .map(|(small, case)| {
            let v = event(case.shape, &case.field, &text_of(case, MIB));
            let mut best = Duration::MAX;
            let mut stopped = false;
            for _ in 0..3 {
                let (d, s) = run_once(engine, &mut scratch, &v);
                best = best.min(d);
                stopped |= s;
                if s {
                    break;
                }
            }
            (ns_per_byte(best, MIB), *small, stopped, case.clone())
        })
        .collect();
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("{name}: the worst texts (ns/byte at 1 MiB, at the sweep size, growth):");
    for (big, small, stopped, case) in &worst {
        let seed: String = case.seed.chars().take(40).collect();
        println!(
            "  {big:>10.1}{} {small:>8.1} {:>5.1}x  {} ({}, {:?}, {}: {seed:?})",
            if *stopped {
                "+ (stopped at the cap)"
            } else {
                ""
            },
            big / small.max(0.001),
            case.rule,
            case.field,
            case.shape,
            case.kind,
        );
    }
    let mut group = c.benchmark_group(format!("pathological/{name}"));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(MIB as u64));
    for (i, (_, _, stopped, case)) in worst.iter().take(3).enumerate() {
        if *stopped {
            continue;
        }
        let v = event(case.shape, &case.field, &text_of(case, MIB));
        group.bench_function(format!("{i}-{}", case.rule), |b| {
            b.iter(|| run_once(engine, &mut scratch, &v))
        });
    }
    group.finish();
    worst.first().map_or(0.0, |w| w.0)
}

fn pathological(c: &mut Criterion) {
    let budgets = budgets::Budgets::load();
    let shipped = backend::baked::engine().expect("the baked rules load");
    let mut worst = rule_set(c, "shipped", &shipped, 32 * 1024);
    let atr_wanted = std::env::var("PATHOLOGICAL_ATR").map_or(true, |v| v != "0");
    if atr_wanted {
        if let Some(engine) = atr_engine() {
            // Over 20,000 texts: a smaller sweep, the worst still re-timed
            // at 1 MiB.
            worst = worst.max(rule_set(c, "atr", &engine, 4 * 1024));
        }
    }
    budgets.check("pathological-worst-ns-per-byte", worst);
}

/// The ATR corpus compiled with the fixture's settings, if present.
fn atr_engine() -> Option<Engine> {
    let corpus = conformance::root().join("atr/rules");
    if !corpus.is_dir() {
        eprintln!(
            "ATR corpus not found at {} (set {}): shipped rules only",
            corpus.display(),
            conformance::ENV
        );
        return None;
    }
    let fixture = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/atr/parallax.yaml"
    ));
    let mut settings: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(fixture).expect("read the ATR fixture"))
            .expect("the ATR fixture is YAML");
    settings["atr_dirs"] = serde_yaml::Value::Sequence(vec![corpus.display().to_string().into()]);
    let dir = std::env::temp_dir().join(format!("parallax-bench-patho-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    let config = dir.join("parallax.yaml");
    std::fs::write(&config, serde_yaml::to_string(&settings).expect("YAML")).expect("write");
    let engine = backend::dynamic_engine(&config).expect("the ATR corpus compiles");
    let _ = std::fs::remove_dir_all(&dir);
    Some(engine)
}

criterion_group!(benches, pathological);
criterion_main!(benches);
