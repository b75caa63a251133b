//! Cheap preconditions of SQL rules ("guards"): the part of a rule's query
//! that reads the event alone, evaluated without the store.
//!
//! Most temporal rules only search the window for some kinds of call: the
//! egress rule for a network command or a URL, the lockout for a shell or
//! network call, the sweep for a read of a sensitive file. Their queries say
//! so in SQL that uses parameters only (`:command IS NOT NULL`,
//! `coalesce(:command, '') REGEXP '…'`). When that part is false for an
//! event, the rule cannot fire, whatever the window holds; asking SQLite is
//! then a wasted query on the store's thread.
//!
//! [`preconditions`] (run by the compiler) finds such parts in two shapes:
//!
//! - **A conjunct of the outermost `WHERE`** that reads parameters only.
//!   When it is not true, no row passes the `WHERE`.
//! - **The `WHEN` of a `CASE … ELSE literal END` column** when the query has
//!   no `FROM`: when it is not true every such column is its literal.
//!
//! It proves each one by rewriting the query as if the part were false (the
//! conjunct or the `CASE` becomes a constant, other parenthesised copies of
//! the same expression too) and requiring that what is left reads neither
//! the window nor a parameter outside the `WHERE`, then running it once and
//! checking that the rule's condition is false on its result. A query it
//! cannot read that way simply has no guard: the rule runs on every event of
//! its stages, as before.
//!
//! [`Guard`] evaluates a guard natively on the row the store would bind,
//! with SQLite's semantics for what guards may use (three-valued logic,
//! `IS [NOT] NULL`, `=`/`<>`, `IN`, ASCII case-insensitive `LIKE`, the
//! store's own `REGEXP`, `coalesce`/`ifnull`/`lower`/`upper`, `||`).
//! Anything else is not a guard. tests/sql_routing.rs checks the native
//! answer against SQLite's on every event of a realistic mix.

use crate::condition::Expr;
use crate::request::EventRow;
use crate::rule::{Param, PARAMS};
use crate::schema;
use regex_automata::meta::Regex;
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use std::borrow::Cow;
use std::sync::OnceLock;

// ---------------------------------------------------------------- lexing

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tk {
    /// A bare identifier or keyword, upper-cased.
    Word(String),
    /// A quoted identifier (`"x"`, `` `x` ``, `[x]`).
    Quoted(String),
    /// A named parameter as written (`:command`) or a positional `?`.
    Param(String),
    Str(String),
    Num(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tk: Tk,
    start: usize,
    end: usize,
}

const OPS: [&str; 22] = [
    "||", "<=", ">=", "<>", "!=", "==", "<<", ">>", "=", "<", ">", "+", "-", "*", "/", "%", "&",
    "|", "~", ".", ";", "!",
];

/// SQLite's tokens, enough to find clauses and read guard expressions;
/// `None` on anything it does not know (the query then has no guard).
pub(crate) fn lex(sql: &str) -> Option<Vec<Token>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let rest = sql.get(i + 2..)?;
            i += 2 + rest.find("*/")? + 2;
            continue;
        }
        let tk = if c == b'\'' {
            // '' is a quote inside the literal.
            let mut s = String::new();
            i += 1;
            loop {
                let rest = sql.get(i..)?;
                let q = rest.find('\'')?;
                s.push_str(&rest[..q]);
                i += q + 1;
                if b.get(i) == Some(&b'\'') {
                    s.push('\'');
                    i += 1;
                } else {
                    break;
                }
            }
            Tk::Str(s)
        } else if c == b'"' || c == b'`' || c == b'[' {
            let close = match c {
                b'[' => ']',
                b'"' => '"',
                _ => '`',
            };
            let rest = sql.get(i + 1..)?;
            let q = rest.find(close)?;
            i += 1 + q + 1;
            Tk::Quoted(rest[..q].to_string())
        } else if c == b':' || c == b'@' || c == b'$' {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if i == start + 1 {
                return None;
            }
            Tk::Param(sql[start..i].to_string())
        } else if c == b'?' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            Tk::Param(sql[start..i].to_string())
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            Tk::Num(sql[start..i].to_string())
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            Tk::Word(sql[start..i].to_ascii_uppercase())
        } else if c == b'(' {
            i += 1;
            Tk::LParen
        } else if c == b')' {
            i += 1;
            Tk::RParen
        } else if c == b',' {
            i += 1;
            Tk::Comma
        } else {
            let op = OPS.iter().find(|o| sql[i..].starts_with(**o))?;
            i += op.len();
            Tk::Op(op)
        };
        out.push(Token { tk, start, end: i });
    }
    Some(out)
}

fn is_word(t: Option<&Token>, w: &str) -> bool {
    matches!(t, Some(Token { tk: Tk::Word(x), .. }) if x == w)
}

/// Nesting depth before each token: parentheses and `CASE … END`.
fn depths(toks: &[Token]) -> Vec<i32> {
    let mut d = 0;
    toks.iter()
        .map(|t| {
            let here = match &t.tk {
                Tk::RParen => d - 1,
                Tk::Word(w) if w == "END" => d - 1,
                _ => d,
            };
            d = match &t.tk {
                Tk::LParen => d + 1,
                Tk::Word(w) if w == "CASE" => d + 1,
                Tk::RParen => d - 1,
                Tk::Word(w) if w == "END" => d - 1,
                _ => d,
            };
            here
        })
        .collect()
}

