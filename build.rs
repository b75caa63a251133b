//! Bakes the rules into the binary: runs the rule compiler on
//! `$PARALLAX_CONFIG` (default: `parallax.yaml` beside this file, with the
//! rules tree next to it) and writes the generated module, the program and
//! the serialized DFAs into `OUT_DIR`, where `src/baked.rs` includes them.
//!
//! `PARALLAX_CONFIG=/etc/org/parallax.yaml cargo build --release` builds an
//! organisation's own immutable binary. A rule that does not compile fails
//! the build with the file, the rule id and the reason.

use std::path::PathBuf;

/// The front doors' settings types, shared with the binary so the baked
/// config's `server:`, `reporting:` and `proxy:` sections are checked here.
#[allow(dead_code)]
#[path = "src/settings/sections.rs"]
mod sections;

fn main() {
    println!("cargo:rerun-if-env-changed=PARALLAX_CONFIG");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let config = match std::env::var_os("PARALLAX_CONFIG") {
        Some(p) => manifest.join(p),
        None => manifest.join("parallax.yaml"),
    };
    let rules = match parallax_compiler::load(&config) {
        Ok(r) => r,
        Err(errors) => {
            // The inputs are unknown when loading fails: watch the config and
            // the conventional rules folder so a fix triggers a rebuild.
            println!("cargo:rerun-if-changed={}", config.display());
            if let Some(dir) = config.parent() {
                println!("cargo:rerun-if-changed={}", dir.join("rules").display());
            }
            eprintln!(
                "parallax: the rules in {} do not compile:\n{errors}",
                config.display()
            );
            std::process::exit(1);
        }
    };
    for input in &rules.inputs {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    println!("cargo:rerun-if-changed=src/settings/sections.rs");
    if let Err(problems) = sections::Settings::from_program(&rules.settings) {
        eprintln!(
            "parallax: invalid settings in {}:\n  {}",
            config.display(),
            problems.join("\n  ")
        );
        std::process::exit(1);
    }
    let compiled = parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    // The digest of the source files: a binary started on these same files
    // uses the baked program without lowering anything (src/backend/).
    let digest = parallax_compiler::source_digest::of_config(&config).unwrap_or_default();
    if let Err(e) = std::fs::write(out.join("source_digest.txt"), digest) {
        eprintln!("parallax: cannot write the source digest: {e}");
        std::process::exit(1);
    }
    let big_endian = std::env::var("CARGO_CFG_TARGET_ENDIAN").as_deref() == Ok("big");
    if let Err(e) = parallax_compiler::codegen::write_baked(&compiled, &out, big_endian) {
        eprintln!(
            "parallax: cannot write the baked rules to {}: {e}",
            out.display()
        );
        std::process::exit(1);
    }
    bake_sigma_fixture(&manifest, &out, big_endian);
}

/// Bakes `tests/fixtures/sigma/` as well (files prefixed `sigma_fixture_`),
/// so `tests/sigma_codegen.rs` can run generated check code against the
/// interpreter. It is a few dozen rules and milliseconds; the binary never
/// includes it.
fn bake_sigma_fixture(manifest: &std::path::Path, out: &std::path::Path, big_endian: bool) {
    let config = manifest.join("tests/fixtures/sigma/parallax.yaml");
    if !config.is_file() {
        return;
    }
    let rules = match parallax_compiler::load(&config) {
        Ok(r) => r,
        Err(errors) => {
            println!("cargo:rerun-if-changed={}", config.display());
            eprintln!(
                "parallax: the Sigma test fixture {} does not compile:\n{errors}",
                config.display()
            );
            std::process::exit(1);
        }
    };
    for input in &rules.inputs {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    let compiled = parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
    if let Err(e) =
        parallax_compiler::codegen::write_baked_at(&compiled, out, big_endian, "sigma_fixture_")
    {
        eprintln!("parallax: cannot write the baked Sigma fixture: {e}");
        std::process::exit(1);
    }
}
