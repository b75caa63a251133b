//! Checks: the rule conditions that are not text found in a field.
//!
//! Sigma (and later other formats) can ask whether a field exists, is empty,
//! is a number above a bound, an address inside a network, or equal to
//! another field. None of that is a pattern an automaton can find, so each
//! such condition is a [`Check`] in [`crate::Program::checks`], referenced
//! from a predicate as [`crate::Predicate::Check`]. The dynamic backend calls
//! [`Check::eval`]; generated code calls the typed helper for the operation
//! ([`num`], [`cidr`], …) with the operation's constants inlined. Both read
//! the prepared event in place: no check allocates.

use crate::arg_schema::ArgSchema;
use crate::event::Event;
use crate::field::FieldRef;
use crate::prepared::PreparedEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// One non-text condition on one field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub field: FieldRef,
    pub op: CheckOp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOp {
    /// The field has a value that is not JSON `null`.
    Exists,
    /// The field is missing, `null`, an empty string or an empty container.
    NullOrEmpty,
    /// A value, as a number (JSON number or numeric string), compares so.
    Num { cmp: NumCmp, value: f64 },
    /// A value is this boolean (JSON boolean, or the string `true`/`false`).
    Bool(bool),
    /// A value is an IP address inside the network `net/prefix`.
    Cidr { v6: bool, net: u128, prefix: u8 },
    /// A value of the field relates to a value of `other` as `mode` says.
    FieldRef {
        other: FieldRef,
        mode: TextMode,
        cased: bool,
    },
    /// The field's value (the whole JSON at the path, not its leaves) is
    /// outside this JSON Schema (the `schema` engine).
    Schema(ArgSchema),
    /// A value of the field is exactly one of these strings: how a rule is
    /// scoped to some tenants (`tenants:`, field `tenant`).
    OneOf(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumCmp {
    Eq,
    Gt,
    Gte,
    Lt,
    Lte,
}

/// How two strings are compared by a field reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextMode {
    Equals,
    Contains,
    StartsWith,
    EndsWith,
}

/// One value found at a field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaf<'a> {
    Str(&'a str),
    Num(f64),
    Bool(bool),
    Null,
    /// An object (or an array inside an array); `true` when not empty.
    Container(bool),
}

impl Check {
    pub fn eval(&self, event: &PreparedEvent) -> bool {
        let f = &self.field;
        match &self.op {
            CheckOp::Exists => exists(event, f),
            CheckOp::NullOrEmpty => null_or_empty(event, f),
            CheckOp::Num { cmp, value } => num(event, f, *cmp, *value),
            CheckOp::Bool(b) => boolean(event, f, *b),
            CheckOp::Cidr { v6, net, prefix } => cidr(event, f, *v6, *net, *prefix),
            CheckOp::FieldRef { other, mode, cased } => fieldref(event, f, other, *mode, *cased),
            CheckOp::Schema(schema) => outside_schema(event, f, schema),
            CheckOp::OneOf(values) => one_of(event, f, values),
        }
    }

    /// Why the event is outside this check's schema, for a schema check
    /// that holds; `None` for other checks.
    pub fn explain(&self, event: &PreparedEvent) -> Option<String> {
        match &self.op {
            CheckOp::Schema(schema) => schema.explain(value_at(event, &self.field)),
            _ => None,
        }
    }

    /// The second field of a field reference (the check's own field for
    /// other operations), so generated code can pass both by reference.
    pub fn other(&self) -> &FieldRef {
        match &self.op {
            CheckOp::FieldRef { other, .. } => other,
            _ => &self.field,
        }
    }
}

/// The whole value at `field` (`null` when the event has none there), for
/// conditions on a JSON document rather than on its leaves. A path segment
/// that is a number indexes an array.
pub fn value_at<'e>(event: &'e PreparedEvent, field: &FieldRef) -> &'e Value {
    const NULL: &Value = &Value::Null;
    let FieldRef::Json { root, path } = field else {
        return NULL;
    };
    let mut v = event.event.json_root(*root);
    for seg in path {
        v = match v {
            Value::Object(m) => m.get(seg.as_str()).unwrap_or(NULL),
            Value::Array(items) => seg
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i))
                .unwrap_or(NULL),
            _ => NULL,
        };
    }
    v
}

