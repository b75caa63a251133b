//! Parallax rule compiler.
//!
//! A rule's life, one module per layer:
//! [`config`] (read `parallax.yaml` and the rules tree) → [`lower`] (parse
//! each engine's rules into the IR of [`ir`]: predicates over atoms) →
//! [`plan`] (choose a path per atom, build the DFA shards and literal sets)
//! → [`codegen`] (generated Rust + embedded automata for a baked binary) or
//! [`dynamic`] (the same program run in memory).
//!
//! The build script and the binary's dynamic mode call the same functions,
//! which is what makes their verdicts comparable.

pub mod any_char;
pub mod atr;
pub mod atr_trace;
pub mod cel;
pub mod cel_codegen;
pub mod classifier;
pub mod codegen;
pub mod config;
pub mod dynamic;
pub mod error;
pub mod ir;
pub mod literals;
pub mod lower;
pub mod plan;
pub mod policy;
pub mod regex_check;
pub mod relax;
pub mod schema;
pub mod sigma;
pub mod source;
pub mod source_digest;
pub mod stages;
pub mod stats;
pub mod tenants;
pub mod transforms;
mod yaml;

pub use error::{CompileError, CompileErrors};
pub use ir::RuleSet;
pub use plan::{Compiled, Limits};
pub use stats::Stats;

use std::path::Path;

/// Reads and lowers a configuration (cheap: no automata are built). Enough
/// for `lint` and for comparing fingerprints.
pub fn load(config: &Path) -> Result<RuleSet, CompileErrors> {
    lower::lower(config::load(config)?)
}

/// Loads and fully compiles a configuration.
pub fn compile_file(config: &Path) -> Result<Compiled, CompileErrors> {
    Ok(plan::compile(&load(config)?, &Limits::default()))
}

/// Whether `path` is a bare parlok policy file (`version:` and `policies:`)
/// rather than a Parallax config: [`load`] takes either, and a bare file's
/// program is its policies alone.
pub fn is_policy_file(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| config::bare_policy_file(&t).is_some())
}
