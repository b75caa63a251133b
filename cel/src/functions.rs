//! The standard functions: conversions, `size`, and the string functions
//! (including the strings extension's `lowerAscii`/`upperAscii`).

use crate::error::EvalError;
use crate::value::{format_double, Type, Value};
use std::sync::Arc;

/// Functions this implementation knows, with their argument counts
/// (receiver counted as an argument). Used by the checker and by the
/// conformance runner's skip rule for extension files.
pub const FUNCTIONS: [&str; 28] = [
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
    "charAt",
    "indexOf",
    "lastIndexOf",
    "substring",
    "replace",
    "split",
    "join",
    "trim",
    "reverse",
    "strings.quote",
    "quote",
    "format",
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

/// The strings extension: functions on strings by code point, as the
/// specification's `strings` library defines them.
pub mod strings {
    use super::*;

    fn chars_len(s: &str) -> usize {
        s.chars().count()
    }

    /// Byte offset of code point `i` (`i` may equal the length).
    fn byte_at(s: &str, i: usize) -> usize {
        s.char_indices().nth(i).map_or(s.len(), |(b, _)| b)
    }

    fn index(v: &Value, what: &'static str) -> Result<i64, EvalError> {
        match v {
            Value::Int(i) => Ok(*i),
            _ => Err(EvalError::NoOverload(what)),
        }
    }

    fn string<'v>(v: &'v Value, what: &'static str) -> Result<&'v str, EvalError> {
        match v {
            Value::String(s) => Ok(s),
            _ => Err(EvalError::NoOverload(what)),
        }
    }

    fn position(i: i64, len: usize) -> Result<usize, EvalError> {
        usize::try_from(i)
            .ok()
            .filter(|&p| p <= len)
            .ok_or(EvalError::IndexOutOfRange)
    }

    pub fn char_at(s: &Value, i: &Value) -> Result<Value, EvalError> {
        let s = string(s, "charAt")?;
        let p = position(index(i, "charAt")?, chars_len(s))?;
        Ok(Value::string(
            &s.chars().nth(p).map(String::from).unwrap_or_default(),
        ))
    }

    pub fn index_of(args: &[Value], last: bool) -> Result<Value, EvalError> {
        let what = if last { "lastIndexOf" } else { "indexOf" };
        let (s, sub) = match args {
            [s, sub] | [s, sub, _] => (string(s, what)?, string(sub, what)?),
            _ => return Err(EvalError::NoOverload(what)),
        };
        let len = chars_len(s);
        let sub_len = chars_len(sub);
        let to_cp = |byte: usize| s[..byte].chars().count() as i64;
        let found = if last {
            let end = match args.get(2) {
                Some(p) => {
                    let p = index(p, what)?;
                    if p < 0 || p as usize >= len {
                        return Err(EvalError::IndexOutOfRange);
                    }
                    // Matches may start at or before code point `p`.
                    byte_at(s, (p as usize + sub_len).min(len))
                }
                None => s.len(),
            };
            s[..end].rfind(sub).map(to_cp)
        } else {
            let start = match args.get(2) {
                Some(p) => byte_at(s, position(index(p, what)?, len)?),
                None => 0,
            };
            s[start..].find(sub).map(|b| to_cp(start + b))
        };
        Ok(Value::Int(found.unwrap_or(-1)))
    }

    pub fn substring(args: &[Value]) -> Result<Value, EvalError> {
        let (s, start, end) = match args {
            [s, a] => (string(s, "substring")?, index(a, "substring")?, None),
            [s, a, b] => (
                string(s, "substring")?,
                index(a, "substring")?,
                Some(index(b, "substring")?),
            ),
            _ => return Err(EvalError::NoOverload("substring")),
        };
        let len = chars_len(s);
        let start = position(start, len)?;
        let end = match end {
            Some(e) => position(e, len)?,
            None => len,
        };
        if end < start {
            return Err(EvalError::IndexOutOfRange);
        }
        Ok(Value::string(&s[byte_at(s, start)..byte_at(s, end)]))
    }

    pub fn replace(args: &[Value]) -> Result<Value, EvalError> {
        let (s, old, new, n) = match args {
            [s, o, n] => (s, o, n, -1),
            [s, o, n, c] => (s, o, n, index(c, "replace")?),
            _ => return Err(EvalError::NoOverload("replace")),
        };
        let (s, old, new) = (
            string(s, "replace")?,
            string(old, "replace")?,
            string(new, "replace")?,
        );
        Ok(Value::string(&if n < 0 {
            s.replace(old, new)
        } else {
            s.replacen(old, new, n as usize)
        }))
    }

    pub fn split(args: &[Value]) -> Result<Value, EvalError> {
        let (s, sep, n) = match args {
            [s, sep] => (s, sep, -1),
            [s, sep, n] => (s, sep, index(n, "split")?),
            _ => return Err(EvalError::NoOverload("split")),
        };
        let (s, sep) = (string(s, "split")?, string(sep, "split")?);
        let parts: Vec<Value> = if n == 0 {
            Vec::new()
        } else if sep.is_empty() {
            let chars: Vec<String> = s.chars().map(String::from).collect();
            let limit = if n < 0 { chars.len() } else { n as usize };
            let mut out: Vec<Value> = chars
                .iter()
                .take(limit.saturating_sub(1))
                .map(|c| Value::string(c))
                .collect();
            if chars.len() >= limit && limit > 0 {
                out.push(Value::string(&chars[limit - 1..].concat()));
            }
            out
        } else if n < 0 {
            s.split(sep).map(Value::string).collect()
        } else {
            s.splitn(n as usize, sep).map(Value::string).collect()
        };
        Ok(Value::List(Arc::new(parts)))
    }

    pub fn join(args: &[Value]) -> Result<Value, EvalError> {
        let (list, sep) = match args {
            [Value::List(l)] => (l, ""),
            [Value::List(l), Value::String(sep)] => (l, &**sep),
            _ => return Err(EvalError::NoOverload("join")),
        };
        let mut out = String::new();
        for (i, v) in list.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(string(v, "join")?);
        }
        Ok(Value::string(&out))
    }

    pub fn trim(s: &Value) -> Result<Value, EvalError> {
        Ok(Value::string(string(s, "trim")?.trim()))
    }

    pub fn reverse(s: &Value) -> Result<Value, EvalError> {
        Ok(Value::string(
            &string(s, "reverse")?.chars().rev().collect::<String>(),
        ))
    }

    /// `strings.quote(s)`: `s` as a double-quoted CEL string literal.
    pub fn quote(s: &Value) -> Result<Value, EvalError> {
        let s = string(s, "strings.quote")?;
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\x0c' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\x0b' => out.push_str("\\v"),
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                c => out.push(c),
            }
        }
        out.push('"');
        Ok(Value::string(&out))
    }
}

