//! The OpenAI Responses API (`POST /v1/responses`), which Codex speaks.
//!
//! Request side: `input` is a string (one `message.before`) or a list of
//! items; after the last item the model produced (an assistant message, a
//! call, reasoning), each user message text is a `message.before` and each
//! `function_call_output` / `custom_tool_call_output` a `tool.after` with
//! the name and arguments of its call (`call_id`); the model, parameters,
//! `instructions`, tool definitions and the new turn's developer/system
//! messages (and any other items, e.g. Codex's `additional_tools`) one
//! `params.before`. Response side: each `function_call` (arguments parsed
//! as JSON; Codex's shell is `exec_command {"cmd"}`), `custom_tool_call`
//! (its free-form `input`) and `local_shell_call` (its argv) is a
//! `tool.before`; each `output_text` of an assistant message a
//! `response.after`.

use super::openai_chat::parse_arguments;
use super::sse::SseEvent;
use super::stream::{Pending, Rewriter};
use super::verdict::Outcome;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Where a request event came from.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestSlot {
    /// `input` itself, a string.
    Input,
    /// `input[item]`: its string content (`part: None`) or a content part.
    Text { item: usize, part: Option<usize> },
    /// `input[item]`, a call output.
    ToolResult { item: usize },
    /// The parameters; `items` are the new turn's other items, in
    /// `params.input` order.
    Params { items: Vec<usize> },
}

fn kind(item: &Value) -> &str {
    item.get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
}

fn role(item: &Value) -> Option<&str> {
    item.get("role").and_then(Value::as_str)
}

/// Whether the model produced `item` (the turn boundary).
fn from_model(item: &Value) -> bool {
    match kind(item) {
        "message" => role(item) == Some("assistant"),
        "function_call" | "custom_tool_call" | "local_shell_call" | "reasoning"
        | "web_search_call" | "file_search_call" | "computer_call" => true,
        _ => false,
    }
}

/// A call item as a `tool.before` event, with its name.
fn call_event(item: &Value) -> Option<(Value, String)> {
    let (name, args) = match kind(item) {
        "function_call" => (
            item.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            parse_arguments(item.get("arguments").unwrap_or(&Value::Null)),
        ),
        "custom_tool_call" => {
            // A free-form tool may carry code that calls other tools (Codex's
            // JavaScript `exec`): the commands written in it are evaluated as
            // commands, beside the code itself; a shell-like tool's input is
            // itself a command.
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let input = item.get("input").cloned().unwrap_or(Value::Null);
            let mut args = json!({"input": input});
            if let Some(code) = args["input"].as_str() {
                let mut commands = if shell_like(&name) {
                    vec![code.to_string()]
                } else {
                    Vec::new()
                };
                commands.extend(embedded_commands(code));
                // One script, a command a line: the shell analysis reads an
                // array as one command's argv, which these are not.
                if !commands.is_empty() {
                    args["command"] = json!(commands.join("\n"));
                }
            }
            (name, args)
        }
        "local_shell_call" => (
            "local_shell".to_string(),
            item.get("action").cloned().unwrap_or(Value::Null),
        ),
        _ => return None,
    };
    let mut e = json!({"stage": "tool.before", "tool_name": name});
    if !args.is_null() {
        e["tool_args"] = args;
    }
    Some((e, name))
}

/// Whether a free-form tool of this name takes a shell command as its input
/// (the last segment of a namespaced name counts: `functions.shell`).
fn shell_like(name: &str) -> bool {
    let last = name.rsplit(['.', '/', ':']).next().unwrap_or(name);
    matches!(
        last.to_ascii_lowercase().as_str(),
        "shell"
            | "bash"
            | "sh"
            | "zsh"
            | "terminal"
            | "run"
            | "exec_command"
            | "run_command"
            | "local_shell"
            | "shell_command"
    )
}

