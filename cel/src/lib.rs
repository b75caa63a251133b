//! A Common Expression Language (CEL) implementation for Parallax rules.
//!
//! Source text is tokenized ([`lexer`]), parsed with CEL's precedence and
//! macro expansion ([`parser`]) into an [`ast::Expr`] with source spans,
//! optionally type-checked against declared variables ([`checker`]), and
//! evaluated with the specification's semantics ([`eval`]): errors are
//! values, numbers compare across kinds, integer arithmetic overflow is an
//! error, and `&&`/`||` absorb errors commutatively.

pub mod ast;
pub mod checker;
pub mod error;
pub mod eval;
pub mod functions;
pub mod lexer;
pub mod parser;
pub mod value;

pub use ast::{Expr, ExprKind, Span};
pub use checker::{check, CelType, Declarations};
pub use error::{CheckError, EvalError, ParseError, SourceError};
pub use eval::{Activation, Evaluator, RegexCache};
pub use value::{Key, Map, Type, Value};

/// A parsed expression ready to evaluate, with its `matches` regexes
/// compiled.
#[derive(Debug, Clone)]
pub struct Program {
    pub source: String,
    pub expr: Expr,
    regexes: RegexCache,
}

impl Program {
    /// Parses `source`; the error shows the source with a caret.
    pub fn parse(source: &str) -> Result<Program, SourceError> {
        let expr = parser::parse(source)
            .map_err(|e| SourceError::new("syntax error", e.message, source, e.span))?;
        Ok(Program::from_expr(source, expr))
    }

    /// Wraps an already parsed (possibly rewritten) expression.
    pub fn from_expr(source: &str, expr: Expr) -> Program {
        let regexes = RegexCache::build(&expr);
        Program {
            source: source.to_string(),
            expr,
            regexes,
        }
    }

    /// Type-checks against `decls`; the error shows the source with a
    /// caret under the offending part.
    pub fn check(&self, decls: &Declarations) -> Result<CelType, SourceError> {
        check(&self.expr, decls)
            .map_err(|e| SourceError::new("type error", e.message, &self.source, e.span))
    }

    pub fn eval(&self, act: &dyn Activation) -> Result<Value, EvalError> {
        self.eval_in(act, "")
    }

    /// Evaluates the sub-expression with node id `id` on its own (it must
    /// not use comprehension variables); `None` if there is no such node.
    /// Generated code uses this for the parts it does not specialise.
    pub fn eval_node(&self, id: u32, act: &dyn Activation) -> Option<Result<Value, EvalError>> {
        fn find(e: &Expr, id: u32) -> Option<&Expr> {
            let mut found = None;
            e.walk(&mut |n| {
                if n.id == id && found.is_none() {
                    found = Some(n);
                }
            });
            found
        }
        let node = find(&self.expr, id)?;
        Some(Evaluator::new(act, "", &self.regexes).eval(node))
    }

    /// Evaluates with names resolved relative to `container` first.
    pub fn eval_in(&self, act: &dyn Activation, container: &str) -> Result<Value, EvalError> {
        Evaluator::new(act, container, &self.regexes).eval(&self.expr)
    }
}
