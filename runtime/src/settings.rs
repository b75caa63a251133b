//! Non-rule settings from `parallax.yaml`: server, reporting and proxy.
//!
//! They live in the runtime (not the compiler) because a baked binary carries
//! them too: an organisation's binary started with no config file runs with
//! the settings it was built with.

use crate::action::Action;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub reporting: ReportingSettings,
    pub proxy: ProxySettings,
    pub state: StateSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Loopback by default: exposing a security engine is a decision.
    pub host: String,
    pub port: u16,
    /// Largest accepted request body; larger bodies get 413.
    pub max_body_bytes: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            host: "127.0.0.1".into(),
            port: 9920,
            max_body_bytes: 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportingSettings {
    /// JSON-lines audit log.
    pub log_file: Option<String>,
    pub webhook_url: Option<String>,
    /// Verdicts that trigger the webhook.
    pub webhook_events: Vec<Action>,
}

impl Default for ReportingSettings {
    fn default() -> Self {
        ReportingSettings {
            log_file: None,
            webhook_url: None,
            webhook_events: vec![Action::Block],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxySettings {
    pub enabled: bool,
    pub host: String,
    pub port: u16,
    /// Upstream base URL for Anthropic-format requests.
    pub anthropic_upstream: Option<String>,
    /// Upstream base URL for OpenAI-format requests.
    pub openai_upstream: Option<String>,
}

impl Default for ProxySettings {
    fn default() -> Self {
        ProxySettings {
            enabled: false,
            host: "127.0.0.1".into(),
            port: 9921,
            anthropic_upstream: None,
            openai_upstream: None,
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
