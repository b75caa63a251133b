//! The events the benchmarks evaluate, shared by the benches and `loadgen`.
//!
//! Benign events are ordinary agent traffic (a build command, a design
//! question, a source file read back) with nothing a sensible rule would
//! flag, so they keep measuring the full scan as the rule library grows.
//! The attack and the secret are textbook cases any rule set must catch, so
//! they keep measuring the early-exit and redaction paths.

// Each bench includes only what it uses of this shared module.
#![allow(dead_code)]

use serde_json::{json, Value};

/// One benchmark event and the verdict it must get.
pub struct BenchEvent {
    pub name: &'static str,
    pub json: Value,
    /// `allow`, `block`, `redact`: the action the shipped rules give it.
    pub expect: &'static str,
    /// Bytes of scanned text (the message, command or result), for MB/s.
    pub text_bytes: usize,
}

const MESSAGE_1K: &str = "I'm picking up the ingestion service refactor from Priya. \
The plan in the design doc is to split the parser into a streaming tokenizer and a \
validator, so that we can reject malformed records before they reach the queue. \
Could you read src/ingest/parser.rs and src/ingest/validate.rs, and summarise how \
errors are propagated today? In particular I want to know whether a truncated record \
at the end of a batch is reported with its byte offset, or silently dropped. After \
that, list the public functions whose signatures would change if the tokenizer \
returned an iterator instead of a Vec, and estimate how many call sites each has. \
Please don't change any code yet; I'd like to review the list with the team on \
Thursday. If the benchmarks in benches/ingest.rs still use the old fixture format, \
note that too, because we will need new fixtures for the 64 KB and 1 MB cases. \
Finally, check whether the CI workflow runs the ingestion tests with the \
feature flag enabled, and tell me which job would catch a regression in it.";

const SOURCE_CHUNK: &str = r#"/// Splits a batch into records, reporting the byte offset of each failure.
pub fn split_records(batch: &[u8], out: &mut Vec<Record>) -> Result<usize, SplitError> {
    let mut offset = 0;
    while offset < batch.len() {
        let len = match read_length(&batch[offset..]) {
            Some(n) => n,
            None => return Err(SplitError::Truncated { offset }),
        };
        let end = offset + HEADER_LEN + len;
        if end > batch.len() {
            return Err(SplitError::Truncated { offset });
        }
        out.push(Record::parse(&batch[offset + HEADER_LEN..end])?);
        offset = end;
    }
    tracing::debug!(records = out.len(), bytes = batch.len(), "batch split");
    Ok(out.len())
}

"#;

/// A syntactically plausible, made-up OpenSSH key (random base64, not a key).
const FAKE_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
QyNTUxOQAAACBkZXZlbG9wZXJzLWRvLW5vdC1wYXN0ZS10aGlzLWFueXdoZXJlAAAAmJ3x\n\
Kq1d8Yb2nZxQyVt4pLmR0aWNrZXRzLWFyZS1mYWtlLWFuZC1zby1pcy10aGlzLWtleQAAAA\n\
tzc2gtZWQyNTUxOQAAACBkZXZlbG9wZXJzLWRvLW5vdC1wYXN0ZS10aGlzLWFueXdoZXJl\n\
-----END OPENSSH PRIVATE KEY-----";

/// The 64 KB result: a source file read back, cut to exactly 65,536 bytes.
fn result_64k() -> String {
    let mut s = String::with_capacity(70_000);
    while s.len() < 65_536 {
        s.push_str(SOURCE_CHUNK);
    }
    s.truncate(65_536);
    s
}

pub fn all() -> Vec<BenchEvent> {
    let command = "cd services/ingest && cargo test --workspace --features streaming -- --nocapture 2>&1 | tail -n 40";
    let result = result_64k();
    let secret_message = format!(
        "The deploy job fails with `Permission denied (publickey)`. Here is the key the \
         runner uses, can you check whether it matches the one in the vault?\n\n{FAKE_KEY}\n\n\
         The public half is registered on the bastion as deploy@ci."
    );
    let attack = "cd /tmp/build && rm -rf / --no-preserve-root";
    vec![
        BenchEvent {
            name: "tool_call_200b",
            text_bytes: command.len(),
            json: json!({"stage": "tool.before", "session_id": "bench-1", "tool_name": "Bash",
                         "tool_args": {"command": command, "timeout": 120000}}),
            expect: "allow",
        },
        BenchEvent {
            name: "message_1k",
            text_bytes: MESSAGE_1K.len(),
            json: json!({"stage": "message.before", "session_id": "bench-1",
                         "message_text": MESSAGE_1K}),
            expect: "allow",
        },
        BenchEvent {
            name: "result_64k",
            text_bytes: result.len(),
            json: json!({"stage": "tool.after", "session_id": "bench-1", "tool_name": "Read",
                         "tool_args": {"file_path": "src/ingest/parser.rs"},
                         "tool_result": result}),
            expect: "allow",
        },
        BenchEvent {
            name: "attack_block",
            text_bytes: attack.len(),
            json: json!({"stage": "tool.before", "session_id": "bench-1", "tool_name": "Bash",
                         "tool_args": {"command": attack}}),
            expect: "block",
        },
        BenchEvent {
            name: "secret_redact",
            text_bytes: secret_message.len(),
            json: json!({"stage": "message.before", "session_id": "bench-1",
                         "message_text": secret_message}),
            expect: "redact",
        },
    ]
}
