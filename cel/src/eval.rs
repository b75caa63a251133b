//! The tree-walking evaluator.
//!
//! Errors are values: every node yields `Result<Value, EvalError>`, and
//! only `&&`, `||`, `?:` and the `all`/`exists` macros may turn an error
//! into a result, with the specification's commutative rules (`false &&
//! error` and `error && false` are both `false`).

use crate::ast::{BinaryOp, Expr, ExprKind, Literal, MacroKind, UnaryOp};
use crate::error::EvalError;
use crate::functions as f;
use crate::value::{Key, Map, Value};
use regex_automata::meta::Regex;
use std::collections::HashMap;
use std::sync::Arc;

/// Where names come from: the bindings of one evaluation.
pub trait Activation {
    /// The value bound to a (possibly qualified, dotted) name.
    fn resolve(&self, name: &str) -> Option<Value>;

    /// Whether atom `id` of the engine's automata hit (an error when the
    /// field it stands for is missing or not a string); only expressions
    /// rewritten by the rule compiler contain atoms.
    fn atom(&self, _id: u32) -> Result<bool, EvalError> {
        Err(EvalError::Invalid("atom reference outside the engine"))
    }

    /// A host function the embedder provides (declared to the checker with
    /// [`crate::Declarations::declare_function`]): `None` when it has no
    /// function of that name.
    fn call(&self, _function: &str, _args: &[Value]) -> Option<Result<Value, EvalError>> {
        None
    }
}

impl Activation for HashMap<String, Value> {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.get(name).cloned()
    }
}

/// Regexes of `matches` calls with a literal pattern, compiled once per
/// expression (keyed by the call's node id) instead of once per call.
#[derive(Debug, Default, Clone)]
pub struct RegexCache {
    compiled: HashMap<u32, Result<Arc<Regex>, String>>,
}

impl RegexCache {
    pub fn build(expr: &Expr) -> RegexCache {
        let mut compiled = HashMap::new();
        expr.walk(&mut |e| {
            if let ExprKind::Call { function, args, .. } = &e.kind {
                if function == "matches" {
                    if let Some(Expr {
                        kind: ExprKind::Literal(Literal::String(p)),
                        ..
                    }) = args.last()
                    {
                        compiled.insert(e.id, compile_regex(p));
                    }
                }
            }
        });
        RegexCache { compiled }
    }
}

pub fn compile_regex(pattern: &str) -> Result<Arc<Regex>, String> {
    Regex::new(pattern).map(Arc::new).map_err(|e| e.to_string())
}

const MAX_DEPTH: usize = 400;

pub struct Evaluator<'a> {
    act: &'a dyn Activation,
    container: &'a str,
    regexes: &'a RegexCache,
    locals: Vec<(&'a str, Value)>,
    depth: usize,
}

impl<'a> Evaluator<'a> {
    pub fn new(act: &'a dyn Activation, container: &'a str, regexes: &'a RegexCache) -> Self {
        Evaluator {
            act,
            container,
            regexes,
            locals: Vec::new(),
            depth: 0,
        }
    }

