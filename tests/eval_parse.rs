//! The direct parse of an event (`Event::parse_plain`: the JSON object
//! straight into the event's fields, no `Value` tree for it) against the
//! value path it short-cuts (the text into a `serde_json::Value`, then
//! `Event::from_value`), over valid, malformed and adversarial bodies:
//! - `Event::from_json_str` (what `parallax eval` does) gives the same event
//!   or the same error message as the value path, for every body;
//! - whatever `parse_plain` accepts, the value path accepts as the same
//!   event (so taking it never changes a verdict);
//! - `/evaluate`'s `parse_event` (the direct parse and the limits judged from
//!   the event) gives the same event or the same error code and message as
//!   the value path with `json_limits::check`, under the shipped limits and
//!   under small ones that the bodies break.

#[path = "../benches/support/mix.rs"]
mod mix;

use parallax::http::evaluate::parse_event;
use parallax::http::json_limits;
use parallax_runtime::{Event, EventError};
use serde_json::{json, Value};

/// The value path, as `parallax eval` and `/evaluate` took it before.
fn by_value(body: &str) -> Result<Event, String> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| EventError::Json(e.to_string()))
        .map_err(|e| e.to_string())?;
    let replaced = reference::from_value(value.clone());
    let now = Event::from_value(value).map_err(|e| e.to_string());
    assert_eq!(
        now, replaced,
        "from_value vs its replaced version on {body}"
    );
    now
}

/// `Event::from_value` as it was before it shared its checks with the
/// direct parse (ad390c2), kept verbatim but for paths, as the reference.
mod reference {
    use parallax_runtime::event::{json_type, FIELDS};
    use parallax_runtime::{Event, EventError};
    use serde_json::{Map, Value};
    use time::format_description::well_known::Rfc3339;
    use time::OffsetDateTime;

    pub fn from_value(value: Value) -> Result<Event, String> {
        from_value_inner(value).map_err(|e| e.to_string())
    }

    fn from_value_inner(value: Value) -> Result<Event, EventError> {
        let mut obj = match value {
            Value::Object(o) => o,
            other => return Err(EventError::NotObject(json_type(&other))),
        };
        if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(EventError::UnknownField(k.clone()));
        }
        let stage = match obj.remove("stage") {
            None | Some(Value::Null) => return Err(EventError::MissingStage),
            Some(Value::String(s)) => {
                s.parse()
                    .map_err(
                        |e: parallax_runtime::stage::UnknownStage| EventError::BadField {
                            field: "stage",
                            why: e.to_string(),
                        },
                    )?
            }
            Some(other) => {
                return Err(EventError::BadField {
                    field: "stage",
                    why: format!("expected a string, got {}", json_type(&other)),
                })
            }
        };
        let params = take(&mut obj, "params");
        if !matches!(params, Value::Null | Value::Object(_)) {
            return Err(EventError::BadField {
                field: "params",
                why: format!("expected an object, got {}", json_type(&params)),
            });
        }
        Ok(Event {
            stage,
            session_id: opt_string(&mut obj, "session_id")?,
            channel: opt_string(&mut obj, "channel")?,
            user_id: opt_string(&mut obj, "user_id")?,
            timestamp: timestamp(&mut obj)?,
            message_text: opt_string(&mut obj, "message_text")?,
            tool_name: opt_string(&mut obj, "tool_name")?,
            tool_args: take(&mut obj, "tool_args"),
            tool_result: take(&mut obj, "tool_result"),
            model: opt_string(&mut obj, "model")?,
            params,
            metadata: take(&mut obj, "metadata"),
            response_text: opt_string(&mut obj, "response_text")?,
            memory_key: opt_string(&mut obj, "memory_key")?,
            memory_text: opt_string(&mut obj, "memory_text")?,
            query: opt_string(&mut obj, "query")?,
            documents: documents(&mut obj)?,
            // Never from the JSON: the server sets it.
            tenant: None,
        })
    }

    /// `documents` is checked by the one function both parsers share (the
    /// shape check is not what this reference is for: the fast path's slot
    /// parsing is).
    fn documents(obj: &mut Map<String, Value>) -> Result<Value, EventError> {
        match obj.remove("documents") {
            None | Some(Value::Null) => Ok(Value::Null),
            Some(docs) => Ok(Event::from_value(
                serde_json::json!({"stage": "retrieval.after", "documents": docs}),
            )?
            .documents),
        }
    }

    fn take(obj: &mut Map<String, Value>, key: &str) -> Value {
        obj.remove(key).unwrap_or(Value::Null)
    }

    fn opt_string(
        obj: &mut Map<String, Value>,
        field: &'static str,
    ) -> Result<Option<String>, EventError> {
        match obj.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(EventError::BadField {
                field,
                why: format!("expected a string, got {}", json_type(&other)),
            }),
        }
    }

    fn timestamp(obj: &mut Map<String, Value>) -> Result<Option<f64>, EventError> {
        let bad = |why: String| EventError::BadField {
            field: "timestamp",
            why,
        };
        match obj.remove("timestamp") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f)),
                _ => Err(bad(format!("{n} is not a valid epoch time"))),
            },
            Some(Value::String(s)) => {
                let t = OffsetDateTime::parse(&s, &Rfc3339)
                    .map_err(|e| bad(format!("`{s}` is not an RFC 3339 date-time: {e}")))?;
                Ok(Some(t.unix_timestamp_nanos() as f64 / 1e9))
            }
            Some(other) => Err(bad(format!(
                "expected epoch seconds (a number) or an RFC 3339 string, got {}",
                json_type(&other)
            ))),
        }
    }
}

