//! CEL runtime values and the specification's equality and ordering.
//!
//! Numbers compare across int, uint and double by mathematical value
//! (heterogeneous equality), values of different kinds are simply unequal,
//! and NaN equals nothing.

use crate::error::EvalError;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
    List(Arc<Vec<Value>>),
    Map(Arc<Map>),
    Type(Type),
}

/// The types CEL can name at run time (`type(x)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List,
    Map,
    Type,
}

impl Type {
    pub fn name(self) -> &'static str {
        match self {
            Type::Null => "null_type",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::Double => "double",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::List => "list",
            Type::Map => "map",
            Type::Type => "type",
        }
    }

    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "null_type" => Type::Null,
            "bool" => Type::Bool,
            "int" => Type::Int,
            "uint" => Type::Uint,
            "double" => Type::Double,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "list" => Type::List,
            "map" => Type::Map,
            "type" => Type::Type,
            _ => return None,
        })
    }
}

/// A map key with numeric keys normalised, so that `1`, `1u` and `1.0`
/// find the same entry as the specification requires.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Bool(bool),
    Num(i128),
    String(Arc<str>),
}

impl Key {
    /// The key a value is stored under; `None` for values that cannot be
    /// map keys.
    pub fn of_key(v: &Value) -> Option<Key> {
        match v {
            Value::Bool(b) => Some(Key::Bool(*b)),
            Value::Int(i) => Some(Key::Num(*i as i128)),
            Value::Uint(u) => Some(Key::Num(*u as i128)),
            Value::String(s) => Some(Key::String(s.clone())),
            _ => None,
        }
    }

    /// The key a lookup uses: like [`Key::of_key`], plus doubles with an
    /// integral value.
    pub fn of_lookup(v: &Value) -> Result<Option<Key>, EvalError> {
        match v {
            Value::Double(d) if d.fract() == 0.0 && d.abs() < 1.9e19 => {
                Ok(Some(Key::Num(*d as i128)))
            }
            Value::Double(_) => Ok(None),
            Value::Bool(_) | Value::Int(_) | Value::Uint(_) | Value::String(_) => {
                Ok(Key::of_key(v))
            }
            _ => Err(EvalError::NoOverload("_[_]")),
        }
    }
}

/// A CEL map: insertion-ordered entries plus an index by normalised key.
#[derive(Debug, Clone, Default)]
pub struct Map {
    entries: Vec<(Value, Value)>,
    index: HashMap<Key, usize>,
}

impl Map {
    pub fn new() -> Map {
        Map::default()
    }

    /// Adds an entry; a key that is not a valid map key, or one already
    /// present, is an error (as in a map literal).
    pub fn insert(&mut self, k: Value, v: Value) -> Result<(), EvalError> {
        let key = Key::of_key(&k).ok_or(EvalError::Invalid("unsupported map key type"))?;
        if self.index.contains_key(&key) {
            return Err(EvalError::Invalid("duplicate map key"));
        }
        self.index.insert(key, self.entries.len());
        self.entries.push((k, v));
        Ok(())
    }

    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    pub fn get_str(&self, key: &str) -> Option<&Value> {
        self.get(&Key::String(Arc::from(key)))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &(Value, Value)> {
        self.entries.iter()
    }
}

impl Value {
    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    pub fn type_of(&self) -> Type {
        match self {
            Value::Null => Type::Null,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Uint(_) => Type::Uint,
            Value::Double(_) => Type::Double,
            Value::String(_) => Type::String,
            Value::Bytes(_) => Type::Bytes,
            Value::List(_) => Type::List,
            Value::Map(_) => Type::Map,
            Value::Type(_) => Type::Type,
        }
    }

    /// CEL equality (`==`): never an error.
    pub fn equals(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Type(a), Value::Type(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y))
            }
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        Key::of_key(k)
                            .and_then(|key| b.get(&key))
                            .is_some_and(|w| v.equals(w))
                    })
            }
            _ => numeric_cmp(self, other) == Some(Ordering::Equal),
        }
    }

    /// CEL ordering (`<` and friends): numbers across types, strings,
    /// bytes, bools. `Ok(None)` when unordered (NaN); an error for kinds
    /// that have no ordering.
    pub fn compare(&self, other: &Value, op: &'static str) -> Result<Option<Ordering>, EvalError> {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => Ok(Some(a.cmp(b))),
            (Value::String(a), Value::String(b)) => Ok(Some(a.cmp(b))),
            (Value::Bytes(a), Value::Bytes(b)) => Ok(Some(a.cmp(b))),
            (
                Value::Int(_) | Value::Uint(_) | Value::Double(_),
                Value::Int(_) | Value::Uint(_) | Value::Double(_),
            ) => Ok(numeric_cmp(self, other)),
            _ => Err(EvalError::NoOverload(op)),
        }
    }
}

/// Comparison of two numbers of any numeric kinds; `None` for NaN or when
/// either side is not a number. Ints and uints compare exactly; against a
/// double they compare as doubles, as the reference implementations and
/// the conformance suite do (`9223372036854775807 < 9223372036854775808.0`
/// is false).
pub fn numeric_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Uint(y)) => Some((*x as i128).cmp(&(*y as i128))),
        (Value::Uint(x), Value::Int(y)) => Some((*x as i128).cmp(&(*y as i128))),
        (Value::Int(x), Value::Double(y)) => (*x as f64).partial_cmp(y),
        (Value::Double(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::Uint(x), Value::Double(y)) => (*x as f64).partial_cmp(y),
        (Value::Double(x), Value::Uint(y)) => x.partial_cmp(&(*y as f64)),
        _ => None,
    }
}

/// Formats a double as CEL's `string(double)` does: the shortest text that
/// reads back to the same value, with an exponent only for very large or
/// very small magnitudes.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let abs = d.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let s = format!("{d:e}");
        // Rust writes `1.5e-7`; the conventional form is `1.5e-07`.
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(rest) => ('-', rest),
                None => ('+', e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    format!("{d}")
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Uint(u) => write!(f, "{u}u"),
            Value::Double(d) => f.write_str(&format_double(*d)),
            Value::String(s) => write!(f, "{s:?}"),
            Value::Bytes(b) => write!(f, "b{:?}", String::from_utf8_lossy(b)),
            Value::List(l) => {
                f.write_str("[")?;
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
            Value::Type(t) => f.write_str(t.name()),
        }
    }
}
