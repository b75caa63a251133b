//! Static type checking of what is known before evaluation.
//!
//! Declared variables have types; anything the checker cannot know is
//! `dyn` and checked at run time instead. The checker rejects what can
//! never work — a string compared with `<` to a number, an unknown
//! function, a field selected from an int — so a rule author sees the
//! mistake at compile time, with a caret under it, instead of a rule that
//! silently never matches.

use crate::ast::{BinaryOp, Expr, ExprKind, Literal, MacroKind, UnaryOp};
use crate::error::CheckError;
use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CelType {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List(Box<CelType>),
    Map(Box<CelType>, Box<CelType>),
    /// A type value (`int`, `type(x)`).
    Type,
}

impl fmt::Display for CelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CelType::Dyn => f.write_str("dyn"),
            CelType::Null => f.write_str("null_type"),
            CelType::Bool => f.write_str("bool"),
            CelType::Int => f.write_str("int"),
            CelType::Uint => f.write_str("uint"),
            CelType::Double => f.write_str("double"),
            CelType::String => f.write_str("string"),
            CelType::Bytes => f.write_str("bytes"),
            CelType::List(t) => write!(f, "list({t})"),
            CelType::Map(k, v) => write!(f, "map({k}, {v})"),
            CelType::Type => f.write_str("type"),
        }
    }
}

impl CelType {
    /// Parses a type as written in declarations: `int`, `list(string)`,
    /// `map(string, dyn)`, `type(int)`.
    pub fn parse(s: &str) -> Option<CelType> {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix("list(").and_then(|r| r.strip_suffix(')')) {
            return Some(CelType::List(Box::new(CelType::parse(inner)?)));
        }
        if let Some(inner) = s.strip_prefix("map(").and_then(|r| r.strip_suffix(')')) {
            let mut depth = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ',' if depth == 0 => {
                        return Some(CelType::Map(
                            Box::new(CelType::parse(&inner[..i])?),
                            Box::new(CelType::parse(&inner[i + 1..])?),
                        ))
                    }
                    _ => {}
                }
            }
            return None;
        }
        if s.starts_with("type(") && s.ends_with(')') {
            return Some(CelType::Type);
        }
        Some(match s {
            "dyn" => CelType::Dyn,
            "null_type" => CelType::Null,
            "bool" => CelType::Bool,
            "int" => CelType::Int,
            "uint" => CelType::Uint,
            "double" => CelType::Double,
            "string" => CelType::String,
            "bytes" => CelType::Bytes,
            "type" => CelType::Type,
            _ => return None,
        })
    }

    fn is_dyn(&self) -> bool {
        *self == CelType::Dyn
    }

    fn is_numeric(&self) -> bool {
        matches!(self, CelType::Int | CelType::Uint | CelType::Double)
    }

    /// Whether values of the two types can ever be equal.
    fn comparable(&self, other: &CelType) -> bool {
        match (self, other) {
            (CelType::Dyn, _) | (_, CelType::Dyn) => true,
            (CelType::Null, _) | (_, CelType::Null) => true,
            (a, b) if a.is_numeric() && b.is_numeric() => true,
            (CelType::List(a), CelType::List(b)) => a.comparable(b),
            (CelType::Map(k1, v1), CelType::Map(k2, v2)) => k1.comparable(k2) && v1.comparable(v2),
            (a, b) => a == b,
        }
    }

    /// The common type of a list's elements or a conditional's branches.
    fn join(&self, other: &CelType) -> CelType {
        if self == other {
            self.clone()
        } else {
            CelType::Dyn
        }
    }
}

/// Variable declarations for checking.
#[derive(Debug, Clone, Default)]
pub struct Declarations {
    pub vars: HashMap<String, CelType>,
    pub container: String,
    /// Host functions (global calls, no receiver): each overload's
    /// argument types and result type. The evaluator hands such calls to
    /// [`crate::Activation::call`].
    pub functions: HashMap<String, Vec<(Vec<CelType>, CelType)>>,
}

impl Declarations {
    pub fn declare(&mut self, name: &str, t: CelType) -> &mut Self {
        self.vars.insert(name.to_string(), t);
        self
    }

