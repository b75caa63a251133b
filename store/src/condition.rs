//! The `condition:` language of SQL rules: a small CEL-style expression over
//! the columns of the query's first row (`cnt > 50`, `n_hosts >= 3 &&
//! secret_reads > 0`).
//!
//! Small on purpose: comparisons, `&&`, `||`, `!`, parentheses, numbers,
//! strings, `true`/`false`/`null` and column names. The query does the real
//! work; the condition only decides on its result. Column types are unknown
//! until run time (SQLite is dynamically typed), so the compile-time check
//! resolves every name against the query's result columns and rejects what
//! can never make sense (`"a" > 3`, `cnt && 1`); at run time a comparison of
//! mismatched values is simply false, never an error.

use rusqlite::types::ValueRef;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A parsed condition. Columns are indices into the query's result columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Str(String),
    Bool(bool),
    Null,
    Column(usize),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
}

/// Why a condition does not compile; `at` is a byte offset into it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("condition `{source_text}`: {message} (at offset {at})")]
pub struct ConditionError {
    pub source_text: String,
    pub message: String,
    pub at: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Num(n) => write!(f, "{n}"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Ident(s) => f.write_str(s),
            Tok::Op(o) => f.write_str(o),
            Tok::LParen => f.write_str("("),
            Tok::RParen => f.write_str(")"),
        }
    }
}

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, (String, usize)> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'(' => {
                out.push((Tok::LParen, start));
                i += 1;
            }
            b')' => {
                out.push((Tok::RParen, start));
                i += 1;
            }
            b'0'..=b'9' | b'.' => {
                while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                    i += 1;
                }
                let text = &src[start..i];
                let n: f64 = text
                    .parse()
                    .map_err(|_| (format!("`{text}` is not a number"), start))?;
                out.push((Tok::Num(n), start));
            }
            b'"' | b'\'' => {
                let quote = c;
                i += 1;
                let mut s = String::new();
                loop {
                    let Some(&b) = bytes.get(i) else {
                        return Err(("unterminated string".into(), start));
                    };
                    if b == quote {
                        i += 1;
                        break;
                    }
                    if b == b'\\' {
                        let esc = bytes.get(i + 1).copied();
                        s.push(match esc {
                            Some(b'n') => '\n',
                            Some(b't') => '\t',
                            Some(b'\\') => '\\',
                            Some(b'"') => '"',
                            Some(b'\'') => '\'',
                            _ => return Err(("unknown escape in string".into(), i)),
                        });
                        i += 2;
                        continue;
                    }
                    // Copy one whole UTF-8 character.
                    let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
                    s.push(ch);
                    i += ch.len_utf8();
                }
                out.push((Tok::Str(s), start));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                out.push((Tok::Ident(src[start..i].to_string()), start));
            }
            _ => {
                let two = src.get(i..i + 2).unwrap_or("");
                let op = match two {
                    "==" => Some("=="),
                    "!=" => Some("!="),
                    "<=" => Some("<="),
                    ">=" => Some(">="),
                    "&&" => Some("&&"),
                    "||" => Some("||"),
                    _ => None,
                };
                if let Some(op) = op {
                    out.push((Tok::Op(op), start));
                    i += 2;
                    continue;
                }
                let op = match c {
                    b'<' => "<",
                    b'>' => ">",
                    b'!' => "!",
                    b'-' => "-",
                    b'=' => {
                        return Err(("`=` is not an operator here; compare with `==`".into(), i))
                    }
                    _ => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        return Err((format!("unexpected character `{ch}`"), i));
                    }
                };
                out.push((Tok::Op(op), start));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Static type of a sub-expression, for the compile-time check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Num,
    Str,
    Bool,
    Null,
    /// A column: its type is known only at run time.
    Dyn,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Num => "a number",
            Ty::Str => "a string",
            Ty::Bool => "a boolean",
            Ty::Null => "null",
            Ty::Dyn => "a column",
        }
    }
}

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    columns: &'a [String],
    end: usize,
}

