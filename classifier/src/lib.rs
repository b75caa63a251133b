//! The injection classifier: a learned score for what patterns cannot
//! see, trained at development time (`training/run.sh`) and compiled into
//! the binary.
//!
//! A logistic regression over hashed character 3–5-grams and word
//! 1–2-grams ([`features`]), its weights quantised to int8 and embedded
//! with `include_bytes!` ([`model`]). Scoring streams the text once,
//! allocates nothing, and scores long inputs in overlapping windows so a
//! short injection inside a long tool result is not diluted away
//! ([`Model::score`]). docs/CLASSIFIER.md has the data, the method and the
//! measured rates.

pub mod features;
pub mod model;

pub use model::{FormatError, Model, ScoreStream, INJECTION};

/// The probability (0–1) that `text` carries a prompt injection or
/// jailbreak, by the baked model.
pub fn injection_score(text: &str) -> f64 {
    INJECTION.score(text)
}
