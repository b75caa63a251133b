//! Cost as the rule set grows: synthetic rule sets of 100, 1,000 and 10,000
//! rules, written as rule files and compiled by the real compiler, then
//! evaluated on the benign benchmark events.
//!
//! The per-field automata are meant to make the cost of a scan depend on the
//! input, not on the number of rules; the budget `scale-10000-vs-100` holds
//! that to a factor of 3. Each size also reports build time, automata size
//! and the naive one-regex-per-rule interpreter on the same rules.
//!
//! The rule sets run on the dynamic backend (a baked build would need a
//! release rebuild per size); its scanning is the baked backend's, and only
//! predicate evaluation differs (see the `evaluate` bench for that ratio).
//!
//! Run: `cargo bench --bench scale`. `PARALLAX_SCALE_KEEP=<dir>` keeps the
//! generated configs there (e.g. to bake the largest by hand with
//! `PARALLAX_CONFIG=<dir>/rules-10000/parallax.yaml cargo build --release`).

#[path = "support/budgets.rs"]
mod budgets;
#[path = "support/events.rs"]
mod events;
#[path = "support/naive.rs"]
mod naive;
#[path = "support/timing.rs"]
mod timing;

use budgets::Budgets;
use criterion::{BenchmarkId, Criterion, Throughput};
use naive::Naive;
use parallax_compiler::{plan, Limits};
use parallax_runtime::{Action, Engine, Event, PreparedEvent};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use timing::{fmt_ns, sample, sample_min};

const SIZES: [usize; 3] = [100, 1_000, 10_000];
/// Rules per generated file (one evaluator each), like a curated library
/// split by category.
const RULES_PER_FILE: usize = 250;
const STAGES: &str = "[message.before, tool.before, tool.after]";

