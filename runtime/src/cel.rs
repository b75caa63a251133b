//! CEL rules at evaluation time: the event as CEL variables, atoms as the
//! answers to string-matching calls, and the allocation-free helpers that
//! generated (baked) CEL predicates call.
//!
//! Variables: `stage, session_id, channel, user_id, timestamp,
//! message_text, tool_name, model` (strings; `timestamp` a double),
//! `tool_args, tool_result, params` (JSON as CEL values; an absent one is
//! an empty map, so `has()` is false and a field access is an error), and
//! the canonical fields `command, path, url, content, query, text` (their
//! values joined with `\n`). A variable the event lacks is an error, which
//! makes the rule not match.

use crate::bitset::BitSet;
use crate::field::{Canonical, FieldRef, JsonRoot, TopField, CANONICAL_NAMES, TOP_FIELD_NAMES};
use crate::prepared::PreparedEvent;
use crate::program::CelExpr;
use parallax_cel::{Activation, EvalError, Map, Value};
use serde_json::Value as Json;
use std::cmp::Ordering;
use std::sync::Arc;

/// The CEL expressions of a program, ready to evaluate.
///
/// Its methods take the event and the atoms that hit it, not a predicate's
/// whole input: CEL reads nothing else, and it keeps this module free of
/// the predicate layer that calls into it.
#[derive(Debug, Default)]
pub struct CelRuntime {
    exprs: Vec<(parallax_cel::Program, Vec<(u32, FieldRef)>)>,
}

impl CelRuntime {
    pub fn new(exprs: &[CelExpr]) -> CelRuntime {
        CelRuntime {
            exprs: exprs
                .iter()
                .map(|c| {
                    (
                        parallax_cel::Program::from_expr(&c.source, c.expr.clone()),
                        c.atom_fields.clone(),
                    )
                })
                .collect(),
        }
    }

    fn activation<'a>(
        &'a self,
        index: u32,
        atoms: &'a BitSet,
        event: &'a PreparedEvent,
    ) -> EventActivation<'a> {
        EventActivation {
            atoms,
            event,
            atom_fields: self
                .exprs
                .get(index as usize)
                .map_or(&[][..], |e| e.1.as_slice()),
        }
    }

    /// Evaluates expression `index` with the interpreter: true only when
    /// it yields `true` (an error or any other value does not match).
    pub fn eval(&self, index: u32, atoms: &BitSet, event: &PreparedEvent) -> bool {
        let Some((program, _)) = self.exprs.get(index as usize) else {
            return false;
        };
        matches!(
            program.eval(&self.activation(index, atoms, event)),
            Ok(Value::Bool(true))
        )
    }

    /// Evaluates one boolean sub-expression (by node id) with the
    /// interpreter; `None` for an error or a non-bool.
    ///
    /// This is the one evaluation path that may allocate: the interpreter
    /// builds CEL values (lists, strings from `+`, macro results). Generated
    /// code reaches it only for sub-expressions it does not specialise
    /// (macros, arithmetic on JSON values); comparisons, `in` lists and
    /// string calls on fields are native and allocation-free.
    pub fn eval_node(
        &self,
        index: u32,
        node: u32,
        atoms: &BitSet,
        event: &PreparedEvent,
    ) -> Option<bool> {
        let (program, _) = self.exprs.get(index as usize)?;
        match program.eval_node(node, &self.activation(index, atoms, event))? {
            Ok(Value::Bool(b)) => Some(b),
            _ => None,
        }
    }

    /// Expression `index` as checked (for the classifier evidence).
    pub fn expr(&self, index: u32) -> Option<&parallax_cel::Expr> {
        self.exprs.get(index as usize).map(|(p, _)| &p.expr)
    }

    /// Any sub-expression (by node id) of expression `index`, evaluated
    /// with the interpreter: the argument a classifier call scored.
    pub fn eval_value(
        &self,
        index: u32,
        node: u32,
        atoms: &BitSet,
        event: &PreparedEvent,
    ) -> Option<Result<Value, EvalError>> {
        let (program, _) = self.exprs.get(index as usize)?;
        program.eval_node(node, &self.activation(index, atoms, event))
    }

    /// Atom `atom` of expression `index`, as the call it replaced would
    /// answer: an error (None) when its field is missing or not a string.
    pub fn atom(
        &self,
        index: u32,
        atom: u32,
        atoms: &BitSet,
        event: &PreparedEvent,
    ) -> Option<bool> {
        self.activation(index, atoms, event).atom(atom).ok()
    }
}