type PResult = Result<(Expr, Ty), (String, usize)>;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn at(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.1)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn boolean(&self, ty: Ty, what: &str, at: usize) -> Result<(), (String, usize)> {
        match ty {
            Ty::Bool | Ty::Dyn => Ok(()),
            other => Err((format!("{what} needs a boolean, got {}", other.name()), at)),
        }
    }

    fn or(&mut self) -> PResult {
        let at = self.at();
        let (mut lhs, mut lty) = self.and()?;
        while self.eat_op("||") {
            let rat = self.at();
            let (rhs, rty) = self.and()?;
            self.boolean(lty, "`||`", at)?;
            self.boolean(rty, "`||`", rat)?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
            lty = Ty::Bool;
        }
        Ok((lhs, lty))
    }

    fn and(&mut self) -> PResult {
        let at = self.at();
        let (mut lhs, mut lty) = self.unary()?;
        while self.eat_op("&&") {
            let rat = self.at();
            let (rhs, rty) = self.unary()?;
            self.boolean(lty, "`&&`", at)?;
            self.boolean(rty, "`&&`", rat)?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
            lty = Ty::Bool;
        }
        Ok((lhs, lty))
    }

    fn unary(&mut self) -> PResult {
        let at = self.at();
        if self.eat_op("!") {
            let (e, ty) = self.unary()?;
            self.boolean(ty, "`!`", at)?;
            return Ok((Expr::Not(Box::new(e)), Ty::Bool));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> PResult {
        let at = self.at();
        let (lhs, lty) = self.primary()?;
        let op = match self.peek() {
            Some(Tok::Op("==")) => CmpOp::Eq,
            Some(Tok::Op("!=")) => CmpOp::Ne,
            Some(Tok::Op("<")) => CmpOp::Lt,
            Some(Tok::Op("<=")) => CmpOp::Le,
            Some(Tok::Op(">")) => CmpOp::Gt,
            Some(Tok::Op(">=")) => CmpOp::Ge,
            _ => return Ok((lhs, lty)),
        };
        self.pos += 1;
        let (rhs, rty) = self.primary()?;
        let ordered = !matches!(op, CmpOp::Eq | CmpOp::Ne);
        let fixed = |t: Ty| !matches!(t, Ty::Dyn);
        let unordered = |t: Ty| matches!(t, Ty::Bool | Ty::Null);
        if ordered && (unordered(lty) || unordered(rty)) {
            let bad = if unordered(lty) { lty } else { rty };
            return Err((
                format!(
                    "`{}` orders numbers or strings, not {}",
                    op.as_str(),
                    bad.name()
                ),
                at,
            ));
        }
        if fixed(lty) && fixed(rty) && lty != rty && lty != Ty::Null && rty != Ty::Null {
            return Err((
                format!(
                    "`{}` compares {} with {}: always false",
                    op.as_str(),
                    lty.name(),
                    rty.name()
                ),
                at,
            ));
        }
        if matches!(
            self.peek(),
            Some(Tok::Op("==" | "!=" | "<" | "<=" | ">" | ">="))
        ) {
            return Err((
                "comparisons do not chain; join them with `&&`".into(),
                self.at(),
            ));
        }
        Ok((Expr::Cmp(op, Box::new(lhs), Box::new(rhs)), Ty::Bool))
    }

    fn primary(&mut self) -> PResult {
        let at = self.at();
        let Some(tok) = self.toks.get(self.pos).map(|t| t.0.clone()) else {
            return Err(("unexpected end of the condition".into(), at));
        };
        self.pos += 1;
        match tok {
            Tok::Num(n) => Ok((Expr::Num(n), Ty::Num)),
            Tok::Op("-") => match self.toks.get(self.pos).map(|t| &t.0) {
                Some(Tok::Num(n)) => {
                    let n = -*n;
                    self.pos += 1;
                    Ok((Expr::Num(n), Ty::Num))
                }
                _ => Err(("`-` only negates a number literal".into(), at)),
            },
            Tok::Str(s) => Ok((Expr::Str(s), Ty::Str)),
            Tok::LParen => {
                let inner = self.or()?;
                if !matches!(self.peek(), Some(Tok::RParen)) {
                    return Err(("expected `)`".into(), self.at()));
                }
                self.pos += 1;
                Ok(inner)
            }
            Tok::Ident(name) => match name.as_str() {
                "true" => Ok((Expr::Bool(true), Ty::Bool)),
                "false" => Ok((Expr::Bool(false), Ty::Bool)),
                "null" => Ok((Expr::Null, Ty::Null)),
                _ => match self.columns.iter().position(|c| *c == name) {
                    Some(i) => Ok((Expr::Column(i), Ty::Dyn)),
                    None => Err((
                        format!(
                            "unknown column `{name}` (the query returns: {})",
                            self.columns.join(", ")
                        ),
                        at,
                    )),
                },
            },
            other => Err((format!("unexpected `{other}`"), at)),
        }
    }
}

impl Expr {
    /// Parses `src` and checks it against the query's result `columns`.
    pub fn parse(src: &str, columns: &[String]) -> Result<Expr, ConditionError> {
        let err = |(message, at): (String, usize)| ConditionError {
            source_text: src.to_string(),
            message,
            at,
        };
        let toks = lex(src).map_err(err)?;
        if toks.is_empty() {
            return Err(err(("the condition is empty".into(), 0)));
        }
        let mut p = Parser {
            toks,
            pos: 0,
            columns,
            end: src.len(),
        };
        let (expr, ty) = p.or().map_err(err)?;
        if p.pos < p.toks.len() {
            let (tok, at) = &p.toks[p.pos];
            return Err(err((
                format!("unexpected `{tok}` after the expression"),
                *at,
            )));
        }
        if !matches!(ty, Ty::Bool | Ty::Dyn) {
            return Err(err((
                format!("the condition is {}, not a boolean", ty.name()),
                0,
            )));
        }
        Ok(expr)
    }

    /// Evaluates over one result row. Never fails: mismatched types compare
    /// false, and a column used as a boolean is true when it is a non-zero
    /// number (SQLite's booleans are integers).
    pub fn eval(&self, row: &[ValueRef<'_>]) -> bool {
        truthy(&self.value(row))
    }

    fn value<'r>(&self, row: &[ValueRef<'r>]) -> Val<'r> {
        match self {
            Expr::Num(n) => Val::Num(*n),
            Expr::Str(s) => Val::Owned(s.clone()),
            Expr::Bool(b) => Val::Bool(*b),
            Expr::Null => Val::Null,
            Expr::Column(i) => match row.get(*i) {
                Some(ValueRef::Integer(n)) => Val::Num(*n as f64),
                Some(ValueRef::Real(n)) => Val::Num(*n),
                Some(ValueRef::Text(t)) => match std::str::from_utf8(t) {
                    Ok(s) => Val::Text(s),
                    Err(_) => Val::Other,
                },
                Some(ValueRef::Null) | None => Val::Null,
                Some(ValueRef::Blob(_)) => Val::Other,
            },
            Expr::Not(e) => Val::Bool(!e.eval(row)),
            Expr::And(a, b) => Val::Bool(a.eval(row) && b.eval(row)),
            Expr::Or(a, b) => Val::Bool(a.eval(row) || b.eval(row)),
            Expr::Cmp(op, a, b) => Val::Bool(compare(*op, &a.value(row), &b.value(row))),
        }
    }
}

