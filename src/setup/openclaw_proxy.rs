//! `parallax setup|revert openclaw --mode proxy`: OpenClaw's model traffic
//! through Parallax's model-API proxy. In OpenClaw's config
//! (`$OPENCLAW_CONFIG_PATH`, else `~/.openclaw/openclaw.json`):
//!
//! - `models.providers.parallax = {baseUrl, apiKey, api, models}` —
//!   `baseUrl` the proxy's prefix for the chosen API (`<url>/anthropic` for
//!   `anthropic-messages`, `<url>/openai/v1` for `openai-responses` and
//!   `openai-completions`, as OpenClaw wants them), `apiKey` a `${VAR}`
//!   reference OpenClaw substitutes from the environment (the key itself is
//!   never written; the proxy passes it upstream), `models` the one model
//!   id given;
//! - `agents.defaults.model.primary = "parallax/<model>"`, selecting it.
//!
//! Everything else is kept in its order. Revert takes the provider out and
//! gives `primary` back the value it had before setup (from the backup;
//! removed when there was none); when that leaves what the backup holds,
//! the backup's bytes are put back ([`super::finish_revert`]).

use super::json::Json;
use super::openclaw::parse;
use super::{backup_path, read_optional, write_keeping_backup, Outcome};
use std::path::Path;

pub const PROVIDER_ID: &str = "parallax";

/// The model API OpenClaw speaks to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Api {
    /// Anthropic Messages (`api: anthropic-messages`).
    AnthropicMessages,
    /// OpenAI Responses (`api: openai-responses`).
    OpenaiResponses,
    /// OpenAI Chat Completions (`api: openai-completions`).
    OpenaiCompletions,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenaiResponses => "openai-responses",
            Api::OpenaiCompletions => "openai-completions",
        }
    }

    /// The proxy's base URL for this API, in the form OpenClaw expects
    /// (Anthropic's without `/v1`, OpenAI's with it).
    pub fn base_url(self, url: &str) -> String {
        let url = url.trim_end_matches('/');
        match self {
            Api::AnthropicMessages => format!("{url}/anthropic"),
            Api::OpenaiResponses | Api::OpenaiCompletions => format!("{url}/openai/v1"),
        }
    }

    /// The environment variable the key usually lives in.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Api::AnthropicMessages => "ANTHROPIC_API_KEY",
            Api::OpenaiResponses | Api::OpenaiCompletions => "OPENAI_API_KEY",
        }
    }
}

pub struct Options {
    pub url: String,
    pub api: Api,
    pub model: String,
    /// The variable OpenClaw reads the API key from (`${VAR}`).
    pub key_env: String,
}

/// The object at `keys` under `root`, created (empty) where absent.
fn object_at<'a>(path: &Path, root: &'a mut Json, keys: &[&str]) -> Result<&'a mut Json, String> {
    let mut node = root;
    for (i, k) in keys.iter().enumerate() {
        node = node
            .entry(k, Json::Object(Vec::new()))
            .filter(|v| matches!(v, Json::Object(_)))
            .ok_or_else(|| {
                format!(
                    "{}: `{}` is not an object; nothing written",
                    path.display(),
                    keys[..=i].join(".")
                )
            })?;
    }
    Ok(node)
}

fn get_at<'a>(root: &'a Json, keys: &[&str]) -> Option<&'a Json> {
    keys.iter().try_fold(root, |node, k| node.get(k))
}

const PRIMARY: [&str; 4] = ["agents", "defaults", "model", "primary"];

fn selected(model: &str) -> String {
    format!("{PROVIDER_ID}/{model}")
}

fn edit(path: &Path, root: &mut Json, o: &Options) -> Result<(), String> {
    let providers = object_at(path, root, &["models", "providers"])?;
    let entry = Json::obj(vec![
        ("baseUrl", Json::String(o.api.base_url(&o.url))),
        ("apiKey", Json::String(format!("${{{}}}", o.key_env))),
        ("api", Json::str(o.api.as_str())),
        (
            "models",
            Json::Array(vec![Json::obj(vec![
                ("id", Json::String(o.model.clone())),
                ("name", Json::String(o.model.clone())),
            ])]),
        ),
    ]);
    match providers.get_mut(PROVIDER_ID) {
        Some(slot) => *slot = entry,
        None => {
            providers.entry(PROVIDER_ID, entry);
        }
    }
    let model = object_at(path, root, &PRIMARY[..3])?;
    match model.get_mut("primary") {
        Some(slot) => *slot = Json::String(selected(&o.model)),
        None => {
            model.entry("primary", Json::String(selected(&o.model)));
        }
    }
    Ok(())
}

