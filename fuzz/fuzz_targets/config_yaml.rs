//! `parallax.yaml` as written by anyone: load, lower, validate settings and
//! (when it lowers) compile. Errors are fine; panics and hangs are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("parallax-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let path = dir().join("parallax.yaml");
    std::fs::write(&path, data).expect("write the config");
    if let Ok(rules) = parallax_compiler::load(&path) {
        let _ = parallax::settings::checks::problems(&rules.settings);
        let compiled =
            parallax_compiler::plan::compile(&rules, &parallax_compiler::Limits::default());
        let _ = compiled.into_engine();
    }
});