enum Val<'r> {
    Num(f64),
    Text(&'r str),
    Owned(String),
    Bool(bool),
    Null,
    /// A blob or invalid text: equal to nothing.
    Other,
}

impl Val<'_> {
    fn text(&self) -> Option<&str> {
        match self {
            Val::Text(s) => Some(s),
            Val::Owned(s) => Some(s),
            _ => None,
        }
    }
}

fn truthy(v: &Val<'_>) -> bool {
    match v {
        Val::Bool(b) => *b,
        Val::Num(n) => *n != 0.0,
        _ => false,
    }
}

fn compare(op: CmpOp, a: &Val<'_>, b: &Val<'_>) -> bool {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b) {
        (Val::Num(x), Val::Num(y)) => x.partial_cmp(y),
        (Val::Bool(x), Val::Bool(y)) => Some(x.cmp(y)),
        (Val::Null, Val::Null) => Some(Ordering::Equal),
        _ => match (a.text(), b.text()) {
            (Some(x), Some(y)) => Some(x.cmp(y)),
            _ => None,
        },
    };
    // Booleans and nulls only support (in)equality; the checker rejects
    // ordering them, and this keeps run time consistent with it.
    let orderable =
        !matches!(a, Val::Bool(_) | Val::Null) && !matches!(b, Val::Bool(_) | Val::Null);
    match (op, ord) {
        (CmpOp::Eq, o) => o == Some(Ordering::Equal),
        (CmpOp::Ne, o) => o != Some(Ordering::Equal),
        (_, None) => false,
        (_, Some(_)) if !orderable => false,
        (CmpOp::Lt, Some(o)) => o == Ordering::Less,
        (CmpOp::Le, Some(o)) => o != Ordering::Greater,
        (CmpOp::Gt, Some(o)) => o == Ordering::Greater,
        (CmpOp::Ge, Some(o)) => o != Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<String> {
        ["cnt", "n_hosts", "secret_reads", "tool"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn run(src: &str, row: &[ValueRef<'_>]) -> bool {
        Expr::parse(src, &cols()).unwrap().eval(row)
    }

    #[test]
    fn evaluates_comparisons_and_logic() {
        let row = [
            ValueRef::Integer(51),
            ValueRef::Integer(3),
            ValueRef::Real(1.0),
            ValueRef::Text(b"Bash"),
        ];
        assert!(run("cnt > 50", &row));
        assert!(!run("cnt > 51", &row));
        assert!(run("cnt >= 51 && cnt <= 51", &row));
        assert!(run("n_hosts >= 3 && secret_reads > 0", &row));
        assert!(run("!(cnt < 10) || false", &row));
        assert!(run("tool == \"Bash\" && tool != 'bash'", &row));
        assert!(run("secret_reads", &row));
        assert!(run("cnt > -1.5", &row));
        assert!(!run("tool == null", &row));
        assert!(run("(cnt > 100 || n_hosts == 3) && !(tool == 'x')", &row));
    }

    #[test]
    fn mismatched_runtime_types_are_false_not_errors() {
        let row = [
            ValueRef::Text(b"many"),
            ValueRef::Null,
            ValueRef::Blob(b"\x00"),
            ValueRef::Integer(0),
        ];
        assert!(!run("cnt > 50", &row));
        assert!(!run("n_hosts >= 3", &row));
        assert!(run("n_hosts == null", &row));
        assert!(!run("secret_reads == 'x'", &row));
        assert!(!run("tool", &row));
        assert!(!run("cnt", &row));
    }

    #[test]
    fn precedence_is_and_over_or() {
        let row = [
            ValueRef::Integer(1),
            ValueRef::Integer(0),
            ValueRef::Integer(0),
            ValueRef::Integer(0),
        ];
        // true || (false && false)
        assert!(run("cnt == 1 || n_hosts == 1 && secret_reads == 1", &row));
    }

    #[test]
    fn rejects_what_cannot_make_sense() {
        let bad = [
            ("cnt > ", "end"),
            ("cnt >> 5", "unexpected"),
            ("cnt = 5", "`==`"),
            ("cnt_total > 5", "unknown column `cnt_total`"),
            ("\"a\" > 3", "compares a string with a number"),
            ("cnt > 3 && 5", "needs a boolean"),
            ("5", "not a boolean"),
            ("cnt > true", "not a boolean"),
            ("1 < cnt < 5", "do not chain"),
            ("(cnt > 1", "expected `)`"),
            ("cnt > 1 )", "after the expression"),
            ("'open", "unterminated"),
            ("cnt > 1 # x", "unexpected character"),
            ("", "empty"),
            ("- cnt", "negates"),
        ];
        for (src, want) in bad {
            let e = Expr::parse(src, &cols()).expect_err(src);
            assert!(e.to_string().contains(want), "{src}: {e}");
        }
    }
}
