//! Where the conformance corpora (ATR, SigmaHQ, the CEL specification's
//! cases) are, and what a suite does when its corpus is absent.
//!
//! The corpora are third-party and read in place, never copied into the
//! repository, so a fresh clone has none of them. One setting finds them
//! all: `PARALLAX_CONFORMANCE_DIR` (a relative value is taken from the
//! workspace root, so every crate reads it alike), by default
//! `<workspace root>/../shared/conformance`. Without a corpus a suite says
//! on stderr that it was skipped and passes, so `cargo test --workspace`
//! works on a fresh clone; under `CI=true` the same message fails it, so CI
//! can never quietly stop running the suites.
//!
//! One file for the whole workspace: each crate's tests (and the ATR bench)
//! include it with `#[path]`, and `CARGO_MANIFEST_DIR` below is the
//! including crate's.
// Each includer uses only part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// The one setting that says where the corpora are.
pub const ENV: &str = "PARALLAX_CONFORMANCE_DIR";

/// The workspace root: the nearest directory above the including crate
/// whose `Cargo.toml` declares the workspace (crates sit at different
/// depths, so a fixed `..` would not do).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|d| {
            std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]"))
        })
        .unwrap_or(manifest)
        .to_path_buf()
}

/// The conformance root: `PARALLAX_CONFORMANCE_DIR`, else the default.
pub fn root() -> PathBuf {
    let root = workspace_root();
    match std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        Some(dir) => root.join(dir),
        None => root.join("../shared/conformance"),
    }
}

/// Why `suite` cannot run: the path looked at, and the setting to change.
fn missing(suite: &str, dir: &Path) -> String {
    format!(
        "{suite} — corpus not found at {} (set {ENV})",
        dir.display()
    )
}

/// The corpus at `sub` below the conformance root, or `None` once a line
/// on stderr has said that `suite` is skipped and why. Panics instead when
/// `CI` is `true`.
pub fn corpus(suite: &str, sub: &str) -> Option<PathBuf> {
    let dir = root().join(sub);
    if dir.is_dir() {
        return Some(dir);
    }
    let why = missing(suite, &dir);
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}; with CI=true a missing corpus fails instead of being skipped");
    }
    // Straight to the process's stderr: `eprintln!` output of a passing
    // test is captured by the harness and never shown.
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
    None
}

/// The corpus at `sub`, for a bench, which has no skipping: panics with the
/// same message when it is absent.
pub fn require(suite: &str, sub: &str) -> PathBuf {
    let dir = root().join(sub);
    if !dir.is_dir() {
        panic!("{}", missing(suite, &dir));
    }
    dir
}
