//! One message (a stdio line, an HTTP body, an SSE event's data) through
//! the gate: parsed whole, each element judged in order, and what to send
//! on and what to answer the sender put back together.

use super::gate::{Gate, Inflight, Verdict};
use super::jsonrpc::{self, Element, Incoming};
use serde_json::Value;

/// Which peer sent the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// What to send on.
#[derive(Debug, PartialEq)]
pub enum Forward {
    /// Nothing.
    Nothing,
    /// The message exactly as it came.
    Verbatim,
    /// These bytes (one JSON value, no newline).
    Bytes(Vec<u8>),
}

/// The outcome of one message.
#[derive(Debug, PartialEq)]
pub struct Relayed {
    pub forward: Forward,
    /// The answer owed to the sender (one JSON value, no newline): refused
    /// calls' results, errors for what was not JSON-RPC.
    pub answer: Option<Vec<u8>>,
}

fn to_bytes(v: &Value) -> Vec<u8> {
    // Serialising a Value cannot fail (its keys are strings).
    serde_json::to_vec(v).unwrap_or_default()
}

/// `bytes` from `side`, judged.
pub async fn relay(gate: &Gate, side: Side, bytes: &[u8], inflight: &Inflight) -> Relayed {
    let incoming = match jsonrpc::parse(bytes) {
        Ok(i) => i,
        Err(answer) => {
            tracing::warn!(
                from = side.as_str(),
                error = %answer["error"]["message"],
                "malformed JSON-RPC, answered and not forwarded"
            );
            return Relayed {
                forward: Forward::Nothing,
                answer: Some(to_bytes(&answer)),
            };
        }
    };
    match incoming {
        Incoming::Single(msg) => {
            let verdict = match side {
                Side::Client => gate.from_client(&msg, inflight).await,
                Side::Server => gate.from_server(&msg, inflight).await,
            };
            match verdict {
                Verdict::Forward => Relayed {
                    forward: Forward::Verbatim,
                    answer: None,
                },
                Verdict::Rewrite(v) => Relayed {
                    forward: Forward::Bytes(to_bytes(&v)),
                    answer: None,
                },
                Verdict::Answer(v) => Relayed {
                    forward: Forward::Nothing,
                    answer: Some(to_bytes(&v)),
                },
            }
        }
        Incoming::Batch(items) => {
            let mut forward = Vec::with_capacity(items.len());
            let mut answers = Vec::new();
            let mut changed = false;
            for item in items {
                match item {
                    Element::Bad(e) => {
                        tracing::warn!(
                            from = side.as_str(),
                            "malformed element in a JSON-RPC batch"
                        );
                        changed = true;
                        answers.push(e);
                    }
                    Element::Ok(msg) => {
                        let verdict = match side {
                            Side::Client => gate.from_client(&msg, inflight).await,
                            Side::Server => gate.from_server(&msg, inflight).await,
                        };
                        match verdict {
                            Verdict::Forward => forward.push(msg.into_value()),
                            Verdict::Rewrite(v) => {
                                changed = true;
                                forward.push(v);
                            }
                            Verdict::Answer(v) => {
                                changed = true;
                                answers.push(v);
                            }
                        }
                    }
                }
            }
            let forward = if !changed {
                Forward::Verbatim
            } else if forward.is_empty() {
                Forward::Nothing
            } else {
                Forward::Bytes(to_bytes(&Value::Array(forward)))
            };
            let answer = (!answers.is_empty()).then(|| to_bytes(&Value::Array(answers)));
            Relayed { forward, answer }
        }
    }
}
