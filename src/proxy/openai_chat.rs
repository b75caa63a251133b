//! The OpenAI Chat Completions API (`POST /v1/chat/completions`).
//!
//! Request side: each text of the `user` messages after the last
//! `assistant` message is a `message.before`; each `role: "tool"` message
//! there a `tool.after` with the name and arguments of the call it answers
//! (`tool_call_id`); the model, parameters, tool definitions and the new
//! turn's `system`/`developer` messages one `params.before`. Response side:
//! each `tool_calls` entry of each choice is a `tool.before` (its
//! `arguments` string parsed as JSON), the message `content` a
//! `response.after`.

use super::sse::SseEvent;
use super::stream::{Pending, Rewriter};
use super::verdict::Outcome;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Where a request event came from.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestSlot {
    /// `messages[msg]`: its string content (`part: None`) or a text part.
    Text { msg: usize, part: Option<usize> },
    /// `messages[msg]`, a `role: "tool"` message.
    ToolResult { msg: usize },
    /// The parameters; `system_msgs` as in `params.messages`.
    Params { system_msgs: Vec<usize> },
}

fn messages(body: &Value) -> &[Value] {
    body.get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

/// A call's arguments: the JSON they encode, else the string itself.
pub fn parse_arguments(args: &Value) -> Value {
    match args {
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        other => other.clone(),
    }
}

/// The calls of the assistant messages by id: (name, arguments).
fn tool_calls(msgs: &[Value]) -> Map<String, Value> {
    let mut out = Map::new();
    for m in msgs.iter().filter(|m| role(m) == Some("assistant")) {
        for c in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = c.get("id").and_then(Value::as_str) {
                let f = c.get("function").cloned().unwrap_or(Value::Null);
                out.insert(
                    id.to_string(),
                    json!([
                        f.get("name").cloned().unwrap_or(Value::Null),
                        parse_arguments(f.get("arguments").unwrap_or(&Value::Null))
                    ]),
                );
            }
        }
    }
    out
}

pub fn request_events(body: &Value) -> Vec<(RequestSlot, Value)> {
    let msgs = messages(body);
    let start = msgs
        .iter()
        .rposition(|m| role(m) == Some("assistant"))
        .map_or(0, |i| i + 1);
    let calls = tool_calls(msgs);
    let mut out = Vec::new();
    let mut system_msgs = Vec::new();
    for (i, m) in msgs.iter().enumerate().skip(start) {
        match role(m) {
            Some("user") => match m.get("content") {
                Some(Value::String(t)) => out.push((
                    RequestSlot::Text { msg: i, part: None },
                    json!({"stage": "message.before", "message_text": t}),
                )),
                Some(Value::Array(parts)) => {
                    for (j, p) in parts.iter().enumerate() {
                        if p.get("type").and_then(Value::as_str) == Some("text") {
                            if let Some(t) = p.get("text").and_then(Value::as_str) {
                                out.push((
                                    RequestSlot::Text {
                                        msg: i,
                                        part: Some(j),
                                    },
                                    json!({"stage": "message.before", "message_text": t}),
                                ));
                            }
                        }
                    }
                }
                _ => {}
            },
            Some("tool") => {
                let mut event = json!({
                    "stage": "tool.after",
                    "tool_result": m.get("content").cloned().unwrap_or(Value::Null),
                });
                let call = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| calls.get(id));
                if let Some(Value::Array(c)) = call {
                    if let Some(name) = c.first().and_then(Value::as_str) {
                        event["tool_name"] = Value::String(name.into());
                    }
                    if let Some(args) = c.get(1).filter(|a| !a.is_null()) {
                        event["tool_args"] = args.clone();
                    }
                }
                out.push((RequestSlot::ToolResult { msg: i }, event));
            }
            Some("system" | "developer") => system_msgs.push(i),
            _ => {}
        }
    }
    let event = super::params::event(body, "messages", &system_msgs);
    out.push((RequestSlot::Params { system_msgs }, event));
    out
}