/// A value of `field` is one of `values` (exact, case-sensitive).
pub fn one_of(event: &PreparedEvent, field: &FieldRef, values: &[String]) -> bool {
    any_leaf(event, field, |l| match l {
        Leaf::Str(s) => values.iter().any(|v| v == s),
        _ => false,
    })
}

/// `schema` rules: the value at `field` does not conform to `schema`.
pub fn outside_schema(event: &PreparedEvent, field: &FieldRef, schema: &ArgSchema) -> bool {
    !schema.conforms(value_at(event, field))
}

/// What a matched rule's `match` and reason show when it holds because
/// arguments are outside a schema: each violation's place in the
/// arguments and in the schema (`None` for a rule without a schema check,
/// or one only under a negation).
pub fn schema_evidence(
    checks: &[Check],
    predicate: &crate::Predicate,
    event: &PreparedEvent,
) -> Option<String> {
    use crate::Predicate as P;
    match predicate {
        P::Check(c) => checks.get(*c as usize)?.explain(event),
        P::And(ps) | P::Or(ps) => ps.iter().find_map(|p| schema_evidence(checks, p, event)),
        P::Not(_) | P::Const(_) | P::Atom(_) | P::Cel { .. } => None,
    }
}

/// Calls `f` with every value of `field`, typed. Arrays are walked element
/// by element; a JSON root the event does not have yields nothing.
pub fn for_each_leaf(event: &PreparedEvent, field: &FieldRef, f: &mut dyn FnMut(Leaf<'_>)) {
    match field {
        FieldRef::Json { root, path } => {
            let e: &Event = &event.event;
            let v = e.json_root(*root);
            if !v.is_null() {
                walk(v, path, f, false);
            }
        }
        _ => event.for_each_value(field, &mut |s| f(Leaf::Str(s))),
    }
}

fn walk(v: &Value, path: &[String], f: &mut dyn FnMut(Leaf<'_>), in_array: bool) {
    let Some((seg, rest)) = path.split_first() else {
        return match v {
            Value::String(s) => f(Leaf::Str(s)),
            Value::Number(n) => f(n.as_f64().map_or(Leaf::Container(true), Leaf::Num)),
            Value::Bool(b) => f(Leaf::Bool(*b)),
            Value::Null => f(Leaf::Null),
            Value::Array(items) if !in_array => {
                if items.is_empty() {
                    f(Leaf::Container(false))
                }
                items.iter().for_each(|i| walk(i, path, f, true))
            }
            Value::Array(items) => f(Leaf::Container(!items.is_empty())),
            Value::Object(m) => f(Leaf::Container(!m.is_empty())),
        };
    };
    match v {
        Value::Object(map) => {
            if let Some(child) = map.get(seg.as_str()) {
                walk(child, rest, f, false);
            }
        }
        Value::Array(items) => match seg.parse::<usize>() {
            Ok(i) => {
                if let Some(child) = items.get(i) {
                    walk(child, rest, f, false);
                }
            }
            Err(_) => items.iter().for_each(|i| walk(i, path, f, false)),
        },
        _ => {}
    }
}

fn any_leaf(
    event: &PreparedEvent,
    field: &FieldRef,
    mut test: impl FnMut(Leaf<'_>) -> bool,
) -> bool {
    let mut hit = false;
    for_each_leaf(event, field, &mut |l| {
        if !hit && test(l) {
            hit = true;
        }
    });
    hit
}

/// `field|exists: true`.
pub fn exists(event: &PreparedEvent, field: &FieldRef) -> bool {
    any_leaf(event, field, |l| l != Leaf::Null)
}

/// `field: null`: missing, or present with nothing in it.
pub fn null_or_empty(event: &PreparedEvent, field: &FieldRef) -> bool {
    !any_leaf(event, field, |l| match l {
        Leaf::Str(s) => !s.is_empty(),
        Leaf::Num(_) | Leaf::Bool(_) => true,
        Leaf::Null => false,
        Leaf::Container(nonempty) => nonempty,
    })
}

/// A numeric comparison; strings count when they parse as a number.
pub fn num(event: &PreparedEvent, field: &FieldRef, cmp: NumCmp, value: f64) -> bool {
    any_leaf(event, field, |l| {
        let n = match l {
            Leaf::Num(n) => n,
            Leaf::Str(s) => match s.trim().parse::<f64>() {
                Ok(n) if n.is_finite() => n,
                _ => return false,
            },
            _ => return false,
        };
        match cmp {
            NumCmp::Eq => n == value,
            NumCmp::Gt => n > value,
            NumCmp::Gte => n >= value,
            NumCmp::Lt => n < value,
            NumCmp::Lte => n <= value,
        }
    })
}

/// A boolean value, or its spelling in any case.
pub fn boolean(event: &PreparedEvent, field: &FieldRef, want: bool) -> bool {
    let text = if want { "true" } else { "false" };
    any_leaf(event, field, |l| match l {
        Leaf::Bool(b) => b == want,
        Leaf::Str(s) => s.trim().eq_ignore_ascii_case(text),
        _ => false,
    })
}

/// An address (IPv4 or IPv6, as the network is) inside `net/prefix`.
pub fn cidr(event: &PreparedEvent, field: &FieldRef, v6: bool, net: u128, prefix: u8) -> bool {
    any_leaf(event, field, |l| {
        let Leaf::Str(s) = l else { return false };
        let (bits, width) = match s.trim().parse::<IpAddr>() {
            Ok(IpAddr::V4(a)) if !v6 => (u32::from(a) as u128, 32u32),
            Ok(IpAddr::V6(a)) if v6 => (u128::from(a), 128u32),
            _ => return false,
        };
        in_network(bits, width, net, prefix)
    })
}

/// Whether the top `prefix` bits of `addr` (a `width`-bit address) equal
/// those of `net`.
pub fn in_network(addr: u128, width: u32, net: u128, prefix: u8) -> bool {
    let prefix = u32::from(prefix).min(width);
    if prefix == 0 {
        return true;
    }
    let shift = width - prefix;
    (addr >> shift) == (net >> shift)
}

/// Whether a value of `field` relates to a value of `other` by `mode`.
pub fn fieldref(
    event: &PreparedEvent,
    field: &FieldRef,
    other: &FieldRef,
    mode: TextMode,
    cased: bool,
) -> bool {
    let mut hit = false;
    event.for_each_value(field, &mut |a| {
        if hit {
            return;
        }
        event.for_each_value(other, &mut |b| {
            if !hit && text_relates(a, b, mode, cased) {
                hit = true;
            }
        });
    });
    hit
}

/// `hay` relates to `needle` by `mode`; case-insensitive compares the
/// Unicode lower case, char by char, without building lowered copies.
pub fn text_relates(hay: &str, needle: &str, mode: TextMode, cased: bool) -> bool {
    if cased {
        return match mode {
            TextMode::Equals => hay == needle,
            TextMode::Contains => hay.contains(needle),
            TextMode::StartsWith => hay.starts_with(needle),
            TextMode::EndsWith => hay.ends_with(needle),
        };
    }
    match mode {
        TextMode::Equals => lowered(hay).eq(lowered(needle)),
        TextMode::StartsWith => starts_ci(hay, needle),
        TextMode::EndsWith => {
            let mut h = hay.chars().rev().flat_map(char::to_lowercase);
            needle
                .chars()
                .rev()
                .flat_map(char::to_lowercase)
                .all(|c| h.next() == Some(c))
        }
        TextMode::Contains => {
            needle.is_empty()
                || hay
                    .char_indices()
                    .any(|(i, _)| starts_ci(&hay[i..], needle))
        }
    }
}

fn lowered(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().flat_map(char::to_lowercase)
}

fn starts_ci(hay: &str, needle: &str) -> bool {
    let mut h = lowered(hay);
    lowered(needle).all(|c| h.next() == Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prep(v: Value) -> PreparedEvent {
        PreparedEvent::new(Event::from_value(v).unwrap())
    }

    fn f(name: &str) -> FieldRef {
        FieldRef::parse(name).unwrap()
    }

    #[test]
    fn exists_and_null() {
        let e =
            prep(json!({"stage":"tool.before","tool_args":{"a":"","b":null,"c":[],"d":{"x":1}}}));
        assert!(exists(&e, &f("tool_args.a")));
        assert!(!exists(&e, &f("tool_args.b")));
        assert!(!exists(&e, &f("tool_args.zz")));
        assert!(exists(&e, &f("tool_args.d")));
        for empty in [
            "tool_args.a",
            "tool_args.b",
            "tool_args.c",
            "tool_args.zz",
            "model",
        ] {
            assert!(null_or_empty(&e, &f(empty)), "{empty}");
        }
        assert!(!null_or_empty(&e, &f("tool_args.d")));
        assert!(!null_or_empty(&e, &f("tool_args.d.x")));
    }

    #[test]
    fn numbers_booleans_and_networks() {
        let e = prep(
            json!({"stage":"params.before","params":{"t":0.9,"n":"42","ok":true,
            "ip":"10.1.2.3","ip6":"fe80::1"}}),
        );
        assert!(num(&e, &f("params.t"), NumCmp::Gt, 0.5));
        assert!(!num(&e, &f("params.t"), NumCmp::Lte, 0.5));
        assert!(num(&e, &f("params.n"), NumCmp::Eq, 42.0));
        assert!(num(&e, &f("params.n"), NumCmp::Gte, 42.0));
        assert!(!num(&e, &f("params.n"), NumCmp::Lt, 42.0));
        assert!(boolean(&e, &f("params.ok"), true));
        assert!(!boolean(&e, &f("params.ok"), false));
        let ten = u32::from(std::net::Ipv4Addr::new(10, 0, 0, 0)) as u128;
        assert!(cidr(&e, &f("params.ip"), false, ten, 8));
        assert!(!cidr(&e, &f("params.ip"), false, ten, 16));
        assert!(!cidr(&e, &f("params.ip6"), false, ten, 8));
        let fe80 = u128::from("fe80::".parse::<std::net::Ipv6Addr>().unwrap());
        assert!(cidr(&e, &f("params.ip6"), true, fe80, 10));
    }

    #[test]
    fn text_relations_fold_case_unless_cased() {
        assert!(text_relates(
            "HeLLo World",
            "hello world",
            TextMode::Equals,
            false
        ));
        assert!(!text_relates("HeLLo", "hello", TextMode::Equals, true));
        assert!(text_relates(
            "/usr/BIN/x",
            "bin/",
            TextMode::Contains,
            false
        ));
        assert!(text_relates("abc.EXE", ".exe", TextMode::EndsWith, false));
        assert!(text_relates("ÄBC", "äb", TextMode::StartsWith, false));
    }

    #[test]
    fn fieldref_compares_two_fields() {
        let e = prep(json!({"stage":"tool.before","tool_args":{"a":"/x/Y","b":"/x/y","c":"/x"}}));
        assert!(fieldref(
            &e,
            &f("tool_args.a"),
            &f("tool_args.b"),
            TextMode::Equals,
            false
        ));
        assert!(!fieldref(
            &e,
            &f("tool_args.a"),
            &f("tool_args.b"),
            TextMode::Equals,
            true
        ));
        assert!(fieldref(
            &e,
            &f("tool_args.a"),
            &f("tool_args.c"),
            TextMode::StartsWith,
            true
        ));
        assert!(!fieldref(
            &e,
            &f("tool_args.a"),
            &f("tool_args.zz"),
            TextMode::Equals,
            false
        ));
    }

    #[test]
    fn serde_round_trip_keeps_u128_networks() {
        let c = Check {
            field: f("params.ip"),
            op: CheckOp::Cidr {
                v6: true,
                net: u128::MAX - 7,
                prefix: 64,
            },
        };
        let back: Check = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }
}
