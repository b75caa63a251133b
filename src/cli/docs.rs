//! `parallax docs rules`: print the rules catalogue; `parallax docs api`:
//! print the HTTP API's OpenAPI document (`crate::http::openapi`).

use super::fail;
use crate::{backend, rules_catalogue};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(config: Option<PathBuf>) -> ExitCode {
    let path = match backend::config_path(config.as_deref()) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fail(format!(
                "no config: pass -c PATH or run where {} is",
                backend::DEFAULT_CONFIG
            ))
        }
        Err(e) => return fail(e),
    };
    match parallax_compiler::load(&path) {
        Ok(rules) => {
            print!("{}", rules_catalogue::rules_markdown(&rules));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

pub fn run_api() -> ExitCode {
    print!("{}", crate::http::openapi::document_json());
    ExitCode::SUCCESS
}
