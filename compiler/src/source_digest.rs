//! A digest of a configuration's source files, for choosing the backend at
//! start-up without lowering anything.
//!
//! The rules fingerprint ([`crate::RuleSet::fingerprint`]) is taken over
//! the lowered IR, and lowering compiles a regex per pattern and checks
//! each SQL rule on an in-memory SQLite: most of a baked binary's start-up
//! went into recomputing a fingerprint the build already knew. The build
//! bakes this digest as well (`build.rs`); at start-up the same files are
//! read and hashed, and equal digests mean the baked program is the
//! program those files compile to, so it is used as is. Any difference
//! (an edited, added or removed rule file, another compiler) falls back to
//! lowering and the fingerprint, which still decides.

use crate::config::{self, ConfigSources};
use crate::CompileErrors;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The digest of `config` and every file and folder it reads.
pub fn of_config(config: &Path) -> Result<String, CompileErrors> {
    Ok(of_sources(&config::load(config)?))
}

/// The digest of loaded sources: the compiler version, then each input in
/// the order the loader read it — its path relative to the config's
/// folder (so a copied tree digests the same), whether it is a folder, and
/// a file's bytes. Unreadable inputs digest as such (the lowering that
/// follows reports them).
pub fn of_sources(sources: &ConfigSources) -> String {
    let base = sources.path.parent().unwrap_or(Path::new(""));
    let mut h = Sha256::new();
    h.update(b"parallax-sources\0");
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(b"\0");
    for (i, input) in sources.inputs.iter().enumerate() {
        let name = if i == 0 {
            // The config itself: its name is not part of what it means.
            Path::new("")
        } else {
            input.strip_prefix(base).unwrap_or(input)
        };
        h.update(name.to_string_lossy().as_bytes());
        h.update(b"\0");
        if input.is_dir() {
            h.update(b"dir\0");
            continue;
        }
        match std::fs::read(input) {
            Ok(bytes) => {
                h.update(b"file\0");
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(&bytes);
            }
            Err(_) => h.update(b"unreadable\0"),
        }
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(tag: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("parallax-digest-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("rules/regex")).unwrap();
        std::fs::write(dir.join("parallax.yaml"), "rules_dir: rules\n").unwrap();
        std::fs::write(
            dir.join("rules/regex/a.yaml"),
            "evaluator:\n  name: a\nrules:\n  - id: r1\n    title: t\n    \
             action: block\n    pattern: 'rm -rf'\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn same_files_same_digest_any_change_another() {
        let a = tree("a");
        let b = tree("b");
        let da = of_config(&a.join("parallax.yaml")).unwrap();
        assert_eq!(
            da,
            of_config(&b.join("parallax.yaml")).unwrap(),
            "a copy digests the same"
        );
        std::fs::write(
            b.join("rules/regex/a.yaml"),
            "evaluator:\n  name: a\nrules: []\n",
        )
        .unwrap();
        let edited = of_config(&b.join("parallax.yaml")).unwrap();
        assert_ne!(da, edited, "an edited rule file");
        std::fs::write(
            b.join("rules/regex/b.yaml"),
            "evaluator:\n  name: b\nrules: []\n",
        )
        .unwrap();
        assert_ne!(
            edited,
            of_config(&b.join("parallax.yaml")).unwrap(),
            "an added rule file"
        );
        let _ = std::fs::remove_dir_all(&a);
        let _ = std::fs::remove_dir_all(&b);
    }
}
