//! The `schema` engine end to end on a user's own rules (docs/SCHEMA.md):
//! a rule file in `rules/schema/` compiled at start-up, its findings and
//! their reasons, and every way a schema rule can be wrong refused with the
//! file and the rule named.

mod support;

use parallax::backend;
use parallax_runtime::{Event, PreparedEvent, Report};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A config whose rules are exactly `schema_file` under `rules/schema/`.
fn config_with(dir: &Path, schema_file: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("rules/schema")).expect("rules dir");
    std::fs::write(dir.join("rules/schema/tools.yaml"), schema_file).expect("rule file");
    let config = dir.join("parallax.yaml");
    std::fs::write(&config, "rules_dir: rules\n").expect("config");
    config
}

fn report(engine: &parallax_runtime::Engine, event: Value) -> Report {
    let prepared = PreparedEvent::new(Event::from_value(event).expect("event"));
    let mut scratch = engine.new_scratch();
    let verdict = engine.evaluate(&prepared, &mut scratch);
    Report::build(engine, &prepared, &verdict, Duration::ZERO)
}

const DEPLOY: &str = r#"
evaluator:
  name: deploy-tools
  category: tool_arguments
rules:
  - id: deploy-environments
    title: Deploy to an environment the tool does not serve
    action: block
    tool: "mcp__deploy__*"
    schema:
      type: object
      required: [env, service]
      properties:
        env: {enum: [dev, staging]}
        service: {type: string, pattern: '^[a-z][a-z0-9-]{1,40}$'}
      additionalProperties: false
"#;

#[test]
fn a_users_schema_rule_blocks_what_is_outside_and_names_where() {
    let tmp = support::temp_dir("schema-rule");
    let engine = backend::dynamic_engine(&config_with(&tmp, DEPLOY)).expect("compiles");
    let call = |args: Value| {
        report(
            &engine,
            json!({"stage": "tool.before", "tool_name": "mcp__deploy__run", "tool_args": args}),
        )
    };

    let ok = call(json!({"env": "staging", "service": "web"}));
    assert_eq!(ok.action.as_str(), "allow", "{:?}", ok.reasons);

    let r = call(json!({"env": "production", "service": "web", "force": true}));
    assert_eq!(r.action.as_str(), "block");
    let reason = &r.reasons[0];
    assert!(
        reason.starts_with(
            "deploy-environments: Deploy to an environment the tool does not serve: /env: "
        ),
        "{reason}"
    );
    assert!(reason.contains("(schema /properties/env/enum)"), "{reason}");
    assert!(
        reason.contains("(schema /additionalProperties)"),
        "{reason}"
    );
    assert!(
        !reason.contains("production"),
        "a value was quoted: {reason}"
    );
    assert_eq!(
        r.results[0].matched.as_deref(),
        reason
            .split_once(": Deploy to an environment the tool does not serve: ")
            .map(|(_, m)| m)
    );

    // No arguments at all are outside an object schema.
    let none = call(Value::Null);
    assert_eq!(none.action.as_str(), "block");
    // Another server's tool is not named by the glob.
    let other = report(
        &engine,
        json!({"stage": "tool.before", "tool_name": "mcp__other__run", "tool_args": {"env": "production"}}),
    );
    assert_eq!(other.action.as_str(), "allow");
}

#[test]
fn every_wrong_schema_rule_is_an_error_naming_it() {
    let cases = [
        (
            "bad-type",
            "tool: T\n  schema: {type: 12}",
            "invalid JSON Schema",
        ),
        (
            "bad-ref",
            "tool: T\n  schema: {$ref: 'https://example.com/s.json'}",
            "https://example.com/s.json",
        ),
        (
            "bad-pattern",
            "tool: T\n  schema: {pattern: '^(a)\\1$'}",
            "invalid JSON Schema",
        ),
        (
            "bad-draft",
            "tool: T\n  schema: {$schema: 'https://example.com/meta', type: object}",
            "meta-schema",
        ),
        (
            "bad-action",
            "tool: T\n  action: redact\n  schema: {}",
            "action `redact`",
        ),
        ("bad-tool", "tool: []\n  schema: {}", "`tool`"),
        (
            "bad-field",
            "tool: T\n  field: command\n  schema: {}",
            "`field: command`",
        ),
        ("no-schema", "tool: T", "schema"),
        (
            "extra-key",
            "tool: T\n  schema: {}\n  schemas: {}",
            "schemas",
        ),
    ];
    for (id, body, says) in cases {
        let tmp = support::temp_dir(id);
        let file = format!("- id: {id}\n  {body}\n");
        let err = match backend::dynamic_engine(&config_with(&tmp, &file)) {
            Ok(_) => panic!("{id}: compiled"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(&format!("rule `{id}`")), "{id}: {err}");
        assert!(err.contains("tools.yaml"), "{id}: {err}");
        assert!(err.contains(says), "{id}: expected `{says}` in: {err}");
    }
}