/// What a CEL expression reads: the event, and the atoms that hit it
/// (the answers to the string calls they replaced).
struct EventActivation<'a> {
    atoms: &'a BitSet,
    event: &'a PreparedEvent,
    atom_fields: &'a [(u32, FieldRef)],
}

/// A JSON value as a CEL value (an object's keys are strings).
pub fn json_to_value(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(_) => scalar_value(json_scalar(v)),
        Json::String(s) => Value::string(s),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(json_to_value).collect())),
        Json::Object(map) => {
            let mut m = Map::new();
            for (k, v) in map {
                // Keys of a JSON object are unique strings: cannot fail.
                let _ = m.insert(Value::string(k), json_to_value(v));
            }
            Value::Map(Arc::new(m))
        }
    }
}

fn scalar_value(s: Scalar<'_>) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Uint(u) => Value::Uint(u),
        Scalar::Double(d) => Value::Double(d),
        Scalar::Str(s) => Value::string(s),
        Scalar::List | Scalar::Map => Value::Null,
    }
}

impl Activation for EventActivation<'_> {
    fn resolve(&self, name: &str) -> Option<Value> {
        let ev = self.event;
        if let Some((_, t)) = TOP_FIELD_NAMES.iter().find(|(n, _)| *n == name) {
            return ev.event.top_field(*t).map(Value::string);
        }
        if let Some((_, c)) = CANONICAL_NAMES.iter().find(|(n, _)| *n == name) {
            let mut joined = String::new();
            let mut first = true;
            ev.for_each_value(&FieldRef::Canonical(*c), &mut |s| {
                if !first {
                    joined.push('\n');
                }
                first = false;
                joined.push_str(s);
            });
            return Some(Value::String(Arc::from(joined)));
        }
        // `tool_args.a.b` arrives whole (the evaluator tries the longest
        // qualified name first): convert only that subtree, not the whole
        // arguments. A miss falls back to the shorter names, which gives
        // CEL's error for the missing key.
        if let Some((head, rest)) = name.split_once('.') {
            let root = match head {
                "tool_args" => JsonRoot::ToolArgs,
                "tool_result" => JsonRoot::ToolResult,
                "params" => JsonRoot::Params,
                _ => return None,
            };
            return json_at(ev.event.json_root(root), rest.split('.')).map(json_to_value);
        }
        let root = match name {
            "tool_args" => JsonRoot::ToolArgs,
            "tool_result" => JsonRoot::ToolResult,
            "params" => JsonRoot::Params,
            "timestamp" => return ev.event.timestamp.map(Value::Double),
            _ => return None,
        };
        Some(match ev.event.json_root(root) {
            Json::Null => Value::Map(Arc::new(Map::new())),
            v => json_to_value(v),
        })
    }

    fn call(&self, function: &str, args: &[Value]) -> Option<Result<Value, EvalError>> {
        crate::classifier::call(function, args)
            .or_else(|| crate::triggers::call(self.event, function, args))
    }

    fn atom(&self, id: u32) -> Result<bool, EvalError> {
        let field = self
            .atom_fields
            .iter()
            .find(|(a, _)| *a == id)
            .map(|(_, f)| f)
            .ok_or(EvalError::Invalid("unknown atom"))?;
        let valid = match field {
            FieldRef::Canonical(_) => true,
            FieldRef::Top(t) => self.event.event.top_field(*t).is_some(),
            FieldRef::Json { root, path } => {
                matches!(
                    json_at(
                        self.event.event.json_root(*root),
                        path.iter().map(String::as_str)
                    ),
                    Some(Json::String(_))
                )
            }
        };
        if valid {
            Ok(self.atoms.contains(id as usize))
        } else {
            Err(EvalError::NoOverload(
                "string function on a missing or non-string field",
            ))
        }
    }
}

