//! The settings a compiled program carries besides its rules.
//!
//! Only what evaluation itself needs is typed here: the SQL rules'
//! side-store (`state:`) and what to answer when evaluation fails
//! ([`FailMode`], part of every verdict). The sections that belong to the
//! front doors (`server:`, `reporting:`, `proxy:`, and those later front
//! doors add) are carried as written, in [`FrontDoorSections`]: the binary
//! owns their types and checks them when it loads a program, so this crate
//! does not grow with each front door. They travel in the program because a
//! baked binary started with no config file runs with the settings it was
//! built with.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a program carries besides its rules.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProgramSettings {
    pub state: StateSettings,
    pub front_doors: FrontDoorSections,
}

/// The config's front-door sections by top-level key (`server`,
/// `reporting`, `proxy`, `mcp`), as JSON, unchecked: an absent section is absent.
pub type FrontDoorSections = BTreeMap<String, serde_json::Value>;

/// The top-level config keys that are front-door sections (checked by the
/// binary, carried here as written).
pub const FRONT_DOOR_KEYS: [&str; 10] = [
    "server",
    "reporting",
    "proxy",
    "mcp",
    "approvals",
    "reload",
    "telemetry",
    "budgets",
    "store",
    "tenants",
];

/// What to answer when evaluation cannot complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// Let the event through (availability over safety).
    Open,
    /// Block the event: a security engine that cannot decide says no.
    #[default]
    Closed,
}

impl FailMode {
    pub fn as_str(self) -> &'static str {
        match self {
            FailMode::Open => "open",
            FailMode::Closed => "closed",
        }
    }
}

/// The side-store SQL rules query (`state:` in `parallax.yaml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateSettings {
    /// A SQLite file (WAL mode) so windows survive a restart; `None` keeps
    /// the store in memory.
    pub path: Option<String>,
    /// Events older than this are pruned; no rule can look further back.
    pub retention_seconds: u64,
    /// The store never holds more events than this: memory stays flat
    /// whatever the load.
    pub max_rows: u64,
}

impl Default for StateSettings {
    fn default() -> Self {
        StateSettings {
            path: None,
            retention_seconds: 3600,
            max_rows: 100_000,
        }
    }
}
