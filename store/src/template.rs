//! `reason:` templates of SQL rules: `"{cnt} calls in 60 s"` shows the
//! matching row's `cnt`. `{{` and `}}` are literal braces. Every placeholder
//! must name a result column, checked at compile time.

use rusqlite::types::ValueRef;
use std::fmt::Write;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Column(usize),
}

/// A parsed reason template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    pub fn parse(src: &str, columns: &[String]) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = src.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|p| p.1) == Some('{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek().map(|p| p.1) == Some('}') => {
                    chars.next();
                    text.push('}');
                }
                '{' => {
                    let rest = &src[i + 1..];
                    let Some(end) = rest.find('}') else {
                        return Err(format!(
                            "reason `{src}`: `{{` at offset {i} is not closed (write `{{{{` for a brace)"
                        ));
                    };
                    let name = rest[..end].trim();
                    let Some(col) = columns.iter().position(|c| c == name) else {
                        return Err(format!(
                            "reason `{src}`: `{{{name}}}` names no result column (the query returns: {})",
                            columns.join(", ")
                        ));
                    };
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Column(col));
                    // Skip the name and the closing brace.
                    while let Some((j, _)) = chars.peek() {
                        if *j > i + 1 + end {
                            break;
                        }
                        chars.next();
                    }
                }
                '}' => {
                    return Err(format!(
                        "reason `{src}`: lone `}}` at offset {i} (write `}}}}` for a brace)"
                    ))
                }
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Template { parts })
    }

    pub fn render(&self, row: &[ValueRef<'_>]) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Column(i) => match row.get(*i) {
                    Some(ValueRef::Integer(n)) => {
                        let _ = write!(out, "{n}");
                    }
                    Some(ValueRef::Real(n)) => {
                        let _ = write!(out, "{n}");
                    }
                    Some(ValueRef::Text(t)) => out.push_str(&String::from_utf8_lossy(t)),
                    Some(ValueRef::Blob(b)) => {
                        let _ = write!(out, "<{} bytes>", b.len());
                    }
                    Some(ValueRef::Null) | None => out.push_str("null"),
                },
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_columns_and_escaped_braces() {
        let cols = vec!["cnt".to_string(), "tool".to_string()];
        let t = Template::parse("{cnt} calls of { tool } in 60 s {{literal}}", &cols).unwrap();
        let row = [ValueRef::Integer(51), ValueRef::Text(b"Bash")];
        assert_eq!(t.render(&row), "51 calls of Bash in 60 s {literal}");
        let t = Template::parse("{tool}", &cols).unwrap();
        assert_eq!(t.render(&[ValueRef::Null, ValueRef::Null]), "null");
    }

    #[test]
    fn rejects_unknown_columns_and_stray_braces() {
        let cols = vec!["cnt".to_string()];
        let e = Template::parse("{count} calls", &cols).unwrap_err();
        assert!(e.contains("`{count}` names no result column"), "{e}");
        assert!(Template::parse("{cnt calls", &cols).is_err());
        assert!(Template::parse("cnt} calls", &cols).is_err());
    }
}
