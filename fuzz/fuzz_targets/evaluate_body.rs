//! The `/evaluate` body, through exactly the steps the server takes:
//! UTF-8, JSON, shape limits, event parsing, evaluation, report encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parallax::server::AppState;
use std::sync::OnceLock;
use std::time::Instant;

fn state() -> &'static AppState {
    static STATE: OnceLock<AppState> = OnceLock::new();
    STATE.get_or_init(|| {
        let engine = parallax::baked::engine().expect("the baked engine loads");
        let settings = engine.program().settings.clone();
        AppState::new(engine, settings).expect("the side-store opens")
    })
}

fuzz_target!(|data: &[u8]| {
    let state = state();
    if std::str::from_utf8(data).is_err() {
        return;
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let s = &state.settings.server;
    if parallax::limits::check(&value, s.max_json_depth, s.max_string_bytes).is_err() {
        return;
    }
    let Ok(event) = parallax_runtime::Event::from_value(value) else {
        return;
    };
    let report = state.evaluate(event, Instant::now());
    serde_json::to_vec(&report).expect("a report always encodes");
});
