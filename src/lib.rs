//! The `parallax` binary's library, kept a library so integration tests and
//! benches drive exactly what the binary runs. One room per concern:
//!
//! - [`decision`]: the decision service every front door calls;
//! - [`approvals`]: human approval of held calls (`action: approve`);
//! - [`http`]: the HTTP API, a front door;
//! - [`dashboard`]: the page at `/ui` and its data, beside the API;
//! - [`proxy`]: the model-API proxy, a front door on the same listener;
//! - [`hooks`]: agent frameworks' hooks (Claude Code, Codex), a front door;
//! - [`setup`]: writing and removing those hooks in the agents' settings;
//! - [`mcp`]: the MCP gateway (stdio wrapper, Streamable HTTP proxy), a
//!   front door;
//! - [`backend`]: choosing the baked or the dynamic rules;
//! - [`settings`]: the front doors' settings, typed and checked;
//! - [`audit`], [`webhook`], [`metrics`]: where decisions are recorded;
//! - [`casework`]: rules' own test cases, session cases, ATR cases;
//! - [`rules_catalogue`]: docs/RULES.md, generated from the rules;
//! - [`cli`]: the commands.

pub mod approvals;
pub mod audit;
pub mod backend;
pub mod budgets;
pub mod casework;
pub mod cli;
pub mod dashboard;
pub mod decision;
pub mod hooks;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod pagerduty;
pub mod proxy;
pub mod rules_catalogue;
pub mod settings;
pub mod setup;
pub mod telemetry;
pub mod webhook;