/// `/evaluate`'s parse as it was: UTF-8, value, limits, event.
fn http_by_value(
    body: &[u8],
    depth: usize,
    string: usize,
) -> Result<Event, (&'static str, String)> {
    let text = std::str::from_utf8(body).map_err(|e| {
        (
            "malformed_json",
            format!(
                "malformed JSON: the body is not valid UTF-8 (byte {})",
                e.valid_up_to()
            ),
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            "malformed_json",
            EventError::Json(e.to_string()).to_string(),
        )
    })?;
    json_limits::check(&value, depth, string).map_err(|e| ("limit_exceeded", e.to_string()))?;
    Event::from_value(value).map_err(|e| {
        let code = match e {
            EventError::Json(_) => "malformed_json",
            _ => "invalid_event",
        };
        (code, e.to_string())
    })
}

/// Realistic events: the load generator's mix, the fixture corpus, the
/// frameworks' events; each compact and pretty-printed.
fn realistic() -> Vec<String> {
    let mut events: Vec<Value> = mix::realistic_mix(3_000, 20, 1_800_000_000.0);
    let root = env!("CARGO_MANIFEST_DIR");
    for line in std::fs::read_to_string(format!("{root}/tests/fixtures/corpus.jsonl"))
        .expect("corpus")
        .lines()
    {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            events.push(v);
        }
    }
    for line in std::fs::read_to_string(format!("{root}/tests/fixtures/frameworks.jsonl"))
        .expect("frameworks")
        .lines()
    {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            if let Some(e) = v.get("event") {
                events.push(e.clone());
            }
        }
    }
    let mut bodies: Vec<String> = events.iter().map(Value::to_string).collect();
    bodies.extend(
        events
            .iter()
            .step_by(7)
            .map(|v| serde_json::to_string_pretty(v).expect("json")),
    );
    bodies
}

