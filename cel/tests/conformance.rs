//! Runs the CEL specification's conformance cases (`cel/*.jsonl` under
//! `PARALLAX_CONFORMANCE_DIR`, by default `../shared/conformance`, read in
//! place) and fails if any case that is not skipped fails. Without the
//! corpus the suite is skipped with a message (a failure under `CI=true`).
//!
//! Skip rule (documented in docs/CEL.md), decided from the case itself,
//! never from its name:
//! - the case needs protobuf messages or enums (`uses_proto`, or an
//!   expected/binding value the converter could only mark `unsupported`);
//! - the case needs timestamps or durations (`uses_time`);
//! - the case is from an extension library file (`string_ext`) and calls a
//!   function this implementation does not provide.

use base64::Engine as _;
use parallax_cel::{CelType, Declarations, Map, Program, Value};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

#[path = "../../tests/support/conformance.rs"]
mod conformance;

/// Files of extension libraries: a case there is run only when every
/// function it calls is implemented.
const EXTENSION_FILES: [&str; 1] = ["string_ext"];

fn decode(v: &Json) -> Result<Value, String> {
    let obj = v.as_object().ok_or("value is not an object")?;
    let (k, inner) = obj.iter().next().ok_or("empty value")?;
    Ok(match k.as_str() {
        "null" => Value::Null,
        "bool" => Value::Bool(inner.as_bool().ok_or("bad bool")?),
        "int" => Value::Int(
            inner
                .as_str()
                .ok_or("bad int")?
                .parse()
                .map_err(|e| format!("{e}"))?,
        ),
        "uint" => Value::Uint(
            inner
                .as_str()
                .ok_or("bad uint")?
                .parse()
                .map_err(|e| format!("{e}"))?,
        ),
        "double" => Value::Double(match inner {
            Json::String(s) => match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(format!("bad double {s}")),
            },
            n => n.as_f64().ok_or("bad double")?,
        }),
        "string" => Value::string(inner.as_str().ok_or("bad string")?),
        "bytes" => Value::Bytes(Arc::from(
            base64::engine::general_purpose::STANDARD
                .decode(inner.as_str().ok_or("bad bytes")?)
                .map_err(|e| e.to_string())?,
        )),
        "list" => Value::List(Arc::new(
            inner
                .as_array()
                .ok_or("bad list")?
                .iter()
                .map(decode)
                .collect::<Result<_, _>>()?,
        )),
        "map" => {
            let mut m = Map::new();
            for e in inner.as_array().ok_or("bad map")? {
                let pair = e.as_array().ok_or("bad map entry")?;
                m.insert(decode(&pair[0])?, decode(&pair[1])?)
                    .map_err(|e| e.to_string())?;
            }
            Value::Map(Arc::new(m))
        }
        "type" => Value::Type(
            parallax_cel::Type::from_name(inner.as_str().ok_or("bad type")?)
                .ok_or_else(|| format!("unknown type {inner}"))?,
        ),
        other => return Err(format!("unsupported value kind {other}")),
    })
}

/// Structural equality for checking results: kinds must match exactly
/// (an int is not a uint here), maps ignore order, NaN equals NaN.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => (x.is_nan() && y.is_nan()) || x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.iter().any(|(k2, v2)| same(k, k2) && same(v, v2)))
        }
        (Value::Int(_), Value::Int(_))
        | (Value::Uint(_), Value::Uint(_))
        | (Value::Null, Value::Null)
        | (Value::Bool(_), Value::Bool(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bytes(_), Value::Bytes(_))
        | (Value::Type(_), Value::Type(_)) => a.equals(b),
        _ => false,
    }
}

