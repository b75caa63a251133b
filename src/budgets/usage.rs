//! How many tokens a model answer used, read from the answer itself, in
//! each API's words: Anthropic's `usage` (input, cache writes and cache
//! reads all count as input), Chat Completions' `prompt_tokens` /
//! `completion_tokens`, the Responses API's `input_tokens` /
//! `output_tokens`; in a whole JSON answer, or gathered from a stream's
//! events (Anthropic's `message_start` and the cumulative count of its last
//! `message_delta`, Chat Completions' final usage chunk, the Responses
//! API's `response.completed`).

use crate::proxy::api::ModelApi;
use serde_json::Value;

/// Tokens of one answer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Anthropic's `usage` object: every kind of input token counts.
fn anthropic(u: &Value) -> Usage {
    Usage {
        input: count(u, "input_tokens")
            .saturating_add(count(u, "cache_creation_input_tokens"))
            .saturating_add(count(u, "cache_read_input_tokens")),
        output: count(u, "output_tokens"),
    }
}

/// An OpenAI `usage` object, either API's spelling.
fn openai(u: &Value) -> Usage {
    Usage {
        input: count(u, "prompt_tokens").max(count(u, "input_tokens")),
        output: count(u, "completion_tokens").max(count(u, "output_tokens")),
    }
}

/// The usage and model of a whole JSON answer, if it reports usage.
pub fn of_answer(api: ModelApi, body: &Value) -> Option<(Usage, Option<String>)> {
    let u = body.get("usage").filter(|u| u.is_object())?;
    let usage = match api {
        ModelApi::Messages => anthropic(u),
        ModelApi::ChatCompletions | ModelApi::Responses => openai(u),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((usage, model))
}

/// Usage gathered from a stream, event by event.
#[derive(Debug)]
pub struct StreamUsage {
    api: ModelApi,
    usage: Option<Usage>,
    model: Option<String>,
}

impl StreamUsage {
    pub fn new(api: ModelApi) -> StreamUsage {
        StreamUsage {
            api,
            usage: None,
            model: None,
        }
    }

    /// Reads one event (`event` its type, `data` its data). Only events
    /// that can carry usage are parsed: the text has to mention it.
    pub fn observe(&mut self, event: Option<&str>, data: &str) {
        if !data.contains("\"usage\"") {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return;
        };
        match self.api {
            ModelApi::Messages => match event.or_else(|| v.get("type").and_then(Value::as_str)) {
                Some("message_start") => {
                    let message = v.get("message").unwrap_or(&Value::Null);
                    if let Some(u) = message.get("usage") {
                        let mut now = anthropic(u);
                        now.output = now.output.max(self.usage.unwrap_or_default().output);
                        self.usage = Some(now);
                    }
                    self.take_model(message);
                }
                Some("message_delta") => {
                    if let Some(u) = v.get("usage") {
                        let delta = anthropic(u);
                        let mut now = self.usage.unwrap_or_default();
                        // Counts in a delta are cumulative.
                        now.output = now.output.max(delta.output);
                        now.input = now.input.max(delta.input);
                        self.usage = Some(now);
                    }
                }
                _ => {}
            },
            ModelApi::ChatCompletions => {
                if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                    self.usage = Some(openai(u));
                }
                self.take_model(&v);
            }
            ModelApi::Responses => {
                let response = v.get("response").unwrap_or(&Value::Null);
                if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
                    self.usage = Some(openai(u));
                    self.take_model(response);
                }
            }
        }
    }

    fn take_model(&mut self, v: &Value) {
        if let Some(m) = v
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
        {
            self.model = Some(m.to_string());
        }
    }

    /// What the stream reported, if anything.
    pub fn result(&self) -> Option<(Usage, Option<String>)> {
        self.usage.map(|u| (u, self.model.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_answers_in_each_api() {
        let m = json!({"model": "claude-x", "usage": {"input_tokens": 10,
            "cache_creation_input_tokens": 5, "cache_read_input_tokens": 2, "output_tokens": 7}});
        assert_eq!(
            of_answer(ModelApi::Messages, &m),
            Some((
                Usage {
                    input: 17,
                    output: 7
                },
                Some("claude-x".into())
            ))
        );
        let c = json!({"model": "gpt", "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
        assert_eq!(
            of_answer(ModelApi::ChatCompletions, &c).map(|(u, _)| u.total()),
            Some(7)
        );
        let r = json!({"usage": {"input_tokens": 8, "output_tokens": 1}});
        assert_eq!(
            of_answer(ModelApi::Responses, &r).map(|(u, _)| u.total()),
            Some(9)
        );
        assert_eq!(
            of_answer(ModelApi::Responses, &json!({"usage": null})),
            None
        );
    }

    #[test]
    fn streams_in_each_api() {
        let mut s = StreamUsage::new(ModelApi::Messages);
        s.observe(
            Some("message_start"),
            r#"{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":12,"output_tokens":1}}}"#,
        );
        s.observe(Some("content_block_delta"), r#"{"delta":{"text":"hi"}}"#);
        s.observe(
            Some("message_delta"),
            r#"{"type":"message_delta","usage":{"output_tokens":30}}"#,
        );
        assert_eq!(
            s.result(),
            Some((
                Usage {
                    input: 12,
                    output: 30
                },
                Some("claude-x".into())
            ))
        );
        let mut s = StreamUsage::new(ModelApi::ChatCompletions);
        s.observe(
            None,
            r#"{"model":"gpt","choices":[{"delta":{"content":"x"}}]}"#,
        );
        assert_eq!(s.result(), None, "no usage chunk yet");
        s.observe(
            None,
            r#"{"model":"gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}"#,
        );
        assert_eq!(s.result().map(|(u, _)| u.total()), Some(11));
        let mut s = StreamUsage::new(ModelApi::Responses);
        s.observe(
            Some("response.completed"),
            r#"{"type":"response.completed","response":{"model":"o","usage":{"input_tokens":2,"output_tokens":3}}}"#,
        );
        assert_eq!(
            s.result().map(|(u, m)| (u.total(), m)),
            Some((5, Some("o".into())))
        );
    }
}
