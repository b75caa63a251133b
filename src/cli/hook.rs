//! `parallax hook claudecode|codex`: one hook run. The framework's payload
//! on stdin, its answer on stdout (nothing for no opinion), exit 0; a
//! payload that cannot be read is refused with exit 2 and the reason on
//! stderr, which both frameworks treat as a block.

use crate::hooks::client::{self, Options, Source};
use crate::hooks::payload::map;
use crate::hooks::{answer, Framework};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

/// Payloads larger than this are refused (a tool result can be large, but
/// not unbounded).
const MAX_PAYLOAD_BYTES: u64 = 64 << 20;

pub fn run(
    framework: Framework,
    url: String,
    timeout_ms: u64,
    approval_wait_secs: u64,
    fail_closed: bool,
) -> ExitCode {
    let mut raw = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_PAYLOAD_BYTES + 1)
        .read_to_end(&mut raw);
    let refuse = |why: String| {
        eprintln!(
            "Parallax refused this {} hook call: {why}",
            framework.as_str()
        );
        ExitCode::from(2)
    };
    if let Err(e) = read {
        return refuse(format!("cannot read the payload on stdin: {e}"));
    }
    if raw.len() as u64 > MAX_PAYLOAD_BYTES {
        return refuse(format!("the payload is over {MAX_PAYLOAD_BYTES} bytes"));
    }
    let payload: serde_json::Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => return refuse(format!("the payload is not JSON: {e}")),
    };
    let mapped = match map(framework, &payload) {
        Ok(Some(m)) => m,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => return refuse(e),
    };
    let opts = Options {
        url,
        token: std::env::var("PARALLAX_AUTH_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
        timeout: Duration::from_millis(timeout_ms.max(1)),
        approval_wait: Duration::from_secs(approval_wait_secs),
        fail_closed,
    };
    let (verdict, source) = client::decide(framework, &mapped, &opts);
    match &source {
        Source::Server => {}
        Source::InProcess { why } => eprintln!(
            "parallax hook: the server at {} did not answer ({why}); decided in-process with \
             the built-in rules (temporal rules skipped)",
            opts.url
        ),
        Source::FailClosed { why } => eprintln!(
            "parallax hook: the server at {} did not answer ({why}); denied (fail closed)",
            opts.url
        ),
    }
    if let Some(out) = answer(framework, &mapped, &verdict).stdout {
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{out}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            // Nobody to tell: refuse, so the framework blocks.
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