fn msg_mut(body: &mut Value, i: usize) -> Option<&mut Value> {
    body.get_mut("messages").and_then(|m| m.get_mut(i))
}

pub fn apply_request_redaction(body: &mut Value, slot: &RequestSlot, redacted: &Value) {
    match slot {
        RequestSlot::Text { msg, part } => {
            let Some(text) = redacted.get("message_text").cloned() else {
                return;
            };
            let Some(m) = msg_mut(body, *msg) else { return };
            match part {
                None => m["content"] = text,
                Some(j) => {
                    if let Some(p) = m.get_mut("content").and_then(|c| c.get_mut(*j)) {
                        p["text"] = text;
                    }
                }
            }
        }
        RequestSlot::ToolResult { msg } => {
            if let (Some(r), Some(m)) = (redacted.get("tool_result").cloned(), msg_mut(body, *msg))
            {
                m["content"] = r;
            }
        }
        RequestSlot::Params { system_msgs } => {
            super::params::write_back(body, redacted, "messages", system_msgs)
        }
    }
}

fn created() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub fn blocked_message(request: &Value, text: &str) -> Value {
    json!({
        "id": format!("chatcmpl-parallax-{}", created()),
        "object": "chat.completion",
        "created": created(),
        "model": request.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null},
            "finish_reason": "stop",
            "logprobs": null,
        }],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    })
}

fn chunk(id: &str, model: &Value, choices: Value) -> SseEvent {
    SseEvent::message(
        json!({"id": id, "object": "chat.completion.chunk", "created": created(),
               "model": model, "choices": choices})
        .to_string(),
    )
}

fn done() -> SseEvent {
    SseEvent::message("[DONE]")
}

pub fn blocked_stream(request: &Value, text: &str) -> Vec<SseEvent> {
    let id = format!("chatcmpl-parallax-{}", created());
    let model = request.get("model").cloned().unwrap_or(Value::Null);
    vec![
        chunk(
            &id,
            &model,
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
        ),
        chunk(
            &id,
            &model,
            json!([{"index": 0, "delta": {"content": text}, "finish_reason": null}]),
        ),
        chunk(
            &id,
            &model,
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        ),
        done(),
    ]
}

/// Where a response event came from: a choice's call or its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseSlot {
    Call { choice: usize, call: usize },
    Content { choice: usize },
}

pub fn response_events(body: &Value) -> Vec<(ResponseSlot, Value, String)> {
    let mut out = Vec::new();
    for (ci, c) in body
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(m) = c.get("message") else { continue };
        for (k, call) in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let f = call.get("function").cloned().unwrap_or(Value::Null);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            out.push((
                ResponseSlot::Call {
                    choice: ci,
                    call: k,
                },
                call_event(&name, f.get("arguments").unwrap_or(&Value::Null)),
                format!("tool call `{name}`"),
            ));
        }
        if let Some(t) = m.get("content").and_then(Value::as_str) {
            out.push((
                ResponseSlot::Content { choice: ci },
                json!({"stage": "response.after", "response_text": t}),
                "reply".into(),
            ));
        }
    }
    out
}

fn call_event(name: &str, arguments: &Value) -> Value {
    let mut e = json!({"stage": "tool.before", "tool_name": name});
    let args = parse_arguments(arguments);
    if !args.is_null() {
        e["tool_args"] = args;
    }
    e
}

/// Appends `text` to a message's content (a paragraph of its own).
fn append_content(m: &mut Value, text: &str) {
    let joined = match m.get("content").and_then(Value::as_str) {
        Some(c) if !c.is_empty() => format!("{c}\n\n{text}"),
        _ => text.to_string(),
    };
    m["content"] = Value::String(joined);
}