/// Bodies written to probe the edges: repeated and escaped keys, unknown
/// fields, every wrong type for every field, timestamps, nesting at serde's
/// recursion limit, strings with escapes and surrogates, trailing bytes,
/// audit lines, things that are not objects.
fn adversarial() -> Vec<String> {
    let mut b: Vec<String> = [
        r#"{"stage":"tool.before","tool_name":"exec","tool_args":{"command":"rm -rf /"}}"#,
        r#"{"stage":"tool.before","stage":"message.before","message_text":"x"}"#,
        r#"{"stage":"bogus","stage":"tool.before"}"#,
        r#"{"stage":"tool.before","stage":null}"#,
        r#"{"stage":"tool.before","tool_name":"a","tool_name":"b"}"#,
        r#"{"stage":"tool.before","tool_name":3,"tool_name":"b"}"#,
        r#"{"stag\u0065":"tool.before","tool_n\u0061me":"Bash"}"#,
        r#"{"stage":"tool\u002ebefore"}"#,
        r#"{"stage":"tool.before","tool_arg":{}}"#,
        r#"{"stage":"tool.before","zzz":1,"aaa":2}"#,
        r#"{"stage":"tool.before","x":1e400}"#,
        r#"{"stage":"tool.before","tool_args":1e400}"#,
        r#"{"kind":"decision","event":{"stage":"tool.before","tool_name":"Bash"},"action":"allow","matches":[]}"#,
        r#"{"kind":"decision","event":"no"}"#,
        r#"{"kind":"other","event":{"stage":"tool.before"}}"#,
        r#"{"event":{"stage":"tool.before"},"kind":"decision","kind":"x"}"#,
        r#"{}"#,
        r#"{"stage":null}"#,
        r#"{"stage":7}"#,
        r#"{"stage":"TOOL.BEFORE"}"#,
        r#"{"stage":"tool.before ","x":1}"#,
        r#"[{"stage":"tool.before"}]"#,
        r#""tool.before""#,
        "null",
        "true",
        "12",
        "",
        "   ",
        "{",
        r#"{"stage":"tool.before""#,
        r#"{"stage":"tool.before",}"#,
        r#"{"stage":"tool.before"} x"#,
        "{\"stage\":\"tool.before\"}\n\t ",
        r#"{"stage":"tool.before"}{"stage":"tool.before"}"#,
        r#"{"stage":"tool.before","params":[1]}"#,
        r#"{"stage":"tool.before","params":"x"}"#,
        r#"{"stage":"tool.before","params":null,"metadata":null,"tool_args":null}"#,
        r#"{"stage":"tool.before","params":{"temperature":2.5,"top_p":-0}}"#,
        r#"{"stage":"tool.before","metadata":[1,"two",{"three":null}]}"#,
        r#"{"stage":"tool.after","tool_result":"a\u0000b","tool_args":{"":""}}"#,
        r#"{"stage":"message.before","message_text":"caf\u00e9 \ud83d\ude00 ü 中"}"#,
        r#"{"stage":"message.before","message_text":"\ud800"}"#,
        r#"{"stage":"message.before","message_text":"\udc00x"}"#,
        r#"{"stage":"message.before","message_text":"\x"}"#,
        "{\"stage\":\"message.before\",\"message_text\":\"tab\tinside\"}",
        r#"{"stage":"tool.before","timestamp":1800000000.25}"#,
        r#"{"stage":"tool.before","timestamp":0}"#,
        r#"{"stage":"tool.before","timestamp":-1}"#,
        r#"{"stage":"tool.before","timestamp":-0.0}"#,
        r#"{"stage":"tool.before","timestamp":18446744073709551616}"#,
        r#"{"stage":"tool.before","timestamp":1e308}"#,
        r#"{"stage":"tool.before","timestamp":1e309}"#,
        r#"{"stage":"tool.before","timestamp":"2026-01-01T00:00:00+01:00"}"#,
        r#"{"stage":"tool.before","timestamp":"2026-01-01T00:00:00.123456789Z"}"#,
        r#"{"stage":"tool.before","timestamp":"yesterday"}"#,
        r#"{"stage":"tool.before","timestamp":true}"#,
        r#"{"stage":"tool.before","timestamp":[1]}"#,
        r#"{"stage":"tool.before","timestamp":null}"#,
        r#"{"stage":"tool.before","session_id":"","channel":"","user_id":"","model":"","response_text":""}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Every field given every JSON type.
    let kinds = [
        json!(null),
        json!(true),
        json!(3),
        json!(-2.5),
        json!("s"),
        json!([]),
        json!({}),
        json!({"a": [1, {"b": "c"}]}),
    ];
    for field in parallax_runtime::event::FIELDS {
        for kind in &kinds {
            let mut m = serde_json::Map::new();
            if field != "stage" {
                m.insert("stage".into(), json!("tool.before"));
            }
            m.insert(field.into(), kind.clone());
            b.push(Value::Object(m).to_string());
        }
    }
    // Nesting around serde_json's recursion limit (128), in tool_args.
    for depth in [60, 63, 64, 65, 126, 127, 128, 129, 200] {
        let open = "[".repeat(depth);
        let close = "]".repeat(depth);
        b.push(format!(
            r#"{{"stage":"tool.before","tool_args":{open}{close}}}"#
        ));
    }
    // Long strings and keys.
    b.push(format!(
        r#"{{"stage":"tool.before","tool_args":{{"{}":"{}"}}}}"#,
        "k".repeat(40),
        "v".repeat(3_000)
    ));
    b
}

/// Deterministic damage to `bodies`: every prefix of a few, and bytes
/// replaced or dropped at pseudo-random places in all of them.
fn damaged(bodies: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let swaps = [
        "\"", "{", "}", "[", "]", ",", ":", "0", "-", "e", "\\", " ", "n", "\u{e9}", "x", "",
    ];
    for body in bodies.iter().take(40) {
        for cut in (0..body.len()).filter(|&i| body.is_char_boundary(i)) {
            out.push(body[..cut].to_string());
        }
    }
    for body in bodies {
        for _ in 0..6 {
            let at = (next() as usize) % body.len().max(1);
            if !body.is_char_boundary(at) {
                continue;
            }
            let end = (at + 1..=body.len())
                .find(|&i| body.is_char_boundary(i))
                .unwrap_or(body.len());
            let swap = swaps[(next() as usize) % swaps.len()];
            out.push(format!("{}{swap}{}", &body[..at], &body[end..]));
        }
    }
    out
}

fn all_bodies() -> Vec<String> {
    let mut bodies = realistic();
    bodies.extend(adversarial());
    let mut damage = damaged(&bodies);
    bodies.append(&mut damage);
    bodies
}

#[test]
fn the_direct_parse_gives_the_value_paths_event_or_error() {
    let bodies = all_bodies();
    let (mut plain, mut rejected) = (0, 0);
    for body in &bodies {
        let old = by_value(body);
        let new = Event::from_json_str(body).map_err(|e| e.to_string());
        assert_eq!(new, old, "{body}");
        if let Some(p) = Event::parse_plain(body) {
            plain += 1;
            assert_eq!(Ok(&p.event), old.as_ref(), "{body}");
            let ts = serde_json::from_str::<Value>(body)
                .ok()
                .and_then(|v| v.get("timestamp").and_then(Value::as_str).map(str::len));
            assert_eq!(p.timestamp_text_bytes, ts.unwrap_or(0), "{body}");
        }
        if old.is_err() {
            rejected += 1;
        }
    }
    // Both kinds are there in numbers: the short cut is taken, and bodies
    // it must leave to the value path are many.
    assert!(plain > 3_000, "{plain} of {}", bodies.len());
    assert!(rejected > 3_000, "{rejected} of {}", bodies.len());
}

#[test]
fn evaluate_parses_as_the_value_path_with_the_limits() {
    let bodies = all_bodies();
    let shipped = parallax::settings::Settings::default().server;
    let mut limits = vec![(shipped.max_json_depth, shipped.max_string_bytes)];
    // Limits these bodies break: at the object, at a field's value, a
    // string or a key just over or under, the timestamp's text.
    for depth in [0, 1, 2, 3, 5] {
        for string in [0, 4, 12, 13, 14, 20, 24, 30, 64] {
            limits.push((depth, string));
        }
    }
    let (mut same_ok, mut same_err) = (0, 0);
    for body in &bodies {
        for &(depth, string) in &limits {
            let old = http_by_value(body.as_bytes(), depth, string);
            let new = parse_event(body.as_bytes(), depth, string);
            assert_eq!(new, old, "{body} at depth {depth}, strings {string}");
            if old.is_ok() {
                same_ok += 1;
            } else {
                same_err += 1;
            }
        }
    }
    assert!(
        same_ok > 10_000 && same_err > 10_000,
        "{same_ok} {same_err}"
    );
    // Bytes that are not UTF-8 at all.
    for body in [
        &b"{\"stage\":\"tool.before\",\"tool_name\":\"\xff\"}"[..],
        b"\xc3",
    ] {
        assert_eq!(parse_event(body, 64, 1024), http_by_value(body, 64, 1024));
    }
}