    /// Declares one overload of a host function `name(args) -> result`.
    pub fn declare_function(
        &mut self,
        name: &str,
        args: Vec<CelType>,
        result: CelType,
    ) -> &mut Self {
        self.functions
            .entry(name.to_string())
            .or_default()
            .push((args, result));
        self
    }
}

pub fn check(expr: &Expr, decls: &Declarations) -> Result<CelType, CheckError> {
    Checker {
        decls,
        locals: Vec::new(),
    }
    .check(expr)
}

struct Checker<'a> {
    decls: &'a Declarations,
    locals: Vec<(String, CelType)>,
}

fn err(e: &Expr, message: String) -> CheckError {
    CheckError {
        message,
        span: e.span,
    }
}

fn no_overload(e: &Expr, f: &str, args: &[&CelType]) -> CheckError {
    let list: Vec<String> = args.iter().map(|t| t.to_string()).collect();
    err(
        e,
        format!(
            "no matching overload for '{f}' applied to ({})",
            list.join(", ")
        ),
    )
}

impl Checker<'_> {
    fn lookup(&self, name: &str, absolute: bool) -> Option<CelType> {
        if !absolute && !self.decls.container.is_empty() {
            let mut prefix = self.decls.container.as_str();
            loop {
                if let Some(t) = self.decls.vars.get(&format!("{prefix}.{name}")) {
                    return Some(t.clone());
                }
                match prefix.rfind('.') {
                    Some(i) => prefix = &prefix[..i],
                    None => break,
                }
            }
        }
        self.decls.vars.get(name).cloned()
    }

    fn local(&self, name: &str) -> Option<CelType> {
        self.locals
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    fn select_type(&self, e: &Expr, t: &CelType, field: &str) -> Result<CelType, CheckError> {
        match t {
            CelType::Dyn => Ok(CelType::Dyn),
            CelType::Map(k, v) if matches!(**k, CelType::String | CelType::Dyn) => {
                Ok((**v).clone())
            }
            _ => Err(err(
                e,
                format!("type '{t}' does not support field selection ('.{field}')"),
            )),
        }
    }

    fn check(&mut self, e: &Expr) -> Result<CelType, CheckError> {
        match &e.kind {
            ExprKind::Literal(l) => Ok(match l {
                Literal::Null => CelType::Null,
                Literal::Bool(_) => CelType::Bool,
                Literal::Int(_) => CelType::Int,
                Literal::Uint(_) => CelType::Uint,
                Literal::Double(_) => CelType::Double,
                Literal::String(_) => CelType::String,
                Literal::Bytes(_) => CelType::Bytes,
            }),
            ExprKind::Atom(_) => Ok(CelType::Bool),
            ExprKind::Ident { name, absolute } => {
                if !absolute {
                    if let Some(t) = self.local(name) {
                        return Ok(t);
                    }
                }
                self.chain(e, &[name.as_str()], *absolute)
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
                            return self.chain(e, &parts, absolute);
                        }
                    }
                }
                let t = self.check(operand)?;
                let ft = self.select_type(e, &t, field)?;
                Ok(if *test { CelType::Bool } else { ft })
            }
            ExprKind::Index { operand, index } => {
                let t = self.check(operand)?;
                let i = self.check(index)?;
                match &t {
                    CelType::Dyn => Ok(CelType::Dyn),
                    CelType::List(el) if i.is_dyn() || i.is_numeric() => Ok((**el).clone()),
                    CelType::Map(k, v) if k.comparable(&i) => Ok((**v).clone()),
                    _ => Err(no_overload(e, "_[_]", &[&t, &i])),
                }
            }
            ExprKind::Unary { op, operand } => {
                let t = self.check(operand)?;
                match (op, &t) {
                    (_, CelType::Dyn) => Ok(if *op == UnaryOp::Not {
                        CelType::Bool
                    } else {
                        CelType::Dyn
                    }),
                    (UnaryOp::Not, CelType::Bool) => Ok(CelType::Bool),
                    (UnaryOp::Neg, CelType::Int | CelType::Double) => Ok(t),
                    (UnaryOp::Not, _) => Err(no_overload(e, "!_", &[&t])),
                    (UnaryOp::Neg, _) => Err(no_overload(e, "-_", &[&t])),
                }
            }
            ExprKind::Binary { op, left, right } => {
                let l = self.check(left)?;
                let r = self.check(right)?;
                self.binary(e, *op, &l, &r)
            }
            ExprKind::And(a, b) | ExprKind::Or(a, b) => {
                let f = if matches!(e.kind, ExprKind::And(..)) {
                    "_&&_"
                } else {
                    "_||_"
                };
                for side in [a, b] {
                    let t = self.check(side)?;
                    if !matches!(t, CelType::Bool | CelType::Dyn) {
                        return Err(err(
                            side,
                            format!("operand of '{f}' must be bool, found {t}"),
                        ));
                    }
                }
                Ok(CelType::Bool)
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                let c = self.check(condition)?;
                if !matches!(c, CelType::Bool | CelType::Dyn) {
                    return Err(err(
                        condition,
                        format!("condition of '?:' must be bool, found {c}"),
                    ));
                }
                let a = self.check(then)?;
                let b = self.check(otherwise)?;
                Ok(a.join(&b))
            }
            ExprKind::List(items) => {
                let mut elem: Option<CelType> = None;
                for i in items {
                    let t = self.check(i)?;
                    elem = Some(match elem {
                        None => t,
                        Some(p) => p.join(&t),
                    });
                }
                Ok(CelType::List(Box::new(elem.unwrap_or(CelType::Dyn))))
            }
            ExprKind::Map(entries) => {
                let mut kt: Option<CelType> = None;
                let mut vt: Option<CelType> = None;
                for (k, v) in entries {
                    let a = self.check(k)?;
                    if !matches!(
                        a,
                        CelType::Bool
                            | CelType::Int
                            | CelType::Uint
                            | CelType::String
                            | CelType::Dyn
                    ) {
                        return Err(err(k, format!("type '{a}' cannot be a map key")));
                    }
                    let b = self.check(v)?;
                    kt = Some(kt.map_or(a.clone(), |p| p.join(&a)));
                    vt = Some(vt.map_or(b.clone(), |p| p.join(&b)));
                }
                Ok(CelType::Map(
                    Box::new(kt.unwrap_or(CelType::Dyn)),
                    Box::new(vt.unwrap_or(CelType::Dyn)),
                ))
            }
            ExprKind::Call {
                target,
                function,
                args,
            } => {
                let namespaced = matches!(
                    target.as_deref().map(|t| &t.kind),
                    Some(ExprKind::Ident { name, absolute: false })
                        if name == "strings"
                            && self.local(name).is_none()
                            && self.lookup(name, false).is_none()
                );
                let mut types = Vec::new();
                if let Some(t) = target.as_deref().filter(|_| !namespaced) {
                    types.push(self.check(t)?);
                }
                for a in args {
                    types.push(self.check(a)?);
                }
                if namespaced {
                    return self.call(e, &format!("strings.{function}"), false, &types);
                }
                self.call(e, function, target.is_some(), &types)
            }
            ExprKind::Comprehension {
                kind,
                range,
                var,
                filter,
                body,
            } => {
                let rt = self.check(range)?;
                let vt = match &rt {
                    CelType::List(t) => (**t).clone(),
                    CelType::Map(k, _) => (**k).clone(),
                    CelType::Dyn => CelType::Dyn,
                    _ => {
                        return Err(err(
                            range,
                            format!("{}() needs a list or map, found {rt}", kind.name()),
                        ))
                    }
                };
                self.locals.push((var.clone(), vt.clone()));
                let result = (|| {
                    if let Some(p) = filter {
                        let t = self.check(p)?;
                        if !matches!(t, CelType::Bool | CelType::Dyn) {
                            return Err(err(p, format!("filter must be bool, found {t}")));
                        }
                    }
                    let bt = self.check(body)?;
                    match kind {
                        MacroKind::Map => Ok(CelType::List(Box::new(bt))),
                        MacroKind::Filter
                        | MacroKind::All
                        | MacroKind::Exists
                        | MacroKind::ExistsOne => {
                            if !matches!(bt, CelType::Bool | CelType::Dyn) {
                                return Err(err(
                                    body,
                                    format!("{}() predicate must be bool, found {bt}", kind.name()),
                                ));
                            }
                            Ok(if *kind == MacroKind::Filter {
                                CelType::List(Box::new(vt.clone()))
                            } else {
                                CelType::Bool
                            })
                        }
                    }
                })();
                self.locals.pop();
                result
            }
        }
    }

    fn chain(&mut self, e: &Expr, parts: &[&str], absolute: bool) -> Result<CelType, CheckError> {
        for n in (1..=parts.len()).rev() {
            let found = if n == 1 {
                self.lookup(parts[0], absolute)
                    .or_else(|| crate::value::Type::from_name(parts[0]).map(|_| CelType::Type))
            } else {
                self.lookup(&parts[..n].join("."), absolute)
            };
            if let Some(mut t) = found {
                for p in &parts[n..] {
                    t = self.select_type(e, &t, p)?;
                }
                return Ok(t);
            }
        }
        Err(err(
            e,
            format!("undeclared reference to '{}'", parts.join(".")),
        ))
    }

    fn binary(
        &self,
        e: &Expr,
        op: BinaryOp,
        l: &CelType,
        r: &CelType,
    ) -> Result<CelType, CheckError> {
        let name = op.function_name();
        let fail = || Err(no_overload(e, name, &[l, r]));
        match op {
            BinaryOp::Eq | BinaryOp::Ne => {
                if l.comparable(r) {
                    Ok(CelType::Bool)
                } else {
                    fail()
                }
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let ordered = |t: &CelType| {
                    matches!(
                        t,
                        CelType::Bool | CelType::String | CelType::Bytes | CelType::Dyn
                    ) || t.is_numeric()
                };
                let ok = ordered(l)
                    && ordered(r)
                    && (l.is_dyn() || r.is_dyn() || l == r || (l.is_numeric() && r.is_numeric()));
                if ok {
                    Ok(CelType::Bool)
                } else {
                    fail()
                }
            }
            BinaryOp::In => match r {
                CelType::Dyn => Ok(CelType::Bool),
                CelType::List(el) if el.comparable(l) => Ok(CelType::Bool),
                CelType::Map(k, _) if k.comparable(l) => Ok(CelType::Bool),
                _ => fail(),
            },
            _ => {
                if l.is_dyn() {
                    return Ok(r.clone());
                }
                if r.is_dyn() {
                    return Ok(l.clone());
                }
                let ok = match op {
                    BinaryOp::Add => matches!(
                        (l, r),
                        (CelType::Int, CelType::Int)
                            | (CelType::Uint, CelType::Uint)
                            | (CelType::Double, CelType::Double)
                            | (CelType::String, CelType::String)
                            | (CelType::Bytes, CelType::Bytes)
                            | (CelType::List(_), CelType::List(_))
                    ),
                    BinaryOp::Rem => matches!(
                        (l, r),
                        (CelType::Int, CelType::Int) | (CelType::Uint, CelType::Uint)
                    ),
                    _ => l == r && l.is_numeric(),
                };
                if !ok {
                    return fail();
                }
                Ok(match (l, r) {
                    (CelType::List(a), CelType::List(b)) => CelType::List(Box::new(a.join(b))),
                    _ => l.clone(),
                })
            }
        }
    }

    fn call(
        &self,
        e: &Expr,
        function: &str,
        receiver: bool,
        args: &[CelType],
    ) -> Result<CelType, CheckError> {
        use CelType as T;
        let refs: Vec<&CelType> = args.iter().collect();
        let any = |t: &CelType, allowed: &[CelType]| t.is_dyn() || allowed.contains(t);
        let fail = || Err(no_overload(e, function, &refs));
        let result = match (function, args, receiver) {
            ("size", [t], _) => {
                if t.is_dyn() || matches!(t, T::String | T::Bytes | T::List(_) | T::Map(..)) {
                    T::Int
                } else {
                    return fail();
                }
            }
            ("int", [t], false) if any(t, &[T::Int, T::Uint, T::Double, T::String]) => T::Int,
            ("uint", [t], false) if any(t, &[T::Int, T::Uint, T::Double, T::String]) => T::Uint,
            ("double", [t], false) if any(t, &[T::Int, T::Uint, T::Double, T::String]) => T::Double,
            ("string", [t], false)
                if any(
                    t,
                    &[T::Int, T::Uint, T::Double, T::String, T::Bytes, T::Bool],
                ) =>
            {
                T::String
            }
            ("bytes", [t], false) if any(t, &[T::String, T::Bytes]) => T::Bytes,
            ("bool", [t], false) if any(t, &[T::String, T::Bool]) => T::Bool,
            ("type", [_], false) => T::Type,
            ("dyn", [_], false) => T::Dyn,
            ("contains" | "startsWith" | "endsWith", [s, p], true)
                if any(s, &[T::String]) && any(p, &[T::String]) =>
            {
                T::Bool
            }
            ("matches", [s, p], _) if any(s, &[T::String]) && any(p, &[T::String]) => {
                if let ExprKind::Call { args: a, .. } = &e.kind {
                    if let Some(Expr {
                        kind: ExprKind::Literal(Literal::String(pat)),
                        span,
                        ..
                    }) = a.last()
                    {
                        if let Err(msg) = crate::eval::compile_regex(pat) {
                            return Err(CheckError {
                                message: format!("invalid regular expression: {msg}"),
                                span: *span,
                            });
                        }
                    }
                }
                T::Bool
            }
            ("lowerAscii" | "upperAscii" | "trim" | "reverse", [s], true)
                if any(s, &[T::String]) =>
            {
                T::String
            }
            ("charAt", [s, i], true) if any(s, &[T::String]) && any(i, &[T::Int]) => T::String,
            ("indexOf" | "lastIndexOf", [s, p], true)
                if any(s, &[T::String]) && any(p, &[T::String]) =>
            {
                T::Int
            }
            ("indexOf" | "lastIndexOf", [s, p, i], true)
                if any(s, &[T::String]) && any(p, &[T::String]) && any(i, &[T::Int]) =>
            {
                T::Int
            }
            ("substring", [s, a], true) if any(s, &[T::String]) && any(a, &[T::Int]) => T::String,
            ("substring", [s, a, b], true)
                if any(s, &[T::String]) && any(a, &[T::Int]) && any(b, &[T::Int]) =>
            {
                T::String
            }
            ("replace", [s, a, b], true)
                if any(s, &[T::String]) && any(a, &[T::String]) && any(b, &[T::String]) =>
            {
                T::String
            }
            ("replace", [s, a, b, n], true)
                if any(s, &[T::String])
                    && any(a, &[T::String])
                    && any(b, &[T::String])
                    && any(n, &[T::Int]) =>
            {
                T::String
            }
            ("split", [s, a], true) if any(s, &[T::String]) && any(a, &[T::String]) => {
                T::List(Box::new(T::String))
            }
            ("split", [s, a, n], true)
                if any(s, &[T::String]) && any(a, &[T::String]) && any(n, &[T::Int]) =>
            {
                T::List(Box::new(T::String))
            }
            ("join", [T::Dyn | T::List(_)], true) => T::String,
            ("join", [l, sep], true)
                if matches!(l, T::Dyn | T::List(_)) && any(sep, &[T::String]) =>
            {
                T::String
            }
            ("strings.quote", [s], false) if any(s, &[T::String]) => T::String,
            ("format", [s, l], true)
                if any(s, &[T::String]) && matches!(l, T::Dyn | T::List(_)) =>
            {
                T::String
            }
            _ => {
                if crate::functions::FUNCTIONS.contains(&function) {
                    return fail();
                }
                if let Some(overloads) = self.decls.functions.get(function).filter(|_| !receiver) {
                    let fits = |want: &[CelType]| {
                        want.len() == args.len()
                            && want
                                .iter()
                                .zip(args)
                                .all(|(w, a)| a.is_dyn() || w.is_dyn() || w == a || w.comparable(a))
                    };
                    return match overloads.iter().find(|(want, _)| fits(want)) {
                        Some((_, result)) => Ok(result.clone()),
                        None => fail(),
                    };
                }
                return Err(err(e, format!("undeclared reference to '{function}'")));
            }
        };
        Ok(result)
    }
}
