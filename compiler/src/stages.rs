//! The stages an engine's rules run at when nothing says otherwise (no
//! `stages` on the evaluator or its file's header, no per-rule stage).
//!
//! Its own module because lowering and the Sigma linter both need it: kept
//! in `config`, which reads Sigma's mappings, it made config, lower and
//! sigma import one another in a circle.

use parallax_runtime::{EngineKind, Stage};

/// The stages an engine's rules run at unless told otherwise.
pub fn default_stages(engine: EngineKind) -> Vec<Stage> {
    match engine {
        EngineKind::Regex => vec![Stage::ToolBefore, Stage::ToolAfter],
        EngineKind::Pattern => vec![Stage::ToolBefore],
        EngineKind::Cel | EngineKind::Policy => vec![Stage::ToolBefore],
        // What a user says and what a tool brings back: where injected
        // instructions arrive.
        EngineKind::Classifier => vec![Stage::MessageBefore, Stage::ToolAfter],
        // Like regex: a Sigma rule may be written for what a tool call is
        // about to do or for what it returned, and one for a tool result
        // must not silently never run. `logsource: {product: agent,
        // category: <stage>}` narrows a rule to exactly one stage.
        EngineKind::Sigma => vec![Stage::ToolBefore, Stage::ToolAfter],
        EngineKind::Sql => vec![Stage::ToolBefore],
        // Arguments exist only on the call.
        EngineKind::Schema => vec![Stage::ToolBefore],
        // Each ATR rule runs at the stages of the fields it reads.
        EngineKind::Atr => Vec::new(),
    }
}
