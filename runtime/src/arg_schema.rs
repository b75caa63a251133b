//! Tool-argument JSON Schemas: the `schema` engine's condition, and what
//! the MCP gateway enforces from a server's own `inputSchema`.
//!
//! A schema is a specification of its own (draft 2020-12: `$ref`,
//! `$defs`, `oneOf`, `unevaluatedProperties`, …), so validation is the
//! `jsonschema` crate's, built with three choices made here, once:
//! - `pattern` and `patternProperties` use the `regex` crate, whose
//!   matching is linear in the text (a schema's pattern never backtracks
//!   on an attacker's argument);
//! - no `$ref` is fetched: the crate is built without its HTTP and file
//!   resolvers, so a schema naming a remote document is an error when it
//!   is compiled, never a request at decision time;
//! - the draft is 2020-12 unless the schema's own `$schema` names another.
//!
//! The compiler builds every rule's schema when the rules are compiled, so
//! a schema that cannot compile is a build/lint error naming the rule; the
//! program then carries the schema as JSON and each process builds its
//! validator on first use ([`ArgSchema::validator`]).

use jsonschema::{Draft, PatternOptions, Validator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// How many violations a finding names; the rest are counted.
const NAMED_VIOLATIONS: usize = 3;

/// Builds a validator for `schema`, or says why it cannot be one.
pub fn compile(schema: &Value) -> Result<Validator, String> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err(format!(
            "a JSON Schema is an object or a boolean, not {}",
            crate::event::json_type(schema)
        ));
    }
    let draft = Draft::Draft202012.detect(schema);
    if draft == Draft::Unknown {
        return Err(
            "`$schema` names a meta-schema this build does not know (drafts 4, 6, 7, \
             2019-09 and 2020-12 are known)"
                .into(),
        );
    }
    jsonschema::options()
        .with_draft(draft)
        .with_pattern_options(PatternOptions::regex())
        .build(schema)
        .map_err(|e| match e.schema_path().as_str() {
            "" => format!("invalid JSON Schema: {e}"),
            at => format!("invalid JSON Schema: {e} (at schema path {at})"),
        })
}

/// Why `instance` is outside the schema, naming each violation's place in
/// the arguments and in the schema; `None` when it conforms. Values are
/// never quoted (an argument may hold a secret): the message says what
/// was expected, not what was sent.
pub fn violations(validator: &Validator, instance: &Value) -> Option<String> {
    let mut named = Vec::new();
    let mut more = 0usize;
    for error in validator.iter_errors(instance) {
        if named.len() == NAMED_VIOLATIONS {
            more += 1;
            continue;
        }
        let at = error.instance_path().as_str().to_string();
        let at = if at.is_empty() { "/".to_string() } else { at };
        named.push(format!(
            "{at}: {} (schema {})",
            error.masked_with("the value"),
            error.schema_path()
        ));
    }
    if named.is_empty() {
        return None;
    }
    let mut text = named.join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    Some(text)
}

/// A rule's schema: the JSON it was written as (what the program stores,
/// compares and fingerprints) and its validator, built once per process.
#[derive(Clone)]
pub struct ArgSchema {
    schema: Arc<Value>,
    built: Arc<OnceLock<Result<Validator, String>>>,
}