/// The string values given to `cmd` or `command` properties in `code`
/// (`exec_command({cmd: "ls"})`, `{"command": 'rm -rf x'}`): one linear
/// scan over the source, reading JavaScript string literals with their
/// escapes. A template literal's `${...}` parts stay as written.
pub fn embedded_commands(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &code[i..];
        let key = if rest.starts_with("command") {
            7
        } else if rest.starts_with("cmd") {
            3
        } else {
            i += 1;
            continue;
        };
        let word_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let mut j = i + key;
        // A quoted key: `"cmd":`.
        if j < b.len() && matches!(b[j], b'"' | b'\'') {
            j += 1;
        }
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if word_before || j >= b.len() || b[j] != b':' {
            i += key;
            continue;
        }
        j += 1;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        match js_string(&code[j..]) {
            Some((s, used)) => {
                out.push(s);
                i = j + used;
            }
            None => i = j,
        }
    }
    out
}

/// A JavaScript string literal at the start of `s` and the bytes it took.
fn js_string(s: &str) -> Option<(String, usize)> {
    let mut chars = s.char_indices();
    let (_, quote) = chars.next()?;
    if !matches!(quote, '"' | '\'' | '`') {
        return None;
    }
    let mut out = String::new();
    while let Some((k, c)) = chars.next() {
        match c {
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                other => out.push(other),
            },
            c if c == quote => return Some((out, k + c.len_utf8())),
            c => out.push(c),
        }
    }
    None
}

pub fn request_events(body: &Value) -> Vec<(RequestSlot, Value)> {
    let mut out = Vec::new();
    let mut other = Vec::new();
    match body.get("input") {
        Some(Value::String(t)) => out.push((
            RequestSlot::Input,
            json!({"stage": "message.before", "message_text": t}),
        )),
        Some(Value::Array(items)) => {
            let start = items.iter().rposition(from_model).map_or(0, |i| i + 1);
            let mut calls = Map::new();
            for it in items {
                if let (Some(id), Some((e, _))) =
                    (it.get("call_id").and_then(Value::as_str), call_event(it))
                {
                    calls.insert(id.to_string(), e);
                }
            }
            for (i, it) in items.iter().enumerate().skip(start) {
                match (kind(it), role(it)) {
                    ("message", Some("user")) => match it.get("content") {
                        Some(Value::String(t)) => out.push((
                            RequestSlot::Text {
                                item: i,
                                part: None,
                            },
                            json!({"stage": "message.before", "message_text": t}),
                        )),
                        Some(Value::Array(parts)) => {
                            for (j, p) in parts.iter().enumerate() {
                                let is_text = matches!(
                                    p.get("type").and_then(Value::as_str),
                                    Some("input_text" | "text")
                                );
                                if let (true, Some(t)) =
                                    (is_text, p.get("text").and_then(Value::as_str))
                                {
                                    out.push((
                                        RequestSlot::Text {
                                            item: i,
                                            part: Some(j),
                                        },
                                        json!({"stage": "message.before", "message_text": t}),
                                    ));
                                }
                            }
                        }
                        _ => {}
                    },
                    ("function_call_output" | "custom_tool_call_output", _) => {
                        let mut event = json!({
                            "stage": "tool.after",
                            "tool_result": it.get("output").cloned().unwrap_or(Value::Null),
                        });
                        if let Some(call) = it
                            .get("call_id")
                            .and_then(Value::as_str)
                            .and_then(|id| calls.get(id))
                        {
                            if let Some(n) = call.get("tool_name") {
                                event["tool_name"] = n.clone();
                            }
                            if let Some(a) = call.get("tool_args") {
                                event["tool_args"] = a.clone();
                            }
                        }
                        out.push((RequestSlot::ToolResult { item: i }, event));
                    }
                    _ => other.push(i),
                }
            }
        }
        _ => {}
    }
    let event = super::params::event(body, "input", &other);
    out.push((RequestSlot::Params { items: other }, event));
    out
}

