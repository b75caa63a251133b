//! The rules compiled into this binary by `build.rs`.

use parallax_runtime::{Backend, Engine, EngineError, Predicates, Program, ShardDfa};
use regex_automata::dfa::dense;

#[allow(clippy::all, dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/baked.rs"));
}

pub use generated::FINGERPRINT;

/// The digest of the source files the baked rules were compiled from
/// (`parallax_compiler::source_digest`): a config whose files digest the
/// same is these rules, known without lowering them.
pub const SOURCE_DIGEST: &str = include_str!(concat!(env!("OUT_DIR"), "/source_digest.txt"));

/// The generated Rust, as `parallax compile --emit rust` prints it.
pub const RUST_SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/baked.rs"));
/// The compile statistics of the baked rules.
pub const STATS: &str = include_str!(concat!(env!("OUT_DIR"), "/stats.txt"));

#[derive(Debug, thiserror::Error)]
pub enum BakedError {
    #[error("the baked program is unreadable: {0}")]
    Program(#[from] serde_json::Error),
    #[error("a baked DFA is unreadable: {0}")]
    Dfa(#[from] regex_automata::util::wire::DeserializeError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The baked program (rules, atoms, settings the binary was built with).
pub fn program() -> Result<Program, BakedError> {
    Ok(serde_json::from_str(generated::PROGRAM_JSON)?)
}

/// The baked engine: DFAs used in place from the binary's data (validated,
/// not copied), predicates as generated functions.
pub fn engine() -> Result<Engine, BakedError> {
    let program = program()?;
    let mut dfas = Vec::with_capacity(generated::DFA_SHARDS.len());
    for field in generated::DFA_SHARDS {
        let mut shards = Vec::with_capacity(field.len());
        for bytes in field.iter() {
            let (dfa, _) = dense::DFA::from_bytes(bytes)?;
            shards.push(ShardDfa::Static(dfa));
        }
        dfas.push(shards);
    }
    Ok(Engine::new(
        program,
        dfas,
        Predicates::Compiled(&generated::PREDICATES),
        Backend::Baked,
    )?)
}