/// Index after the balanced group opened at `open`.
fn skip_group(toks: &[Token], open: usize) -> Option<usize> {
    let mut d = 0;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tk {
            Tk::LParen => d += 1,
            Tk::RParen => {
                d -= 1;
                if d == 0 {
                    return Some(k + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits `range` of `toks` at depth-`d` separators `sep`.
fn split_at(
    toks: &[Token],
    depth: &[i32],
    range: std::ops::Range<usize>,
    d: i32,
    sep: impl Fn(&Tk) -> bool,
) -> Vec<std::ops::Range<usize>> {
    let mut parts = Vec::new();
    let mut from = range.start;
    for k in range.clone() {
        if depth[k] == d && sep(&toks[k].tk) {
            parts.push(from..k);
            from = k + 1;
        }
    }
    parts.push(from..range.end);
    parts
}

// ---------------------------------------------------------------- finding

/// What the outermost SELECT of a query is made of (token ranges).
struct Outer {
    /// Index of the outer `SELECT`.
    select: usize,
    projection: std::ops::Range<usize>,
    from: Option<std::ops::Range<usize>>,
    where_: Option<std::ops::Range<usize>>,
    /// GROUP BY … to the end (anything after the WHERE).
    tail: std::ops::Range<usize>,
}

fn outer(toks: &[Token], depth: &[i32]) -> Option<Outer> {
    let mut i = 0;
    if is_word(toks.first(), "WITH") {
        i = 1;
        if is_word(toks.get(i), "RECURSIVE") {
            i += 1;
        }
        loop {
            i += 1; // past the CTE's name
            if matches!(toks.get(i)?.tk, Tk::LParen) {
                i = skip_group(toks, i)?;
            }
            if !is_word(toks.get(i), "AS") {
                return None;
            }
            i += 1;
            if is_word(toks.get(i), "NOT") {
                i += 1;
            }
            if is_word(toks.get(i), "MATERIALIZED") {
                i += 1;
            }
            if !matches!(toks.get(i)?.tk, Tk::LParen) {
                return None;
            }
            i = skip_group(toks, i)?;
            if matches!(toks.get(i)?.tk, Tk::Comma) {
                i += 1;
                continue;
            }
            break;
        }
    }
    if !is_word(toks.get(i), "SELECT") || depth[i] != 0 {
        return None;
    }
    let select = i;
    let mut end = toks.len();
    if matches!(toks.last()?.tk, Tk::Op(";")) {
        end -= 1;
    }
    let mut clauses = Vec::new();
    for k in select + 1..end {
        if depth[k] != 0 {
            continue;
        }
        match &toks[k].tk {
            Tk::Word(w) if ["UNION", "INTERSECT", "EXCEPT", "VALUES"].contains(&w.as_str()) => {
                return None
            }
            Tk::Word(w)
                if [
                    "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "WINDOW",
                ]
                .contains(&w.as_str()) =>
            {
                clauses.push((w.clone(), k))
            }
            Tk::Op(";") => return None,
            _ => {}
        }
    }
    let next = |at: usize| clauses.iter().map(|c| c.1).find(|&k| k > at).unwrap_or(end);
    let find = |name: &str| clauses.iter().find(|c| c.0 == name).map(|c| c.1);
    let first = clauses.first().map(|c| c.1).unwrap_or(end);
    let from = find("FROM").map(|k| k + 1..next(k));
    let where_ = find("WHERE").map(|k| k + 1..next(k));
    let tail_start = match &where_ {
        Some(w) => w.end,
        None => from.as_ref().map(|f| f.end).unwrap_or(first),
    };
    Some(Outer {
        select,
        projection: select + 1..first,
        from,
        where_,
        tail: tail_start..end,
    })
}

/// The rule's guards (each a SQL expression over parameters only; the rule
/// can fire only when every one is true), or none when the query has no part
/// that can be read and proved as one. Never an error: a query it cannot
/// read has no guard.
pub fn preconditions(query: &str, condition: &str) -> Vec<String> {
    find(query, condition).unwrap_or_default()
}

fn find(query: &str, condition: &str) -> Option<Vec<String>> {
    let toks = lex(query)?;
    let depth = depths(&toks);
    if depth.iter().any(|&d| d < 0) {
        return None;
    }
    let o = outer(&toks, &depth)?;
    let text = |r: &std::ops::Range<usize>| &query[toks[r.start].start..toks[r.end - 1].end];
    let has = |r: &std::ops::Range<usize>, f: &dyn Fn(&Tk) -> bool| {
        toks[r.clone()].iter().any(|t| f(&t.tk))
    };
    let reads_params_or_window = |r: &std::ops::Range<usize>| {
        has(r, &|t| {
            matches!(t, Tk::Param(_)) || matches!(t, Tk::Word(w) if w == "SELECT")
        })
    };
    // (byte range to replace, replacement), and the guards.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut guards: Vec<String> = Vec::new();
    if let Some(w) = &o.where_ {
        if w.is_empty() {
            return None;
        }
        if reads_params_or_window(&o.projection) || reads_params_or_window(&o.tail) {
            return None;
        }
        // BETWEEN … AND … would split wrongly; such a WHERE has no guard.
        if has(w, &|t| matches!(t, Tk::Word(x) if x == "BETWEEN")) {
            return None;
        }
        for part in split_at(
            &toks,
            &depth,
            w.clone(),
            0,
            |t| matches!(t, Tk::Word(x) if x == "AND"),
        ) {
            if part.is_empty() {
                return None;
            }
            let g = text(&part);
            if Guard::parse(g).is_ok() {
                guards.push(g.to_string());
                edits.push((toks[part.start].start..toks[part.end - 1].end, "0".into()));
            }
        }
    } else if o.from.is_none() && o.select == 0 && o.tail.is_empty() {
        let mut guard: Option<Vec<Tk>> = None;
        let mut g_text: Option<String> = None;
        for item in split_at(&toks, &depth, o.projection.clone(), 0, |t| {
            matches!(t, Tk::Comma)
        }) {
            if item.is_empty() || !is_word(toks.get(item.start), "CASE") {
                continue;
            }
            let c = item.start;
            let d = depth[c] + 1;
            let at = |w: &str| {
                (c + 1..item.end)
                    .filter(|&k| depth[k] == d && is_word(toks.get(k), w))
                    .collect::<Vec<_>>()
            };
            let (when, then, else_, end) = (
                at("WHEN"),
                at("THEN"),
                at("ELSE"),
                (c + 1..item.end).find(|&k| depth[k] == depth[c] && is_word(toks.get(k), "END")),
            );
            let (Some(end), [when], [then], [else_]) =
                (end, when.as_slice(), then.as_slice(), else_.as_slice())
            else {
                continue;
            };
            if !(when + 1 < *then && then < else_ && else_ + 1 < end) || *when != c + 1 {
                continue;
            }
            let g = when + 1..*then;
            if Guard::parse(text(&g)).is_err() {
                continue;
            }
            // `CASE WHEN g THEN literal ELSE (search) END`: the search runs
            // only when g is not true, so that is the guard.
            let then_part = then + 1..*else_;
            let else_part = else_ + 1..end;
            let inverse = !reads_params_or_window(&then_part) && reads_params_or_window(&else_part);
            let (g_src, lit) = if inverse {
                (format!("({}) IS NOT 1", text(&g)), text(&then_part))
            } else {
                (text(&g).to_string(), text(&else_part))
            };
            let tks: Vec<Tk> = toks[g.clone()].iter().map(|t| t.tk.clone()).collect();
            match &guard {
                Some(prev) if *prev != tks => return None,
                Some(_) => {}
                None => {
                    guard = Some(tks);
                    g_text = Some(g_src);
                }
            }
            edits.push((toks[c].start..toks[end].end, format!("({lit})")));
        }
        let g = guard?;
        // Parenthesised copies of the same expression elsewhere are false
        // too (`(:command IS NOT NULL OR :url IS NOT NULL) AS dangerous`).
        let mut k = 0;
        while k + g.len() + 1 < toks.len() {
            let inside = k + 1..k + 1 + g.len();
            if matches!(toks[k].tk, Tk::LParen)
                && matches!(toks[inside.end].tk, Tk::RParen)
                && toks[inside.clone()].iter().map(|t| &t.tk).eq(g.iter())
                && !edits.iter().any(|(r, _)| r.contains(&toks[k].start))
            {
                edits.push((toks[k].start..toks[inside.end].end, "(0)".into()));
                k = inside.end + 1;
            } else {
                k += 1;
            }
        }
        guards.push(g_text?);
    } else {
        return None;
    }
    if guards.is_empty() {
        return None;
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0.start));
    let mut rewritten = query.to_string();
    for (r, with) in &edits {
        rewritten.replace_range(r.clone(), with);
    }
    if o.where_.is_none() {
        // What is left must be constant: no parameter, no subquery.
        let rest = lex(&rewritten)?;
        let selects = rest
            .iter()
            .filter(|t| matches!(&t.tk, Tk::Word(w) if w == "SELECT"))
            .count();
        if selects != 1 || rest.iter().any(|t| matches!(t.tk, Tk::Param(_))) {
            return None;
        }
    }
    proved(query, &rewritten, condition).then_some(guards)
}

/// Runs `rewritten` (the query with its guards false) once and checks that
/// `condition` is false on its result, so the guards are sound: with them
/// false the result is this constant one.
fn proved(query: &str, rewritten: &str, condition: &str) -> bool {
    let run = || -> Result<bool, String> {
        let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
        schema::init(&conn)?;
        let columns: Vec<String> = {
            let stmt = conn.prepare(query).map_err(|e| e.to_string())?;
            stmt.column_names().iter().map(|c| c.to_string()).collect()
        };
        let mut stmt = conn.prepare(rewritten).map_err(|e| e.to_string())?;
        if stmt.column_count() != columns.len() {
            return Ok(false);
        }
        for i in 1..=stmt.parameter_count() {
            let v = match stmt.parameter_name(i) {
                Some(":now") => rusqlite::types::Value::Real(1001.0),
                _ => rusqlite::types::Value::Text("sample".into()),
            };
            stmt.raw_bind_parameter(i, v).map_err(|e| e.to_string())?;
        }
        let cond = Expr::parse(condition, &columns).map_err(|e| e.to_string())?;
        let mut rows = stmt.raw_query();
        let Some(first) = rows.next().map_err(|e| e.to_string())? else {
            return Ok(true);
        };
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(first.get_ref(i).map_err(|e| e.to_string())?);
        }
        Ok(!cond.eval(&values))
    };
    run().unwrap_or(false)
}

// ---------------------------------------------------------------- evaluating

/// The event value a guard reads for parameter `name`, bound as the store
/// binds it: every store parameter but `:now` (the store's clock, not a
/// value of the event the decision service holds).
fn event_param(name: &str) -> Option<Param> {
    PARAMS
        .iter()
        .find(|(n, p)| *n == name && *p != Param::Now)
        .map(|(_, p)| *p)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Coalesce,
    Lower,
    Upper,
    Char,
    Replace,
}

#[derive(Debug)]
enum Node {
    Field(Param),
    Text(String),
    Int(i64),
    Null,
    Concat(Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
    IsNull(Box<Node>, bool),
    /// `a IS b` (`IS NOT` when true): equality where NULL is a value.
    Is(Box<Node>, Box<Node>, bool),
    Eq(Box<Node>, Box<Node>, bool),
    In(Box<Node>, Vec<Node>, bool),
    Like(Box<Node>, Box<Node>, bool),
    Regexp(Box<Node>, Box<Lazy>, bool),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
}

/// A REGEXP pattern, compiled on first use (start-up compiles nothing).
#[derive(Debug)]
struct Lazy {
    pattern: String,
    re: OnceLock<Option<Regex>>,
}

impl Node {
    /// Whether the node yields a truth value (0, 1 or NULL), as `AND`,
    /// `OR`, `NOT` and a guard itself need: SQLite would read text there as
    /// a number, which guards do not attempt.
    fn boolean(&self) -> bool {
        matches!(
            self,
            Node::IsNull(..)
                | Node::Is(..)
                | Node::Eq(..)
                | Node::In(..)
                | Node::Like(..)
                | Node::Regexp(..)
                | Node::And(..)
                | Node::Or(..)
                | Node::Not(..)
                | Node::Int(_)
                | Node::Null
        )
    }
}

/// A guard ready to evaluate.
#[derive(Debug)]
pub struct Guard {
    node: Node,
}

struct Parser {
    toks: Vec<Token>,
    at: usize,
}

type Parsed = Result<Node, String>;

impl Parser {
    fn peek(&self) -> Option<&Tk> {
        self.toks.get(self.at).map(|t| &t.tk)
    }
    fn word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tk::Word(x)) if x == w)
    }
    fn bump(&mut self) -> Option<Tk> {
        let t = self.toks.get(self.at).map(|t| t.tk.clone());
        self.at += 1;
        t
    }
    fn boolean(n: Node) -> Parsed {
        if n.boolean() {
            Ok(n)
        } else {
            Err("a truth value is needed here".into())
        }
    }
    fn or(&mut self) -> Parsed {
        let mut l = self.and()?;
        while self.word("OR") {
            self.at += 1;
            let r = Self::boolean(self.and()?)?;
            l = Node::Or(Box::new(Self::boolean(l)?), Box::new(r));
        }
        Ok(l)
    }
    fn and(&mut self) -> Parsed {
        let mut l = self.not()?;
        while self.word("AND") {
            self.at += 1;
            let r = Self::boolean(self.not()?)?;
            l = Node::And(Box::new(Self::boolean(l)?), Box::new(r));
        }
        Ok(l)
    }
    fn not(&mut self) -> Parsed {
        if self.word("NOT") {
            self.at += 1;
            return Ok(Node::Not(Box::new(Self::boolean(self.not()?)?)));
        }
        self.pred()
    }
    fn pred(&mut self) -> Parsed {
        let l = self.concat()?;
        let negated = self.word("NOT");
        if negated {
            self.at += 1;
        }
        let op = match self.peek() {
            Some(Tk::Word(w)) => w.clone(),
            Some(Tk::Op(o)) if !negated => o.to_string(),
            _ if negated => return Err("NOT must be followed by LIKE, REGEXP or IN".into()),
            _ => return Ok(l),
        };
        let l = Box::new(l);
        let n = match op.as_str() {
            "IS" if !negated => {
                self.at += 1;
                let not = self.word("NOT");
                if not {
                    self.at += 1;
                }
                if self.word("NULL") {
                    self.at += 1;
                    Node::IsNull(l, !not)
                } else {
                    Node::Is(l, Box::new(self.concat()?), not)
                }
            }
            "ISNULL" if !negated => {
                self.at += 1;
                Node::IsNull(l, true)
            }
            "NOTNULL" if !negated => {
                self.at += 1;
                Node::IsNull(l, false)
            }
            "LIKE" => {
                self.at += 1;
                let p = self.concat()?;
                if self.word("ESCAPE") {
                    return Err("LIKE … ESCAPE".into());
                }
                Node::Like(l, Box::new(p), negated)
            }
            "REGEXP" => {
                self.at += 1;
                let Some(Tk::Str(pattern)) = self.bump() else {
                    return Err("REGEXP needs a literal pattern".into());
                };
                Node::Regexp(
                    l,
                    Box::new(Lazy {
                        pattern,
                        re: OnceLock::new(),
                    }),
                    negated,
                )
            }
            "IN" => {
                self.at += 1;
                if !matches!(self.bump(), Some(Tk::LParen)) {
                    return Err("IN needs a list".into());
                }
                let mut list = vec![self.concat()?];
                while matches!(self.peek(), Some(Tk::Comma)) {
                    self.at += 1;
                    list.push(self.concat()?);
                }
                if !matches!(self.bump(), Some(Tk::RParen)) {
                    return Err("IN list not closed".into());
                }
                Node::In(l, list, negated)
            }
            "=" | "==" => {
                self.at += 1;
                Node::Eq(l, Box::new(self.concat()?), false)
            }
            "<>" | "!=" => {
                self.at += 1;
                Node::Eq(l, Box::new(self.concat()?), true)
            }
            _ if negated => return Err("NOT must be followed by LIKE, REGEXP or IN".into()),
            _ => return Ok(*l),
        };
        Ok(n)
    }
    fn concat(&mut self) -> Parsed {
        let mut l = self.primary()?;
        while matches!(self.peek(), Some(Tk::Op("||"))) {
            self.at += 1;
            l = Node::Concat(Box::new(l), Box::new(self.primary()?));
        }
        Ok(l)
    }
    fn primary(&mut self) -> Parsed {
        match self.bump() {
            Some(Tk::Param(p)) => event_param(&p)
                .map(Node::Field)
                .ok_or_else(|| format!("parameter {p} is not a field of the event")),
            Some(Tk::Str(s)) => Ok(Node::Text(s)),
            Some(Tk::Num(n)) => n
                .parse::<i64>()
                .map(Node::Int)
                .map_err(|_| format!("number {n}")),
            Some(Tk::Word(w)) if w == "NULL" => Ok(Node::Null),
            Some(Tk::Word(w)) if w == "TRUE" => Ok(Node::Int(1)),
            Some(Tk::Word(w)) if w == "FALSE" => Ok(Node::Int(0)),
            Some(Tk::Word(w)) if matches!(self.peek(), Some(Tk::LParen)) => {
                let (func, arity) = match w.as_str() {
                    "COALESCE" | "IFNULL" => (Func::Coalesce, None),
                    "LOWER" => (Func::Lower, Some(1)),
                    "UPPER" => (Func::Upper, Some(1)),
                    "CHAR" => (Func::Char, Some(usize::MAX)),
                    "REPLACE" => (Func::Replace, Some(3)),
                    _ => return Err(format!("function {w}")),
                };
                self.at += 1;
                let mut args = vec![self.concat()?];
                while matches!(self.peek(), Some(Tk::Comma)) {
                    self.at += 1;
                    args.push(self.concat()?);
                }
                if !matches!(self.bump(), Some(Tk::RParen)) {
                    return Err("call not closed".into());
                }
                match arity {
                    Some(usize::MAX) => Ok(Node::Call(func, args)),
                    Some(n) if args.len() != n => Err(format!("{w} takes {n} argument")),
                    None if args.len() < 2 => Err(format!("{w} takes two or more arguments")),
                    _ => Ok(Node::Call(func, args)),
                }
            }
            Some(Tk::LParen) => {
                let n = self.or()?;
                if !matches!(self.bump(), Some(Tk::RParen)) {
                    return Err("parenthesis not closed".into());
                }
                Ok(n)
            }
            t => Err(format!("{t:?} is not read in a guard")),
        }
    }
}

/// A value while evaluating: SQLite's NULL, integer or text.
#[derive(Debug, Clone, PartialEq)]
enum V<'a> {
    Null,
    Int(i64),
    Text(Cow<'a, str>),
}

impl<'a> V<'a> {
    fn truth(b: Option<bool>) -> V<'a> {
        match b {
            None => V::Null,
            Some(b) => V::Int(b as i64),
        }
    }
    /// The truth of a boolean node's value (see [`Node::boolean`]).
    fn as_bool(&self) -> Option<bool> {
        match self {
            V::Null => None,
            V::Int(n) => Some(*n != 0),
            // Unreachable for a parsed guard; no opinion is the safe side.
            V::Text(_) => None,
        }
    }
    fn text(self) -> Option<Cow<'a, str>> {
        match self {
            V::Null => None,
            V::Int(n) => Some(Cow::Owned(n.to_string())),
            V::Text(t) => Some(t),
        }
    }
}

