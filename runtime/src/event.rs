//! The event an agent sends, parsed and checked field by field.
//!
//! Parsing is by hand over `serde_json::Value` rather than a derived
//! `Deserialize`, so that every rejection names the field and says what was
//! expected: an agent integration that sends `tool_arg` instead of
//! `tool_args` must hear about it, not be silently let through unscanned.
//!
//! The common body, an object of event fields each sent once, is parsed
//! straight into one slot a field ([`Event::parse_plain`]): no `Value` map
//! for the object (a `String` key and a tree node a field) and no map to
//! take apart again. The slots are checked by the same code as
//! [`Event::from_value`]'s; anything else the short cut declines (bad JSON,
//! an unknown or repeated key, a bad field) takes the value path, so every
//! error message is the one it was. Callgrind, release, on top of ad390c2:
//! `parallax eval` of the first 3,000 lines of `loadgen --write-mix 20000`,
//! JSON to event 31.3 M -> 17.7 M instructions (10.4k -> 5.9k a line,
//! `Value` 6.8k + `from_value` 3.6k before); `/evaluate`'s `parse_event` on
//! a 100-byte tool call 6.7k -> 4.1k a request.

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
    /// The key an agent writes a memory under (stage `memory.before`).
    pub memory_key: Option<String>,
    /// The text an agent is about to store in its memory.
    pub memory_text: Option<String>,
    /// A retrieval query (stages `retrieval.before` and `retrieval.after`).
    pub query: Option<String>,
    /// The documents a retrieval returned: an array of objects, each with a
    /// `text` and optionally `source`, `score`, `id` and `metadata`
    /// (checked by [`documents`]); `Null` when absent.
    pub documents: Value,
    /// The tenant the front door authenticated (`tenants:` in the config),
    /// set by the decision service from the request's token. Not an event
    /// field: JSON that names it is refused as an unknown field, so no
    /// client can choose another tenant's policy.
    pub tenant: Option<String>,
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
    #[error("unknown field `{0}` (known: stage, session_id, channel, user_id, timestamp, message_text, tool_name, tool_args, tool_result, model, params, metadata, response_text, memory_key, memory_text, query, documents)")]
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
pub const FIELDS: [&str; 17] = [
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
    "memory_key",
    "memory_text",
    "query",
    "documents",
];

