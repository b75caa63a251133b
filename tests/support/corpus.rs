//! The red-team corpus files (`tests/fixtures/evasion_corpus/`,
//! `tests/fixtures/injection_corpus/`): one YAML file per set, saying what
//! every case in it expects, then the cases. One reader for both suites, so
//! a case is written the same way wherever it lives.

use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One set of cases and what all of them expect.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusFile {
    pub expect: Expect,
    pub cases: Vec<Case>,
}

/// What a set's cases expect of the shipped rules.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// Any verdict but `allow`.
    Flagged,
    /// `redact` with every one of the case's `secrets` gone (or `block`).
    Redacted,
    /// Neither blocked nor rewritten.
    Clean,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub note: String,
    /// A user message (`message.before`), or a whole event.
    pub text: Option<String>,
    pub event: Option<Value>,
    /// For `redacted`: strings that must be gone from the redacted event.
    #[serde(default)]
    pub secrets: Vec<String>,
}

impl Case {
    /// The event this case sends; panics when it gives neither or both of
    /// `text` and `event`.
    pub fn event(&self) -> Value {
        match (&self.text, &self.event) {
            (Some(t), None) => serde_json::json!({"stage": "message.before", "message_text": t}),
            (None, Some(e)) => e.clone(),
            _ => panic!("case {:?}: give exactly one of text and event", self.note),
        }
    }
}

/// The corpus folder `name` under `tests/fixtures/`.
pub fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Reads one corpus file; panics with its path and the parse error.
pub fn load(path: &Path) -> CorpusFile {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.yaml` file of corpus folder `name`, in name order.
pub fn files(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir(name))
        .unwrap_or_else(|e| panic!("corpus folder {name}: {e}"))
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// `n` out of `of` (0 for an empty set).
pub fn rate(n: usize, of: usize) -> f64 {
    n as f64 / of.max(1) as f64
}
