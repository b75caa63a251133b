//! The Sigma condition language: a small recursive-descent parser.
//!
//! Grammar (precedence `not` > `and` > `or`, all left-associative):
//!
//! ```text
//! or    := and ("or" and)*
//! and   := not ("and" not)*
//! not   := "not" not | atom
//! atom  := "(" or ")" | ("1" | "all") "of" (PATTERN | "them") | NAME
//! ```
//!
//! Names are resolved against the rule's selections while parsing, so an
//! unknown name (or a pattern that matches nothing) is an error pointing at
//! its column, never a condition that silently stays false.

use std::fmt;

/// A parsed condition over selection names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cond {
    Sel(String),
    Not(Box<Cond>),
    And(Vec<Cond>),
    Or(Vec<Cond>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: {}", self.column + 1, self.message)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Open,
    Close,
    Word(String),
}

fn lex(text: &str) -> Result<Vec<(usize, Tok)>, ConditionError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                out.push((i, Tok::Open));
                chars.next();
            }
            ')' => {
                out.push((i, Tok::Close));
                chars.next();
            }
            '|' => {
                return Err(ConditionError {
                    column: i,
                    message: "`|` starts an aggregation (Sigma v1: `| count() …`), which Sigma v2 \
                              replaced by correlation rules; neither is supported"
                        .into(),
                })
            }
            _ => {
                let mut w = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_whitespace() || c == '(' || c == ')' || c == '|' {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push((i, Tok::Word(w)));
            }
        }
    }
    Ok(out)
}

fn is_kw(w: &str, kw: &str) -> bool {
    w.eq_ignore_ascii_case(kw)
}

/// Whether `name` matches a `*` wildcard pattern.
pub fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(p) => rest = &rest[p + mid.len()..],
            None => return false,
        }
    }
    true
}

struct Parser<'a> {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end: usize,
    names: &'a [String],
}