/// The keys a retrieved document may carry; any other is rejected, so a
/// client that sends `content` for `text` hears about it instead of having
/// its documents go unscanned.
pub const DOCUMENT_KEYS: [&str; 5] = ["text", "source", "score", "id", "metadata"];

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
            TopField::MemoryKey => self.memory_key.as_deref(),
            TopField::MemoryText => self.memory_text.as_deref(),
            TopField::RetrievalQuery => self.query.as_deref(),
            TopField::Tenant => self.tenant.as_deref(),
        }
    }

    /// The JSON a dotted path under `tool_args`, `tool_result` or `params`
    /// walks into.
    pub fn json_root(&self, r: JsonRoot) -> &Value {
        match r {
            JsonRoot::ToolArgs => &self.tool_args,
            JsonRoot::ToolResult => &self.tool_result,
            JsonRoot::Params => &self.params,
            JsonRoot::Documents => &self.documents,
        }
    }

    /// A copy without `documents` (`Null`), for judging a retrieval's
    /// documents one at a time without copying all of them each time.
    pub fn clone_without_documents(&self) -> Event {
        Event {
            stage: self.stage,
            session_id: self.session_id.clone(),
            channel: self.channel.clone(),
            user_id: self.user_id.clone(),
            timestamp: self.timestamp,
            message_text: self.message_text.clone(),
            tool_name: self.tool_name.clone(),
            tool_args: self.tool_args.clone(),
            tool_result: self.tool_result.clone(),
            model: self.model.clone(),
            params: self.params.clone(),
            metadata: self.metadata.clone(),
            response_text: self.response_text.clone(),
            memory_key: self.memory_key.clone(),
            memory_text: self.memory_text.clone(),
            query: self.query.clone(),
            documents: Value::Null,
            tenant: self.tenant.clone(),
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
        let obj = match value {
            Value::Object(o) => o,
            other => return Err(EventError::NotObject(json_type(&other))),
        };
        if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(EventError::UnknownField(k.clone()));
        }
        let mut fields = Fields::default();
        for (key, value) in obj {
            if let Some(slot) = Field::of(&key).map(|f| fields.slot(f)) {
                *slot = Some(value);
            }
        }
        fields.check()
    }

    /// Parses JSON text: [`Event::parse_plain`] when it can, else the
    /// whole value first and [`Event::from_value`] (the same event, or the
    /// error the value path gives).
    pub fn from_json_str(text: &str) -> Result<Event, EventError> {
        if let Some(plain) = Event::parse_plain(text) {
            return Ok(plain.event);
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| EventError::Json(e.to_string()))?;
        Event::from_value(value)
    }

    /// The common case parsed straight into the event's fields, with no
    /// `Value` tree for the object itself: a JSON object whose keys are all
    /// event fields, each at most once, that [`Event::from_value`] accepts.
    /// `None` for anything else (malformed, unknown or repeated keys, a bad
    /// field, not an object): the caller then takes the value path, which
    /// names the problem. Whatever this accepts, parsing the text into a
    /// `Value` and [`Event::from_value`] give the same event
    /// (tests/eval_parse.rs).
    pub fn parse_plain(text: &str) -> Option<Plain> {
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = serde::Deserialize::deserialize(&mut de).ok()?;
        de.end().ok()?;
        let PlainFields {
            fields,
            timestamp_text_bytes,
        } = parsed;
        let event = fields.check().ok()?;
        Some(Plain {
            event,
            timestamp_text_bytes,
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
            ("memory_key", &self.memory_key),
            ("memory_text", &self.memory_text),
            ("query", &self.query),
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
            ("documents", &self.documents),
        ] {
            if !v.is_null() {
                m.insert(k.into(), v.clone());
            }
        }
        Value::Object(m)
    }
}

/// An event parsed by [`Event::parse_plain`], with what a check of the
/// JSON's shape (string lengths) needs beyond the event itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Plain {
    pub event: Event,
    /// The length of `timestamp` when it was sent as a string (the event
    /// keeps only the time); 0 otherwise.
    pub timestamp_text_bytes: usize,
}

/// The event's fields as sent, one slot a field, before they are checked.
#[derive(Default)]
struct Fields {
    stage: Option<Value>,
    session_id: Option<Value>,
    channel: Option<Value>,
    user_id: Option<Value>,
    timestamp: Option<Value>,
    message_text: Option<Value>,
    tool_name: Option<Value>,
    tool_args: Option<Value>,
    tool_result: Option<Value>,
    model: Option<Value>,
    params: Option<Value>,
    metadata: Option<Value>,
    response_text: Option<Value>,
    memory_key: Option<Value>,
    memory_text: Option<Value>,
    query: Option<Value>,
    documents: Option<Value>,
}

/// A field's name, as [`FIELDS`] lists them.
#[derive(Clone, Copy)]
enum Field {
    Stage,
    SessionId,
    Channel,
    UserId,
    Timestamp,
    MessageText,
    ToolName,
    ToolArgs,
    ToolResult,
    Model,
    Params,
    Metadata,
    ResponseText,
    MemoryKey,
    MemoryText,
    Query,
    Documents,
}

impl Field {
    fn of(key: &str) -> Option<Field> {
        Some(match key {
            "stage" => Field::Stage,
            "session_id" => Field::SessionId,
            "channel" => Field::Channel,
            "user_id" => Field::UserId,
            "timestamp" => Field::Timestamp,
            "message_text" => Field::MessageText,
            "tool_name" => Field::ToolName,
            "tool_args" => Field::ToolArgs,
            "tool_result" => Field::ToolResult,
            "model" => Field::Model,
            "params" => Field::Params,
            "metadata" => Field::Metadata,
            "response_text" => Field::ResponseText,
            "memory_key" => Field::MemoryKey,
            "memory_text" => Field::MemoryText,
            "query" => Field::Query,
            "documents" => Field::Documents,
            _ => return None,
        })
    }
}

