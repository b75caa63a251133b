//! `parallax setup|revert codex --mode proxy`: Codex's model traffic
//! through Parallax's model-API proxy. In `$CODEX_HOME/config.toml`, a
//! provider `[model_providers.parallax]` (`base_url = "<url>/openai/v1"`,
//! `wire_api = "responses"`, the `env_key` of the provider the user had, so
//! the same API key goes to the proxy, which forwards it upstream) and
//! `model_provider = "parallax"` selecting it. Everything else — `model`,
//! other providers, comments, order, spacing — is kept: the file is edited
//! with `toml_edit`, not rewritten.
//!
//! Revert takes the provider out and gives `model_provider` back the value
//! it had before setup (from the backup; removed when there was none); when
//! that leaves what the backup holds, the backup itself is put back, byte
//! for byte.

use super::{backup_path, read_optional, write_atomic, write_keeping_backup, Outcome};
use std::path::{Path, PathBuf};
use toml_edit::{value, DocumentMut, Item, Table};

/// The provider id setup writes.
pub const PROVIDER_ID: &str = "parallax";
/// Codex's built-in OpenAI provider reads its key from this variable.
const DEFAULT_ENV_KEY: &str = "OPENAI_API_KEY";

pub fn config_path(codex_home: &Path) -> PathBuf {
    codex_home.join("config.toml")
}

/// The proxy's OpenAI base URL for the server at `url`.
pub fn base_url(url: &str) -> String {
    format!("{}/openai/v1", url.trim_end_matches('/'))
}

/// Config.toml parsed with its decoration kept; the error says nothing was
/// written.
pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<DocumentMut, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| format!("{} is not UTF-8 text; nothing written", path.display()))?;
    text.parse::<DocumentMut>().map_err(|e| {
        format!(
            "cannot parse {} as TOML ({}); fix or move it, nothing written",
            path.display(),
            e.to_string().trim()
        )
    })
}

/// The document as plain data, to compare two files' meaning.
pub(super) fn meaning(doc: &DocumentMut) -> Option<toml::Value> {
    toml::from_str(&doc.to_string()).ok()
}

fn providers<'a>(path: &Path, doc: &'a mut DocumentMut) -> Result<&'a mut Table, String> {
    let item = doc.entry("model_providers").or_insert_with(|| {
        let mut t = Table::new();
        // Only `[model_providers.parallax]` is written, no empty header.
        t.set_implicit(true);
        Item::Table(t)
    });
    item.as_table_mut().ok_or_else(|| {
        format!(
            "{}: `model_providers` is not a table; nothing written",
            path.display()
        )
    })
}

/// Sets a string value, keeping the comment and spacing around the old one.
fn set_str(item: &mut Item, s: &str) {
    match item.as_value_mut() {
        Some(v) => {
            let decor = v.decor().clone();
            *v = s.into();
            *v.decor_mut() = decor;
        }
        None => *item = value(s),
    }
}

/// The provider selected before setup and its `base_url`, when it is one
/// of the user's own (the proxy must forward there instead of OpenAI).
fn previous_base_url(doc: &DocumentMut) -> Option<(String, String)> {
    let id = doc.get("model_provider").and_then(Item::as_str)?;
    if id == PROVIDER_ID {
        return None;
    }
    let base = doc
        .get("model_providers")?
        .get(id)?
        .get("base_url")?
        .as_str()?;
    Some((id.to_owned(), base.to_owned()))
}

/// The edit setup makes to `doc`.
pub fn edit(path: &Path, doc: &mut DocumentMut, url: &str) -> Result<(), String> {
    let current = doc
        .get("model_provider")
        .and_then(Item::as_str)
        .unwrap_or("openai")
        .to_owned();
    let table = providers(path, doc)?;
    let env_key = table
        .get(&current)
        .and_then(|p| p.get("env_key"))
        .and_then(Item::as_str)
        .unwrap_or(DEFAULT_ENV_KEY)
        .to_owned();
    if table.get(PROVIDER_ID).is_some_and(|p| !p.is_table()) {
        return Err(format!(
            "{}: `model_providers.{PROVIDER_ID}` is not a table; nothing written",
            path.display()
        ));
    }
    let provider = table
        .entry(PROVIDER_ID)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("{}: cannot write the provider", path.display()))?;
    for (k, v) in [
        ("name", "Parallax proxy"),
        ("base_url", base_url(url).as_str()),
        ("wire_api", "responses"),
        ("env_key", env_key.as_str()),
    ] {
        set_str(provider.entry(k).or_insert(Item::None), v);
    }
    set_str(
        doc.entry("model_provider").or_insert(Item::None),
        PROVIDER_ID,
    );
    Ok(())
}

