//! Generated check code against the interpreter: `build.rs` bakes
//! `tests/fixtures/sigma/` (every Sigma check kind: exists, null, numeric
//! comparisons, booleans, cidr, fieldref) into generated Rust; here the
//! generated predicates and the dynamic backend judge the same events and
//! must agree verdict for verdict.

mod support;

use parallax::backend;
use parallax_runtime::{Backend, CheckOp, Engine, Predicate, Predicates, Program, ShardDfa};
use regex_automata::dfa::dense;
use serde_json::{json, Value};
use std::path::Path;

#[allow(clippy::all, dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/sigma_fixture_baked.rs"));
}

fn fixture() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sigma/parallax.yaml"
    ))
}

fn baked() -> Engine {
    let program: Program = serde_json::from_str(generated::PROGRAM_JSON).unwrap();
    let dfas = generated::DFA_SHARDS
        .iter()
        .map(|field| {
            field
                .iter()
                .map(|bytes| ShardDfa::Static(dense::DFA::from_bytes(bytes).unwrap().0))
                .collect()
        })
        .collect();
    Engine::new(
        program,
        dfas,
        Predicates::Compiled(&generated::PREDICATES),
        Backend::Baked,
    )
    .unwrap()
}

fn verdict(engine: &Engine, event: &Value) -> Value {
    let mut r =
        serde_json::to_value(support::engine_report::report(engine, event.clone())).unwrap();
    r.as_object_mut().unwrap().remove("elapsed_ms");
    r
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random JSON value drawn from what the fixture's checks look at.
fn value(rng: &mut Rng) -> Value {
    let strings = [
        "",
        "x",
        "4444",
        "10.1.2.3",
        "fd00::1",
        "fe80::1",
        "11.0.0.1",
        "/a/b",
        "/a/B",
        "/a",
        "True",
        "false",
        "root",
        "zq-mapped-x",
        "1.5",
        "99",
        "zq-one",
        "zq-a",
    ];
    match rng.below(10) {
        9 => json!(rng.below(20) as f64 / 100.0),
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.below(200) as f64 / 40.0),
        3 => json!(4444),
        4 => json!([
            strings[rng.below(strings.len())],
            strings[rng.below(strings.len())]
        ]),
        5 => json!({}),
        _ => json!(strings[rng.below(strings.len())]),
    }
}

fn random_event(rng: &mut Rng) -> Value {
    let keys = [
        "zq_force",
        "reason",
        "note",
        "zq_port",
        "zq_flag",
        "zq_ip",
        "zq_src",
        "zq_dst",
        "zq_child",
        "zq_parent",
        "user",
        "my_field",
        "first",
        "f",
        "i",
        "command",
    ];
    let tools = [
        "zq-needs-reason",
        "zq-null",
        "zq-empty",
        "ZqTool",
        "Bash",
        "Tool",
    ];
    let mut args = serde_json::Map::new();
    for _ in 0..1 + rng.below(5) {
        args.insert(keys[rng.below(keys.len())].into(), value(rng));
    }
    if rng.below(4) == 0 {
        let mut p = serde_json::Map::new();
        for k in ["temperature", "top_k", "top_p", "max_tokens"] {
            if rng.below(2) == 0 {
                p.insert(k.into(), value(rng));
            }
        }
        return json!({"stage": "params.before", "params": p});
    }
    json!({"stage": "tool.before", "tool_name": tools[rng.below(tools.len())], "tool_args": args})
}

#[test]
fn generated_checks_agree_with_the_interpreter() {
    let baked = baked();
    let dynamic = backend::dynamic_engine(fixture()).unwrap();
    assert_eq!(baked.program().fingerprint, dynamic.program().fingerprint);
    // The fixture has every kind of check, or this proves less than it says.
    let kinds: std::collections::BTreeSet<&str> = baked
        .program()
        .checks
        .iter()
        .map(|c| match c.op {
            CheckOp::Exists => "exists",
            CheckOp::NullOrEmpty => "null",
            CheckOp::Num { .. } => "num",
            CheckOp::Bool(_) => "bool",
            CheckOp::Cidr { .. } => "cidr",
            CheckOp::FieldRef { .. } => "fieldref",
            // Not a Sigma condition: the schema engine's (tests/differential.rs).
            CheckOp::Schema(_) => "schema",
            CheckOp::OneOf(_) => "one_of",
        })
        .collect();
    assert_eq!(kinds.len(), 6, "{kinds:?}");
    let check_rules: Vec<&str> = baked
        .program()
        .rules
        .iter()
        .filter(|r| {
            let mut found = false;
            fn walk(p: &Predicate, found: &mut bool) {
                match p {
                    Predicate::Check(_) => *found = true,
                    Predicate::Not(q) => walk(q, found),
                    Predicate::And(ps) | Predicate::Or(ps) => {
                        ps.iter().for_each(|q| walk(q, found))
                    }
                    _ => {}
                }
            }
            walk(&r.predicate, &mut found);
            found
        })
        .map(|r| r.id.as_str())
        .collect();
    let mut fired = std::collections::BTreeSet::new();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for i in 0..5000 {
        let event = random_event(&mut rng);
        let b = verdict(&baked, &event);
        let d = verdict(&dynamic, &event);
        assert_eq!(b, d, "event {i}: {event}");
        for r in b["results"].as_array().unwrap() {
            fired.insert(r["rule_id"].as_str().unwrap().to_string());
        }
    }
    // Both outcomes of every check rule were exercised.
    for id in &check_rules {
        assert!(fired.contains(*id), "no random event fired `{id}`");
    }
}