fn item_mut(body: &mut Value, i: usize) -> Option<&mut Value> {
    body.get_mut("input").and_then(|m| m.get_mut(i))
}

pub fn apply_request_redaction(body: &mut Value, slot: &RequestSlot, redacted: &Value) {
    match slot {
        RequestSlot::Input => {
            if let Some(t) = redacted.get("message_text") {
                body["input"] = t.clone();
            }
        }
        RequestSlot::Text { item, part } => {
            let Some(text) = redacted.get("message_text").cloned() else {
                return;
            };
            let Some(it) = item_mut(body, *item) else {
                return;
            };
            match part {
                None => it["content"] = text,
                Some(j) => {
                    if let Some(p) = it.get_mut("content").and_then(|c| c.get_mut(*j)) {
                        p["text"] = text;
                    }
                }
            }
        }
        RequestSlot::ToolResult { item } => {
            if let (Some(r), Some(it)) =
                (redacted.get("tool_result").cloned(), item_mut(body, *item))
            {
                it["output"] = r;
            }
        }
        RequestSlot::Params { items } => super::params::write_back(body, redacted, "input", items),
    }
}

fn now() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An assistant message item saying `text`.
fn text_item(id: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

pub fn blocked_message(request: &Value, text: &str) -> Value {
    let t = now();
    json!({
        "id": format!("resp_parallax_{t}"),
        "object": "response",
        "created_at": t,
        "status": "completed",
        "model": request.get("model").cloned().unwrap_or(Value::Null),
        "output": [text_item(&format!("msg_parallax_{t}"), text)],
        "output_text": text,
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    })
}

fn event(kind: &str, mut data: Value, seq: &mut u64) -> SseEvent {
    data["type"] = Value::String(kind.into());
    data["sequence_number"] = json!(*seq);
    *seq += 1;
    SseEvent::named(kind, data.to_string())
}

/// The events of a text item at `index` (added, part, delta, done).
fn text_item_events(index: u64, item: &Value, text: &str, seq: &mut u64) -> Vec<SseEvent> {
    let id = item.get("id").cloned().unwrap_or(Value::Null);
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    added["content"] = json!([]);
    vec![
        event(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
            seq,
        ),
        event(
            "response.content_part.added",
            json!({"output_index": index, "item_id": id, "content_index": 0,
                   "part": {"type": "output_text", "text": "", "annotations": []}}),
            seq,
        ),
        event(
            "response.output_text.delta",
            json!({"output_index": index, "item_id": id, "content_index": 0, "delta": text}),
            seq,
        ),
        event(
            "response.output_text.done",
            json!({"output_index": index, "item_id": id, "content_index": 0, "text": text}),
            seq,
        ),
        event(
            "response.content_part.done",
            json!({"output_index": index, "item_id": id, "content_index": 0,
                   "part": {"type": "output_text", "text": text, "annotations": []}}),
            seq,
        ),
        event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
            seq,
        ),
    ]
}

pub fn blocked_stream(request: &Value, text: &str) -> Vec<SseEvent> {
    let done = blocked_message(request, text);
    let mut start = done.clone();
    start["status"] = json!("in_progress");
    start["output"] = json!([]);
    start.as_object_mut().map(|o| o.remove("output_text"));
    let mut seq = 0;
    let mut out = vec![
        event(
            "response.created",
            json!({"response": start.clone()}),
            &mut seq,
        ),
        event("response.in_progress", json!({"response": start}), &mut seq),
    ];
    let item = done["output"][0].clone();
    out.extend(text_item_events(0, &item, text, &mut seq));
    out.push(event(
        "response.completed",
        json!({"response": done}),
        &mut seq,
    ));
    out
}

/// Where a response event came from: `output[item]` (a call, or the
/// `output_text` part `part` of a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseSlot {
    pub item: usize,
    pub part: Option<usize>,
}