/// SQLite's `LIKE` without ESCAPE: `%` any run, `_` one character, ASCII
/// letters case-insensitively. Backtracks only to the last `%`, so it is
/// linear in the text times the pattern's length.
///
/// When both sides are ASCII a character is a byte, so the bytes are
/// matched in place; otherwise both are decoded to characters first (one
/// `_` is one character, not one byte). The routing of every judged event
/// runs this over its fields: decoding both sides into two `Vec<char>` per
/// call was 14.2 M of `rules_for`'s 22.3 M instructions on 3,000 mix
/// events (callgrind, MAIN's profile, 2026-12-02).
fn like(pattern: &str, text: &str) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        return wildcard(pattern.as_bytes(), text.as_bytes(), b'%', b'_');
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    wildcard(&p, &t, '%', '_')
}

/// The `LIKE` walk over units (bytes of ASCII text, or characters).
fn wildcard<U: Copy + PartialEq + CaseFold>(p: &[U], t: &[U], any: U, one: U) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == any {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && (p[pi] == one || p[pi].same_letter(t[ti])) {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == any)
}

/// Equal but for the case of ASCII letters (SQLite's default `LIKE`).
trait CaseFold {
    fn same_letter(self, other: Self) -> bool;
}

impl CaseFold for u8 {
    fn same_letter(self, other: u8) -> bool {
        self.eq_ignore_ascii_case(&other)
    }
}

