//! The Anthropic Messages API (`POST /v1/messages`): what its requests and
//! responses become as events, and how outcomes are written back.
//!
//! Request side (before forwarding): each text block of the user messages
//! after the last assistant turn is a `message.before` (the agent resends
//! the whole history; only the new turn is evaluated, so cost stays linear
//! in the conversation and an old turn is not re-blocked forever); each
//! `tool_result` in it a `tool.after` carrying the name and input of the
//! `tool_use` it answers; the model, parameters, system prompt, tool
//! definitions and any `role: "system"` messages of the new turn (Claude
//! Code puts one there) one `params.before`. Images and documents are
//! skipped. Response side: each `tool_use` block is a `tool.before`, each
//! text block a `response.after`.

use super::sse::SseEvent;
use super::stream::{Pending, Rewriter};
use super::verdict::Outcome;
use serde_json::{json, Map, Value};

/// Where a request event came from.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestSlot {
    /// `messages[msg]`: its string content (`block: None`) or a text block.
    Text { msg: usize, block: Option<usize> },
    /// `messages[msg].content[block]`, a `tool_result`.
    ToolResult { msg: usize, block: usize },
    /// The parameters; `system_msgs` are the `role: "system"` messages of
    /// the new turn, in `params.messages` order.
    Params { system_msgs: Vec<usize> },
}

fn messages(body: &Value) -> &[Value] {
    body.get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Index of the first message of the new turn (after the last assistant).
fn new_turn_start(msgs: &[Value]) -> usize {
    msgs.iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .map_or(0, |i| i + 1)
}

/// The text of a tool result's content: a string, or its text blocks.
fn tool_result_content(content: &Value) -> Value {
    content.clone()
}

/// The `tool_use` blocks of the assistant messages, by id: (name, input).
fn tool_uses(msgs: &[Value]) -> Map<String, Value> {
    let mut out = Map::new();
    for m in msgs {
        if m.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        for b in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                if let Some(id) = b.get("id").and_then(Value::as_str) {
                    out.insert(
                        id.to_string(),
                        json!([
                            b.get("name").cloned().unwrap_or(Value::Null),
                            b.get("input").cloned().unwrap_or(Value::Null)
                        ]),
                    );
                }
            }
        }
    }
    out
}