/// Follows object keys exactly as CEL field selection does (no walking
/// into arrays); `None` when a key is missing or a value is not an object.
pub fn json_at<'j, 's>(v: &'j Json, path: impl IntoIterator<Item = &'s str>) -> Option<&'j Json> {
    let mut cur = v;
    for seg in path {
        cur = cur.as_object()?.get(seg)?;
    }
    Some(cur)
}

/// A borrowed CEL value of the kinds generated code compares, so that
/// comparing an event field with a literal needs no allocation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(&'a str),
    /// A list or map: equal to no scalar, ordered with nothing.
    List,
    Map,
}

/// A JSON value as a scalar (numbers become int, else uint, else double,
/// as [`json_to_value`] does).
pub fn json_scalar(v: &Json) -> Scalar<'_> {
    match v {
        Json::Null => Scalar::Null,
        Json::Bool(b) => Scalar::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Scalar::Int(i)
            } else if let Some(u) = n.as_u64() {
                Scalar::Uint(u)
            } else {
                Scalar::Double(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Scalar::Str(s),
        Json::Array(_) => Scalar::List,
        Json::Object(_) => Scalar::Map,
    }
}

/// Generated-code helpers: CEL semantics on [`Scalar`]s and `Option<bool>`
/// (`None` is a CEL error), without allocating.
pub mod native {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Cmp {
        Eq,
        Ne,
        Lt,
        Le,
        Gt,
        Ge,
    }

    /// `a && b` with CEL's commutative error absorption.
    #[inline]
    pub fn and(a: Option<bool>, b: impl FnOnce() -> Option<bool>) -> Option<bool> {
        if a == Some(false) {
            return Some(false);
        }
        match (a, b()) {
            (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        }
    }

    /// `a || b` with CEL's commutative error absorption.
    #[inline]
    pub fn or(a: Option<bool>, b: impl FnOnce() -> Option<bool>) -> Option<bool> {
        if a == Some(true) {
            return Some(true);
        }
        match (a, b()) {
            (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        }
    }

    #[inline]
    pub fn not(a: Option<bool>) -> Option<bool> {
        a.map(|b| !b)
    }

    /// A plain string field of the event, as a scalar.
    #[inline]
    pub fn top_scalar<'e>(ev: &'e PreparedEvent, t: TopField) -> Option<Scalar<'e>> {
        ev.event.top_field(t).map(Scalar::Str)
    }

