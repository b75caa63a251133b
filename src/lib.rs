//! The `parallax` binary's library: the baked rules, backend selection, the
//! HTTP server and the CLI commands, kept in a library so integration tests
//! and benches drive exactly what the binary runs.

pub mod atr_cases;
pub mod audit;
pub mod auth;
pub mod baked;
pub mod cli;
pub mod docs;
pub mod limits;
pub mod loader;
pub mod metrics;
pub mod ruletest;
pub mod sequence_case;
pub mod server;
pub mod validate;
pub mod webhook;
