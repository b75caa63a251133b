//! `parallax eval`: JSON events in, one verdict per line out.
//!
//! A line may also be an audit log line (`"kind": "decision"`): its `event`
//! is evaluated and the verdict compared with the recorded one, in a
//! `replay` object — `same` (action and matched rules agree), `masked` (they
//! differ, and the logged event had secrets masked: the text the recorded
//! verdict saw is, by design, not in the log) or `different` (a real
//! disagreement: exit status 1).

use super::fail;
use crate::audit::DECISION_KIND;
use crate::backend;
use crate::decision::pipeline::InFlight;
use crate::decision::{DecisionService, Door, Origin};
use parallax_runtime::{Event, EventError, Report};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(config: Option<PathBuf>, file: Option<PathBuf>, baked_only: bool) -> ExitCode {
    let loaded = match backend::load(config.as_deref(), baked_only) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    // One side-store for the whole input, clocked by the events' own
    // timestamps: a JSONL file of a session replays as it happened.
    let service = match DecisionService::replay(loaded.engine, loaded.settings) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let origin = Origin::door(Door::Eval);
    let input: Box<dyn BufRead> = match file.as_deref() {
        None => Box::new(std::io::stdin().lock()),
        Some(p) if p.as_os_str() == "-" => Box::new(std::io::stdin().lock()),
        Some(p) => match std::fs::File::open(p) {
            Ok(f) => Box::new(std::io::BufReader::new(f)),
            Err(e) => return fail(format!("cannot read {}: {e}", p.display())),
        },
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut bad = 0usize;
    let mut different = 0usize;
    // Decisions in flight, oldest first: each event is evaluated and handed
    // to the side-store while the store still judges the ones before it,
    // and verdicts are printed in input order (see decision::pipeline for
    // why that changes no verdict). One at a time where it could.
    let depth = if service.may_overlap() { IN_FLIGHT } else { 1 };
    let mut queue: VecDeque<Line> = VecDeque::with_capacity(depth);
    // One line buffer and one output buffer for the whole input.
    let mut input = input;
    let mut buf = String::new();
    let mut text = Vec::new();
    let mut line_no = 0usize;
    let mut read_error = None;
    loop {
        line_no += 1;
        buf.clear();
        match input.read_line(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            // What was read before is still judged and printed (below).
            Err(e) => {
                read_error = Some(format!("line {line_no}: cannot read: {e}"));
                break;
            }
        }
        // What `BufRead::lines` strips: the `\n`, then a `\r` before it.
        let line = buf
            .strip_suffix('\n')
            .map_or(buf.as_str(), |l| l.strip_suffix('\r').unwrap_or(l));
        if line.trim().is_empty() {
            continue;
        }
        let started = Instant::now();
        // A plain event straight into its fields; anything else (an audit
        // line, a bad line) as a value first, which names the problem.
        let parsed = match Event::parse_plain(line) {
            Some(plain) => Ok((plain.event, None)),
            None => match serde_json::from_str::<Value>(line) {
                Ok(v) => match audit_line(v) {
                    Ok((event, recorded)) => Event::from_value(event).map(|e| (e, recorded)),
                    Err(v) => Event::from_value(v).map(|e| (e, None)),
                },
                Err(e) => Err(EventError::Json(e.to_string())),
            },
        };
        queue.push_back(match parsed {
            Ok((event, recorded)) => Line::Deciding {
                decision: service.submit(event, &origin, started),
                recorded,
                line_no,
            },
            Err(e) => {
                bad += 1;
                let code = if matches!(e, EventError::Json(_)) {
                    "malformed_json"
                } else {
                    "invalid_event"
                };
                eprintln!("parallax: line {line_no}: {e}");
                Line::Done(
                    serde_json::json!({
                        "error": {"code": code, "message": e.to_string(), "line": line_no}
                    })
                    .to_string(),
                )
            }
        });
        // Print what is finished; wait only when the queue is full.
        while let Some(front) = queue.front() {
            if queue.len() < depth && !front.is_ready() {
                break;
            }
            if let Some(line) = queue.pop_front() {
                let emitted = emit(&service, &origin, line, &mut text, &mut out, &mut different);
                if let Err(code) = emitted {
                    return code;
                }
            }
        }
    }
    while let Some(line) = queue.pop_front() {
        if let Err(code) = emit(&service, &origin, line, &mut text, &mut out, &mut different) {
            return code;
        }
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    if let Some(e) = read_error {
        return fail(e);
    }
    if bad > 0 {
        eprintln!("parallax: {bad} malformed line(s)");
        return ExitCode::FAILURE;
    }
    if different > 0 {
        eprintln!("parallax: {different} replayed verdict(s) differ from the audit log");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Prints one line's output, finishing its decision first (waiting for
/// the side-store if need be); counts replays that differ. `text` is a
/// buffer the report is serialised into (kept from line to line). `Err` is
/// the exit status to stop with.
fn emit(
    service: &DecisionService,
    origin: &Origin,
    line: Line,
    text: &mut Vec<u8>,
    out: &mut dyn Write,
    different: &mut usize,
) -> Result<(), ExitCode> {
    text.clear();
    match line {
        Line::Done(done) => text.extend_from_slice(done.as_bytes()),
        Line::Deciding {
            decision,
            recorded,
            line_no,
        } => {
            let report = service.complete(decision, origin);
            let written = match recorded {
                None => serde_json::to_writer(&mut *text, &report).map_err(|e| e.to_string()),
                Some(recorded) => {
                    let replay = compare(&recorded, &report);
                    if replay["status"] == "different" {
                        *different += 1;
                    }
                    serde_json::to_value(&report)
                        .and_then(|mut v| {
                            v["replay"] = replay;
                            serde_json::to_writer(&mut *text, &v)
                        })
                        .map_err(|e| e.to_string())
                }
            };
            written.map_err(|e| fail(format!("line {line_no}: {e}")))?
        }
    }
    text.push(b'\n');
    // The reader went away (e.g. `| head`): stop quietly.
    out.write_all(text).map_err(|_| ExitCode::SUCCESS)
}

/// Decisions `parallax eval` keeps in flight at most: enough to cover the
/// store's slower events, few enough that the events held (each prepared,
/// with its text) stay a small bound on memory.
const IN_FLIGHT: usize = 128;

/// One input line on its way out. Held in the queue by value, not boxed:
/// the queue is allocated once, where a box cost an allocation of the
/// whole prepared event per line (1.4k instructions each, callgrind, 3,000
/// events).
#[allow(clippy::large_enum_variant)]
enum Line {
    /// Its output is known (a line that is not an event).
    Done(String),
    /// An event being decided.
    Deciding {
        decision: InFlight,
        /// The audit line it came from, when replaying a log.
        recorded: Option<Value>,
        line_no: usize,
    },
}

impl Line {
    fn is_ready(&self) -> bool {
        match self {
            Line::Done(_) => true,
            Line::Deciding { decision, .. } => decision.is_ready(),
        }
    }
}

/// An audit line's event and the line itself; anything else back as is.
fn audit_line(v: Value) -> Result<(Value, Option<Value>), Value> {
    let is_audit = v.get("kind").and_then(Value::as_str) == Some(DECISION_KIND)
        && v.get("event").is_some_and(Value::is_object);
    if !is_audit {
        return Err(v);
    }
    let mut recorded = v;
    let event = recorded
        .as_object_mut()
        .and_then(|o| o.remove("event"))
        .unwrap_or(Value::Null);
    Ok((event, Some(recorded)))
}

/// The `replay` verdict: does the recorded decision reproduce?
fn compare(recorded: &Value, report: &Report) -> Value {
    let action = recorded.get("action").and_then(Value::as_str).unwrap_or("");
    let mut rules: Vec<&str> = recorded
        .get("matches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("rule_id").and_then(Value::as_str))
        .collect();
    rules.sort_unstable();
    let mut now: Vec<&str> = report.results.iter().map(|r| r.rule_id.as_str()).collect();
    now.sort_unstable();
    let same = action == report.action.as_str() && rules == now;
    let masked = recorded.get("masked").and_then(Value::as_bool) == Some(true);
    let status = match (same, masked) {
        (true, _) => "same",
        (false, true) => "masked",
        (false, false) => "different",
    };
    serde_json::json!({
        "status": status,
        "recorded_action": action,
        "recorded_rules": rules,
    })
}
