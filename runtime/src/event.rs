//! The event an agent sends, parsed and checked field by field.
//!
//! Parsing is by hand over `serde_json::Value` rather than a derived
//! `Deserialize`, so that every rejection names the field and says what was
//! expected: an agent integration that sends `tool_arg` instead of
//! `tool_args` must hear about it, not be silently let through unscanned.

use crate::field::{JsonRoot, TopField};
use crate::stage::Stage;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// One lifecycle event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub stage: Stage,
    pub session_id: Option<String>,
    pub channel: Option<String>,
    pub user_id: Option<String>,
    /// Client clock, epoch seconds.
    pub timestamp: Option<f64>,
    pub message_text: Option<String>,
    pub tool_name: Option<String>,
    /// Any JSON; `Null` when absent.
    pub tool_args: Value,
    /// Any JSON; `Null` when absent.
    pub tool_result: Value,
    pub model: Option<String>,
    /// An object, or `Null` when absent.
    pub params: Value,
    /// Free-form caller data, kept but never scanned.
    pub metadata: Value,
    /// The model's output (stage `response.after`).
    pub response_text: Option<String>,
}

/// Why an event was rejected; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("malformed JSON: {0}")]
    Json(String),
    #[error("the event must be a JSON object, got {0}")]
    NotObject(&'static str),
    #[error("missing required field `stage`")]
    MissingStage,
    #[error("field `{field}`: {why}")]
    BadField { field: &'static str, why: String },
    #[error("unknown field `{0}` (known: stage, session_id, channel, user_id, timestamp, message_text, tool_name, tool_args, tool_result, model, params, metadata, response_text)")]
    UnknownField(String),
}

/// JSON type names, for error messages.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every field an event may have (any other is rejected); the API contract
/// (`parallax docs api`) lists exactly these.
pub const FIELDS: [&str; 13] = [
    "stage",
    "session_id",
    "channel",
    "user_id",
    "timestamp",
    "message_text",
    "tool_name",
    "tool_args",
    "tool_result",
    "model",
    "params",
    "metadata",
    "response_text",
];

impl Event {
    /// The value of a plain string field.
    pub fn top_field(&self, t: TopField) -> Option<&str> {
        match t {
            TopField::Stage => Some(self.stage.as_str()),
            TopField::SessionId => self.session_id.as_deref(),
            TopField::Channel => self.channel.as_deref(),
            TopField::UserId => self.user_id.as_deref(),
            TopField::MessageText => self.message_text.as_deref(),
            TopField::ToolName => self.tool_name.as_deref(),
            TopField::Model => self.model.as_deref(),
            TopField::ResponseText => self.response_text.as_deref(),
        }
    }

    /// The JSON a dotted path under `tool_args`, `tool_result` or `params`
    /// walks into.
    pub fn json_root(&self, r: JsonRoot) -> &Value {
        match r {
            JsonRoot::ToolArgs => &self.tool_args,
            JsonRoot::ToolResult => &self.tool_result,
            JsonRoot::Params => &self.params,
        }
    }

    /// Parses a request body.
    pub fn from_slice(body: &[u8]) -> Result<Event, EventError> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| EventError::Json(e.to_string()))?;
        Event::from_value(value)
    }

    /// Checks and takes apart a parsed JSON value.
    pub fn from_value(value: Value) -> Result<Event, EventError> {
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
                    .map_err(|e: crate::stage::UnknownStage| EventError::BadField {
                        field: "stage",
                        why: e.to_string(),
                    })?
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
        })
    }

    /// The event as JSON again, with absent fields left out; used to return a
    /// rewritten (redacted) event in the shape the client sent.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("stage".into(), Value::String(self.stage.as_str().into()));
        let strings = [
            ("session_id", &self.session_id),
            ("channel", &self.channel),
            ("user_id", &self.user_id),
            ("message_text", &self.message_text),
            ("tool_name", &self.tool_name),
            ("model", &self.model),
            ("response_text", &self.response_text),
        ];
        for (k, v) in strings {
            if let Some(v) = v {
                m.insert(k.into(), Value::String(v.clone()));
            }
        }
        if let Some(ts) = self.timestamp {
            if let Some(n) = serde_json::Number::from_f64(ts) {
                m.insert("timestamp".into(), Value::Number(n));
            }
        }
        for (k, v) in [
            ("tool_args", &self.tool_args),
            ("tool_result", &self.tool_result),
            ("params", &self.params),
            ("metadata", &self.metadata),
        ] {
            if !v.is_null() {
                m.insert(k.into(), v.clone());
            }
        }
        Value::Object(m)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_full_event() {
        let e = Event::from_value(json!({
            "stage": "tool.before", "session_id": "s1", "tool_name": "Bash",
            "tool_args": {"command": "ls"}, "timestamp": "2026-01-01T00:00:00+01:00"
        }))
        .unwrap();
        assert_eq!(e.stage, Stage::ToolBefore);
        assert_eq!(e.timestamp, Some(1767222000.0));
        assert_eq!(e.tool_args, json!({"command": "ls"}));
    }

    #[test]
    fn errors_name_the_field() {
        let err = |v| Event::from_value(v).unwrap_err().to_string();
        assert!(err(json!({})).contains("stage"));
        assert!(err(json!({"stage": "tool.middle"})).contains("tool.middle"));
        assert!(err(json!({"stage": "tool.before", "tool_name": 3})).contains("tool_name"));
        assert!(err(json!({"stage": "tool.before", "tool_arg": {}})).contains("tool_arg"));
        assert!(
            err(json!({"stage": "tool.before", "timestamp": "yesterday"})).contains("timestamp")
        );
        assert!(err(json!({"stage": "tool.before", "params": [1]})).contains("params"));
        assert!(err(json!([1])).contains("object"));
    }

    #[test]
    fn round_trips_to_value() {
        let v = json!({"stage": "tool.after", "tool_result": {"out": ["a", 1]}, "user_id": "u"});
        assert_eq!(Event::from_value(v.clone()).unwrap().to_value(), v);
    }
}