fn skip_reason(case: &Json) -> Option<&'static str> {
    if case["uses_proto"].as_bool() == Some(true) || case["has_unsupported"].as_bool() == Some(true)
    {
        return Some("protobuf");
    }
    if case["uses_time"].as_bool() == Some(true) {
        return Some("timestamp/duration");
    }
    let file = case["file"].as_str().unwrap_or("");
    if EXTENSION_FILES.contains(&file) {
        let expr = case["expr"].as_str().unwrap_or("");
        // Calls a function we do not implement? (If it does not even parse,
        // run it: the parse error is then the result under test.)
        if let Ok(p) = Program::parse(expr) {
            let mut unknown = false;
            p.expr.walk(&mut |e| {
                if let parallax_cel::ExprKind::Call { function, .. } = &e.kind {
                    if !parallax_cel::functions::FUNCTIONS.contains(&function.as_str()) {
                        unknown = true;
                    }
                }
            });
            if unknown {
                return Some("extension function not implemented");
            }
        }
    }
    None
}

fn run_case(case: &Json) -> Result<(), String> {
    let expr = case["expr"].as_str().ok_or("no expr")?;
    let container = case["container"].as_str().unwrap_or("");
    let mut bindings: HashMap<String, Value> = HashMap::new();
    if let Some(b) = case["bindings"].as_object() {
        for (k, v) in b {
            bindings.insert(k.clone(), decode(v)?);
        }
    }
    let result = Program::parse(expr)
        .map_err(|e| e.to_string())
        .and_then(|p| {
            if case["disable_check"].as_bool() != Some(true) {
                let mut decls = Declarations {
                    container: container.to_string(),
                    ..Default::default()
                };
                for d in case["type_env"].as_array().into_iter().flatten() {
                    let name = d["name"].as_str().unwrap_or("");
                    let t = d["type"].as_str().unwrap_or("dyn");
                    decls.declare(name, CelType::parse(t).unwrap_or(CelType::Dyn));
                }
                // Bindings without a declaration are still visible as dyn.
                for k in bindings.keys() {
                    if !decls.vars.contains_key(k) {
                        decls.declare(k, CelType::Dyn);
                    }
                }
                p.check(&decls).map_err(|e| e.to_string())?;
            }
            p.eval_in(&bindings, container).map_err(|e| e.to_string())
        });
    if case["error"].as_bool() == Some(true) {
        return match result {
            Err(_) => Ok(()),
            Ok(v) => Err(format!("expected an error, got {v}")),
        };
    }
    let want = decode(&case["expected"])?;
    match result {
        Ok(v) if same(&v, &want) => Ok(()),
        Ok(v) => Err(format!("expected {want}, got {v}")),
        Err(e) => Err(format!("expected {want}, got error: {e}")),
    }
}

#[test]
fn cel_conformance() {
    let Some(dir) = conformance::corpus("CEL conformance", "cel") else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .jsonl files in {}", dir.display());
    let (mut tp, mut tf, mut ts) = (0, 0, 0);
    let mut failures = Vec::new();
    let mut skipped: HashMap<&'static str, usize> = HashMap::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read corpus file");
        let (mut p, mut f, mut s) = (0, 0, 0);
        for (line_no, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let case: Json = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), line_no + 1));
            if let Some(why) = skip_reason(&case) {
                s += 1;
                *skipped.entry(why).or_default() += 1;
                continue;
            }
            match run_case(&case) {
                Ok(()) => p += 1,
                Err(e) => {
                    f += 1;
                    failures.push(format!(
                        "{}:{} [{}/{}] {:?}: {e}",
                        case["file"].as_str().unwrap_or(""),
                        line_no + 1,
                        case["section"].as_str().unwrap_or(""),
                        case["name"].as_str().unwrap_or(""),
                        case["expr"].as_str().unwrap_or("")
                    ))
                }
            }
        }
        println!(
            "{:<14} {p} passed, {f} failed, {s} skipped",
            path.file_stem().unwrap_or_default().to_string_lossy()
        );
        tp += p;
        tf += f;
        ts += s;
    }
    let mut reasons: Vec<_> = skipped.into_iter().collect();
    reasons.sort();
    for (why, n) in reasons {
        println!("  skipped {n}: {why}");
    }
    println!("TOTAL          {tp} passed, {tf} failed, {ts} skipped");
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} conformance cases failed",
        failures.len()
    );
}
