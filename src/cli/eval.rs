//! `parallax eval`: JSON events in, one verdict per line out.

use super::fail;
use crate::loader;
use crate::server::AppState;
use parallax_runtime::{Event, EventError};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(config: Option<PathBuf>, file: Option<PathBuf>, baked_only: bool) -> ExitCode {
    let loaded = match loader::load(config.as_deref(), baked_only) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    // One side-store for the whole input, clocked by the events' own
    // timestamps: a JSONL file of a session replays as it happened.
    let state = match AppState::new(loaded.engine, loaded.settings) {
        Ok(s) => s.replaying(),
        Err(e) => return fail(e),
    };
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
    for (n, line) in input.lines().enumerate() {
        let line_no = n + 1;
        let line = match line {
            Ok(l) => l,
            Err(e) => return fail(format!("line {line_no}: cannot read: {e}")),
        };
        if line.trim().is_empty() {
            continue;
        }
        let started = Instant::now();
        let written = match Event::from_slice(line.as_bytes()) {
            Ok(event) => {
                let report = state.evaluate(event, started);
                serde_json::to_string(&report).map_err(|e| e.to_string())
            }
            Err(e) => {
                bad += 1;
                let code = if matches!(e, EventError::Json(_)) {
                    "malformed_json"
                } else {
                    "invalid_event"
                };
                eprintln!("parallax: line {line_no}: {e}");
                Ok(serde_json::json!({
                    "error": {"code": code, "message": e.to_string(), "line": line_no}
                })
                .to_string())
            }
        };
        let text = match written {
            Ok(t) => t,
            Err(e) => return fail(format!("line {line_no}: {e}")),
        };
        if writeln!(out, "{text}").is_err() {
            // The reader went away (e.g. `| head`): stop quietly.
            return ExitCode::SUCCESS;
        }
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    if bad > 0 {
        eprintln!("parallax: {bad} malformed line(s)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