/// The events of a request body, each with where it came from.
pub fn request_events(body: &Value) -> Vec<(RequestSlot, Value)> {
    let msgs = messages(body);
    let start = new_turn_start(msgs);
    let calls = tool_uses(msgs);
    let mut out = Vec::new();
    let mut system_msgs = Vec::new();
    for (i, m) in msgs.iter().enumerate().skip(start) {
        match m.get("role").and_then(Value::as_str) {
            Some("user") => {}
            Some("system") => {
                system_msgs.push(i);
                continue;
            }
            _ => continue,
        }
        match m.get("content") {
            Some(Value::String(text)) => out.push((
                RequestSlot::Text {
                    msg: i,
                    block: None,
                },
                json!({"stage": "message.before", "message_text": text}),
            )),
            Some(Value::Array(blocks)) => {
                for (j, b) in blocks.iter().enumerate() {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(text) = b.get("text").and_then(Value::as_str) {
                                out.push((
                                    RequestSlot::Text {
                                        msg: i,
                                        block: Some(j),
                                    },
                                    json!({"stage": "message.before", "message_text": text}),
                                ));
                            }
                        }
                        Some("tool_result") => {
                            let id = b.get("tool_use_id").and_then(Value::as_str);
                            let call = id.and_then(|id| calls.get(id));
                            let mut event = json!({
                                "stage": "tool.after",
                                "tool_result": b.get("content").map(tool_result_content)
                                    .unwrap_or(Value::Null),
                            });
                            if let Some(Value::Array(c)) = call {
                                if let Some(name) = c.first().and_then(Value::as_str) {
                                    event["tool_name"] = Value::String(name.to_string());
                                }
                                if let Some(input) = c.get(1).filter(|v| !v.is_null()) {
                                    event["tool_args"] = input.clone();
                                }
                            }
                            out.push((RequestSlot::ToolResult { msg: i, block: j }, event));
                        }
                        // Images, documents and the rest are not text to scan.
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let event = super::params::event(body, "messages", &system_msgs);
    out.push((RequestSlot::Params { system_msgs }, event));
    out
}

/// Writes a redacted event back where it came from.
pub fn apply_request_redaction(body: &mut Value, slot: &RequestSlot, redacted: &Value) {
    match slot {
        RequestSlot::Text { msg, block } => {
            let Some(text) = redacted.get("message_text").cloned() else {
                return;
            };
            let Some(m) = body.get_mut("messages").and_then(|m| m.get_mut(*msg)) else {
                return;
            };
            match block {
                None => m["content"] = text,
                Some(j) => {
                    if let Some(b) = m.get_mut("content").and_then(|c| c.get_mut(*j)) {
                        b["text"] = text;
                    }
                }
            }
        }
        RequestSlot::ToolResult { msg, block } => {
            let Some(result) = redacted.get("tool_result").cloned() else {
                return;
            };
            if let Some(b) = body
                .get_mut("messages")
                .and_then(|m| m.get_mut(*msg))
                .and_then(|m| m.get_mut("content"))
                .and_then(|c| c.get_mut(*block))
            {
                b["content"] = result;
            }
        }
        RequestSlot::Params { system_msgs } => {
            super::params::write_back(body, redacted, "messages", system_msgs)
        }
    }
}

/// A whole assistant message saying `text` (for a blocked request).
pub fn blocked_message(request: &Value, text: &str) -> Value {
    json!({
        "id": format!("msg_parallax_{}", short_id()),
        "type": "message",
        "role": "assistant",
        "model": request.get("model").cloned().unwrap_or(Value::Null),
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    })
}

/// The same message as a stream of events.
pub fn blocked_stream(request: &Value, text: &str) -> Vec<SseEvent> {
    let message = blocked_message(request, text);
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    vec![
        event("message_start", json!({"message": start})),
        event(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        event("content_block_stop", json!({"index": 0})),
        event(
            "message_delta",
            json!({"delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": 0}}),
        ),
        event("message_stop", json!({})),
    ]
}

/// An id unique enough for a synthesized message.
fn short_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{n:x}")
}

/// An event of type `kind` with `data` (its `type` set to match).
fn event(kind: &str, mut data: Value) -> SseEvent {
    data["type"] = Value::String(kind.to_string());
    SseEvent {
        event: Some(kind.to_string()),
        data: data.to_string(),
        id: None,
        retry: None,
    }
}

/// Where a response event came from: `content[block]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseSlot {
    pub block: usize,
}

/// The events of a (non-streamed) response body.
pub fn response_events(body: &Value) -> Vec<(ResponseSlot, Value, String)> {
    let mut out = Vec::new();
    for (j, b) in body
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        match b.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                out.push((
                    ResponseSlot { block: j },
                    tool_call_event(name, b.get("input").cloned().unwrap_or(Value::Null)),
                    format!("tool call `{name}`"),
                ));
            }
            Some("text") => {
                if let Some(text) = b.get("text").and_then(Value::as_str) {
                    out.push((
                        ResponseSlot { block: j },
                        json!({"stage": "response.after", "response_text": text}),
                        "reply".to_string(),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn tool_call_event(name: &str, input: Value) -> Value {
    let mut e = json!({"stage": "tool.before", "tool_name": name});
    if !input.is_null() {
        e["tool_args"] = input;
    }
    e
}

/// Applies the outcomes of [`response_events`] to the body: a blocked
/// tool call becomes a text block saying so, at the same position; a
/// redacted one gets the rewritten input; a blocked reply text is replaced.
/// With no tool call left, `stop_reason: tool_use` becomes `end_turn`.
pub fn apply_response(body: &mut Value, outcomes: &[(ResponseSlot, Outcome)]) {
    for (slot, outcome) in outcomes {
        let Some(b) = body.get_mut("content").and_then(|c| c.get_mut(slot.block)) else {
            continue;
        };
        let is_tool = b.get("type").and_then(Value::as_str) == Some("tool_use");
        match outcome {
            Outcome::Pass => {}
            Outcome::Block { text } => *b = json!({"type": "text", "text": text}),
            Outcome::Redact { event } if is_tool => {
                if let Some(args) = event.get("tool_args") {
                    b["input"] = args.clone();
                }
            }
            Outcome::Redact { event } => {
                if let Some(t) = event.get("response_text") {
                    b["text"] = t.clone();
                }
            }
        }
    }
    let any_tool = body
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        });
    if !any_tool && body.get("stop_reason").and_then(Value::as_str) == Some("tool_use") {
        body["stop_reason"] = Value::String("end_turn".into());
    }
}

/// A content block being streamed.
#[derive(Debug)]
enum Open {
    /// Text, passed through as it comes; kept to evaluate at its stop.
    Text { index: u64, text: String },
    /// A tool call, held from its start to its stop.
    Tool {
        index: u64,
        name: String,
        start: Value,
        json: String,
    },
}

/// The streaming rewriter for Messages.
#[derive(Debug, Default)]
pub struct MessagesStream {
    open: Option<Open>,
    /// Events that arrived while a tool call was held (kept in order).
    held: Vec<SseEvent>,
    /// The block whose verdict is awaited.
    awaiting: Option<Open>,
    tools_emitted: usize,
    tools_blocked: usize,
}

fn data(ev: &SseEvent) -> Option<Value> {
    serde_json::from_str(&ev.data).ok()
}

impl MessagesStream {
    fn on_event(&mut self, ev: SseEvent, out: &mut Vec<SseEvent>) -> Option<Pending> {
        let Some(d) = data(&ev) else {
            out.push(ev);
            return None;
        };
        let kind = d.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "content_block_start" => {
                let index = d.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = d.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let name = block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        // A start may carry a complete input already.
                        let json = match block.get("input") {
                            Some(i) if i.as_object().is_some_and(|o| !o.is_empty()) => {
                                i.to_string()
                            }
                            _ => String::new(),
                        };
                        self.open = Some(Open::Tool {
                            index,
                            name,
                            start: d,
                            json,
                        });
                        None
                    }
                    Some("text") => {
                        let text = block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        self.open = Some(Open::Text { index, text });
                        out.push(ev);
                        None
                    }
                    _ => {
                        out.push(ev);
                        None
                    }
                }
            }
            "content_block_delta" => {
                let delta = d.get("delta").cloned().unwrap_or(Value::Null);
                match &mut self.open {
                    Some(Open::Tool { json, .. }) => {
                        if let Some(p) = delta.get("partial_json").and_then(Value::as_str) {
                            json.push_str(p);
                        }
                        None
                    }
                    Some(Open::Text { text, .. }) => {
                        if let Some(t) = delta.get("text").and_then(Value::as_str) {
                            text.push_str(t);
                        }
                        out.push(ev);
                        None
                    }
                    None => {
                        out.push(ev);
                        None
                    }
                }
            }
            "content_block_stop" => match self.open.take() {
                Some(Open::Tool {
                    index,
                    name,
                    start,
                    json,
                }) => {
                    let input: Value = if json.trim().is_empty() {
                        json!({})
                    } else {
                        // Unparseable arguments are evaluated as the text
                        // they are: a rule still sees every byte.
                        serde_json::from_str(&json).unwrap_or(Value::String(json.clone()))
                    };
                    let what = format!("tool call `{name}`");
                    let event = tool_call_event(&name, input.clone());
                    self.awaiting = Some(Open::Tool {
                        index,
                        name,
                        start,
                        json: input.to_string(),
                    });
                    Some(Pending { event, what })
                }
                Some(Open::Text { index, text }) => {
                    self.awaiting = Some(Open::Text {
                        index,
                        text: text.clone(),
                    });
                    self.held.push(ev);
                    Some(Pending {
                        event: json!({"stage": "response.after", "response_text": text}),
                        what: "reply".into(),
                    })
                }
                None => {
                    out.push(ev);
                    None
                }
            },
            "message_delta" => {
                let mut d = d;
                let stop = d
                    .get("delta")
                    .and_then(|x| x.get("stop_reason"))
                    .and_then(Value::as_str);
                if stop == Some("tool_use") && self.tools_emitted == 0 && self.tools_blocked > 0 {
                    d["delta"]["stop_reason"] = Value::String("end_turn".into());
                    out.push(event("message_delta", d));
                } else {
                    out.push(ev);
                }
                None
            }
            _ => {
                if matches!(self.open, Some(Open::Tool { .. })) {
                    // Nothing may overtake a held tool call.
                    self.held.push(ev);
                } else {
                    out.push(ev);
                }
                None
            }
        }
    }
}