    pub fn eval(&mut self, e: &'a Expr) -> Result<Value, EvalError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(EvalError::TooDeep);
        }
        let out = self.eval_inner(e);
        self.depth -= 1;
        out
    }

    fn eval_inner(&mut self, e: &'a Expr) -> Result<Value, EvalError> {
        match &e.kind {
            ExprKind::Literal(l) => Ok(literal(l)),
            ExprKind::Ident { name, absolute } => {
                if !absolute {
                    if let Some(v) = self.local(name) {
                        return Ok(v);
                    }
                }
                self.resolve_chain(&[name.as_str()], *absolute)
            }
            ExprKind::Select {
                operand,
                field,
                test,
            } => {
                if !test {
                    let mut parts = Vec::new();
                    if let Some(absolute) = e.ident_chain(&mut parts) {
                        if absolute || self.local(parts[0]).is_none() {
                            return self.resolve_chain(&parts, absolute);
                        }
                    }
                }
                let v = self.eval(operand)?;
                select(&v, field, *test)
            }
            ExprKind::Index { operand, index } => {
                let v = self.eval(operand)?;
                let i = self.eval(index)?;
                index_value(&v, &i)
            }
            ExprKind::Call {
                target,
                function,
                args,
            } => self.call(e.id, target.as_deref(), function, args),
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand)?;
                match (op, v) {
                    (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
                    (UnaryOp::Neg, Value::Int(i)) => {
                        i.checked_neg().map(Value::Int).ok_or(EvalError::Overflow)
                    }
                    (UnaryOp::Neg, Value::Double(d)) => Ok(Value::Double(-d)),
                    (UnaryOp::Not, _) => Err(EvalError::NoOverload("!_")),
                    (UnaryOp::Neg, _) => Err(EvalError::NoOverload("-_")),
                }
            }
            ExprKind::Binary { op, left, right } => {
                let l = self.eval(left)?;
                let r = self.eval(right)?;
                binary(*op, &l, &r)
            }
            ExprKind::And(l, r) => {
                let a = self.eval(l);
                if let Ok(Value::Bool(false)) = a {
                    return Ok(Value::Bool(false));
                }
                let b = self.eval(r);
                logic(a, b, false)
            }
            ExprKind::Or(l, r) => {
                let a = self.eval(l);
                if let Ok(Value::Bool(true)) = a {
                    return Ok(Value::Bool(true));
                }
                let b = self.eval(r);
                logic(a, b, true)
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => match self.eval(condition)? {
                Value::Bool(true) => self.eval(then),
                Value::Bool(false) => self.eval(otherwise),
                _ => Err(EvalError::NoOverload("_?_:_")),
            },
            ExprKind::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    out.push(self.eval(i)?);
                }
                Ok(Value::List(Arc::new(out)))
            }
            ExprKind::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    let k = self.eval(k)?;
                    let v = self.eval(v)?;
                    m.insert(k, v)?;
                }
                Ok(Value::Map(Arc::new(m)))
            }
            ExprKind::Comprehension {
                kind,
                range,
                var,
                filter,
                body,
            } => self.comprehension(*kind, range, var, filter.as_deref(), body),
            ExprKind::Atom(id) => self.act.atom(*id).map(Value::Bool),
        }
    }

    fn local(&self, name: &str) -> Option<Value> {
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }

    /// Resolves a global name, trying the container's prefixes first
    /// (`a.b.x`, `a.x`, `x` for container `a.b`) unless written absolute.
    fn lookup(&self, name: &str, absolute: bool) -> Option<Value> {
        if !absolute && !self.container.is_empty() {
            let mut prefix = self.container;
            loop {
                if let Some(v) = self.act.resolve(&format!("{prefix}.{name}")) {
                    return Some(v);
                }
                match prefix.rfind('.') {
                    Some(i) => prefix = &prefix[..i],
                    None => break,
                }
            }
        }
        self.act.resolve(name)
    }

    /// `a.b.c` may name a variable `a.b.c`, or field `c` of variable `a.b`,
    /// or fields of `a`: the longest bound prefix wins.
    fn resolve_chain(&self, parts: &[&str], absolute: bool) -> Result<Value, EvalError> {
        for n in (1..=parts.len()).rev() {
            let found = if n == 1 {
                self.lookup(parts[0], absolute)
                    .or_else(|| f::type_ident(parts[0]))
            } else {
                self.lookup(&parts[..n].join("."), absolute)
            };
            if let Some(mut v) = found {
                for p in &parts[n..] {
                    v = select(&v, p, false)?;
                }
                return Ok(v);
            }
        }
        Err(EvalError::UnknownIdent(parts.join(".")))
    }

    fn call(
        &mut self,
        id: u32,
        target: Option<&'a Expr>,
        function: &str,
        args: &'a [Expr],
    ) -> Result<Value, EvalError> {
        // `strings.quote(x)`: a namespaced function, unless `strings` is a
        // variable.
        let namespaced = matches!(
            target.map(|t| &t.kind),
            Some(ExprKind::Ident { name, absolute: false })
                if name == "strings"
                    && self.local(name).is_none()
                    && self.act.resolve(name).is_none()
        );
        let mut vals: Vec<Value> = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target.filter(|_| !namespaced) {
            vals.push(self.eval(t)?);
        }
        for a in args {
            vals.push(self.eval(a)?);
        }
        let receiver = target.is_some() && !namespaced;
        let function = if namespaced && function == "quote" {
            "strings.quote"
        } else {
            function
        };
        use f::strings as s;
        match (function, vals.as_slice(), receiver) {
            ("strings.quote", [v], false) => s::quote(v),
            ("charAt", [v, i], true) => s::char_at(v, i),
            ("indexOf", a @ ([_, _] | [_, _, _]), true) => s::index_of(a, false),
            ("lastIndexOf", a @ ([_, _] | [_, _, _]), true) => s::index_of(a, true),
            ("substring", a, true) => s::substring(a),
            ("replace", a, true) => s::replace(a),
            ("split", a, true) => s::split(a),
            ("join", a, true) => s::join(a),
            ("trim", [v], true) => s::trim(v),
            ("reverse", [v], true) => s::reverse(v),
            ("format", [v, a], true) => f::format::format(v, a),
            ("size", [v], _) => f::size(v),
            ("int", [v], false) => f::to_int(v),
            ("uint", [v], false) => f::to_uint(v),
            ("double", [v], false) => f::to_double(v),
            ("string", [v], false) => f::to_string(v),
            ("bytes", [v], false) => f::to_bytes(v),
            ("bool", [v], false) => f::to_bool(v),
            ("type", [v], false) => Ok(f::type_of(v)),
            ("dyn", [v], false) => Ok(v.clone()),
            ("contains", [s, t], true) => f::string_test("contains", s, t),
            ("startsWith", [s, t], true) => f::string_test("startsWith", s, t),
            ("endsWith", [s, t], true) => f::string_test("endsWith", s, t),
            ("lowerAscii", [s], true) => f::ascii_case("lowerAscii", s),
            ("upperAscii", [s], true) => f::ascii_case("upperAscii", s),
            ("matches", [s, p], _) => {
                let (Value::String(s), Value::String(p)) = (s, p) else {
                    return Err(EvalError::NoOverload("matches"));
                };
                let re = match self.regexes.compiled.get(&id) {
                    Some(r) => r.clone(),
                    None => compile_regex(p),
                }
                .map_err(EvalError::Regex)?;
                Ok(Value::Bool(re.is_match(s.as_bytes())))
            }
            _ => {
                if f::FUNCTIONS.contains(&function) {
                    Err(EvalError::NoOverload(static_name(function)))
                } else if let Some(r) = (!receiver)
                    .then(|| self.act.call(function, &vals))
                    .flatten()
                {
                    r
                } else {
                    Err(EvalError::UnknownFunction(function.to_string()))
                }
            }
        }
    }

    fn comprehension(
        &mut self,
        kind: MacroKind,
        range: &'a Expr,
        var: &'a str,
        filter: Option<&'a Expr>,
        body: &'a Expr,
    ) -> Result<Value, EvalError> {
        let items: Vec<Value> = match self.eval(range)? {
            Value::List(l) => l.as_ref().clone(),
            Value::Map(m) => m.iter().map(|(k, _)| k.clone()).collect(),
            _ => return Err(EvalError::NoOverload(kind.name())),
        };
        let mut err: Option<EvalError> = None;
        let mut count = 0usize;
        let mut out = Vec::new();
        for item in items {
            self.locals.push((var, item.clone()));
            let r = (|| -> Result<Option<bool>, EvalError> {
                match kind {
                    MacroKind::Map => {
                        if let Some(p) = filter {
                            if !as_bool(self.eval(p)?, "map")? {
                                return Ok(None);
                            }
                        }
                        out.push(self.eval(body)?);
                        Ok(None)
                    }
                    MacroKind::Filter => {
                        if as_bool(self.eval(body)?, "filter")? {
                            out.push(item.clone());
                        }
                        Ok(None)
                    }
                    _ => Ok(Some(as_bool(self.eval(body)?, kind.name())?)),
                }
            })();
            self.locals.pop();
            match (kind, r) {
                (MacroKind::Map | MacroKind::Filter | MacroKind::ExistsOne, Err(e)) => {
                    return Err(e)
                }
                (_, Err(e)) => {
                    err.get_or_insert(e);
                }
                (MacroKind::All, Ok(Some(false))) => return Ok(Value::Bool(false)),
                (MacroKind::Exists, Ok(Some(true))) => return Ok(Value::Bool(true)),
                (MacroKind::ExistsOne, Ok(Some(true))) => count += 1,
                _ => {}
            }
        }
        match kind {
            MacroKind::Map | MacroKind::Filter => Ok(Value::List(Arc::new(out))),
            MacroKind::ExistsOne => Ok(Value::Bool(count == 1)),
            _ => match err {
                Some(e) => Err(e),
                None => Ok(Value::Bool(kind == MacroKind::All)),
            },
        }
    }
}