    /// `timestamp`, as a scalar.
    #[inline]
    pub fn timestamp(ev: &PreparedEvent) -> Option<Scalar<'static>> {
        ev.event.timestamp.map(Scalar::Double)
    }

    /// The value at a select chain under a JSON root; an absent root is an
    /// empty map.
    #[inline]
    pub fn json<'e>(ev: &'e PreparedEvent, root: JsonRoot, path: &[&str]) -> Option<Scalar<'e>> {
        let r = ev.event.json_root(root);
        if r.is_null() {
            return if path.is_empty() {
                Some(Scalar::Map)
            } else {
                None
            };
        }
        json_at(r, path.iter().copied()).map(json_scalar)
    }

    /// `has(root.a.b.c)`: the chain up to the last key must exist and be
    /// objects (else an error); then whether the last key is present.
    #[inline]
    pub fn has(ev: &PreparedEvent, root: JsonRoot, path: &[&str], last: &str) -> Option<bool> {
        let r = ev.event.json_root(root);
        if r.is_null() && path.is_empty() {
            return Some(false);
        }
        match json_at(r, path.iter().copied())? {
            Json::Object(m) => Some(m.contains_key(last)),
            _ => None,
        }
    }

    /// `size(x)` of a JSON value under a root (absent root: 0).
    #[inline]
    pub fn json_size(ev: &PreparedEvent, root: JsonRoot, path: &[&str]) -> Option<Scalar<'static>> {
        let r = ev.event.json_root(root);
        if r.is_null() && path.is_empty() {
            return Some(Scalar::Int(0));
        }
        let n = match json_at(r, path.iter().copied())? {
            Json::String(s) => s.chars().count(),
            Json::Array(a) => a.len(),
            Json::Object(o) => o.len(),
            _ => return None,
        };
        Some(Scalar::Int(n as i64))
    }

    /// `size(command)` and friends: the length of the values joined with
    /// `\n`, counted without joining them.
    pub fn canonical_size(ev: &PreparedEvent, c: Canonical) -> Option<Scalar<'static>> {
        let (mut chars, mut values) = (0usize, 0usize);
        ev.for_each_value(&FieldRef::Canonical(c), &mut |s| {
            chars += s.chars().count();
            values += 1;
        });
        Some(Scalar::Int((chars + values.saturating_sub(1)) as i64))
    }

    /// `size(x)` of a string scalar.
    #[inline]
    pub fn str_size(s: Option<Scalar<'_>>) -> Option<Scalar<'static>> {
        match s? {
            Scalar::Str(s) => Some(Scalar::Int(s.chars().count() as i64)),
            _ => None,
        }
    }

    fn number(s: Scalar<'_>) -> Option<Value> {
        match s {
            Scalar::Int(i) => Some(Value::Int(i)),
            Scalar::Uint(u) => Some(Value::Uint(u)),
            Scalar::Double(d) => Some(Value::Double(d)),
            _ => None,
        }
    }

    /// CEL equality on scalars: heterogeneous numbers by value, different
    /// kinds unequal, never an error.
    pub fn equals(a: Scalar<'_>, b: Scalar<'_>) -> bool {
        match (a, b) {
            (Scalar::Null, Scalar::Null) => true,
            (Scalar::Bool(x), Scalar::Bool(y)) => x == y,
            (Scalar::Str(x), Scalar::Str(y)) => x == y,
            _ => match (number(a), number(b)) {
                (Some(x), Some(y)) => {
                    parallax_cel::value::numeric_cmp(&x, &y) == Some(Ordering::Equal)
                }
                _ => false,
            },
        }
    }

    /// A comparison with CEL semantics; `None` where CEL errors.
    pub fn compare(a: Option<Scalar<'_>>, op: Cmp, b: Option<Scalar<'_>>) -> Option<bool> {
        let (a, b) = (a?, b?);
        match op {
            Cmp::Eq => return Some(equals(a, b)),
            Cmp::Ne => return Some(!equals(a, b)),
            _ => {}
        }
        let ord = match (a, b) {
            (Scalar::Bool(x), Scalar::Bool(y)) => Some(x.cmp(&y)),
            (Scalar::Str(x), Scalar::Str(y)) => Some(x.cmp(y)),
            _ => {
                let (x, y) = (number(a)?, number(b)?);
                parallax_cel::value::numeric_cmp(&x, &y)
            }
        };
        Some(match (op, ord) {
            (_, None) => false,
            (Cmp::Lt, Some(o)) => o == Ordering::Less,
            (Cmp::Le, Some(o)) => o != Ordering::Greater,
            (Cmp::Gt, Some(o)) => o == Ordering::Greater,
            (_, Some(o)) => o != Ordering::Less,
        })
    }

    /// How a canonical field's values joined with `\n` order against `lit`,
    /// computed by streaming the values instead of joining them.
    fn canonical_order(ev: &PreparedEvent, c: Canonical, lit: &str) -> Ordering {
        let lit = lit.as_bytes();
        let mut at = 0usize;
        let mut first = true;
        let mut decided: Option<Ordering> = None;
        let feed = |b: u8, at: &mut usize, decided: &mut Option<Ordering>| {
            if decided.is_some() {
                return;
            }
            match lit.get(*at) {
                None => *decided = Some(Ordering::Greater),
                Some(&l) if l != b => *decided = Some(b.cmp(&l)),
                Some(_) => *at += 1,
            }
        };
        ev.for_each_value(&FieldRef::Canonical(c), &mut |v| {
            if !first {
                feed(b'\n', &mut at, &mut decided);
            }
            first = false;
            for &b in v.as_bytes() {
                feed(b, &mut at, &mut decided);
            }
        });
        decided.unwrap_or(if at < lit.len() {
            Ordering::Less
        } else {
            Ordering::Equal
        })
    }

    /// `command OP literal` (the field on the left) with the field's values
    /// joined with `\n`, as the interpreter sees it, without joining them.
    pub fn canonical_compare(
        ev: &PreparedEvent,
        c: Canonical,
        op: Cmp,
        lit: Option<Scalar<'_>>,
    ) -> Option<bool> {
        let Scalar::Str(lit) = lit? else {
            // A string never equals another kind and has no order with it.
            return match op {
                Cmp::Eq => Some(false),
                Cmp::Ne => Some(true),
                _ => None,
            };
        };
        let o = canonical_order(ev, c, lit);
        Some(match op {
            Cmp::Eq => o == Ordering::Equal,
            Cmp::Ne => o != Ordering::Equal,
            Cmp::Lt => o == Ordering::Less,
            Cmp::Le => o != Ordering::Greater,
            Cmp::Gt => o == Ordering::Greater,
            Cmp::Ge => o != Ordering::Less,
        })
    }

    /// `command in [literals]`.
    pub fn canonical_in(ev: &PreparedEvent, c: Canonical, items: &[Scalar<'_>]) -> Option<bool> {
        Some(
            items.iter().any(
                |i| matches!(i, Scalar::Str(l) if canonical_order(ev, c, l) == Ordering::Equal),
            ),
        )
    }

    /// `x in [literals]`.
    pub fn in_list(a: Option<Scalar<'_>>, items: &[Scalar<'_>]) -> Option<bool> {
        let a = a?;
        Some(items.iter().any(|b| equals(a, *b)))
    }
}