impl Rewriter for MessagesStream {
    fn push(&mut self, ev: SseEvent, out: &mut Vec<SseEvent>) -> Option<Pending> {
        self.on_event(ev, out)
    }

    fn resolve(&mut self, outcome: Outcome, out: &mut Vec<SseEvent>) -> Option<Pending> {
        match self.awaiting.take() {
            Some(Open::Tool {
                index, start, json, ..
            }) => match outcome {
                Outcome::Block { text } => {
                    self.tools_blocked += 1;
                    out.push(event(
                        "content_block_start",
                        json!({"index": index, "content_block": {"type": "text", "text": ""}}),
                    ));
                    out.push(event(
                        "content_block_delta",
                        json!({"index": index, "delta": {"type": "text_delta", "text": text}}),
                    ));
                    out.push(event("content_block_stop", json!({"index": index})));
                }
                other => {
                    self.tools_emitted += 1;
                    let input = match &other {
                        Outcome::Redact { event } => {
                            event.get("tool_args").map(Value::to_string).unwrap_or(json)
                        }
                        _ => json,
                    };
                    let mut start = start;
                    start["content_block"]["input"] = json!({});
                    out.push(event("content_block_start", start));
                    out.push(event(
                        "content_block_delta",
                        json!({"index": index,
                               "delta": {"type": "input_json_delta", "partial_json": input}}),
                    ));
                    out.push(event("content_block_stop", json!({"index": index})));
                }
            },
            Some(Open::Text { index, .. }) => {
                // The text went out as it came; a block can only say so
                // before the block closes.
                if let Outcome::Block { text } = outcome {
                    out.push(event(
                        "content_block_delta",
                        json!({"index": index,
                               "delta": {"type": "text_delta", "text": format!("\n\n[{text}]")}}),
                    ));
                }
            }
            None => {}
        }
        out.append(&mut self.held);
        None
    }

    fn holding(&self) -> bool {
        matches!(self.open, Some(Open::Tool { .. }))
    }

    fn keepalive(&self, out: &mut Vec<u8>) {
        super::sse::encode_event(&event("ping", json!({})), out);
    }

    fn error_event(&self, message: &str) -> SseEvent {
        event(
            "error",
            json!({"error": {"type": "api_error", "message": message}}),
        )
    }

    fn finish(&mut self, out: &mut Vec<SseEvent>) {
        // A tool call the upstream never finished is dropped, never
        // forwarded unevaluated.
        if let Some(Open::Tool { name, .. }) = self.open.take() {
            tracing::warn!(tool = %name, "the upstream stream ended inside a tool call; dropped");
        }
        out.append(&mut self.held);
    }
}
