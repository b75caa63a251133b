//! Sigma field names → event fields: the `sigma:` section of `parallax.yaml`
//! plus shipped defaults.
//!
//! SigmaHQ rules name fields after the log source (`CommandLine`, `Image`,
//! `TargetFilename`, `c-uri`); agent events have tool arguments. The
//! defaults map the log sources that have an agent counterpart — process
//! creation (shell commands), file events (file tools), proxy and web logs
//! (fetch tools) — so existing Linux/macOS rules run against agents
//! unchanged. A name with no mapping is tried as a Parallax field name
//! (`command`, `tool_args.x`, …); failing that it stays unmapped, and
//! conditions on it never match (lint warns).

use parallax_runtime::FieldRef;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The shipped defaults; `docs/SIGMA.md` explains each choice.
pub const DEFAULT_MAPPINGS: &[(&str, &[&str])] = &[
    // process_creation: an agent's shell command is the process.
    ("CommandLine", &["command"]),
    ("Image", &["executable"]),
    ("CurrentDirectory", &["tool_args.cwd", "tool_args.workdir"]),
    ("User", &["user_id"]),
    // file_event, file_access, file_change, file_delete, file_rename.
    ("TargetFilename", &["path"]),
    ("SourceFilename", &["path"]),
    // proxy and webserver logs: the URL a fetch tool requests.
    ("c-uri", &["url"]),
    ("c-uri-query", &["url"]),
    ("c-uri-stem", &["url"]),
    ("c-uri-extension", &["url"]),
    ("cs-uri", &["url"]),
    ("cs-uri-query", &["url"]),
    ("cs-uri-stem", &["url"]),
    ("cs-host", &["url"]),
    ("r-dns", &["url"]),
    ("cs-method", &["tool_args.method"]),
    // network_connection and dns_query: the host a tool talks to.
    ("DestinationHostname", &["url"]),
    ("QueryName", &["url"]),
];

/// A field name, or a list of them (any may match).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// `sigma:` in `parallax.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigmaConfig {
    /// Rule field name → event field(s); `[]` unmaps a default.
    #[serde(default)]
    pub field_mappings: BTreeMap<String, OneOrMany>,
    /// Start from the shipped defaults (set `false` to use only yours).
    #[serde(default = "yes")]
    pub default_mappings: bool,
    /// Values for the `expand` modifier's `%name%` placeholders.
    #[serde(default)]
    pub placeholders: BTreeMap<String, Vec<String>>,
}

fn yes() -> bool {
    true
}

impl Default for SigmaConfig {
    fn default() -> Self {
        SigmaConfig {
            field_mappings: BTreeMap::new(),
            default_mappings: true,
            placeholders: BTreeMap::new(),
        }
    }
}

/// Resolved mappings, ready for lowering.
#[derive(Debug, Clone)]
pub struct SigmaContext {
    mappings: BTreeMap<String, Vec<FieldRef>>,
    pub placeholders: BTreeMap<String, Vec<String>>,
}

impl Default for SigmaContext {
    fn default() -> Self {
        SigmaContext::new(&SigmaConfig::default()).unwrap_or(SigmaContext {
            mappings: BTreeMap::new(),
            placeholders: BTreeMap::new(),
        })
    }
}

impl SigmaContext {
    /// Checks every mapping target names an event field.
    pub fn new(config: &SigmaConfig) -> Result<SigmaContext, String> {
        let mut mappings = BTreeMap::new();
        let parse = |sigma: &str, names: &[&str]| -> Result<Vec<FieldRef>, String> {
            names
                .iter()
                .map(|n| {
                    FieldRef::parse(n).map_err(|e| format!("sigma.field_mappings `{sigma}`: {e}"))
                })
                .collect()
        };
        if config.default_mappings {
            for (sigma, targets) in DEFAULT_MAPPINGS {
                mappings.insert(sigma.to_string(), parse(sigma, targets)?);
            }
        }
        for (sigma, targets) in &config.field_mappings {
            let names: Vec<&str> = match targets {
                OneOrMany::One(s) => vec![s.as_str()],
                OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
            };
            mappings.insert(sigma.clone(), parse(sigma, &names)?);
        }
        Ok(SigmaContext {
            mappings,
            placeholders: config.placeholders.clone(),
        })
    }

    /// The event fields a rule's field name stands for; empty when unmapped.
    pub fn resolve(&self, name: &str) -> Vec<FieldRef> {
        if let Some(f) = self.mappings.get(name) {
            return f.clone();
        }
        FieldRef::parse(name).map(|f| vec![f]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_user_overrides_and_plain_names() {
        let mut c = SigmaConfig::default();
        c.field_mappings
            .insert("Image".into(), OneOrMany::Many(Vec::new()));
        c.field_mappings
            .insert("EventID".into(), OneOrMany::One("params.event_id".into()));
        let ctx = SigmaContext::new(&c).unwrap();
        assert_eq!(
            ctx.resolve("CommandLine"),
            vec![FieldRef::parse("command").unwrap()]
        );
        assert!(ctx.resolve("Image").is_empty(), "unmapped by the user");
        assert_eq!(
            ctx.resolve("EventID"),
            vec![FieldRef::parse("params.event_id").unwrap()]
        );
        assert_eq!(
            ctx.resolve("tool_args.x"),
            vec![FieldRef::parse("tool_args.x").unwrap()]
        );
        assert!(ctx.resolve("ParentImage").is_empty());
        c.field_mappings
            .insert("Bad".into(), OneOrMany::One("nope".into()));
        assert!(SigmaContext::new(&c).unwrap_err().contains("`Bad`"));
    }
}