pub fn apply_response(body: &mut Value, outcomes: &[(ResponseSlot, Outcome)]) {
    // Calls to remove, per choice (removed after, so indexes hold).
    let mut removed: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (slot, outcome) in outcomes {
        match *slot {
            ResponseSlot::Call { choice, call } => {
                let Some(m) = body
                    .get_mut("choices")
                    .and_then(|c| c.get_mut(choice))
                    .and_then(|c| c.get_mut("message"))
                else {
                    continue;
                };
                match outcome {
                    Outcome::Pass => {}
                    Outcome::Block { text } => {
                        append_content(m, text);
                        removed.entry(choice).or_default().push(call);
                    }
                    Outcome::Redact { event } => {
                        if let (Some(args), Some(c)) = (
                            event.get("tool_args"),
                            m.get_mut("tool_calls").and_then(|t| t.get_mut(call)),
                        ) {
                            c["function"]["arguments"] = Value::String(args.to_string());
                        }
                    }
                }
            }
            ResponseSlot::Content { choice } => {
                let Some(m) = body
                    .get_mut("choices")
                    .and_then(|c| c.get_mut(choice))
                    .and_then(|c| c.get_mut("message"))
                else {
                    continue;
                };
                match outcome {
                    Outcome::Pass => {}
                    Outcome::Block { text } => m["content"] = Value::String(text.clone()),
                    Outcome::Redact { event } => {
                        if let Some(t) = event.get("response_text") {
                            m["content"] = t.clone();
                        }
                    }
                }
            }
        }
    }
    for (choice, calls) in removed {
        let Some(c) = body.get_mut("choices").and_then(|c| c.get_mut(choice)) else {
            continue;
        };
        if let Some(Value::Array(list)) = c.get_mut("message").and_then(|m| m.get_mut("tool_calls"))
        {
            let mut k = 0;
            list.retain(|_| {
                let keep = !calls.contains(&k);
                k += 1;
                keep
            });
            if list.is_empty() {
                if let Some(m) = c.get_mut("message").and_then(Value::as_object_mut) {
                    m.remove("tool_calls");
                }
                if c.get("finish_reason").and_then(Value::as_str) == Some("tool_calls") {
                    c["finish_reason"] = Value::String("stop".into());
                }
            }
        }
    }
}

/// A streamed call being assembled.
#[derive(Debug, Default, Clone)]
struct Call {
    id: Value,
    name: String,
    arguments: String,
}

/// The streaming rewriter for Chat Completions: text deltas pass as they
/// come; tool-call deltas are held until the choice's `finish_reason`, then
/// each call is decided and emitted whole (kept calls renumbered from 0), a
/// blocked one as a content delta saying so.
#[derive(Debug, Default)]
pub struct ChatStream {
    /// Per choice index: its calls by their stream index.
    calls: BTreeMap<u64, BTreeMap<u64, Call>>,
    /// Content so far, per choice (for `response.after`).
    text: BTreeMap<u64, String>,
    /// The finishing chunk being resolved, and its queue of decisions.
    finishing: Option<Finishing>,
    id: String,
    model: Value,
}

#[derive(Debug)]
struct Finishing {
    choice: u64,
    finish: Value,
    queue: Vec<Call>,
    kept: Vec<Call>,
    blocked_text: Vec<String>,
    /// The reply text is decided last.
    text_pending: bool,
    awaiting_text: bool,
}

impl ChatStream {
    fn next(&mut self, out: &mut Vec<SseEvent>) -> Option<Pending> {
        let f = self.finishing.as_mut()?;
        if let Some(c) = f.queue.first() {
            return Some(Pending {
                event: call_event(&c.name, &Value::String(c.arguments.clone())),
                what: format!("tool call `{}`", c.name),
            });
        }
        if f.text_pending {
            f.text_pending = false;
            f.awaiting_text = true;
            let text = self.text.get(&f.choice).cloned().unwrap_or_default();
            return Some(Pending {
                event: json!({"stage": "response.after", "response_text": text}),
                what: "reply".into(),
            });
        }
        // Everything decided: emit the calls, the notices, the finish.
        let mut f = self.finishing.take()?;
        let choice = f.choice;
        if !f.blocked_text.is_empty() {
            // A paragraph of its own after the reply's text, as in a
            // whole response (`append_content`).
            let notice = f.blocked_text.join("\n\n");
            let notice = if self.text.get(&choice).is_some_and(|t| !t.is_empty()) {
                format!("\n\n{notice}")
            } else {
                notice
            };
            out.push(chunk(
                &self.id,
                &self.model,
                json!([{"index": choice, "delta": {"content": notice}, "finish_reason": null}]),
            ));
        }
        if !f.kept.is_empty() {
            let calls: Vec<Value> = f
                .kept
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    json!({"index": k, "id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            out.push(chunk(
                &self.id,
                &self.model,
                json!([{"index": choice, "delta": {"tool_calls": calls}, "finish_reason": null}]),
            ));
        }
        if f.kept.is_empty() && f.finish["finish_reason"] == "tool_calls" {
            f.finish["finish_reason"] = Value::String("stop".into());
        }
        out.push(chunk(&self.id, &self.model, json!([f.finish])));
        None
    }
}

