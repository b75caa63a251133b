//! Shared by the compiler's integration tests: rule trees in temp
//! directories, loading them, and checking error messages.
// Each test file uses only part of this module.
#![allow(dead_code)]

use parallax_compiler::{load, CompileErrors, RuleSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `rules_dir: rules`, the config most trees need.
pub const CONFIG: (&str, &str) = ("parallax.yaml", "rules_dir: rules\n");

/// A fresh directory holding `files` (relative path → content).
pub fn tree(files: &[(&str, &str)]) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "parallax-compiler-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    dir
}

/// Loads the tree's `parallax.yaml` (then removes the tree); every error
/// joined by newlines.
pub fn load_tree(files: &[(&str, &str)]) -> Result<RuleSet, String> {
    let dir = tree(files);
    let result = load(&dir.join("parallax.yaml"));
    let _ = std::fs::remove_dir_all(&dir);
    result.map_err(|CompileErrors(es)| {
        es.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// The errors of a tree that must not load.
pub fn errors(files: &[(&str, &str)]) -> String {
    match load_tree(files) {
        Ok(_) => panic!("expected a compile error for: {files:?}"),
        Err(e) => e,
    }
}

pub fn assert_mentions(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "`{p}` missing from:\n{message}");
    }
}