impl Fields {
    fn slot(&mut self, f: Field) -> &mut Option<Value> {
        match f {
            Field::Stage => &mut self.stage,
            Field::SessionId => &mut self.session_id,
            Field::Channel => &mut self.channel,
            Field::UserId => &mut self.user_id,
            Field::Timestamp => &mut self.timestamp,
            Field::MessageText => &mut self.message_text,
            Field::ToolName => &mut self.tool_name,
            Field::ToolArgs => &mut self.tool_args,
            Field::ToolResult => &mut self.tool_result,
            Field::Model => &mut self.model,
            Field::Params => &mut self.params,
            Field::Metadata => &mut self.metadata,
            Field::ResponseText => &mut self.response_text,
            Field::MemoryKey => &mut self.memory_key,
            Field::MemoryText => &mut self.memory_text,
            Field::Query => &mut self.query,
            Field::Documents => &mut self.documents,
        }
    }

    /// The checks, in the order that decides which error a bad event gets.
    fn check(self) -> Result<Event, EventError> {
        let stage = match self.stage {
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
        let params = self.params.unwrap_or(Value::Null);
        if !matches!(params, Value::Null | Value::Object(_)) {
            return Err(EventError::BadField {
                field: "params",
                why: format!("expected an object, got {}", json_type(&params)),
            });
        }
        Ok(Event {
            stage,
            session_id: opt_string(self.session_id, "session_id")?,
            channel: opt_string(self.channel, "channel")?,
            user_id: opt_string(self.user_id, "user_id")?,
            timestamp: timestamp(self.timestamp)?,
            message_text: opt_string(self.message_text, "message_text")?,
            tool_name: opt_string(self.tool_name, "tool_name")?,
            tool_args: self.tool_args.unwrap_or(Value::Null),
            tool_result: self.tool_result.unwrap_or(Value::Null),
            model: opt_string(self.model, "model")?,
            params,
            metadata: self.metadata.unwrap_or(Value::Null),
            response_text: opt_string(self.response_text, "response_text")?,
            memory_key: opt_string(self.memory_key, "memory_key")?,
            memory_text: opt_string(self.memory_text, "memory_text")?,
            query: opt_string(self.query, "query")?,
            documents: documents(self.documents)?,
            tenant: None,
        })
    }
}

/// Checks `documents`: an array of objects, each with a string `text`;
/// `source` a string, `score` a number, `id` a string or number,
/// `metadata` anything (kept, never scanned). The error names the
/// document by its index.
fn documents(value: Option<Value>) -> Result<Value, EventError> {
    let bad = |why: String| EventError::BadField {
        field: "documents",
        why,
    };
    let items = match value {
        None | Some(Value::Null) => return Ok(Value::Null),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(bad(format!(
                "expected an array of documents, got {}",
                json_type(&other)
            )))
        }
    };
    for (i, doc) in items.iter().enumerate() {
        let Value::Object(map) = doc else {
            return Err(bad(format!(
                "document {i}: expected an object with a `text`, got {}",
                json_type(doc)
            )));
        };
        if let Some(k) = map.keys().find(|k| !DOCUMENT_KEYS.contains(&k.as_str())) {
            return Err(bad(format!(
                "document {i}: unknown key `{k}` (known: text, source, score, id, metadata)"
            )));
        }
        match map.get("text") {
            Some(Value::String(_)) => {}
            None => return Err(bad(format!("document {i}: missing `text`"))),
            Some(other) => {
                return Err(bad(format!(
                    "document {i}: `text` must be a string, got {}",
                    json_type(other)
                )))
            }
        }
        match map.get("source") {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(bad(format!(
                    "document {i}: `source` must be a string, got {}",
                    json_type(other)
                )))
            }
        }
        match map.get("score") {
            None | Some(Value::Null) | Some(Value::Number(_)) => {}
            Some(other) => {
                return Err(bad(format!(
                    "document {i}: `score` must be a number, got {}",
                    json_type(other)
                )))
            }
        }
        match map.get("id") {
            None | Some(Value::Null) | Some(Value::String(_)) | Some(Value::Number(_)) => {}
            Some(other) => {
                return Err(bad(format!(
                    "document {i}: `id` must be a string or a number, got {}",
                    json_type(other)
                )))
            }
        }
    }
    Ok(Value::Array(items))
}