pub fn setup(codex_home: &Path, url: &str) -> Result<Outcome, String> {
    let path = config_path(codex_home);
    let before = read_optional(&path)?;
    let mut doc = match &before {
        Some(b) => parse(&path, b)?,
        None => DocumentMut::new(),
    };
    let upstream = previous_base_url(&doc);
    edit(&path, &mut doc, url)?;
    let after = doc.to_string();
    let mut out = Outcome::default();
    if before.as_deref() == Some(after.as_bytes()) {
        out.done.push(format!(
            "{} already selects the Parallax proxy provider; unchanged",
            path.display()
        ));
    } else {
        let verb = write_keeping_backup(&path, before.as_deref(), after.as_bytes(), &mut out)?;
        out.done.push(format!(
            "{} {}: model provider `{PROVIDER_ID}` ({}, wire_api responses) selected",
            verb,
            path.display(),
            base_url(url)
        ));
    }
    out.todo.push(format!(
        "run `parallax serve` at {url} (it serves the proxy beside /evaluate; \
         proxy.openai_upstream says where it forwards, https://api.openai.com by default)"
    ));
    if let Some((id, base)) = upstream {
        out.todo.push(format!(
            "your provider `{id}` sent requests to {base}: set proxy.openai_upstream to that \
             origin so the proxy forwards there"
        ));
    }
    out.todo.push(
        "the API key stays in the same environment variable (`env_key`); the proxy passes it \
         upstream"
            .into(),
    );
    Ok(out)
}

/// Takes the provider out of `doc` and gives `model_provider` back the
/// value `original` had; whether there was anything of Parallax's.
fn strip(doc: &mut DocumentMut, original: Option<&DocumentMut>) -> bool {
    let mut found = false;
    if let Some(t) = doc.get_mut("model_providers").and_then(Item::as_table_mut) {
        found |= t.remove(PROVIDER_ID).is_some();
        if t.is_empty() && t.is_implicit() {
            doc.remove("model_providers");
        }
    }
    if doc.get("model_provider").and_then(Item::as_str) == Some(PROVIDER_ID) {
        found = true;
        let previous = original
            .and_then(|o| o.get("model_provider"))
            .and_then(Item::as_str)
            .filter(|p| *p != PROVIDER_ID);
        match previous {
            Some(p) => set_str(&mut doc["model_provider"], p),
            None => {
                doc.remove("model_provider");
            }
        }
    }
    found
}

pub fn revert(codex_home: &Path) -> Result<Outcome, String> {
    let path = config_path(codex_home);
    let mut out = Outcome::default();
    let Some(before) = read_optional(&path)? else {
        out.done.push(format!(
            "{} does not exist; nothing to revert",
            path.display()
        ));
        return Ok(out);
    };
    let mut doc = parse(&path, &before)?;
    let backup = backup_path(&path);
    let original_bytes = read_optional(&backup)?;
    let original = match &original_bytes {
        Some(b) => Some(parse(&backup, b)?),
        None => None,
    };
    if !strip(&mut doc, original.as_ref()) {
        out.done.push(format!(
            "{} has no Parallax provider; unchanged",
            path.display()
        ));
        return Ok(out);
    }
    match (&original_bytes, &original) {
        (Some(bytes), Some(orig)) if meaning(orig) == meaning(&doc) => {
            write_atomic(&path, bytes)?;
            std::fs::remove_file(&backup)
                .map_err(|e| format!("cannot remove {}: {e}", backup.display()))?;
            out.done.push(format!(
                "restored {} from {} (byte for byte)",
                path.display(),
                backup.display()
            ));
        }
        (None, _) if doc.to_string().trim().is_empty() => {
            std::fs::remove_file(&path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
            out.done.push(format!(
                "removed {} (setup created it; nothing else was in it)",
                path.display()
            ));
        }
        (orig, _) => {
            write_atomic(&path, doc.to_string().as_bytes())?;
            out.done.push(format!(
                "removed the Parallax provider from {}; the rest is kept as it is now",
                path.display()
            ));
            if orig.is_some() {
                out.done.push(format!(
                    "{} (the file before setup) differs from it now and is left in place",
                    backup.display()
                ));
            }
        }
    }
    Ok(out)
}