pub fn response_events(body: &Value) -> Vec<(ResponseSlot, Value, String)> {
    let mut out = Vec::new();
    for (i, it) in body
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some((e, name)) = call_event(it) {
            out.push((
                ResponseSlot {
                    item: i,
                    part: None,
                },
                e,
                format!("tool call `{name}`"),
            ));
        } else if kind(it) == "message" {
            for (j, p) in it
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.push((
                        ResponseSlot {
                            item: i,
                            part: Some(j),
                        },
                        json!({"stage": "response.after", "response_text": t}),
                        "reply".into(),
                    ));
                }
            }
        }
    }
    out
}

/// A call item rewritten with the redacted arguments.
fn redacted_call(item: &Value, event: &Value) -> Value {
    let mut item = item.clone();
    let Some(args) = event.get("tool_args") else {
        return item;
    };
    match kind(&item) {
        "function_call" => item["arguments"] = Value::String(args.to_string()),
        "custom_tool_call" => {
            if let Some(i) = args.get("input") {
                item["input"] = i.clone();
            }
        }
        // (Embedded commands are evaluated, not written back: a redaction
        // of one is in the code it came from, which `input` carries.)
        "local_shell_call" => item["action"] = args.clone(),
        _ => {}
    }
    item
}

fn blocked_item(item: &Value, text: &str) -> Value {
    let id = item.get("id").and_then(Value::as_str).map_or_else(
        || format!("msg_parallax_{}", now()),
        |i| format!("msg_parallax_{i}"),
    );
    text_item(&id, text)
}

pub fn apply_response(body: &mut Value, outcomes: &[(ResponseSlot, Outcome)]) {
    for (slot, outcome) in outcomes {
        let Some(it) = body.get_mut("output").and_then(|o| o.get_mut(slot.item)) else {
            continue;
        };
        match (slot.part, outcome) {
            (_, Outcome::Pass) => {}
            (None, Outcome::Block { text }) => *it = blocked_item(it, text),
            (None, Outcome::Redact { event }) => *it = redacted_call(it, event),
            (Some(j), Outcome::Block { text }) => {
                if let Some(p) = it.get_mut("content").and_then(|c| c.get_mut(j)) {
                    p["text"] = Value::String(text.clone());
                }
            }
            (Some(j), Outcome::Redact { event }) => {
                if let (Some(t), Some(p)) = (
                    event.get("response_text"),
                    it.get_mut("content").and_then(|c| c.get_mut(j)),
                ) {
                    p["text"] = t.clone();
                }
            }
        }
    }
    // The convenience `output_text`, if present, follows the items.
    if body.get("output_text").is_some() {
        let text: String = body
            .get("output")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|it| kind(it) == "message")
            .flat_map(|it| {
                it.get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        body["output_text"] = Value::String(text);
    }
}

/// The streaming rewriter for Responses: every event of a call item (from
/// `output_item.added` to `output_item.done`) is held; the complete item is
/// decided and its events emitted as they were, rewritten, or replaced by a
/// text item at the same `output_index`. Sequence numbers are renumbered so
/// they stay consecutive; `response.completed` carries the final items.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    /// Output index of the held call, with its events.
    held: Option<(u64, Vec<Value>)>,
    /// The item awaiting its verdict.
    awaiting: Option<(u64, Value, Vec<Value>)>,
    /// Items as emitted, by output index (for `response.completed`).
    final_items: BTreeMap<u64, Value>,
    /// Text per message item id, for `response.after`.
    text: BTreeMap<String, String>,
    awaiting_text: Option<u64>,
    /// Events that arrived while a call was held.
    queued: Vec<Value>,
    seq: u64,
}

fn is_call(item: &Value) -> bool {
    matches!(
        kind(item),
        "function_call" | "custom_tool_call" | "local_shell_call"
    )
}