/// The `text` of each document of a checked `documents` value, in order.
pub fn document_texts(documents: &Value) -> impl Iterator<Item = &str> {
    documents
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("text").and_then(Value::as_str))
}

/// What [`Event::parse_plain`] deserializes: the slots, or an error for
/// anything it leaves to the value path.
struct PlainFields {
    fields: Fields,
    timestamp_text_bytes: usize,
}

impl<'de> serde::Deserialize<'de> for PlainFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PlainVisitor)
    }
}

struct PlainVisitor;

impl<'de> serde::de::Visitor<'de> for PlainVisitor {
    type Value = PlainFields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<PlainFields, A::Error> {
        use serde::de::Error;
        let mut fields = Fields::default();
        let mut timestamp_text_bytes = 0;
        while let Some(key) = map.next_key::<FieldKey>()? {
            let FieldKey(Some(field)) = key else {
                return Err(A::Error::custom("not an event field"));
            };
            let slot = fields.slot(field);
            if slot.is_some() {
                return Err(A::Error::custom("a repeated field"));
            }
            let value: Value = map.next_value()?;
            if let (Field::Timestamp, Value::String(s)) = (field, &value) {
                timestamp_text_bytes = s.len();
            }
            *slot = Some(value);
        }
        Ok(PlainFields {
            fields,
            timestamp_text_bytes,
        })
    }
}

/// An object key: the event field it names, if any.
struct FieldKey(Option<Field>);

impl<'de> serde::Deserialize<'de> for FieldKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(FieldKeyVisitor)
    }
}

struct FieldKeyVisitor;

impl<'de> serde::de::Visitor<'de> for FieldKeyVisitor {
    type Value = FieldKey;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<FieldKey, E> {
        Ok(FieldKey(Field::of(key)))
    }
}

fn opt_string(value: Option<Value>, field: &'static str) -> Result<Option<String>, EventError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(EventError::BadField {
            field,
            why: format!("expected a string, got {}", json_type(&other)),
        }),
    }
}

fn timestamp(value: Option<Value>) -> Result<Option<f64>, EventError> {
    let bad = |why: String| EventError::BadField {
        field: "timestamp",
        why,
    };
    match value {
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
        let docs = |d| err(json!({"stage": "retrieval.after", "documents": d}));
        assert!(docs(json!("text")).contains("array of documents"));
        assert!(docs(json!([{"text": "a"}, "b"])).contains("document 1"));
        assert!(docs(json!([{"content": "a"}])).contains("unknown key `content`"));
        assert!(docs(json!([{"source": "a"}])).contains("missing `text`"));
        assert!(docs(json!([{"text": 3}])).contains("`text` must be a string"));
        assert!(docs(json!([{"text": "a", "score": "high"}])).contains("`score`"));
        assert!(
            err(json!({"stage": "memory.before", "memory_text": {"a": 1}})).contains("memory_text")
        );
    }

    #[test]
    fn memory_and_retrieval_fields_round_trip() {
        let v = json!({"stage": "retrieval.after", "query": "q", "session_id": "s",
            "documents": [{"text": "t", "source": "wiki", "score": 0.9, "id": 7,
                           "metadata": {"page": 3}}]});
        let e = Event::from_value(v.clone()).unwrap();
        assert_eq!(e.stage, Stage::RetrievalAfter);
        assert_eq!(document_texts(&e.documents).collect::<Vec<_>>(), ["t"]);
        assert_eq!(e.to_value(), v);
        let m = json!({"stage": "memory.before", "memory_key": "k", "memory_text": "t"});
        assert_eq!(Event::from_value(m.clone()).unwrap().to_value(), m);
    }

    #[test]
    fn round_trips_to_value() {
        let v = json!({"stage": "tool.after", "tool_result": {"out": ["a", 1]}, "user_id": "u"});
        assert_eq!(Event::from_value(v.clone()).unwrap().to_value(), v);
    }
}
