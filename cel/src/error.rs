//! Errors of the three phases: parsing, checking (compile time, with a
//! caret under the offending source) and evaluation (a CEL error value).

use crate::ast::Span;
use std::fmt;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CheckError {
    pub message: String,
    pub span: Span,
}

/// A parse or check error with the source it refers to, rendered as the
/// message, the source line, and a caret line under the offending part.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct SourceError {
    pub kind: &'static str,
    pub message: String,
    pub text: String,
    pub span: Span,
}

impl SourceError {
    pub fn new(kind: &'static str, message: String, source: &str, span: Span) -> SourceError {
        SourceError {
            kind,
            message,
            text: source.to_string(),
            span,
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = (self.span.start as usize).min(self.text.len());
        let end = (self.span.end as usize).clamp(start, self.text.len());
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let line = &self.text[line_start..line_end];
        let lead = self.text[line_start..start].chars().count();
        let width = self.text[start..end.min(line_end)].chars().count().max(1);
        let line_no = self.text[..line_start].matches('\n').count() + 1;
        writeln!(f, "{}: {}", self.kind, self.message)?;
        writeln!(f, " {line_no} | {line}")?;
        write!(
            f,
            " {} | {}{}",
            " ".repeat(line_no.to_string().len()),
            " ".repeat(lead),
            "^".repeat(width)
        )
    }
}

/// A CEL evaluation error. Errors are values in CEL: `&&`, `||` and `?:`
/// can absorb them, and a rule whose expression ends in one does not match.
/// The common kinds carry no heap data so that producing one does not
/// allocate on the request path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("no such key")]
    NoSuchKey,
    #[error("no such field '{0}'")]
    NoSuchField(String),
    #[error("undeclared reference to '{0}'")]
    UnknownIdent(String),
    #[error("no matching overload for '{0}'")]
    NoOverload(&'static str),
    #[error("unknown function '{0}'")]
    UnknownFunction(String),
    #[error("integer overflow")]
    Overflow,
    #[error("division by zero")]
    DivideByZero,
    #[error("modulus by zero")]
    ModulusByZero,
    #[error("index out of range")]
    IndexOutOfRange,
    #[error("{0}")]
    Invalid(&'static str),
    #[error("invalid regular expression: {0}")]
    Regex(String),
    #[error("expression nests too deeply")]
    TooDeep,
}