impl CaseFold for char {
    fn same_letter(self, other: char) -> bool {
        self.eq_ignore_ascii_case(&other)
    }
}

impl Guard {
    /// Reads one guard expression (SQL over event parameters only).
    pub fn parse(sql: &str) -> Result<Guard, String> {
        let toks = lex(sql).ok_or("cannot read the expression")?;
        if !toks.iter().any(|t| matches!(t.tk, Tk::Param(_))) {
            return Err("a guard reads at least one field of the event".into());
        }
        let mut p = Parser { toks, at: 0 };
        let node = p.or()?;
        if p.at != p.toks.len() {
            return Err("unexpected text after the expression".into());
        }
        if !node.boolean() {
            return Err("a guard must be a truth value".into());
        }
        Ok(Guard { node })
    }

    /// Whether the rule may fire on `row`: false only when the guard is
    /// false or NULL there.
    pub fn holds(&self, row: &EventRow) -> bool {
        match eval(&self.node, row) {
            Some(v) => v.as_bool() == Some(true),
            None => true,
        }
    }
}

fn field<'a>(f: Param, row: &'a EventRow) -> V<'a> {
    let t = |v: &'a Option<String>| match v {
        Some(s) => V::Text(Cow::Borrowed(s.as_str())),
        None => V::Null,
    };
    match f {
        Param::SessionId => t(&row.session_id),
        Param::UserId => t(&row.user_id),
        Param::Channel => t(&row.channel),
        Param::ToolName => t(&row.tool_name),
        Param::Stage => V::Text(Cow::Borrowed(row.stage.as_str())),
        Param::Command => t(&row.command),
        Param::Path => t(&row.path),
        Param::Url => t(&row.url),
        // Never in a guard: `event_param` refuses `:now`.
        Param::Now => V::Null,
        Param::RuleIds => V::Text(Cow::Borrowed(row.rule_ids.as_str())),
    }
}

