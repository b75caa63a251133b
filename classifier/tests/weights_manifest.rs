//! The committed weights are the pipeline's output: their SHA-256 and
//! size are the ones `training/run.sh` recorded in the manifest, and the
//! manifest names every data source with its version and licence.

use sha2::{Digest, Sha256};

const WEIGHTS: &[u8] = include_bytes!("../weights/injection.bin");
const MANIFEST: &str = include_str!("../weights/injection.manifest.json");

fn manifest() -> serde_json::Value {
    serde_json::from_str(MANIFEST).expect("manifest parses")
}

#[test]
fn weights_match_the_manifest_checksum() {
    let m = manifest();
    let hex: String = Sha256::digest(WEIGHTS)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        Some(hex.as_str()),
        m["sha256"].as_str(),
        "re-run training/run.sh and commit its output"
    );
    assert_eq!(m["bytes"].as_u64(), Some(WEIGHTS.len() as u64));
    assert!(WEIGHTS.len() <= 2 * 1024 * 1024, "weights over 2 MB");
}

#[test]
fn every_source_has_a_version_and_an_allowed_licence() {
    let m = manifest();
    let sources = m["sources"].as_array().expect("sources list");
    assert!(sources.len() >= 10);
    for s in sources {
        let name = s["package"].as_str().unwrap_or("?");
        assert!(
            s["version"].as_str().is_some_and(|v| !v.is_empty()),
            "{name}: no version"
        );
        let licence = s["licence"].as_str().unwrap_or("");
        assert!(
            ["MIT", "Apache-2.0", "BSD-3-Clause"]
                .iter()
                .any(|l| licence.starts_with(l)),
            "{name}: licence {licence:?} is not one the pipeline allows"
        );
        for banned in ["garak", "pyrit", "walledeval", "langkit"] {
            assert_ne!(name, banned, "{banned} must not be a training source");
        }
    }
}

#[test]
fn thresholds_are_probabilities_and_ordered() {
    let m = manifest();
    let detect = m["thresholds"]["detect"].as_f64().expect("detect");
    let block = m["thresholds"]["block"].as_f64().expect("block");
    assert!(
        0.0 < detect && detect <= block && block < 1.0,
        "{detect} {block}"
    );
}
