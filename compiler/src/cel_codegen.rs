//! Generated Rust for CEL rules.
//!
//! The common subset becomes type-specialised straight-line code that
//! reads the event in place and never allocates: `&&`, `||`, `!`, atoms,
//! `has()` on argument/result/param paths, comparisons of event fields (or
//! their `size()`) with literals, and `in` over a list of literals. Every
//! other boolean sub-expression (macros, arithmetic, conversions, canonical
//! fields outside string calls, …) is handed to the interpreter by node id,
//! so generated and interpreted rules share one semantics. Values are
//! `Option<bool>`/`Option<Scalar>`, `None` standing for a CEL error.

use crate::cel::event_field;
use parallax_cel::ast::{BinaryOp, Expr, ExprKind, Literal, UnaryOp};
use parallax_runtime::{Canonical, CelExpr, FieldRef, JsonRoot, TopField};
use proc_macro2::{Literal as Lit, TokenStream};
use quote::quote;

/// An expression of type `bool` for the whole rule.
pub fn rule_tokens(index: u32, c: &CelExpr) -> TokenStream {
    let body = Gen { index }.boolean(&c.expr);
    quote!((#body) == Some(true))
}

/// Whether a rule's expression is generated entirely natively (no
/// interpreter call). For tests and `compile --emit stats`-style reports.
pub fn fully_native(c: &CelExpr) -> bool {
    !rule_tokens(0, c).to_string().contains("cel_node")
}

struct Gen {
    index: u32,
}

fn top_tokens(t: TopField) -> TokenStream {
    match t {
        TopField::Stage => quote!(TopField::Stage),
        TopField::SessionId => quote!(TopField::SessionId),
        TopField::Channel => quote!(TopField::Channel),
        TopField::UserId => quote!(TopField::UserId),
        TopField::MessageText => quote!(TopField::MessageText),
        TopField::ToolName => quote!(TopField::ToolName),
        TopField::Model => quote!(TopField::Model),
        TopField::ResponseText => quote!(TopField::ResponseText),
        TopField::MemoryKey => quote!(TopField::MemoryKey),
        TopField::MemoryText => quote!(TopField::MemoryText),
        TopField::RetrievalQuery => quote!(TopField::RetrievalQuery),
        TopField::Tenant => quote!(TopField::Tenant),
    }
}

fn canonical_tokens(c: Canonical) -> TokenStream {
    match c {
        Canonical::Command => quote!(Canonical::Command),
        Canonical::Path => quote!(Canonical::Path),
        Canonical::WritePath => quote!(Canonical::WritePath),
        Canonical::Url => quote!(Canonical::Url),
        Canonical::Content => quote!(Canonical::Content),
        Canonical::Query => quote!(Canonical::Query),
        Canonical::Text => quote!(Canonical::Text),
        Canonical::Executable => quote!(Canonical::Executable),
        Canonical::Shell => quote!(Canonical::Shell),
        Canonical::Argv => quote!(Canonical::Argv),
        Canonical::Program => quote!(Canonical::Program),
        Canonical::Redirect => quote!(Canonical::Redirect),
        Canonical::Code => quote!(Canonical::Code),
        Canonical::Decoded => quote!(Canonical::Decoded),
        Canonical::ReadPath => quote!(Canonical::ReadPath),
    }
}

fn root_tokens(r: JsonRoot) -> TokenStream {
    match r {
        JsonRoot::ToolArgs => quote!(JsonRoot::ToolArgs),
        JsonRoot::ToolResult => quote!(JsonRoot::ToolResult),
        JsonRoot::Params => quote!(JsonRoot::Params),
        JsonRoot::Documents => quote!(JsonRoot::Documents),
    }
}

fn literal_scalar(l: &Literal) -> Option<TokenStream> {
    Some(match l {
        Literal::Null => quote!(Scalar::Null),
        Literal::Bool(b) => quote!(Scalar::Bool(#b)),
        Literal::Int(i) => {
            let i = Lit::i64_suffixed(*i);
            quote!(Scalar::Int(#i))
        }
        Literal::Uint(u) => {
            let u = Lit::u64_suffixed(*u);
            quote!(Scalar::Uint(#u))
        }
        Literal::Double(d) => {
            // Bit-exact, and valid for infinities too.
            let bits = Lit::u64_suffixed(d.to_bits());
            quote!(Scalar::Double(f64::from_bits(#bits)))
        }
        Literal::String(s) => {
            let s = Lit::string(s);
            quote!(Scalar::Str(#s))
        }
        Literal::Bytes(_) => return None,
    })
}

fn cmp_tokens(op: BinaryOp) -> Option<TokenStream> {
    Some(match op {
        BinaryOp::Eq => quote!(Cmp::Eq),
        BinaryOp::Ne => quote!(Cmp::Ne),
        BinaryOp::Lt => quote!(Cmp::Lt),
        BinaryOp::Le => quote!(Cmp::Le),
        BinaryOp::Gt => quote!(Cmp::Gt),
        BinaryOp::Ge => quote!(Cmp::Ge),
        _ => return None,
    })
}

fn path_tokens(path: &[String]) -> TokenStream {
    let segs = path.iter().map(|s| Lit::string(s));
    quote!(&[#(#segs),*])
}

/// The canonical field an expression names, if it is one.
fn canonical(e: &Expr) -> Option<Canonical> {
    match event_field(e, &[])? {
        FieldRef::Canonical(c) => Some(c),
        _ => None,
    }
}

/// `a < b` is `b > a`.
fn mirror(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::Le => BinaryOp::Ge,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::Ge => BinaryOp::Le,
        other => other,
    }
}

fn literal_list(e: &Expr) -> Option<Vec<TokenStream>> {
    match &e.kind {
        ExprKind::List(items) => items
            .iter()
            .map(|x| match &x.kind {
                ExprKind::Literal(l) => literal_scalar(l),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn is_literal(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Literal(_))
}

impl Gen {
    fn fallback(&self, e: &Expr) -> TokenStream {
        let index = Lit::u32_unsuffixed(self.index);
        let node = Lit::u32_unsuffixed(e.id);
        quote!(i.cel_node(#index, #node))
    }

    /// `Option<bool>` tokens for a boolean expression.
    fn boolean(&self, e: &Expr) -> TokenStream {
        match &e.kind {
            ExprKind::Literal(Literal::Bool(b)) => quote!(Some(#b)),
            ExprKind::Atom(a) => {
                let index = Lit::u32_unsuffixed(self.index);
                let a = Lit::u32_unsuffixed(*a);
                quote!(i.cel_atom(#index, #a))
            }
            ExprKind::And(l, r) => {
                let (l, r) = (self.boolean(l), self.boolean(r));
                quote!(native::and(#l, || #r))
            }
            ExprKind::Or(l, r) => {
                let (l, r) = (self.boolean(l), self.boolean(r));
                quote!(native::or(#l, || #r))
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
            } => {
                let x = self.boolean(operand);
                quote!(native::not(#x))
            }
            ExprKind::Select {
                operand,
                field,
                test: true,
            } => match event_field(operand, &[]) {
                Some(FieldRef::Json { root, path }) => {
                    let root = root_tokens(root);
                    let path = path_tokens(&path);
                    let last = Lit::string(field);
                    quote!(native::has(i.event, #root, #path, #last))
                }
                _ => self.fallback(e),
            },
            ExprKind::Binary {
                op: BinaryOp::In,
                left,
                right,
            } if canonical(left).is_some() => match literal_list(right) {
                Some(items) => {
                    let c = canonical_tokens(canonical(left).unwrap_or(Canonical::Text));
                    quote!(native::canonical_in(i.event, #c, &[#(#items),*]))
                }
                None => self.fallback(e),
            },
            ExprKind::Binary { op, left, right }
                if (canonical(left).is_some() && is_literal(right))
                    || (canonical(right).is_some() && is_literal(left)) =>
            {
                // The helper takes the field on the left: mirror the
                // operator when it is written on the right.
                let (field, lit, op) = match canonical(left) {
                    Some(c) => (c, &**right, *op),
                    None => (
                        canonical(right).unwrap_or(Canonical::Text),
                        &**left,
                        mirror(*op),
                    ),
                };
                match (cmp_tokens(op), self.scalar(lit)) {
                    (Some(op), Some(lit)) => {
                        let c = canonical_tokens(field);
                        quote!(native::canonical_compare(i.event, #c, #op, #lit))
                    }
                    _ => self.fallback(e),
                }
            }
            ExprKind::Binary {
                op: BinaryOp::In,
                left,
                right,
            } => match (self.scalar(left), literal_list(right)) {
                (Some(l), Some(items)) => quote!(native::in_list(#l, &[#(#items),*])),
                _ => self.fallback(e),
            },
            ExprKind::Binary { op, left, right } if is_literal(left) || is_literal(right) => {
                match (cmp_tokens(*op), self.scalar(left), self.scalar(right)) {
                    (Some(op), Some(l), Some(r)) => quote!(native::compare(#l, #op, #r)),
                    _ => self.fallback(e),
                }
            }
            _ => self.fallback(e),
        }
    }

    /// `Option<Scalar>` tokens for a literal, an event field or its size.
    fn scalar(&self, e: &Expr) -> Option<TokenStream> {
        match &e.kind {
            ExprKind::Literal(l) => {
                let s = literal_scalar(l)?;
                Some(quote!(Some(#s)))
            }
            ExprKind::Ident { name, .. } if name == "timestamp" => {
                Some(quote!(native::timestamp(i.event)))
            }
            ExprKind::Call {
                target,
                function,
                args,
            } if function == "size" => {
                let subject = match (target, args.as_slice()) {
                    (Some(t), []) => &**t,
                    (None, [a]) => a,
                    _ => return None,
                };
                match event_field(subject, &[])? {
                    FieldRef::Top(t) => {
                        let t = top_tokens(t);
                        Some(quote!(native::str_size(native::top_scalar(i.event, #t))))
                    }
                    FieldRef::Json { root, path } => {
                        let root = root_tokens(root);
                        let path = path_tokens(&path);
                        Some(quote!(native::json_size(i.event, #root, #path)))
                    }
                    FieldRef::Canonical(c) => {
                        let c = canonical_tokens(c);
                        Some(quote!(native::canonical_size(i.event, #c)))
                    }
                }
            }
            // A classifier's score of an event field: read in place and
            // scored without allocating (parallax_runtime::classifier).
            ExprKind::Call {
                target: None,
                function,
                args,
            } if function == "injection_score" => {
                let [a] = args.as_slice() else {
                    return None;
                };
                match event_field(a, &[])? {
                    FieldRef::Top(t) => {
                        let t = top_tokens(t);
                        Some(quote!(parallax_runtime::classifier::score_top(i.event, #t)))
                    }
                    FieldRef::Canonical(c) => {
                        let c = canonical_tokens(c);
                        Some(quote!(parallax_runtime::classifier::score_canonical(i.event, #c)))
                    }
                    FieldRef::Json { root, path } => {
                        let root = root_tokens(root);
                        let path = path_tokens(&path);
                        Some(
                            quote!(parallax_runtime::classifier::score_json(i.event, #root, #path)),
                        )
                    }
                }
            }
            _ => match event_field(e, &[])? {
                FieldRef::Top(t) => {
                    let t = top_tokens(t);
                    Some(quote!(native::top_scalar(i.event, #t)))
                }
                FieldRef::Json { root, path } => {
                    let root = root_tokens(root);
                    let path = path_tokens(&path);
                    Some(quote!(native::json(i.event, #root, #path)))
                }
                FieldRef::Canonical(_) => None,
            },
        }
    }
}