impl ResponsesStream {
    fn emit(&mut self, mut d: Value, out: &mut Vec<SseEvent>) {
        let kind = d
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if kind == "response.completed" || kind == "response.incomplete" {
            if let Some(Value::Array(items)) =
                d.get_mut("response").and_then(|r| r.get_mut("output"))
            {
                for (i, it) in items.iter_mut().enumerate() {
                    if let Some(f) = self.final_items.get(&(i as u64)) {
                        *it = f.clone();
                    }
                }
            }
        }
        if d.get("sequence_number").is_some() {
            d["sequence_number"] = json!(self.seq);
            self.seq += 1;
        }
        out.push(SseEvent::named(kind, d.to_string()));
    }

    fn on(&mut self, d: Value, out: &mut Vec<SseEvent>) -> Option<Pending> {
        let kind = d.get("type").and_then(Value::as_str).unwrap_or("");
        let index = d.get("output_index").and_then(Value::as_u64);
        if let Some((held_index, events)) = &mut self.held {
            if index == Some(*held_index) {
                let done = kind == "response.output_item.done";
                events.push(d.clone());
                if done {
                    let (i, events) = self.held.take().unwrap_or_default();
                    let item = d.get("item").cloned().unwrap_or(Value::Null);
                    let (event, name) = call_event(&item)?;
                    self.awaiting = Some((i, item, events));
                    return Some(Pending {
                        event,
                        what: format!("tool call `{name}`"),
                    });
                }
            } else {
                self.queued.push(d);
            }
            return None;
        }
        match kind {
            "response.output_item.added" => {
                let item = d.get("item").cloned().unwrap_or(Value::Null);
                if is_call(&item) {
                    self.held = Some((index.unwrap_or(0), vec![d]));
                    return None;
                }
            }
            "response.output_text.delta" => {
                if let (Some(id), Some(t)) = (
                    d.get("item_id").and_then(Value::as_str),
                    d.get("delta").and_then(Value::as_str),
                ) {
                    self.text.entry(id.to_string()).or_default().push_str(t);
                }
            }
            "response.output_item.done" => {
                let item = d.get("item").cloned().unwrap_or(Value::Null);
                if let Some(i) = index {
                    self.final_items.insert(i, item.clone());
                }
                if kind_of(&item) == "message" {
                    let id = item.get("id").and_then(Value::as_str).unwrap_or("");
                    if let Some(text) = self.text.remove(id).filter(|t| !t.is_empty()) {
                        self.queued.push(d);
                        self.awaiting_text = index;
                        return Some(Pending {
                            event: json!({"stage": "response.after", "response_text": text}),
                            what: "reply".into(),
                        });
                    }
                }
            }
            _ => {}
        }
        self.emit(d, out);
        None
    }

    fn drain_queue(&mut self, out: &mut Vec<SseEvent>) -> Option<Pending> {
        while !self.queued.is_empty() {
            let d = self.queued.remove(0);
            if let Some(p) = self.on(d, out) {
                return Some(p);
            }
        }
        None
    }
}

fn kind_of(item: &Value) -> &str {
    kind(item)
}

impl Rewriter for ResponsesStream {
    fn push(&mut self, ev: SseEvent, out: &mut Vec<SseEvent>) -> Option<Pending> {
        let Ok(d) = serde_json::from_str::<Value>(&ev.data) else {
            out.push(ev);
            return None;
        };
        if d.get("type").is_none() {
            out.push(ev);
            return None;
        }
        self.on(d, out)
    }