impl Parser<'_> {
    fn err<T>(&self, column: usize, message: impl Into<String>) -> Result<T, ConditionError> {
        Err(ConditionError {
            column,
            message: message.into(),
        })
    }

    fn peek(&self) -> Option<&(usize, Tok)> {
        self.toks.get(self.pos)
    }

    fn column(&self) -> usize {
        self.peek().map_or(self.end, |t| t.0)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if let Some((_, Tok::Word(w))) = self.peek() {
            if is_kw(w, kw) {
                self.pos += 1;
                return true;
            }
        }
        false
    }

    fn or(&mut self) -> Result<Cond, ConditionError> {
        let mut parts = vec![self.and()?];
        while self.eat_kw("or") {
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Cond::Or(parts)
        })
    }

    fn and(&mut self) -> Result<Cond, ConditionError> {
        let mut parts = vec![self.not()?];
        while self.eat_kw("and") {
            parts.push(self.not()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Cond::And(parts)
        })
    }

    fn not(&mut self) -> Result<Cond, ConditionError> {
        if self.eat_kw("not") {
            return Ok(Cond::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Cond, ConditionError> {
        let col = self.column();
        let Some((_, tok)) = self.toks.get(self.pos).cloned() else {
            return self.err(
                col,
                "expected a selection name, `not`, `(`, `1 of` or `all of`",
            );
        };
        self.pos += 1;
        match tok {
            Tok::Open => {
                let inner = self.or()?;
                match self.peek() {
                    Some((_, Tok::Close)) => {
                        self.pos += 1;
                        Ok(inner)
                    }
                    _ => self.err(
                        self.column(),
                        format!("expected `)` to close the `(` at column {}", col + 1),
                    ),
                }
            }
            Tok::Close => self.err(col, "unexpected `)`"),
            Tok::Word(w) => {
                for kw in ["and", "or", "of", "them"] {
                    if is_kw(&w, kw) {
                        return self.err(col, format!("unexpected `{w}`"));
                    }
                }
                let quant = if w == "1" || is_kw(&w, "any") {
                    Some(false)
                } else if is_kw(&w, "all") {
                    Some(true)
                } else if w.chars().all(|c| c.is_ascii_digit()) {
                    return self.err(
                        col,
                        format!("`{w} of` is not Sigma: use `1 of` or `all of`"),
                    );
                } else {
                    None
                };
                if let Some(all) = quant {
                    if is_kw(&w, "any") {
                        return self.err(col, "`any of` is not Sigma: use `1 of`");
                    }
                    if !self.eat_kw("of") {
                        return self.err(self.column(), format!("expected `of` after `{w}`"));
                    }
                    return self.quantified(all);
                }
                if !self.names.contains(&w) {
                    return self.err(col, format!("unknown selection `{w}`{}", self.known()));
                }
                Ok(Cond::Sel(w))
            }
        }
    }

    fn known(&self) -> String {
        if self.names.is_empty() {
            " (the detection defines no selections)".into()
        } else {
            format!(" (defined: {})", self.names.join(", "))
        }
    }

    fn quantified(&mut self, all: bool) -> Result<Cond, ConditionError> {
        let col = self.column();
        let target = match self.toks.get(self.pos) {
            Some((_, Tok::Word(w))) => w.clone(),
            _ => return self.err(col, "expected a selection pattern or `them` after `of`"),
        };
        self.pos += 1;
        let matched: Vec<String> = if is_kw(&target, "them") {
            // `them` leaves out `_`-prefixed selections, as the spec says.
            self.names
                .iter()
                .filter(|n| !n.starts_with('_'))
                .cloned()
                .collect()
        } else {
            self.names
                .iter()
                .filter(|n| glob(&target, n))
                .cloned()
                .collect()
        };
        if matched.is_empty() {
            return self.err(
                col,
                format!("`{target}` matches no selection{}", self.known()),
            );
        }
        let parts: Vec<Cond> = matched.into_iter().map(Cond::Sel).collect();
        Ok(if parts.len() == 1 {
            parts.into_iter().next().unwrap_or(Cond::Or(Vec::new()))
        } else if all {
            Cond::And(parts)
        } else {
            Cond::Or(parts)
        })
    }
}

/// Parses `text` against the rule's selection `names`.
pub fn parse(text: &str, names: &[String]) -> Result<Cond, ConditionError> {
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end: text.len(),
        names,
    };
    let cond = p.or()?;
    if let Some((col, t)) = p.peek().cloned() {
        let what = match t {
            Tok::Open => "(".to_string(),
            Tok::Close => ")".to_string(),
            Tok::Word(w) => w,
        };
        return p.err(
            col,
            format!("unexpected `{what}` after a complete condition (missing `and`/`or`?)"),
        );
    }
    Ok(cond)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn sel(s: &str) -> Cond {
        Cond::Sel(s.into())
    }

    #[test]
    fn precedence_not_and_or() {
        let n = names(&["a", "b", "c"]);
        assert_eq!(
            parse("a or b and not c", &n).unwrap(),
            Cond::Or(vec![
                sel("a"),
                Cond::And(vec![sel("b"), Cond::Not(Box::new(sel("c")))])
            ])
        );
        assert_eq!(
            parse("a or b or c", &n).unwrap(),
            Cond::Or(vec![sel("a"), sel("b"), sel("c")])
        );
        assert_eq!(
            parse("not a and b", &n).unwrap(),
            Cond::And(vec![Cond::Not(Box::new(sel("a"))), sel("b")])
        );
    }

    #[test]
    fn parentheses_group() {
        let n = names(&["x", "y", "z", "w"]);
        assert_eq!(
            parse("x and (y or z or w)", &n).unwrap(),
            Cond::And(vec![sel("x"), Cond::Or(vec![sel("y"), sel("z"), sel("w")])])
        );
        assert_eq!(
            parse("not (x or y)", &n).unwrap(),
            Cond::Not(Box::new(Cond::Or(vec![sel("x"), sel("y")])))
        );
    }

    #[test]
    fn quantifiers() {
        let n = names(&["sel_a", "sel_b", "filter", "_hidden"]);
        assert_eq!(
            parse("1 of sel_*", &n).unwrap(),
            Cond::Or(vec![sel("sel_a"), sel("sel_b")])
        );
        assert_eq!(
            parse("all of sel_* and not filter", &n).unwrap(),
            Cond::And(vec![
                Cond::And(vec![sel("sel_a"), sel("sel_b")]),
                Cond::Not(Box::new(sel("filter")))
            ])
        );
        assert_eq!(
            parse("1 of them", &n).unwrap(),
            Cond::Or(vec![sel("sel_a"), sel("sel_b"), sel("filter")])
        );
        assert_eq!(
            parse("all of them", &n).unwrap(),
            Cond::And(vec![sel("sel_a"), sel("sel_b"), sel("filter")])
        );
        assert_eq!(parse("1 of filter", &n).unwrap(), sel("filter"));
        assert_eq!(
            parse("1 of sel_* and not 1 of filter*", &n).unwrap(),
            Cond::And(vec![
                Cond::Or(vec![sel("sel_a"), sel("sel_b")]),
                Cond::Not(Box::new(sel("filter")))
            ])
        );
        // Keywords are case-insensitive; names are not.
        assert_eq!(
            parse("sel_a AND NOT filter", &n).unwrap(),
            Cond::And(vec![sel("sel_a"), Cond::Not(Box::new(sel("filter")))])
        );
        assert!(parse("SEL_A", &n).is_err());
    }

    #[test]
    fn errors_point_at_the_problem() {
        let n = names(&["a", "b"]);
        let e = parse("a and c", &n).unwrap_err();
        assert_eq!(e.column, 6);
        assert!(e.message.contains("unknown selection `c`"), "{e}");
        assert!(parse("1 of x*", &n)
            .unwrap_err()
            .message
            .contains("matches no selection"));
        assert!(parse("a and", &n).is_err());
        assert!(parse("(a or b", &n)
            .unwrap_err()
            .message
            .contains("expected `)`"));
        assert!(parse("a b", &n)
            .unwrap_err()
            .message
            .contains("after a complete condition"));
        assert!(parse("a | count() > 5", &n)
            .unwrap_err()
            .message
            .contains("aggregation"));
        assert!(parse("2 of a", &n).is_err());
        assert!(parse("", &n).is_err());
    }

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob("sel*", "selection"));
        assert!(glob("*tion", "selection"));
        assert!(glob("s*l*n", "selection"));
        assert!(!glob("s*x", "selection"));
        assert!(glob("exact", "exact"));
        assert!(!glob("exact", "exactly"));
    }
}
