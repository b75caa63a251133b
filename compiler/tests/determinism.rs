//! Generated code is an artefact: the same rules give the same bytes, every
//! time (so builds are reproducible and diffs of generated code mean
//! something).

use parallax_compiler::{codegen, compile_file};
use std::path::Path;

#[test]
fn same_rules_same_bytes() {
    let config = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/paths/parallax.yaml"
    ));
    let a = compile_file(config).unwrap();
    let b = compile_file(config).unwrap();
    assert_eq!(codegen::generate_rust(&a), codegen::generate_rust(&b));
    assert_eq!(
        serde_json::to_string(&a.program).unwrap(),
        serde_json::to_string(&b.program).unwrap()
    );
    for (fa, fb) in a.dfas.iter().zip(&b.dfas) {
        for (da, db) in fa.iter().zip(fb) {
            assert_eq!(da.to_bytes_little_endian().0, db.to_bytes_little_endian().0);
        }
    }
    let dir = std::env::temp_dir().join(format!("parallax-determinism-{}", std::process::id()));
    let written = codegen::write_baked(&a, &dir, false).unwrap();
    // Every artefact but the stats, which record the build time.
    let artefacts = |paths: &[std::path::PathBuf]| -> Vec<(std::path::PathBuf, Vec<u8>)> {
        paths
            .iter()
            .filter(|p| !p.ends_with(codegen::STATS_FILE))
            .map(|p| (p.clone(), std::fs::read(p).unwrap()))
            .collect()
    };
    let first = artefacts(&written);
    let again = codegen::write_baked(&b, &dir, false).unwrap();
    let second = artefacts(&again);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(written, again);
    assert_eq!(first.len(), second.len());
    for ((pa, a), (_, b)) in first.iter().zip(&second) {
        assert!(a == b, "{} differs between two compiles", pa.display());
    }
    let rust = codegen::generate_rust(&a);
    assert!(rust.contains("pub static PREDICATES"), "{rust}");
    assert!(syn_parses(&rust), "generated code is valid Rust");
}

fn syn_parses(src: &str) -> bool {
    syn::parse_file(src).is_ok()
}