/// Removes the member at `keys`, then each object on the way that it left
/// empty.
fn remove_at(root: &mut Json, keys: &[&str]) -> bool {
    fn go(node: &mut Json, keys: &[&str]) -> bool {
        match keys {
            [] => false,
            [last] => node.remove(last).is_some(),
            [first, rest @ ..] => {
                let Some(child) = node.get_mut(first) else {
                    return false;
                };
                let removed = go(child, rest);
                if removed && child.is_empty_container() {
                    node.remove(first);
                }
                removed
            }
        }
    }
    go(root, keys)
}

pub fn setup(config: &Path, o: &Options) -> Result<Outcome, String> {
    let before = read_optional(config)?;
    let mut root = match &before {
        Some(b) => parse(config, b)?,
        None => Json::Object(Vec::new()),
    };
    let previous = get_at(&root, &PRIMARY)
        .and_then(Json::as_str)
        .filter(|p| !p.starts_with(&format!("{PROVIDER_ID}/")))
        .map(str::to_owned);
    edit(config, &mut root, o)?;
    let after = root.pretty();
    let mut out = Outcome::default();
    if before.as_deref() == Some(after.as_bytes()) {
        out.done.push(format!(
            "{} already sends OpenClaw's model traffic through the Parallax proxy; unchanged",
            config.display()
        ));
    } else {
        let verb = write_keeping_backup(config, before.as_deref(), after.as_bytes(), &mut out)?;
        out.done.push(format!(
            "{} {}: models.providers.{PROVIDER_ID} ({}, api {}), agents.defaults.model.primary \
             = {}",
            verb,
            config.display(),
            o.api.base_url(&o.url),
            o.api.as_str(),
            selected(&o.model)
        ));
    }
    out.todo.push(format!(
        "run `parallax serve --mode proxy` at {} (proxy.{}_upstream says where it forwards)",
        o.url,
        match o.api {
            Api::AnthropicMessages => "anthropic",
            _ => "openai",
        }
    ));
    out.todo.push(format!(
        "export {} where OpenClaw runs: the config refers to it as ${{{}}} and the proxy passes \
         the key upstream",
        o.key_env, o.key_env
    ));
    if let Some(p) = previous {
        out.todo.push(format!(
            "the model was `{p}`; Parallax forwards to its own upstream, so `{}` must be a model \
             id that upstream serves",
            o.model
        ));
    }
    Ok(out)
}

/// Takes the provider out and gives `primary` back its value before setup.
fn strip(root: &mut Json, original: Option<&Json>) -> bool {
    let mut found = remove_at(root, &["models", "providers", PROVIDER_ID]);
    let ours = get_at(root, &PRIMARY)
        .and_then(Json::as_str)
        .is_some_and(|p| p.starts_with(&format!("{PROVIDER_ID}/")));
    if ours {
        found = true;
        let previous = original
            .and_then(|o| get_at(o, &PRIMARY))
            .and_then(Json::as_str)
            .filter(|p| !p.starts_with(&format!("{PROVIDER_ID}/")))
            .map(str::to_owned);
        match previous {
            Some(p) => {
                if let Some(slot) = get_at_mut(root, &PRIMARY) {
                    *slot = Json::String(p);
                }
            }
            None => {
                remove_at(root, &PRIMARY);
            }
        }
    }
    found
}

fn get_at_mut<'a>(root: &'a mut Json, keys: &[&str]) -> Option<&'a mut Json> {
    keys.iter().try_fold(root, |node, k| node.get_mut(k))
}

pub fn revert(config: &Path) -> Result<Outcome, String> {
    let mut out = Outcome::default();
    let Some(before) = read_optional(config)? else {
        out.done.push(format!(
            "{} does not exist; nothing to revert",
            config.display()
        ));
        return Ok(out);
    };
    let mut root = parse(config, &before)?;
    let backup = backup_path(config);
    let original = match read_optional(&backup)? {
        Some(b) => parse(&backup, &b).ok(),
        None => None,
    };
    if !strip(&mut root, original.as_ref()) {
        out.done.push(format!(
            "{} has no Parallax proxy provider; unchanged",
            config.display()
        ));
        return Ok(out);
    }
    super::finish_revert(
        config,
        &root,
        parse,
        "the Parallax proxy provider",
        &mut out,
    )?;
    Ok(out)
}

/// What `setup openclaw` puts in front of OpenClaw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OpenclawMode {
    /// The Parallax plugin: its hooks ask the server on every tool call.
    Plugin,
    /// A model provider whose traffic goes through the model-API proxy.
    Proxy,
}
