//! Evaluation behaviour Parallax rules rely on beyond the conformance
//! suite: a missing field is an error value (never a panic), `has()` tests
//! presence, errors are absorbed only where the specification says.

use parallax_cel::{EvalError, Map, Program, Value};
use std::collections::HashMap;
use std::sync::Arc;

fn env() -> HashMap<String, Value> {
    let mut args = Map::new();
    args.insert(Value::string("command"), Value::string("rm -rf /"))
        .expect("key");
    let mut env = HashMap::new();
    env.insert("tool_args".to_string(), Value::Map(Arc::new(args)));
    env.insert("tool_name".to_string(), Value::string("shell"));
    env
}

fn eval(src: &str) -> Result<Value, EvalError> {
    Program::parse(src).expect("parses").eval(&env())
}

#[test]
fn missing_field_is_an_error_value() {
    assert_eq!(eval("tool_args.path").unwrap_err(), EvalError::NoSuchKey);
    assert_eq!(
        eval("tool_args['path'] == 'x'").unwrap_err(),
        EvalError::NoSuchKey
    );
    assert!(matches!(
        eval("has(tool_args.path)"),
        Ok(Value::Bool(false))
    ));
    assert!(matches!(
        eval("has(tool_args.command)"),
        Ok(Value::Bool(true))
    ));
    // Absorbed by || true, and by && false on either side.
    assert!(matches!(
        eval("tool_args.path == 'x' || true"),
        Ok(Value::Bool(true))
    ));
    assert!(matches!(
        eval("false && tool_args.path == 'x'"),
        Ok(Value::Bool(false))
    ));
    assert!(matches!(
        eval("tool_args.path == 'x' && false"),
        Ok(Value::Bool(false))
    ));
    assert!(eval("tool_args.path == 'x' && true").is_err());
    assert!(matches!(
        eval("unknown_var"),
        Err(EvalError::UnknownIdent(_))
    ));
}

#[test]
fn string_functions_on_fields() {
    for (src, want) in [
        ("tool_args.command.contains('-rf')", true),
        ("tool_args.command.startsWith('rm ')", true),
        ("tool_args.command.endsWith('/')", true),
        ("tool_args.command.matches('^rm\\\\s+-[a-z]*r')", true),
        ("tool_name.upperAscii() == 'SHELL'", true),
        ("'SHeLL'.lowerAscii() == tool_name", true),
        (
            "tool_name in ['shell', 'bash'] && size(tool_args) == 1",
            true,
        ),
        ("tool_args.exists(k, k == 'command')", true),
    ] {
        match eval(src) {
            Ok(Value::Bool(b)) => assert_eq!(b, want, "{src}"),
            other => panic!("{src}: {other:?}"),
        }
    }
    assert!(matches!(
        eval("tool_name.matches('(')"),
        Err(EvalError::Regex(_))
    ));
}

#[test]
fn format_precision_from_data_is_bounded() {
    assert!(eval("'%.999999999f'.format([1.0])").is_err());
    assert!(matches!(eval("'%.2f'.format([1.0])"), Ok(Value::String(s)) if &*s == "1.00"));
}
