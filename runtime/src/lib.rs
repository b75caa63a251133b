//! Parallax runtime: what a compiled rule set needs at evaluation time.
//!
//! A rule's life reads in layers, like the `regex` family:
//! YAML (compiler) → IR ([`Predicate`] over [`Atom`]s) → automata and
//! generated predicates ([`Program`], [`ShardDfa`], [`CompiledPredicate`]) →
//! verdict ([`Engine::evaluate`]). This crate holds the last two layers and
//! nothing that parses rule sources, so a baked binary's hot path carries no
//! YAML parser.

pub mod action;
pub mod arg_schema;
pub mod bitset;
pub mod candidates;
pub mod cel;
pub mod check;
pub mod classifier;
pub mod deadline;
pub mod deobfuscate;
pub mod engine;
pub mod escapes;
pub mod event;
pub mod field;
pub mod hosts;
pub mod memory_files;
pub mod normalize;
pub mod path_normalize;
pub mod predicate;
pub mod prepared;
pub mod program;
pub mod redact;
pub mod report;
pub mod scan;
pub mod settings;
pub mod shared_builds;
pub mod shell;
pub mod stage;
pub mod tally;
pub mod tone;
pub mod transform;
pub mod transform_detectors;
pub mod triggers;
pub mod typosquat;
pub mod validator;
pub mod word_boundary;

pub use action::{Action, Priority};
pub use bitset::BitSet;
pub use check::{Check, CheckOp, NumCmp, TextMode};
pub use engine::{Backend, Engine, EngineError, OwnedVerdict, Predicates, Scratch, Verdict};
pub use event::{Event, EventError};
pub use field::{
    Canonical, FieldRef, JsonRoot, TopField, UnknownField, CANONICAL_NAMES, TOP_FIELD_NAMES,
};
pub use predicate::{CompiledPredicate, Predicate, PredicateInput};
pub use prepared::PreparedEvent;
pub use program::{
    ApprovalSpec, Atom, AtomPath, CelExpr, EngineKind, EvaluatorMeta, FieldPlan, LiteralPlan,
    LiteralTarget, Program, RuleMeta, ShardPlan, SqlRuleSpec, TimeoutOutcome, VerifierPlan,
};
pub use report::{
    mask_secret_text, mask_secrets, Conclusion, EvaluationFailure, LateMatch, PartialFailure,
    Report, RuleResult,
};
pub use scan::ShardDfa;
pub use settings::{FailMode, FrontDoorSections, ProgramSettings, StateSettings, FRONT_DOOR_KEYS};
pub use stage::{Stage, StageSet};
pub use tally::Tally;
pub use transform::{CachedRegex, Transform, TransformOp};
pub use validator::Validator;
