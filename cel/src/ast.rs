//! The parsed expression tree.
//!
//! Every node keeps its byte span in the source so the checker can put a
//! caret under the offending part, and an id so later passes (regex
//! precompilation, atom substitution) can refer to a node without pointers.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expr {
    pub id: u32,
    pub span: Span,
    pub kind: ExprKind,
}

impl Expr {
    /// The height of the tree under this node (a leaf is 1), computed from
    /// the direct children only, so building a tree bottom-up with this
    /// costs no recursion. The parser uses it to refuse trees deep enough
    /// to exhaust the stack of the recursive passes.
    pub fn height(kind: &ExprKind, child_height: impl Fn(&Expr) -> u32) -> u32 {
        let mut h = 0;
        let mut see = |e: &Expr| h = h.max(child_height(e));
        match kind {
            ExprKind::Literal(_) | ExprKind::Ident { .. } | ExprKind::Atom(_) => {}
            ExprKind::Select { operand, .. } | ExprKind::Unary { operand, .. } => see(operand),
            ExprKind::Index { operand, index } => {
                see(operand);
                see(index);
            }
            ExprKind::Call { target, args, .. } => {
                target.iter().for_each(|t| see(t));
                args.iter().for_each(&mut see);
            }
            ExprKind::Binary { left, right, .. }
            | ExprKind::And(left, right)
            | ExprKind::Or(left, right) => {
                see(left);
                see(right);
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                see(condition);
                see(then);
                see(otherwise);
            }
            ExprKind::List(items) => items.iter().for_each(&mut see),
            ExprKind::Map(entries) => entries.iter().for_each(|(k, v)| {
                see(k);
                see(v);
            }),
            ExprKind::Comprehension {
                range,
                filter,
                body,
                ..
            } => {
                see(range);
                filter.iter().for_each(|f| see(f));
                see(body);
            }
        }
        h + 1
    }
}

/// A literal constant as written in the source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnaryOp {
    Not,
    Neg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

impl BinaryOp {
    /// The operator's function name in the CEL specification, used in
    /// "no matching overload" messages.
    pub fn function_name(self) -> &'static str {
        match self {
            BinaryOp::Add => "_+_",
            BinaryOp::Sub => "_-_",
            BinaryOp::Mul => "_*_",
            BinaryOp::Div => "_/_",
            BinaryOp::Rem => "_%_",
            BinaryOp::Eq => "_==_",
            BinaryOp::Ne => "_!=_",
            BinaryOp::Lt => "_<_",
            BinaryOp::Le => "_<=_",
            BinaryOp::Gt => "_>_",
            BinaryOp::Ge => "_>=_",
            BinaryOp::In => "@in",
        }
    }
}

/// The comprehension macros.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MacroKind {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
}

impl MacroKind {
    pub fn name(self) -> &'static str {
        match self {
            MacroKind::All => "all",
            MacroKind::Exists => "exists",
            MacroKind::ExistsOne => "exists_one",
            MacroKind::Map => "map",
            MacroKind::Filter => "filter",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExprKind {
    Literal(Literal),
    /// A name; `absolute` when written with a leading dot (`.x`), which
    /// skips local variables and the container.
    Ident {
        name: String,
        absolute: bool,
    },
    /// `operand.field`; `test` when it is the argument of `has()`.
    Select {
        operand: Box<Expr>,
        field: String,
        test: bool,
    },
    Index {
        operand: Box<Expr>,
        index: Box<Expr>,
    },
    /// A function call, global (`size(x)`) or receiver-style (`x.size()`).
    Call {
        target: Option<Box<Expr>>,
        function: String,
        args: Vec<Expr>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Conditional {
        condition: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    /// `range.all(var, body)` and friends; `filter` holds the predicate of
    /// the three-argument `map(var, filter, transform)`.
    Comprehension {
        kind: MacroKind,
        range: Box<Expr>,
        var: String,
        filter: Option<Box<Expr>>,
        body: Box<Expr>,
    },
    /// A reference to an atom of the engine's shared automata that replaced
    /// a string-matching call on an event field; never produced by the
    /// parser, only by the rule compiler.
    Atom(u32),
}

impl Expr {
    /// Visits every node, parents before children.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Ident { .. } | ExprKind::Atom(_) => {}
            ExprKind::Select { operand, .. } => operand.walk(f),
            ExprKind::Index { operand, index } => {
                operand.walk(f);
                index.walk(f);
            }
            ExprKind::Call { target, args, .. } => {
                if let Some(t) = target {
                    t.walk(f);
                }
                args.iter().for_each(|a| a.walk(f));
            }
            ExprKind::Unary { operand, .. } => operand.walk(f),
            ExprKind::Binary { left, right, .. }
            | ExprKind::And(left, right)
            | ExprKind::Or(left, right) => {
                left.walk(f);
                right.walk(f);
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                condition.walk(f);
                then.walk(f);
                otherwise.walk(f);
            }
            ExprKind::List(items) => items.iter().for_each(|i| i.walk(f)),
            ExprKind::Map(entries) => entries.iter().for_each(|(k, v)| {
                k.walk(f);
                v.walk(f);
            }),
            ExprKind::Comprehension {
                range,
                filter,
                body,
                ..
            } => {
                range.walk(f);
                if let Some(p) = filter {
                    p.walk(f);
                }
                body.walk(f);
            }
        }
    }

    /// The names of a chain of plain field selections ending in an identifier
    /// (`a.b.c`), and whether the identifier was absolute (`.a.b.c`).
    pub fn ident_chain<'e>(&'e self, out: &mut Vec<&'e str>) -> Option<bool> {
        match &self.kind {
            ExprKind::Ident { name, absolute } => {
                out.push(name);
                Some(*absolute)
            }
            ExprKind::Select {
                operand,
                field,
                test: false,
            } => {
                let abs = operand.ident_chain(out)?;
                out.push(field);
                Some(abs)
            }
            _ => None,
        }
    }
}