/// Deterministic pseudo-random numbers (no `rand`: the sets must be the same
/// on every run and every machine).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// A made-up word of 3 syllables plus a per-rule tag, so rules are distinct
/// and never fire on the benign events.
fn word(rng: &mut Lcg, rule: usize) -> String {
    const C: [&str; 16] = [
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "qu", "x",
    ];
    const V: [&str; 5] = ["a", "e", "i", "o", "u"];
    let mut w = String::new();
    for _ in 0..3 {
        w.push_str(rng.pick(&C));
        w.push_str(rng.pick(&V));
    }
    // Base-26 tag of the rule number keeps words unique across the set.
    let mut n = rule;
    loop {
        w.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    w
}

/// One rule as YAML, and its engine directory. The mix: 40% keyword rules
/// (mostly case-insensitive), 25% simple regexes, 25% case-insensitive
/// regexes, 10% regexes with word boundaries and a bounded gap (which take
/// the prefiltered path). Field comparisons do not exist yet.
fn rule(i: usize, rng: &mut Lcg) -> (&'static str, String) {
    let (a, b) = (word(rng, i), word(rng, i));
    let action = if i.is_multiple_of(5) {
        "block"
    } else {
        "detect"
    };
    let head = format!("- id: syn-{i:05}\n  title: Synthetic rule {i}\n  action: {action}\n");
    let kind = i % 20;
    if kind < 8 {
        let case = if kind == 7 {
            "\n  case_sensitive: true"
        } else {
            ""
        };
        let field = if i.is_multiple_of(2) {
            "text"
        } else {
            "command"
        };
        return (
            "pattern",
            format!("{head}  fields: [{field}]\n  keywords: ['{a} {b}', '{b}']{case}\n"),
        );
    }
    let (field, pattern) = match kind {
        8 | 9 => ("command", format!(r"{a}\s+--{b}(?:=\S+)?")),
        10 | 11 => ("url", format!(r"https?://[a-z0-9.-]*{a}\.(?:com|net|io)/")),
        12 => ("text", format!(r"{a}_[0-9a-f]{{8,16}}")),
        13..=15 => ("text", format!(r"(?i){a}\s+(?:the\s+)?{b}")),
        16 | 17 => ("command", format!(r"(?i){a}\s*[:=]\s*{b}")),
        _ => ("text", format!(r"\b{a}\b[^\n]{{0,40}}\b{b}\b")),
    };
    (
        "regex",
        format!("{head}  fields: [{field}]\n  pattern: '{pattern}'\n"),
    )
}

/// Writes a config with `n` synthetic rules under `dir`; returns the config
/// path and a keyword of the first rule (to check the rules really fire).
fn write_rules(dir: &Path, n: usize) -> (PathBuf, String) {
    let mut rng = Lcg(0x5eed_0000 + n as u64);
    let mut files: Vec<(&str, String)> = Vec::new();
    let mut probe = String::new();
    let mut per_engine: [(usize, String); 2] = Default::default();
    let mut flush = |engine: &'static str, body: &mut String, count: &mut usize| {
        if *count > 0 {
            files.push((engine, std::mem::take(body)));
            *count = 0;
        }
    };
    for i in 0..n {
        let (engine, yaml) = rule(i, &mut rng);
        if i == 0 {
            // `- id: …\n … keywords: ['<a> <b>', …]`: take the first keyword.
            probe = yaml
                .split("keywords: ['")
                .nth(1)
                .and_then(|s| s.split('\'').next())
                .unwrap_or_default()
                .to_string();
        }
        let slot = &mut per_engine[usize::from(engine == "regex")];
        slot.1.push_str(&yaml);
        slot.0 += 1;
        if slot.0 == RULES_PER_FILE {
            flush(engine, &mut slot.1, &mut slot.0);
        }
    }
    for (idx, engine) in ["pattern", "regex"].into_iter().enumerate() {
        let slot = &mut per_engine[idx];
        flush(engine, &mut slot.1, &mut slot.0);
    }
    std::fs::create_dir_all(dir.join("rules/pattern")).expect("create rules dir");
    std::fs::create_dir_all(dir.join("rules/regex")).expect("create rules dir");
    for (k, (engine, body)) in files.iter().enumerate() {
        let mut text = String::new();
        let _ = write!(
            text,
            "evaluator:\n  name: synthetic-{engine}-{k:03}\n  stages: {STAGES}\nrules:\n{body}"
        );
        std::fs::write(
            dir.join(format!("rules/{engine}/synthetic-{k:03}.yaml")),
            text,
        )
        .expect("write rule file");
    }
    let config = dir.join("parallax.yaml");
    std::fs::write(&config, "rules_dir: rules\n").expect("write config");
    (config, probe)
}

struct Built {
    n: usize,
    engine: Engine,
    naive: Naive,
    build_ms: f64,
    dfa_bytes: usize,
    shards: usize,
    literals: usize,
    verifiers: usize,
}

fn build(root: &Path, n: usize) -> Built {
    let dir = root.join(format!("rules-{n}"));
    let (config, probe) = write_rules(&dir, n);
    let rules = parallax_compiler::load(&config).unwrap_or_else(|e| panic!("{n} rules: {e}"));
    assert_eq!(rules.rule_count(), n, "every synthetic rule compiles");
    let naive = Naive::new(rules.clone());
    let started = Instant::now();
    let compiled = plan::compile(&rules, &Limits::default());
    let stats = compiled.stats.clone();
    let engine = compiled.into_engine().expect("engine");
    let build_ms = started.elapsed().as_secs_f64() * 1000.0;
    let hit = PreparedEvent::new(
        Event::from_value(serde_json::json!({
            "stage": "message.before",
            "message_text": format!("please {probe} now"),
        }))
        .expect("probe event"),
    );
    let mut scratch = engine.new_scratch();
    assert_ne!(
        engine.evaluate(&hit, &mut scratch).action,
        Action::Allow,
        "{n} rules: the first synthetic rule must fire on `{probe}`"
    );
    Built {
        n,
        engine,
        naive,
        build_ms,
        dfa_bytes: stats.fields.iter().flat_map(|f| &f.shard_bytes).sum(),
        shards: stats.fields.iter().map(|f| f.shard_bytes.len()).sum(),
        literals: stats.fields.iter().map(|f| f.literals).sum(),
        verifiers: stats.fields.iter().map(|f| f.verifiers).sum(),
    }
}