/// `None` when the guard cannot tell (a pattern that does not compile):
/// the rule then runs.
fn eval<'a>(n: &'a Node, row: &'a EventRow) -> Option<V<'a>> {
    Some(match n {
        Node::Field(f) => field(*f, row),
        Node::Text(s) => V::Text(Cow::Borrowed(s.as_str())),
        Node::Int(i) => V::Int(*i),
        Node::Null => V::Null,
        Node::Concat(a, b) => match (eval(a, row)?.text(), eval(b, row)?.text()) {
            (Some(a), Some(b)) => {
                // Sized once, without the formatting machinery: routing runs
                // this for every `||` of every guard of every judged event.
                let mut s = String::with_capacity(a.len() + b.len());
                s.push_str(&a);
                s.push_str(&b);
                V::Text(Cow::Owned(s))
            }
            _ => V::Null,
        },
        Node::Call(Func::Coalesce, args) => {
            for a in args {
                let v = eval(a, row)?;
                if v != V::Null {
                    return Some(v);
                }
            }
            V::Null
        }
        Node::Call(Func::Char, args) => {
            let mut s = String::new();
            for a in args {
                // char() of anything but small integers: not worth copying.
                let V::Int(c) = eval(a, row)? else {
                    return None;
                };
                s.push(char::from_u32(u32::try_from(c).ok()?)?);
            }
            V::Text(Cow::Owned(s))
        }
        Node::Call(Func::Replace, args) => {
            let [x, from, to] = args.as_slice() else {
                return None;
            };
            match (
                eval(x, row)?.text(),
                eval(from, row)?.text(),
                eval(to, row)?.text(),
            ) {
                // Nothing to replace (an empty `from` replaces nothing in
                // SQLite): the text as it is, not a copy. The page-scrape
                // guard removes each digit in turn, and most texts have few.
                (Some(x), Some(from), Some(_)) if from.is_empty() || !x.contains(&*from) => {
                    V::Text(x)
                }
                (Some(x), Some(from), Some(to)) => V::Text(Cow::Owned(x.replace(&*from, &to))),
                _ => V::Null,
            }
        }
        Node::Call(func, args) => match eval(args.first()?, row)?.text() {
            Some(t) => V::Text(Cow::Owned(if *func == Func::Lower {
                t.to_ascii_lowercase()
            } else {
                t.to_ascii_uppercase()
            })),
            None => V::Null,
        },
        Node::IsNull(a, is) => V::Int(((eval(a, row)? == V::Null) == *is) as i64),
        Node::Is(a, b, not) => V::Int(((eval(a, row)? == eval(b, row)?) != *not) as i64),
        Node::Eq(a, b, ne) => match (eval(a, row)?, eval(b, row)?) {
            (V::Null, _) | (_, V::Null) => V::Null,
            // Values without affinity (parameters, literals): an integer
            // never equals a text.
            (a, b) => V::Int(((a == b) != *ne) as i64),
        },
        Node::In(a, list, not) => {
            let v = eval(a, row)?;
            if v == V::Null {
                return Some(V::Null);
            }
            let mut null = false;
            for item in list {
                match eval(item, row)? {
                    V::Null => null = true,
                    x if x == v => return Some(V::truth(Some(!*not))),
                    _ => {}
                }
            }
            if null {
                V::Null
            } else {
                V::truth(Some(*not))
            }
        }
        Node::Like(a, p, not) => match (eval(a, row)?.text(), eval(p, row)?.text()) {
            (Some(t), Some(p)) => V::truth(Some(like(&p, &t) != *not)),
            _ => V::Null,
        },
        Node::Regexp(a, re, not) => {
            let Some(t) = eval(a, row)?.text() else {
                return Some(V::Null);
            };
            let re = re
                .re
                .get_or_init(|| Regex::new(&re.pattern).ok())
                .as_ref()?;
            V::truth(Some(re.is_match(t.as_bytes()) != *not))
        }
        Node::And(a, b) => match (eval(a, row)?.as_bool(), eval(b, row)?.as_bool()) {
            (Some(false), _) | (_, Some(false)) => V::Int(0),
            (Some(true), Some(true)) => V::Int(1),
            _ => V::Null,
        },
        Node::Or(a, b) => match (eval(a, row)?.as_bool(), eval(b, row)?.as_bool()) {
            (Some(true), _) | (_, Some(true)) => V::Int(1),
            (Some(false), Some(false)) => V::Int(0),
            _ => V::Null,
        },
        Node::Not(a) => V::truth(eval(a, row)?.as_bool().map(|b| !b)),
    })
}

