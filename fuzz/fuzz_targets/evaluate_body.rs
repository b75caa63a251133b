//! The `/evaluate` body, through exactly the steps the server takes:
//! UTF-8, JSON, shape limits, event parsing, evaluation, report encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parallax::decision::{DecisionService, Door, Origin};
use std::sync::OnceLock;
use std::time::Instant;

fn state() -> &'static DecisionService {
    static STATE: OnceLock<DecisionService> = OnceLock::new();
    STATE.get_or_init(|| {
        let engine = parallax::backend::baked::engine().expect("the baked engine loads");
        let settings = engine.program().settings.clone();
        DecisionService::new(engine, settings).expect("the side-store opens")
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
    if parallax::http::json_limits::check(&value, s.max_json_depth, s.max_string_bytes).is_err() {
        return;
    }
    let Ok(event) = parallax_runtime::Event::from_value(value) else {
        return;
    };
    let report = state.decide(event, &Origin::door(Door::Library), Instant::now());
    serde_json::to_vec(&report).expect("a report always encodes");
});
