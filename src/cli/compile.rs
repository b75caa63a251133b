//! `parallax compile --emit rust|stats|program`: show the compiler's output.

use super::{fail, Emit};
use crate::backend::{self, LoadError};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(config: Option<PathBuf>, emit: Emit) -> ExitCode {
    let path = match backend::config_path(config.as_deref()) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let text = match path {
        None => match emit {
            Emit::Rust => crate::backend::baked::RUST_SOURCE.to_string(),
            Emit::Stats => crate::backend::baked::STATS.to_string(),
            Emit::Program => match crate::backend::baked::program() {
                Ok(p) => serde_json::to_string_pretty(&p).unwrap_or_default(),
                Err(e) => return fail(e),
            },
        },
        Some(p) => {
            let compiled = match parallax_compiler::compile_file(&p) {
                Ok(c) => c,
                Err(e) => return fail(LoadError::from(e)),
            };
            match emit {
                Emit::Rust => parallax_compiler::codegen::generate_rust(&compiled),
                Emit::Stats => compiled.stats_with_literal_bytes().to_string(),
                Emit::Program => {
                    serde_json::to_string_pretty(&compiled.program).unwrap_or_default()
                }
            }
        }
    };
    print!("{text}");
    ExitCode::SUCCESS
}
