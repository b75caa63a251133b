//! Compile errors: each names the file, the rule where there is one, and what
//! is wrong, so a rule author can act on it without reading the compiler.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid YAML, or has a key or value of the wrong shape.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    #[error("{}: rule `{rule}`: {message}", path.display())]
    Rule {
        path: PathBuf,
        rule: String,
        message: String,
    },
}

impl CompileError {
    pub fn file(path: impl Into<PathBuf>, message: impl Into<String>) -> CompileError {
        CompileError::File {
            path: path.into(),
            message: message.into(),
        }
    }

    pub fn rule(
        path: impl Into<PathBuf>,
        rule: impl Into<String>,
        message: impl Into<String>,
    ) -> CompileError {
        CompileError::Rule {
            path: path.into(),
            rule: rule.into(),
            message: message.into(),
        }
    }
}

/// Every error found in one compile: the compiler keeps going after an
/// error so that one run lists everything to fix.
#[derive(Debug)]
pub struct CompileErrors(pub Vec<CompileError>);

impl fmt::Display for CompileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileErrors {}

impl From<CompileError> for CompileErrors {
    fn from(e: CompileError) -> Self {
        CompileErrors(vec![e])
    }
}