    fn resolve(&mut self, outcome: Outcome, out: &mut Vec<SseEvent>) -> Option<Pending> {
        if let Some(index) = self.awaiting_text.take() {
            // The text is out already; a block can only add a notice,
            // as an item of its own after this one.
            let done = if self.queued.is_empty() {
                None
            } else {
                Some(self.queued.remove(0))
            };
            if let Some(d) = done {
                self.emit(d, out);
            }
            if let Outcome::Block { text } = outcome {
                let _ = index;
                tracing::warn!("a streamed reply was blocked after it was sent: {text}");
            }
            return self.drain_queue(out);
        }
        let Some((index, item, events)) = self.awaiting.take() else {
            return self.drain_queue(out);
        };
        match outcome {
            Outcome::Pass => {
                self.final_items.insert(index, item);
                for d in events {
                    self.emit(d, out);
                }
            }
            Outcome::Redact { event } => {
                let item = redacted_call(&item, &event);
                self.final_items.insert(index, item.clone());
                let mut added = item.clone();
                if kind(&added) == "function_call" {
                    added["arguments"] = json!("");
                }
                self.emit(
                    json!({"type": "response.output_item.added", "output_index": index,
                           "item": added, "sequence_number": 0}),
                    out,
                );
                if kind(&item) == "function_call" {
                    let args = item.get("arguments").cloned().unwrap_or(json!(""));
                    let id = item.get("id").cloned().unwrap_or(Value::Null);
                    self.emit(
                        json!({"type": "response.function_call_arguments.delta",
                               "output_index": index, "item_id": id, "delta": args,
                               "sequence_number": 0}),
                        out,
                    );
                    self.emit(
                        json!({"type": "response.function_call_arguments.done",
                               "output_index": index, "item_id": id, "arguments": args,
                               "sequence_number": 0}),
                        out,
                    );
                }
                self.emit(
                    json!({"type": "response.output_item.done", "output_index": index,
                           "item": item, "sequence_number": 0}),
                    out,
                );
            }
            Outcome::Block { text } => {
                let replacement = blocked_item(&item, &text);
                self.final_items.insert(index, replacement.clone());
                let mut seq = 0;
                for e in text_item_events(index, &replacement, &text, &mut seq) {
                    if let Ok(d) = serde_json::from_str::<Value>(&e.data) {
                        self.emit(d, out);
                    }
                }
            }
        }
        self.drain_queue(out)
    }

    fn holding(&self) -> bool {
        self.held.is_some()
    }

    fn keepalive(&self, out: &mut Vec<u8>) {
        super::sse::encode_comment("keep-alive", out);
    }

    fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.held.take().is_some() {
            tracing::warn!("the upstream stream ended inside a tool call; dropped");
        }
        let queued = std::mem::take(&mut self.queued);
        for d in queued {
            self.emit(d, out);
        }
    }

    fn error_event(&self, message: &str) -> SseEvent {
        SseEvent::named(
            "error",
            json!({"type": "error", "code": "upstream_error", "message": message, "param": null})
                .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_written_in_code_are_found() {
        let code = r#"const r = await tools.exec_command({cmd: "rm -rf /"});
            await tools.exec_command({ "command" : 'curl x | sh' });
            const cmdline = 1; run({ subcmd: "no" }); t({cmd: `echo \`a\``});"#;
        assert_eq!(
            embedded_commands(code),
            ["rm -rf /", "curl x | sh", "echo `a`"]
        );
        assert!(embedded_commands("cmd: unquoted").is_empty());
        assert!(embedded_commands("{cmd: \"unterminated").is_empty());
    }

    #[test]
    fn a_shell_like_free_form_tool_input_is_a_command() {
        let item = json!({"type": "custom_tool_call", "name": "shell", "call_id": "c",
                          "input": "rm -rf /"});
        let (event, _) = call_event(&item).unwrap();
        assert_eq!(event["tool_args"]["command"], json!("rm -rf /"));
        let patch = json!({"type": "custom_tool_call", "name": "apply_patch", "call_id": "c",
                           "input": "*** Begin Patch"});
        let (event, _) = call_event(&patch).unwrap();
        assert!(event["tool_args"].get("command").is_none());
    }

    #[test]
    fn a_code_tool_call_is_judged_by_the_commands_in_it() {
        let item = json!({"type": "custom_tool_call", "name": "exec", "call_id": "c",
                          "input": "await tools.exec_command({cmd: \"rm -rf /\"})"});
        let (event, name) = call_event(&item).unwrap();
        assert_eq!(name, "exec");
        assert_eq!(event["tool_args"]["command"], json!("rm -rf /"));
    }
}
