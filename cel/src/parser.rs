//! Recursive-descent parser with CEL's precedence, from loosest to
//! tightest: `?:`, `||`, `&&`, relations (`< <= >= > == != in`), `+ -`,
//! `* / %`, unary `! -`, member access (`.f`, `.f()`, `[i]`).
//! Macros (`has`, `all`, `exists`, `exists_one`, `map`, `filter`) are
//! expanded here, as the specification does.

use crate::ast::{BinaryOp, Expr, ExprKind, Literal, MacroKind, Span, UnaryOp};
use crate::error::ParseError;
use crate::lexer::{tokenize, Tok, Token};

/// Deeper nesting (of the source, and of the resulting tree) is rejected
/// rather than risking the stack of the recursive passes.
const MAX_DEPTH: usize = 100;

const RESERVED: [&str; 20] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
];

pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let tokens = tokenize(src)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        next_id: 1,
        depth: 0,
        heights: std::collections::HashMap::new(),
        too_deep: None,
    };
    let e = p.expr();
    if let Some(span) = p.too_deep {
        return Err(ParseError {
            message: "expression nests too deeply".into(),
            span,
        });
    }
    let e = e?;
    match &p.peek().tok {
        Tok::Eof => Ok(e),
        _ => Err(p.unexpected("end of expression")),
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    next_id: u32,
    depth: usize,
    /// Height of every node built so far, by id.
    heights: std::collections::HashMap<u32, u32>,
    too_deep: Option<Span>,
}