/// `"…".format([args])` of the strings extension: `%s %d %f %e %x %X %o %b`,
/// an optional precision (`%.3f`), and `%%`.
pub mod format {
    use super::*;

    fn special(d: f64) -> Option<&'static str> {
        if d.is_nan() {
            Some("NaN")
        } else if d.is_infinite() {
            Some(if d > 0.0 { "Infinity" } else { "-Infinity" })
        } else {
            None
        }
    }

    /// `%s`: strings as they are, everything else as CEL prints it.
    fn plain(v: &Value, out: &mut String) -> Result<(), EvalError> {
        match v {
            Value::String(s) => out.push_str(s),
            Value::Bytes(b) => out.push_str(&String::from_utf8_lossy(b)),
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Uint(u) => out.push_str(&u.to_string()),
            Value::Double(d) => match special(*d) {
                Some(s) => out.push_str(s),
                None => out.push_str(&format_double(*d)),
            },
            Value::Type(t) => out.push_str(t.name()),
            Value::List(l) => {
                out.push('[');
                for (i, x) in l.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    plain(x, out)?;
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push('{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    plain(k, out)?;
                    out.push_str(": ");
                    plain(x, out)?;
                }
                out.push('}');
            }
        }
        Ok(())
    }

    fn float(v: &Value) -> Result<f64, EvalError> {
        match v {
            Value::Double(d) => Ok(*d),
            Value::Int(i) => Ok(*i as f64),
            Value::Uint(u) => Ok(*u as f64),
            _ => Err(EvalError::NoOverload("format")),
        }
    }

    fn exponent(d: f64, precision: usize) -> String {
        let s = format!("{d:.precision$e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(rest) => ('-', rest),
                    None => ('+', e),
                };
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    }

    fn radix(v: &Value, verb: char) -> Result<String, EvalError> {
        let (neg, mag): (bool, u64) = match v {
            Value::Int(i) => (*i < 0, i.unsigned_abs()),
            Value::Uint(u) => (false, *u),
            Value::Bool(b) if verb == 'b' => (false, *b as u64),
            Value::String(s) if verb == 'x' || verb == 'X' => return Ok(hex(s.as_bytes(), verb)),
            Value::Bytes(b) if verb == 'x' || verb == 'X' => return Ok(hex(b, verb)),
            _ => return Err(EvalError::NoOverload("format")),
        };
        let digits = match verb {
            'b' => format!("{mag:b}"),
            'o' => format!("{mag:o}"),
            'x' => format!("{mag:x}"),
            _ => format!("{mag:X}"),
        };
        Ok(if neg { format!("-{digits}") } else { digits })
    }

    fn hex(bytes: &[u8], verb: char) -> String {
        bytes
            .iter()
            .map(|b| {
                if verb == 'x' {
                    format!("{b:02x}")
                } else {
                    format!("{b:02X}")
                }
            })
            .collect()
    }

    pub fn format(s: &Value, args: &Value) -> Result<Value, EvalError> {
        let (Value::String(s), Value::List(args)) = (s, args) else {
            return Err(EvalError::NoOverload("format"));
        };
        let mut out = String::with_capacity(s.len());
        let mut next = args.iter();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                out.push('%');
                continue;
            }
            let mut precision: Option<usize> = None;
            if chars.peek() == Some(&'.') {
                chars.next();
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                // Bounded: a format string may come from event data, and a
                // huge precision would be a huge allocation.
                precision = Some(
                    digits
                        .parse()
                        .ok()
                        .filter(|p| *p <= 100)
                        .ok_or(EvalError::Invalid("invalid format precision"))?,
                );
            }
            let verb = chars
                .next()
                .ok_or(EvalError::Invalid("format string ends in '%'"))?;
            let arg = next
                .next()
                .ok_or(EvalError::Invalid("too few arguments for format string"))?;
            match verb {
                's' => plain(arg, &mut out)?,
                'd' => match arg {
                    Value::Int(i) => out.push_str(&i.to_string()),
                    Value::Uint(u) => out.push_str(&u.to_string()),
                    Value::Double(d) if special(*d).is_some() => {
                        out.push_str(special(*d).unwrap_or_default())
                    }
                    _ => return Err(EvalError::NoOverload("format")),
                },
                'f' | 'e' => {
                    let d = float(arg)?;
                    let p = precision.unwrap_or(6);
                    match special(d) {
                        Some(s) => out.push_str(s),
                        None if verb == 'f' => out.push_str(&format!("{d:.p$}")),
                        None => out.push_str(&exponent(d, p)),
                    }
                }
                'b' | 'o' | 'x' | 'X' => out.push_str(&radix(arg, verb)?),
                _ => return Err(EvalError::Invalid("unknown format verb")),
            }
        }
        Ok(Value::string(&out))
    }
}
