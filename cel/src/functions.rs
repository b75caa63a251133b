//! The standard functions: conversions, `size`, and the string functions
//! (including the strings extension's `lowerAscii`/`upperAscii`).

use crate::error::EvalError;
use crate::value::{format_double, Type, Value};
use std::sync::Arc;

/// Functions this implementation knows, with their argument counts
/// (receiver counted as an argument). Used by the checker and by the
/// conformance runner's skip rule for extension files.
pub const FUNCTIONS: [&str; 16] = [
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "lowerAscii",
    "upperAscii",
    "has",
];

pub fn size(v: &Value) -> Result<Value, EvalError> {
    let n = match v {
        Value::String(s) => s.chars().count(),
        Value::Bytes(b) => b.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        _ => return Err(EvalError::NoOverload("size")),
    };
    Ok(Value::Int(n as i64))
}

pub fn to_int(v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::Uint(u) => i64::try_from(*u)
            .map(Value::Int)
            .map_err(|_| EvalError::Overflow),
        Value::Double(d) => {
            // Both bounds exclusive: -2^63 as a double is rejected too, as
            // the reference implementations do.
            if d.is_nan() || *d <= -9_223_372_036_854_775_808.0 || *d >= 9_223_372_036_854_775_808.0
            {
                Err(EvalError::Overflow)
            } else {
                Ok(Value::Int(d.trunc() as i64))
            }
        }
        Value::String(s) => s
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| EvalError::Invalid("cannot convert string to int")),
        _ => Err(EvalError::NoOverload("int")),
    }
}

pub fn to_uint(v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::Uint(u) => Ok(Value::Uint(*u)),
        Value::Int(i) => u64::try_from(*i)
            .map(Value::Uint)
            .map_err(|_| EvalError::Overflow),
        Value::Double(d) => {
            if d.is_nan() || *d <= -1.0 || *d >= 18_446_744_073_709_551_616.0 {
                Err(EvalError::Overflow)
            } else {
                Ok(Value::Uint(d.trunc() as u64))
            }
        }
        Value::String(s) => s
            .parse::<u64>()
            .map(Value::Uint)
            .map_err(|_| EvalError::Invalid("cannot convert string to uint")),
        _ => Err(EvalError::NoOverload("uint")),
    }
}

pub fn to_double(v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::Double(d) => Ok(Value::Double(*d)),
        Value::Int(i) => Ok(Value::Double(*i as f64)),
        Value::Uint(u) => Ok(Value::Double(*u as f64)),
        Value::String(s) => s
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| EvalError::Invalid("cannot convert string to double")),
        _ => Err(EvalError::NoOverload("double")),
    }
}

pub fn to_string(v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Int(i) => Ok(Value::string(&i.to_string())),
        Value::Uint(u) => Ok(Value::string(&u.to_string())),
        Value::Double(d) => Ok(Value::string(&format_double(*d))),
        Value::Bool(b) => Ok(Value::string(if *b { "true" } else { "false" })),
        Value::Bytes(b) => std::str::from_utf8(b)
            .map(Value::string)
            .map_err(|_| EvalError::Invalid("bytes are not valid UTF-8")),
        _ => Err(EvalError::NoOverload("string")),
    }
}

pub fn to_bytes(v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::Bytes(b) => Ok(Value::Bytes(b.clone())),
        Value::String(s) => Ok(Value::Bytes(Arc::from(s.as_bytes()))),
        _ => Err(EvalError::NoOverload("bytes")),
    }
}

pub fn to_bool(v: &Value) -> Result<Value, EvalError> {
    match v {
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::String(s) => match &**s {
            "1" | "t" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
            _ => Err(EvalError::Invalid("cannot convert string to bool")),
        },
        _ => Err(EvalError::NoOverload("bool")),
    }
}

pub fn type_of(v: &Value) -> Value {
    Value::Type(v.type_of())
}

/// `contains`, `startsWith`, `endsWith` on two strings.
pub fn string_test(function: &'static str, s: &Value, arg: &Value) -> Result<Value, EvalError> {
    let (Value::String(s), Value::String(t)) = (s, arg) else {
        return Err(EvalError::NoOverload(function));
    };
    Ok(Value::Bool(match function {
        "contains" => s.contains(&**t),
        "startsWith" => s.starts_with(&**t),
        _ => s.ends_with(&**t),
    }))
}

pub fn ascii_case(function: &'static str, s: &Value) -> Result<Value, EvalError> {
    let Value::String(s) = s else {
        return Err(EvalError::NoOverload(function));
    };
    Ok(Value::string(&if function == "lowerAscii" {
        s.to_ascii_lowercase()
    } else {
        s.to_ascii_uppercase()
    }))
}

/// Maps a type-denoting identifier to its type value.
pub fn type_ident(name: &str) -> Option<Value> {
    Type::from_name(name).map(Value::Type)
}