impl Rewriter for ChatStream {
    fn push(&mut self, ev: SseEvent, out: &mut Vec<SseEvent>) -> Option<Pending> {
        if ev.data.trim() == "[DONE]" {
            out.push(ev);
            return None;
        }
        let Ok(mut d) = serde_json::from_str::<Value>(&ev.data) else {
            out.push(ev);
            return None;
        };
        if let Some(id) = d.get("id").and_then(Value::as_str) {
            self.id = id.to_string();
        }
        if let Some(m) = d.get("model") {
            self.model = m.clone();
        }
        let Some(choices) = d.get_mut("choices").and_then(Value::as_array_mut) else {
            out.push(ev);
            return None;
        };
        let mut finishing = None;
        let mut changed = false;
        for c in choices.iter_mut() {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(0);
            if let Some(delta) = c.get_mut("delta").and_then(Value::as_object_mut) {
                if let Some(t) = delta.get("content").and_then(Value::as_str) {
                    self.text.entry(index).or_default().push_str(t);
                }
                if let Some(Value::Array(tcs)) = delta.remove("tool_calls") {
                    changed = true;
                    let calls = self.calls.entry(index).or_default();
                    for tc in tcs {
                        let k = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
                        let call = calls.entry(k).or_default();
                        if let Some(id) = tc.get("id").filter(|v| !v.is_null()) {
                            call.id = id.clone();
                        }
                        if let Some(f) = tc.get("function") {
                            if let Some(n) = f.get("name").and_then(Value::as_str) {
                                call.name.push_str(n);
                            }
                            if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                                call.arguments.push_str(a);
                            }
                        }
                    }
                }
            }
            if c.get("finish_reason").is_some_and(|f| !f.is_null()) {
                finishing = Some((index, c.clone()));
            }
        }
        if let Some((choice, finish)) = finishing {
            // Other choices of this chunk go out first; the finishing one
            // waits for its calls' verdicts.
            choices.retain(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) != choice);
            if !choices.is_empty() {
                out.push(SseEvent::message(d.to_string()));
            }
            let mut finish = finish;
            if let Some(delta) = finish.get_mut("delta").and_then(Value::as_object_mut) {
                delta.remove("tool_calls");
            }
            let queue: Vec<Call> = self
                .calls
                .remove(&choice)
                .map(|m| m.into_values().collect())
                .unwrap_or_default();
            self.finishing = Some(Finishing {
                choice,
                finish,
                queue,
                kept: Vec::new(),
                blocked_text: Vec::new(),
                text_pending: self.text.get(&choice).is_some_and(|t| !t.is_empty()),
                awaiting_text: false,
            });
            return self.next(out);
        }
        if changed {
            // The chunk carried call deltas: they are held; what else it
            // carried (content, role) goes out.
            let empty = choices.iter().all(|c| {
                c.get("delta")
                    .and_then(Value::as_object)
                    .is_none_or(|o| o.is_empty())
            });
            if !empty {
                out.push(SseEvent::message(d.to_string()));
            }
        } else {
            out.push(ev);
        }
        None
    }

    fn resolve(&mut self, outcome: Outcome, out: &mut Vec<SseEvent>) -> Option<Pending> {
        let f = self.finishing.as_mut()?;
        if f.awaiting_text {
            f.awaiting_text = false;
            if let Outcome::Block { text } = outcome {
                f.blocked_text.push(format!("[{text}]"));
            }
            return self.next(out);
        }
        if f.queue.is_empty() {
            return self.next(out);
        }
        let mut call = f.queue.remove(0);
        match outcome {
            Outcome::Pass => f.kept.push(call),
            Outcome::Block { text } => f.blocked_text.push(text),
            Outcome::Redact { event } => {
                if let Some(args) = event.get("tool_args") {
                    call.arguments = args.to_string();
                }
                f.kept.push(call);
            }
        }
        self.next(out)
    }

    fn holding(&self) -> bool {
        self.calls.values().any(|c| !c.is_empty())
    }

    fn keepalive(&self, out: &mut Vec<u8>) {
        super::sse::encode_comment("keep-alive", out);
    }

    fn finish(&mut self, _out: &mut Vec<SseEvent>) {
        if self.holding() {
            tracing::warn!("the upstream stream ended with tool calls unfinished; dropped");
        }
    }

    fn error_event(&self, message: &str) -> SseEvent {
        SseEvent::message(
            json!({"error": {"message": message, "type": "server_error", "code": "upstream_error"}})
                .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk_of(choice: Value) -> SseEvent {
        SseEvent::message(
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                   "choices": [choice]})
            .to_string(),
        )
    }

    /// The content deltas a stream rewritten with `outcome` for its one call
    /// carries, in order.
    fn streamed_content(outcome: Outcome) -> (Vec<String>, Vec<Value>) {
        let mut rw = ChatStream::default();
        let mut out = Vec::new();
        let mut pending = None;
        for c in [
            json!({"index": 0, "delta": {"role": "assistant", "content": "I will."}}),
            json!({"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
                   "type": "function", "function": {"name": "Bash", "arguments": "{\"command\""}}]}}),
            json!({"index": 0, "delta": {"tool_calls": [{"index": 0,
                   "function": {"arguments": ": \"rm -rf /\"}"}}]}}),
            json!({"index": 0, "delta": {}, "finish_reason": "tool_calls"}),
        ] {
            assert!(pending.is_none(), "asked for a verdict before the finish");
            pending = rw.push(chunk_of(c), &mut out);
        }
        let p = pending.expect("the finish asks for the call's verdict");
        assert_eq!(p.event["tool_args"], json!({"command": "rm -rf /"}));
        let mut next = rw.resolve(outcome, &mut out);
        while next.is_some() {
            // The reply text's own verdict.
            next = rw.resolve(Outcome::Pass, &mut out);
        }
        let chunks: Vec<Value> = out
            .iter()
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
        let content = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .map(str::to_string)
            .collect();
        (content, chunks)
    }

    #[test]
    fn a_blocked_streamed_call_is_a_paragraph_after_the_text() {
        let (content, chunks) = streamed_content(Outcome::Block {
            text: "Parallax blocked this tool call `Bash`: r".into(),
        });
        assert_eq!(
            content.concat(),
            "I will.\n\nParallax blocked this tool call `Bash`: r",
            "as a whole response joins them (append_content)"
        );
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop", "{last}");
        assert!(
            chunks
                .iter()
                .all(|c| c["choices"][0]["delta"].get("tool_calls").is_none()),
            "the blocked call went out: {chunks:?}"
        );
    }

    #[test]
    fn a_kept_streamed_call_goes_out_whole_with_tool_calls_finish() {
        let (content, chunks) = streamed_content(Outcome::Pass);
        assert_eq!(content.concat(), "I will.");
        let calls: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
            .collect();
        assert_eq!(calls.len(), 1, "{chunks:?}");
        assert_eq!(calls[0][0]["index"], 0);
        assert_eq!(
            calls[0][0]["function"]["arguments"],
            "{\"command\": \"rm -rf /\"}"
        );
        assert_eq!(
            chunks.last().unwrap()["choices"][0]["finish_reason"],
            "tool_calls"
        );
    }
}