impl ArgSchema {
    /// A schema already known to compile (the compiler checked it); a
    /// schema that does not is reported by [`ArgSchema::check`].
    pub fn new(schema: Value) -> ArgSchema {
        ArgSchema {
            schema: Arc::new(schema),
            built: Arc::new(OnceLock::new()),
        }
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    fn validator(&self) -> &Result<Validator, String> {
        self.built.get_or_init(|| compile(&self.schema))
    }

    /// Why the schema cannot be used, when it cannot.
    pub fn build_error(&self) -> Option<&str> {
        self.validator().as_ref().err().map(String::as_str)
    }

    /// Whether `instance` conforms. A schema that cannot be built here (a
    /// corrupt program: the compiler builds each one) fails closed: nothing
    /// conforms to it.
    pub fn conforms(&self, instance: &Value) -> bool {
        match self.validator() {
            Ok(v) => v.is_valid(instance),
            Err(_) => false,
        }
    }

    /// What [`violations`] says of `instance`, or why the schema itself
    /// could not be built.
    pub fn explain(&self, instance: &Value) -> Option<String> {
        match self.validator() {
            Ok(v) => violations(v, instance),
            Err(e) => Some(format!("the rule's schema cannot be used: {e}")),
        }
    }
}

impl PartialEq for ArgSchema {
    fn eq(&self, other: &ArgSchema) -> bool {
        self.schema == other.schema
    }
}

impl fmt::Debug for ArgSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ArgSchema").field(&self.schema).finish()
    }
}

impl Serialize for ArgSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.schema.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ArgSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ArgSchema, D::Error> {
        Value::deserialize(d).map(ArgSchema::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> ArgSchema {
        ArgSchema::new(json!({
            "type": "object",
            "properties": {
                "env": {"enum": ["dev", "staging"]},
                "path": {"type": "string", "pattern": "^/srv/app/[^.][^/]*$"}
            },
            "required": ["env"],
            "additionalProperties": false
        }))
    }

    #[test]
    fn conforming_arguments_pass() {
        let s = schema();
        assert!(s.conforms(&json!({"env": "dev", "path": "/srv/app/log"})));
        assert_eq!(s.explain(&json!({"env": "staging"})), None);
    }

    #[test]
    fn each_violation_is_named_by_its_place_without_the_value() {
        let s = schema();
        let args = json!({"env": "prod-secret-token", "path": "/etc/passwd", "x": 1});
        assert!(!s.conforms(&args));
        let why = s.explain(&args).expect("violations");
        assert!(why.contains("/env:"), "{why}");
        assert!(why.contains("/properties/env/enum"), "{why}");
        assert!(why.contains("/path:"), "{why}");
        assert!(why.contains("additionalProperties"), "{why}");
        assert!(
            !why.contains("prod-secret-token"),
            "a value was quoted: {why}"
        );
    }

    #[test]
    fn missing_arguments_are_outside_an_object_schema() {
        let why = schema().explain(&Value::Null).expect("violation");
        assert!(why.starts_with("/: "), "{why}");
    }

    #[test]
    fn a_schema_that_cannot_compile_is_an_error_and_fails_closed() {
        assert!(compile(&json!({"type": 12})).is_err());
        assert!(compile(&json!("object")).is_err());
        assert!(compile(&json!({"$ref": "https://example.com/s.json"})).is_err());
        let broken = ArgSchema::new(json!({"type": 12}));
        assert!(!broken.conforms(&json!({})));
        assert!(broken.explain(&json!({})).is_some());
    }

    #[test]
    fn patterns_are_linear_time_regexes() {
        // A pattern only a backtracking engine accepts is refused.
        assert!(compile(&json!({"pattern": "^(a+)\\1$"})).is_err());
        let s = ArgSchema::new(json!({"type": "string", "pattern": "^(a+)+$"}));
        let long = format!("{}!", "a".repeat(50_000));
        assert!(!s.conforms(&json!(long)));
    }

    #[test]
    fn the_declared_draft_is_honoured() {
        // Draft 4's exclusiveMaximum is a boolean; 2020-12 refuses that.
        let d4 = json!({"$schema": "http://json-schema.org/draft-04/schema#",
                        "maximum": 5, "exclusiveMaximum": true});
        let v = compile(&d4).expect("draft 4 schema");
        assert!(!v.is_valid(&json!(5)));
    }

    #[test]
    fn serialises_as_the_schema_itself() {
        let s = schema();
        let text = serde_json::to_string(&s).expect("serialise");
        let back: ArgSchema = serde_json::from_str(&text).expect("deserialise");
        assert_eq!(back, s);
        assert_eq!(
            &serde_json::from_str::<Value>(&text).expect("json"),
            s.schema()
        );
    }
}