fn main() {
    let budgets = Budgets::load();
    let keep = std::env::var_os("PARALLAX_SCALE_KEEP").map(PathBuf::from);
    let root = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("parallax-scale-{}", std::process::id()))
    });
    let benign: Vec<(&'static str, usize, PreparedEvent)> = events::all()
        .into_iter()
        .filter(|e| e.expect == "allow")
        .map(|e| {
            let event = PreparedEvent::new(Event::from_value(e.json).expect("event"));
            (e.name, e.text_bytes, event)
        })
        .collect();

    let mut built = Vec::new();
    for n in SIZES {
        let b = build(&root, n);
        let mut scratch = b.engine.new_scratch();
        for (name, _, event) in &benign {
            let action = b.engine.evaluate(event, &mut scratch).action;
            assert_eq!(
                action,
                Action::Allow,
                "{n} rules: benign {name} got {action}"
            );
            let naive = b.naive.evaluate(event);
            assert_eq!(naive, Action::Allow, "{n} rules: naive on {name}");
        }
        built.push(b);
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&root);
    } else {
        println!("synthetic configs kept in {}", root.display());
    }

    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    {
        let mut group = c.benchmark_group("scale");
        for b in &built {
            let mut scratch = b.engine.new_scratch();
            for (name, bytes, event) in &benign {
                group.throughput(Throughput::Bytes(*bytes as u64));
                group.bench_with_input(BenchmarkId::new(*name, b.n), event, |bench, event| {
                    bench.iter(|| {
                        black_box(b.engine.evaluate(black_box(event), &mut scratch).action)
                    })
                });
            }
        }
        group.finish();
    }
    c.final_summary();

    println!();
    println!(
        "{:>7} | {:>10} {:>7} {:>12} {:>9} {:>9} | p50 / p99 per event",
        "rules", "build", "shards", "DFA bytes", "literals", "verifiers"
    );
    let per = Duration::from_millis(700);
    let mut medians_1k = Vec::new();
    for b in &built {
        let mut scratch = b.engine.new_scratch();
        let mut cells = Vec::new();
        let mut naive_cells = Vec::new();
        for (name, _, event) in &benign {
            let d = sample(per, || {
                black_box(b.engine.evaluate(black_box(event), &mut scratch).action);
            });
            if *name == "message_1k" {
                medians_1k.push(d.p50);
            }
            cells.push(format!("{name} {} / {}", fmt_ns(d.p50), fmt_ns(d.p99)));
            // The naive interpreter on the same rules (at least 20 calls: it
            // takes milliseconds per event at 10,000 rules).
            let n = sample_min(per, 20, || {
                black_box(b.naive.evaluate(black_box(event)));
            });
            naive_cells.push(format!(
                "{name} {} ({:.0}× ours)",
                fmt_ns(n.p50),
                n.p50 / d.p50
            ));
        }
        println!(
            "{:>7} | {:>7.0} ms {:>7} {:>8.1} MiB {:>9} {:>9} | {}",
            b.n,
            b.build_ms,
            b.shards,
            b.dfa_bytes as f64 / (1024.0 * 1024.0),
            b.literals,
            b.verifiers,
            cells.join(", ")
        );
        println!(
            "{:>7} | naive one-regex-per-rule p50: {}",
            "",
            naive_cells.join(", ")
        );
    }
    println!("(build = plan::compile + engine set-up; YAML reading and lowering not included)");
    println!();
    if let (Some(first), Some(last)) = (medians_1k.first(), medians_1k.last()) {
        budgets.check("scale-10000-vs-100", last / first);
    }
}