fn join(a: Span, b: Span) -> Span {
    Span {
        start: a.start.min(b.start),
        end: a.end.max(b.end),
    }
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    /// Takes the current token. Past the end it keeps returning `Eof`
    /// (while still counting, so that stepping back one token after a
    /// `bump` is always valid).
    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn is(&self, p: &str) -> bool {
        matches!(&self.peek().tok, Tok::Punct(q) if *q == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<Span, ParseError> {
        if self.is(p) {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(&format!("'{p}'")))
        }
    }

    fn unexpected(&self, wanted: &str) -> ParseError {
        let t = self.peek();
        let found = match &t.tok {
            Tok::Eof => "end of input".to_string(),
            Tok::Punct(p) => format!("'{p}'"),
            Tok::Ident(i) => format!("'{i}'"),
            _ => "a literal".to_string(),
        };
        ParseError {
            message: format!("expected {wanted}, found {found}"),
            span: if t.tok == Tok::Eof {
                Span {
                    start: t.span.start.saturating_sub(1),
                    end: t.span.start,
                }
            } else {
                t.span
            },
        }
    }

    fn mk(&mut self, span: Span, kind: ExprKind) -> Expr {
        let id = self.next_id;
        self.next_id += 1;
        let h = Expr::height(&kind, |c| self.heights.get(&c.id).copied().unwrap_or(1));
        self.heights.insert(id, h);
        if h as usize > MAX_DEPTH && self.too_deep.is_none() {
            self.too_deep = Some(span);
        }
        Expr { id, span, kind }
    }

    /// Stops a left-recursive loop (`a + a + ...`, `x.f.f...`) as soon as
    /// the tree it builds is too deep.
    fn guard(&self) -> Result<(), ParseError> {
        match self.too_deep {
            Some(span) => Err(ParseError {
                message: "expression nests too deeply".into(),
                span,
            }),
            None => Ok(()),
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError {
                message: "expression nests too deeply".into(),
                span: self.peek().span,
            });
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.enter()?;
        let cond = self.or()?;
        let out = if self.eat("?") {
            let then = self.or()?;
            self.expect(":")?;
            let otherwise = self.expr()?;
            let span = join(cond.span, otherwise.span);
            self.mk(
                span,
                ExprKind::Conditional {
                    condition: Box::new(cond),
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                },
            )
        } else {
            cond
        };
        self.depth -= 1;
        Ok(out)
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.and()?;
        while self.eat("||") {
            let right = self.and()?;
            self.guard()?;
            let span = join(left.span, right.span);
            left = self.mk(span, ExprKind::Or(Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.relation()?;
        while self.eat("&&") {
            let right = self.relation()?;
            self.guard()?;
            let span = join(left.span, right.span);
            left = self.mk(span, ExprKind::And(Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn relation(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.addition()?;
        loop {
            let op = match &self.peek().tok {
                Tok::Punct("<") => BinaryOp::Lt,
                Tok::Punct("<=") => BinaryOp::Le,
                Tok::Punct(">") => BinaryOp::Gt,
                Tok::Punct(">=") => BinaryOp::Ge,
                Tok::Punct("==") => BinaryOp::Eq,
                Tok::Punct("!=") => BinaryOp::Ne,
                Tok::Ident(i) if i == "in" => BinaryOp::In,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.addition()?;
            self.guard()?;
            left = self.binary(op, left, right);
        }
    }

    fn binary(&mut self, op: BinaryOp, left: Expr, right: Expr) -> Expr {
        let span = join(left.span, right.span);
        self.mk(
            span,
            ExprKind::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            },
        )
    }

    fn addition(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.multiplication()?;
        loop {
            let op = match &self.peek().tok {
                Tok::Punct("+") => BinaryOp::Add,
                Tok::Punct("-") => BinaryOp::Sub,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.multiplication()?;
            self.guard()?;
            left = self.binary(op, left, right);
        }
    }

    fn multiplication(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.unary()?;
        loop {
            let op = match &self.peek().tok {
                Tok::Punct("*") => BinaryOp::Mul,
                Tok::Punct("/") => BinaryOp::Div,
                Tok::Punct("%") => BinaryOp::Rem,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            self.guard()?;
            left = self.binary(op, left, right);
        }
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        let start = self.peek().span;
        if self.is("!") || self.is("-") {
            let op = if self.is("!") {
                UnaryOp::Not
            } else {
                UnaryOp::Neg
            };
            let mut count = 0usize;
            while self.is(if op == UnaryOp::Not { "!" } else { "-" }) {
                self.bump();
                count += 1;
                if count > MAX_DEPTH {
                    return Err(ParseError {
                        message: "expression nests too deeply".into(),
                        span: start,
                    });
                }
            }
            // A minus directly before a number literal is part of the
            // literal (the grammar's `-? NUM_INT`), which is how int64's
            // minimum is written.
            let mut operand = match (&self.peek().tok, op) {
                (Tok::Int(v), UnaryOp::Neg) => {
                    let v = *v;
                    let t = self.bump();
                    count -= 1;
                    let lit = if v <= i64::MAX as u64 + 1 {
                        (v as i64).wrapping_neg()
                    } else {
                        return Err(ParseError {
                            message: "integer literal out of range".into(),
                            span: t.span,
                        });
                    };
                    let e = self.mk(join(start, t.span), ExprKind::Literal(Literal::Int(lit)));
                    self.member_suffix(e)?
                }
                (Tok::Double(v), UnaryOp::Neg) => {
                    let v = *v;
                    let t = self.bump();
                    count -= 1;
                    let e = self.mk(join(start, t.span), ExprKind::Literal(Literal::Double(-v)));
                    self.member_suffix(e)?
                }
                _ => self.member()?,
            };
            for _ in 0..count {
                let span = join(start, operand.span);
                operand = self.mk(
                    span,
                    ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                );
            }
            return Ok(operand);
        }
        self.member()
    }

    fn member(&mut self) -> Result<Expr, ParseError> {
        let e = self.primary()?;
        self.member_suffix(e)
    }

    fn member_suffix(&mut self, mut e: Expr) -> Result<Expr, ParseError> {
        loop {
            self.guard()?;
            if self.eat(".") {
                let t = self.bump();
                let name = match t.tok {
                    Tok::Ident(n) => n,
                    Tok::QuotedIdent(n) => n,
                    _ => {
                        self.pos -= 1;
                        return Err(self.unexpected("a field name"));
                    }
                };
                if self.is("(") {
                    self.bump();
                    let args = self.expr_list(")")?;
                    let end = self.expect(")")?;
                    let span = join(e.span, end);
                    e = self.receiver_call(span, e, name, args)?;
                } else {
                    let span = join(e.span, t.span);
                    e = self.mk(
                        span,
                        ExprKind::Select {
                            operand: Box::new(e),
                            field: name,
                            test: false,
                        },
                    );
                }
            } else if self.eat("[") {
                let index = self.expr()?;
                let end = self.expect("]")?;
                let span = join(e.span, end);
                e = self.mk(
                    span,
                    ExprKind::Index {
                        operand: Box::new(e),
                        index: Box::new(index),
                    },
                );
            } else {
                return Ok(e);
            }
        }
    }

    fn expr_list(&mut self, close: &str) -> Result<Vec<Expr>, ParseError> {
        let mut out = Vec::new();
        if self.is(close) {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if !self.eat(",") || self.is(close) {
                return Ok(out);
            }
        }
    }

    fn receiver_call(
        &mut self,
        span: Span,
        target: Expr,
        function: String,
        mut args: Vec<Expr>,
    ) -> Result<Expr, ParseError> {
        let kind = match (function.as_str(), args.len()) {
            ("all", 2) => Some(MacroKind::All),
            ("exists", 2) => Some(MacroKind::Exists),
            ("exists_one", 2) => Some(MacroKind::ExistsOne),
            ("map", 2 | 3) => Some(MacroKind::Map),
            ("filter", 2) => Some(MacroKind::Filter),
            _ => None,
        };
        let Some(kind) = kind else {
            return Ok(self.mk(
                span,
                ExprKind::Call {
                    target: Some(Box::new(target)),
                    function,
                    args,
                },
            ));
        };
        let var = match &args[0].kind {
            ExprKind::Ident {
                name,
                absolute: false,
            } => name.clone(),
            _ => {
                return Err(ParseError {
                    message: format!("{function}() variable must be a simple name"),
                    span: args[0].span,
                })
            }
        };
        let body = args.pop().map(Box::new);
        let filter = if args.len() == 2 {
            args.pop().map(Box::new)
        } else {
            None
        };
        let Some(body) = body else {
            return Err(ParseError {
                message: format!("{function}() needs a body"),
                span,
            });
        };
        Ok(self.mk(
            span,
            ExprKind::Comprehension {
                kind,
                range: Box::new(target),
                var,
                filter,
                body,
            },
        ))
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let t = self.bump();
        let lit = |l| Ok(ExprKind::Literal(l));
        let kind: Result<ExprKind, ParseError> = match t.tok {
            Tok::Int(v) => {
                if v > i64::MAX as u64 {
                    return Err(ParseError {
                        message: "integer literal out of range".into(),
                        span: t.span,
                    });
                }
                lit(Literal::Int(v as i64))
            }
            Tok::Uint(v) => lit(Literal::Uint(v)),
            Tok::Double(v) => lit(Literal::Double(v)),
            Tok::String(s) => lit(Literal::String(s)),
            Tok::Bytes(b) => lit(Literal::Bytes(b)),
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(e);
            }
            Tok::Punct("[") => {
                self.enter()?;
                let items = self.expr_list("]")?;
                let end = self.expect("]")?;
                self.depth -= 1;
                return Ok(self.mk(join(t.span, end), ExprKind::List(items)));
            }
            Tok::Punct("{") => {
                self.enter()?;
                let mut entries = Vec::new();
                while !self.is("}") {
                    let k = self.expr()?;
                    self.expect(":")?;
                    let v = self.expr()?;
                    entries.push((k, v));
                    if !self.eat(",") {
                        break;
                    }
                }
                let end = self.expect("}")?;
                self.depth -= 1;
                return Ok(self.mk(join(t.span, end), ExprKind::Map(entries)));
            }
            Tok::Punct(".") => {
                let n = self.bump();
                match n.tok {
                    Tok::Ident(name) if !RESERVED.contains(&name.as_str()) => {
                        return self.ident_or_call(join(t.span, n.span), name, true)
                    }
                    _ => {
                        self.pos -= 1;
                        Err(self.unexpected("an identifier"))
                    }
                }
            }
            Tok::Ident(name) => match name.as_str() {
                "true" => lit(Literal::Bool(true)),
                "false" => lit(Literal::Bool(false)),
                "null" => lit(Literal::Null),
                n if RESERVED.contains(&n) => Err(ParseError {
                    message: format!("reserved word '{n}' cannot be used as an identifier"),
                    span: t.span,
                }),
                _ => return self.ident_or_call(t.span, name, false),
            },
            _ => {
                self.pos -= 1;
                Err(self.unexpected("an expression"))
            }
        };
        let kind = kind?;
        Ok(self.mk(t.span, kind))
    }

    fn ident_or_call(
        &mut self,
        span: Span,
        name: String,
        absolute: bool,
    ) -> Result<Expr, ParseError> {
        if !self.is("(") {
            return Ok(self.mk(span, ExprKind::Ident { name, absolute }));
        }
        self.bump();
        let mut args = self.expr_list(")")?;
        let end = self.expect(")")?;
        let span = join(span, end);
        if name == "has" && !absolute {
            if args.len() != 1 {
                return Err(ParseError {
                    message: "has() takes exactly one argument".into(),
                    span,
                });
            }
            let mut arg = args.remove(0);
            return match &mut arg.kind {
                ExprKind::Select { test, .. } => {
                    *test = true;
                    Ok(self.mk(span, arg.kind))
                }
                _ => Err(ParseError {
                    message: "has() argument must be a field selection".into(),
                    span: arg.span,
                }),
            };
        }
        Ok(self.mk(
            span,
            ExprKind::Call {
                target: None,
                function: name,
                args,
            },
        ))
    }
}