/// SQLite's own answer for `guard` on `row` (for the differential tests):
/// `SELECT (guard)` with the row's values bound as the store binds them.
pub fn sqlite_holds(conn: &Connection, guard: &str, row: &EventRow) -> Result<bool, String> {
    let mut stmt = conn
        .prepare_cached(&format!("SELECT ({guard})"))
        .map_err(|e| e.to_string())?;
    for i in 1..=stmt.parameter_count() {
        let name = stmt.parameter_name(i).unwrap_or("").to_string();
        let f = event_param(&name).ok_or_else(|| format!("parameter {name}"))?;
        let v = match field(f, row) {
            V::Text(t) => rusqlite::types::Value::Text(t.into_owned()),
            V::Int(n) => rusqlite::types::Value::Integer(n),
            V::Null => rusqlite::types::Value::Null,
        };
        stmt.raw_bind_parameter(i, v).map_err(|e| e.to_string())?;
    }
    let mut rows = stmt.raw_query();
    let first = rows.next().map_err(|e| e.to_string())?.ok_or("no row")?;
    Ok(match first.get_ref(0).map_err(|e| e.to_string())? {
        ValueRef::Integer(n) => n != 0,
        ValueRef::Real(x) => x != 0.0,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Bash-like call's row, built as the service builds it.
    fn row(command: Option<&str>, url: Option<&str>, path: Option<&str>) -> EventRow {
        let mut args = serde_json::Map::new();
        if let Some(c) = command {
            args.insert("command".into(), c.into());
        }
        if let Some(u) = url {
            args.insert("url".into(), u.into());
        }
        if let Some(p) = path {
            args.insert("file_path".into(), p.into());
        }
        let e = parallax_runtime::Event::from_value(serde_json::json!({
            "stage": "tool.before", "session_id": "s", "tool_name": "Bash", "tool_args": args,
        }))
        .unwrap();
        EventRow::new(&parallax_runtime::PreparedEvent::new(e))
    }

    #[test]
    fn finds_a_where_conjunct_and_proves_it() {
        let q = "SELECT count(*) AS hits FROM events WHERE session_id = :session_id \
                 AND :command IS NOT NULL AND (:command LIKE '%curl %' OR :url IS NOT NULL)";
        assert_eq!(
            preconditions(q, "hits > 0"),
            vec![
                ":command IS NOT NULL".to_string(),
                "(:command LIKE '%curl %' OR :url IS NOT NULL)".to_string()
            ]
        );
        // With no rows the count is 0: `hits == 0` would fire, so no guard.
        assert!(preconditions(q, "hits == 0").is_empty());
        // A parameter in the projection makes the empty result vary.
        let q2 = "SELECT count(*) AS n, :tool_name AS t FROM events WHERE :command IS NOT NULL";
        assert!(preconditions(q2, "n > 0").is_empty());
    }

    #[test]
    fn reads_past_common_table_expressions() {
        let q = "WITH RECURSIVE split(word, rest) AS (SELECT '', :command UNION ALL \
                 SELECT rest, '' FROM split WHERE rest <> ''), \
                 prev AS (SELECT command FROM events WHERE session_id = :session_id LIMIT 5) \
                 SELECT count(*) AS hits, max(word) AS file FROM split, prev \
                 WHERE instr(prev.command, word) > 0 AND instr(:command, word) > 0 \
                 AND :command IS NOT NULL AND (:command LIKE '%sh %' OR :command LIKE '%./%')";
        assert_eq!(
            preconditions(q, "hits > 0"),
            vec![
                ":command IS NOT NULL".to_string(),
                "(:command LIKE '%sh %' OR :command LIKE '%./%')".to_string()
            ]
        );
        let q1 = "WITH prev AS (SELECT path FROM events) SELECT count(*) AS hits FROM prev \
                  WHERE :command IS NOT NULL";
        assert_eq!(
            preconditions(q1, "hits > 0"),
            vec![":command IS NOT NULL".to_string()]
        );
    }

    #[test]
    fn finds_a_case_guard_and_its_parenthesised_copies() {
        let q = "SELECT CASE WHEN :command IS NOT NULL OR :url IS NOT NULL THEN \
                 (SELECT count(*) FROM events WHERE session_id = :session_id) ELSE 0 END AS blocks, \
                 (:command IS NOT NULL OR :url IS NOT NULL) AS dangerous";
        assert_eq!(
            preconditions(q, "blocks >= 3 && dangerous"),
            vec![":command IS NOT NULL OR :url IS NOT NULL".to_string()]
        );
        // `dangerous` alone would not be false... it is the same guard, so
        // this holds; but `!dangerous || blocks >= 3` is true with both
        // false, and must not get a guard.
        assert!(preconditions(q, "!dangerous || blocks >= 3").is_empty());
        // ELSE 5 makes `blocks >= 3` true when the guard is false.
        let q5 = q.replace("ELSE 0", "ELSE 5");
        assert!(preconditions(&q5, "blocks >= 3").is_empty());
    }

    #[test]
    fn a_case_that_searches_in_its_else_is_guarded_by_the_when_not_being_true() {
        let q = "SELECT CASE WHEN :url IS NULL THEN 0 ELSE (SELECT count(*) FROM events \
                 WHERE session_id = :session_id AND url = :url) END AS cnt";
        assert_eq!(
            preconditions(q, "cnt >= 15"),
            vec!["(:url IS NULL) IS NOT 1".to_string()]
        );
        assert!(preconditions(q, "cnt < 15").is_empty());
    }

    #[test]
    fn unreadable_or_unguarded_queries_have_no_guard() {
        for q in [
            "SELECT count(*) AS n FROM events WHERE session_id = :session_id AND ts > :now - 60",
            "SELECT count(*) AS n FROM events WHERE ts BETWEEN :now - 5 AND :now AND :command IS NOT NULL",
            "SELECT count(*) AS n FROM events WHERE :command IS NOT NULL UNION SELECT 1",
            "SELECT count(*) AS n FROM events WHERE length(:command) > 3",
            "WITH x AS (SELECT 1) SELECT CASE WHEN :command IS NULL THEN 1 ELSE 0 END AS n",
        ] {
            assert!(preconditions(q, "n > 0").is_empty(), "{q}");
        }
    }

    #[test]
    fn native_evaluation_agrees_with_sqlite() {
        let conn = Connection::open_in_memory().unwrap();
        schema::init(&conn).unwrap();
        let guards = [
            ":command IS NOT NULL OR :url IS NOT NULL",
            "coalesce(:command, '') REGEXP '(?i)(^|\\s)(curl|wget)\\s'",
            "NOT coalesce(:command, '') REGEXP '(?i)localhost'",
            ":url IS NOT NULL AND NOT :url REGEXP '^https?://(localhost|127\\.0\\.0\\.1)([:/]|$)'",
            "(:command LIKE '%sh %' OR :command LIKE '%./%' OR :command LIKE '. %')",
            ":command NOT LIKE 'A_c%'",
            ":tool_name IN ('Bash', NULL)",
            ":tool_name NOT IN ('Read', 'Write')",
            "lower(:tool_name) = 'bash'",
            ":stage <> 'tool.after' AND :command || 'x' LIKE '%x'",
            "(:url IS NULL OR replace(replace(:url, '1', ''), '2', '') = :url) IS NOT 1",
            ":command IS 'Abcdef' OR :url IS NOT :command",
            "replace(:command, '', 'x') = :command",
            "coalesce(:path, '') || char(10) IS NOT NULL",
        ];
        let rows = [
            row(None, None, None),
            row(Some("curl -s https://x.example"), None, None),
            row(Some("CURL\thttp://localhost/"), None, None),
            row(Some("abc ./run"), None, None),
            row(Some("Abcdef"), None, None),
            row(Some(". env.sh"), Some("https://127.0.0.1/x"), None),
            row(None, Some("https://example.com"), Some("/etc/passwd")),
            row(Some("é_ü %"), None, Some("x")),
        ];
        for g in guards {
            let parsed = Guard::parse(g).unwrap_or_else(|e| panic!("{g}: {e}"));
            for r in &rows {
                assert_eq!(
                    parsed.holds(r),
                    sqlite_holds(&conn, g, r).unwrap(),
                    "{g} on {r:?}"
                );
            }
        }
        assert!(Guard::parse("length(:path) > 3").is_err());
        assert!(Guard::parse(":now > 3").is_err());
    }

    #[test]
    fn like_follows_sqlite() {
        assert!(like("%curl %", "x CURL y"));
        assert!(like("a_c", "aéc"));
        assert!(!like("a_c", "ac"));
        assert!(like("%", ""));
        assert!(!like("%a", "b"));
        assert!(like("%a%b%", "xxaxxbxx"));
    }

    /// The in-place walk over ASCII bytes gives the character walk's
    /// answer on every pair of short texts over an alphabet with both
    /// wildcards, letters of both cases and a space.
    #[test]
    fn the_byte_walk_is_the_character_walk_on_ascii() {
        let alphabet = ['%', '_', 'a', 'A', 'b', 'c', ' '];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut word = |n: u64| -> String {
            let len = (next() % n) as usize;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        };
        let mut hits = 0;
        for _ in 0..20_000 {
            let (p, t) = (word(7), word(12));
            let pc: Vec<char> = p.chars().collect();
            let tc: Vec<char> = t.chars().collect();
            let by_char = wildcard(&pc, &tc, '%', '_');
            assert_eq!(like(&p, &t), by_char, "{p:?} LIKE {t:?}");
            hits += usize::from(by_char);
        }
        // Both answers occur often enough for the comparison to mean something.
        assert!(hits > 1_000 && hits < 19_000, "{hits}");
    }
}