#[cfg(test)]
mod tests {
    use super::native::{self, Cmp};
    use super::*;
    use parallax_cel::ast::BinaryOp;

    /// The generated code's scalar comparisons must agree with the
    /// interpreter's operators on every pair of kinds, including the
    /// awkward ones (NaN, int64/uint64 edges, mixed kinds, lists and maps).
    #[test]
    fn native_compare_agrees_with_the_interpreter() {
        let scalars = [
            Scalar::Null,
            Scalar::Bool(true),
            Scalar::Bool(false),
            Scalar::Int(-1),
            Scalar::Int(0),
            Scalar::Int(3),
            Scalar::Int(i64::MAX),
            Scalar::Int(i64::MIN),
            Scalar::Uint(3),
            Scalar::Uint(u64::MAX),
            Scalar::Double(3.0),
            Scalar::Double(-0.5),
            Scalar::Double(f64::NAN),
            Scalar::Double(9_223_372_036_854_775_808.0),
            Scalar::Str(""),
            Scalar::Str("abc"),
            Scalar::Str("abd"),
            Scalar::List,
            Scalar::Map,
        ];
        let value = |s: Scalar<'_>| match s {
            Scalar::List => Value::List(Arc::new(vec![Value::Int(1)])),
            Scalar::Map => Value::Map(Arc::new(Map::new())),
            other => scalar_value(other),
        };
        let ops = [
            (Cmp::Eq, BinaryOp::Eq),
            (Cmp::Ne, BinaryOp::Ne),
            (Cmp::Lt, BinaryOp::Lt),
            (Cmp::Le, BinaryOp::Le),
            (Cmp::Gt, BinaryOp::Gt),
            (Cmp::Ge, BinaryOp::Ge),
        ];
        let aggregate = |s: Scalar<'_>| matches!(s, Scalar::List | Scalar::Map);
        for a in scalars {
            for b in scalars {
                // Generated code compares with a literal on one side, and
                // literal lists hold scalars: two aggregates never meet.
                if aggregate(a) && aggregate(b) {
                    continue;
                }
                for (cmp, op) in ops {
                    let native = native::compare(Some(a), cmp, Some(b));
                    let interpreted = match parallax_cel::eval::binary(op, &value(a), &value(b)) {
                        Ok(Value::Bool(x)) => Some(x),
                        _ => None,
                    };
                    assert_eq!(native, interpreted, "{a:?} {op:?} {b:?}");
                }
                let list = [b, Scalar::Int(7)];
                let interpreted = parallax_cel::eval::contains(
                    &Value::List(Arc::new(list.iter().map(|s| value(*s)).collect())),
                    &value(a),
                )
                .ok();
                assert_eq!(native::in_list(Some(a), &list), interpreted, "{a:?} in");
            }
        }
        // An error on either side stays an error.
        assert_eq!(native::compare(None, Cmp::Eq, Some(Scalar::Null)), None);
    }

    /// Canonical fields hold several values; generated code compares the
    /// joined text without joining it. It must agree with the interpreter.
    #[test]
    fn native_canonical_compare_agrees_with_the_interpreter() {
        use crate::event::Event;
        use serde_json::json;
        let events = [
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "ls"}}),
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "ls", "cmd": "pwd"}}),
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": ""}}),
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"other": 1}}),
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "lsx"}}),
            json!({"stage": "tool.before", "tool_name": "Bash", "tool_args": {"command": "é"}}),
        ];
        let literals = ["ls", "ls\\npwd", "", "l", "lsy", "m", "é"];
        let ops = [
            ("==", Cmp::Eq),
            ("!=", Cmp::Ne),
            ("<", Cmp::Lt),
            ("<=", Cmp::Le),
            (">", Cmp::Gt),
            (">=", Cmp::Ge),
        ];
        let mut exprs = Vec::new();
        let mut cases = Vec::new();
        for lit in literals {
            for (text, cmp) in ops {
                let src = format!("command {text} '{lit}'");
                let expr = parallax_cel::parser::parse(&src).expect("parses");
                cases.push((
                    exprs.len() as u32,
                    lit.replace("\\n", "\n"),
                    cmp,
                    src.clone(),
                ));
                exprs.push(CelExpr {
                    source: src,
                    expr,
                    atom_fields: Vec::new(),
                });
            }
            let src = format!("command in ['{lit}', 'zz']");
            let expr = parallax_cel::parser::parse(&src).expect("parses");
            exprs.push(CelExpr {
                source: src,
                expr,
                atom_fields: Vec::new(),
            });
        }
        let rt = CelRuntime::new(&exprs);
        let atoms = BitSet::new(0);
        for ev in events {
            let prepared = PreparedEvent::new(Event::from_value(ev.clone()).unwrap());
            for (index, lit, cmp, src) in &cases {
                let native = native::canonical_compare(
                    &prepared,
                    Canonical::Command,
                    *cmp,
                    Some(Scalar::Str(lit)),
                );
                assert_eq!(
                    native == Some(true),
                    rt.eval(*index, &atoms, &prepared),
                    "{src} on {ev}"
                );
                let in_index = (index / 7) * 7 + 6;
                let native_in = native::canonical_in(
                    &prepared,
                    Canonical::Command,
                    &[Scalar::Str(lit), Scalar::Str("zz")],
                );
                assert_eq!(
                    native_in == Some(true),
                    rt.eval(in_index, &atoms, &prepared),
                    "in {lit:?} on {ev}"
                );
            }
            // Non-string literals: never equal, no order.
            let n = Some(Scalar::Int(1));
            assert_eq!(
                native::canonical_compare(&prepared, Canonical::Command, Cmp::Eq, n),
                Some(false)
            );
            assert_eq!(
                native::canonical_compare(&prepared, Canonical::Command, Cmp::Lt, n),
                None
            );
        }
    }

    #[test]
    fn native_logic_absorbs_errors_like_cel() {
        let vals = [Some(true), Some(false), None];
        for a in vals {
            for b in vals {
                let and = match (a, b) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                let or = match (a, b) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                };
                assert_eq!(native::and(a, || b), and, "{a:?} && {b:?}");
                assert_eq!(native::or(a, || b), or, "{a:?} || {b:?}");
            }
        }
    }
}
