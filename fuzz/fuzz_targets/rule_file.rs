//! A rule file of any engine under `rules/<engine>/` (list form or
//! `evaluator:` + `rules:`; Sigma documents; CEL expressions; SQL queries),
//! loaded through the config that points at it and compiled.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

const ENGINES: [&str; 5] = ["regex", "pattern", "cel", "sigma", "sql"];

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("parallax-fuzz-rules-{}", std::process::id()));
        for e in ENGINES {
            std::fs::create_dir_all(d.join("rules").join(e)).expect("temp dir");
        }
        std::fs::write(d.join("parallax.yaml"), "rules_dir: rules\n").expect("config");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the engine directory, the rest is the file.
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let engine = ENGINES[which as usize % ENGINES.len()];
    let d = dir();
    for other in ENGINES.iter().filter(|e| **e != engine) {
        let _ = std::fs::remove_file(d.join(format!("rules/{other}/f.yaml")));
    }
    std::fs::write(d.join(format!("rules/{engine}/f.yaml")), body).expect("write the rule file");
    if let Ok(rules) = parallax_compiler::load(&d.join("parallax.yaml")) {
        let compiled =
            parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
        let _ = compiled.into_engine();
    }
});