fn as_bool(v: Value, what: &'static str) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(b),
        _ => Err(EvalError::NoOverload(what)),
    }
}

fn static_name(function: &str) -> &'static str {
    f::FUNCTIONS
        .iter()
        .find(|n| **n == function)
        .copied()
        .unwrap_or("function")
}

/// `&&` (`or == false`) and `||` (`or == true`) after the short-circuit
/// on the left operand did not apply.
fn logic(
    a: Result<Value, EvalError>,
    b: Result<Value, EvalError>,
    or: bool,
) -> Result<Value, EvalError> {
    let op = if or { "_||_" } else { "_&&_" };
    let norm = |r: Result<Value, EvalError>| match r {
        Ok(Value::Bool(x)) => Ok(x),
        Ok(_) => Err(EvalError::NoOverload(op)),
        Err(e) => Err(e),
    };
    match (norm(a), norm(b)) {
        (_, Ok(x)) if x == or => Ok(Value::Bool(or)),
        (Ok(x), Ok(y)) => Ok(Value::Bool(if or { x || y } else { x && y })),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

pub fn literal(l: &Literal) -> Value {
    match l {
        Literal::Null => Value::Null,
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Int(i) => Value::Int(*i),
        Literal::Uint(u) => Value::Uint(*u),
        Literal::Double(d) => Value::Double(*d),
        Literal::String(s) => Value::string(s),
        Literal::Bytes(b) => Value::Bytes(Arc::from(b.as_slice())),
    }
}

pub fn select(v: &Value, field: &str, test: bool) -> Result<Value, EvalError> {
    match v {
        Value::Map(m) => {
            let found = m.get_str(field);
            if test {
                Ok(Value::Bool(found.is_some()))
            } else {
                found.cloned().ok_or(EvalError::NoSuchKey)
            }
        }
        _ => Err(EvalError::NoSuchField(field.to_string())),
    }
}

pub fn index_value(v: &Value, i: &Value) -> Result<Value, EvalError> {
    match v {
        Value::List(l) => {
            let idx = match i {
                Value::Int(n) => *n,
                Value::Uint(n) => i64::try_from(*n).map_err(|_| EvalError::IndexOutOfRange)?,
                Value::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => *d as i64,
                Value::Double(_) => return Err(EvalError::Invalid("invalid list index")),
                _ => return Err(EvalError::NoOverload("_[_]")),
            };
            usize::try_from(idx)
                .ok()
                .and_then(|n| l.get(n))
                .cloned()
                .ok_or(EvalError::IndexOutOfRange)
        }
        Value::Map(m) => match Key::of_lookup(i)? {
            Some(k) => m.get(&k).cloned().ok_or(EvalError::NoSuchKey),
            None => Err(EvalError::NoSuchKey),
        },
        _ => Err(EvalError::NoOverload("_[_]")),
    }
}

pub fn contains(container: &Value, item: &Value) -> Result<bool, EvalError> {
    match container {
        Value::List(l) => Ok(l.iter().any(|x| x.equals(item))),
        Value::Map(m) => Ok(match Key::of_lookup(item) {
            Ok(Some(k)) => m.get(&k).is_some(),
            _ => false,
        }),
        _ => Err(EvalError::NoOverload("@in")),
    }
}

pub fn binary(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, EvalError> {
    use std::cmp::Ordering::*;
    let name = op.function_name();
    match op {
        BinaryOp::Eq => return Ok(Value::Bool(l.equals(r))),
        BinaryOp::Ne => return Ok(Value::Bool(!l.equals(r))),
        BinaryOp::In => return contains(r, l).map(Value::Bool),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let o = l.compare(r, name)?;
            let b = match (op, o) {
                (_, None) => false,
                (BinaryOp::Lt, Some(o)) => o == Less,
                (BinaryOp::Le, Some(o)) => o != Greater,
                (BinaryOp::Gt, Some(o)) => o == Greater,
                (_, Some(o)) => o != Less,
            };
            return Ok(Value::Bool(b));
        }
        _ => {}
    }
    let over = EvalError::Overflow;
    match (l, r) {
        (Value::Int(a), Value::Int(b)) => {
            let v = match op {
                BinaryOp::Add => a.checked_add(*b),
                BinaryOp::Sub => a.checked_sub(*b),
                BinaryOp::Mul => a.checked_mul(*b),
                BinaryOp::Div if *b == 0 => return Err(EvalError::DivideByZero),
                BinaryOp::Div => a.checked_div(*b),
                BinaryOp::Rem if *b == 0 => return Err(EvalError::ModulusByZero),
                _ => a.checked_rem(*b),
            };
            v.map(Value::Int).ok_or(over)
        }
        (Value::Uint(a), Value::Uint(b)) => {
            let v = match op {
                BinaryOp::Add => a.checked_add(*b),
                BinaryOp::Sub => a.checked_sub(*b),
                BinaryOp::Mul => a.checked_mul(*b),
                BinaryOp::Div if *b == 0 => return Err(EvalError::DivideByZero),
                BinaryOp::Div => a.checked_div(*b),
                BinaryOp::Rem if *b == 0 => return Err(EvalError::ModulusByZero),
                _ => a.checked_rem(*b),
            };
            v.map(Value::Uint).ok_or(over)
        }
        (Value::Double(a), Value::Double(b)) => Ok(Value::Double(match op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            _ => return Err(EvalError::NoOverload(name)),
        })),
        (Value::String(a), Value::String(b)) if op == BinaryOp::Add => {
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Ok(Value::String(Arc::from(s)))
        }
        (Value::Bytes(a), Value::Bytes(b)) if op == BinaryOp::Add => {
            let mut v = a.to_vec();
            v.extend_from_slice(b);
            Ok(Value::Bytes(Arc::from(v)))
        }
        (Value::List(a), Value::List(b)) if op == BinaryOp::Add => {
            let mut v = a.as_ref().clone();
            v.extend(b.iter().cloned());
            Ok(Value::List(Arc::new(v)))
        }
        _ => Err(EvalError::NoOverload(name)),
    }
}
