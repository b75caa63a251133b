//! `parallax setup|revert openclaw`: the Parallax plugin
//! (integrations/openclaw/, carried inside this binary) written to
//! `<state>/extensions/parallax/` and registered in OpenClaw's config
//! (`$OPENCLAW_CONFIG_PATH`, else `~/.openclaw/openclaw.json`; the state
//! folder is the config's): `plugins.load.paths` gets the plugin's folder,
//! `plugins.allow` gets `parallax`, `plugins.entries.parallax` enables it
//! with the server's URL. Everything else in the file is kept in its order;
//! a file that is not plain JSON (OpenClaw also reads JSON5) is refused.

use super::json::Json;
use super::{read_optional, write_atomic, write_keeping_backup, Outcome};
use std::path::{Path, PathBuf};

pub const PLUGIN_ID: &str = "parallax";

/// The plugin's files, as shipped in integrations/openclaw/.
pub const PLUGIN_FILES: [(&str, &str); 3] = [
    (
        "package.json",
        include_str!("../../integrations/openclaw/package.json"),
    ),
    (
        "openclaw.plugin.json",
        include_str!("../../integrations/openclaw/openclaw.plugin.json"),
    ),
    (
        "index.js",
        include_str!("../../integrations/openclaw/index.js"),
    ),
];

/// `$OPENCLAW_CONFIG_PATH`, else `~/.openclaw/openclaw.json`.
pub fn config_path(env: Option<&std::ffi::OsStr>, home: &Path) -> PathBuf {
    match env.filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => home.join(".openclaw/openclaw.json"),
    }
}

/// Where setup puts the plugin: `extensions/parallax` beside the config.
pub fn plugin_dir(config: &Path) -> PathBuf {
    config
        .parent()
        .unwrap_or(Path::new("."))
        .join("extensions")
        .join(PLUGIN_ID)
}

/// OpenClaw's config as a JSON object (empty when the file is blank);
/// anything else is an error saying nothing was written.
pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<Json, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| format!("{} is not UTF-8 text; nothing written", path.display()))?;
    if text.trim().is_empty() {
        return Ok(Json::Object(Vec::new()));
    }
    let root = Json::parse(text).map_err(|e| {
        format!(
            "cannot parse {} as JSON ({e}; comments and other JSON5 are not edited); fix or \
             move it, nothing written",
            path.display()
        )
    })?;
    if !matches!(root, Json::Object(_)) {
        return Err(format!(
            "{}: the top level is not a JSON object; nothing written",
            path.display()
        ));
    }
    Ok(root)
}

/// The object at `key` of `obj`, created when absent.
fn object<'a>(path: &Path, obj: &'a mut Json, key: &str) -> Result<&'a mut Json, String> {
    obj.entry(key, Json::Object(Vec::new()))
        .filter(|v| matches!(v, Json::Object(_)))
        .ok_or_else(|| {
            format!(
                "{}: `{key}` is not an object; nothing written",
                path.display()
            )
        })
}

/// Adds `item` to the array at `key` of `obj` unless it is there.
fn add_to(path: &Path, obj: &mut Json, key: &str, item: &str) -> Result<(), String> {
    let Some(Json::Array(list)) = obj.entry(key, Json::Array(Vec::new())) else {
        return Err(format!(
            "{}: `{key}` is not an array; nothing written",
            path.display()
        ));
    };
    if !list.iter().any(|v| v.as_str() == Some(item)) {
        list.push(Json::str(item));
    }
    Ok(())
}

fn edit(path: &Path, root: &mut Json, dir: &str, url: &str, fail_open: bool) -> Result<(), String> {
    let plugins = object(path, root, "plugins")?;
    add_to(path, object(path, plugins, "load")?, "paths", dir)?;
    add_to(path, plugins, "allow", PLUGIN_ID)?;
    let entries = object(path, plugins, "entries")?;
    let mut config = vec![("url", Json::String(url.trim_end_matches('/').to_owned()))];
    // The plugin fails closed by default; only the opt-out is written.
    if fail_open {
        config.push(("failClosed", Json::Bool(false)));
    }
    let entry = Json::obj(vec![
        ("enabled", Json::Bool(true)),
        ("config", Json::obj(config)),
    ]);
    match entries.get_mut(PLUGIN_ID) {
        Some(slot) => *slot = entry,
        None => {
            entries.entry(PLUGIN_ID, entry);
        }
    }
    Ok(())
}

/// Takes Parallax's registration out of `root`; whether there was any.
fn strip(root: &mut Json, dir: &str) -> bool {
    let mut found = false;
    let Some(plugins) = root.get_mut("plugins") else {
        return false;
    };
    let drop_from = |list: Option<&mut Json>, item: &str| -> bool {
        match list {
            Some(Json::Array(l)) => {
                let before = l.len();
                l.retain(|v| v.as_str() != Some(item));
                before != l.len()
            }
            _ => false,
        }
    };
    if let Some(load) = plugins.get_mut("load") {
        found |= drop_from(load.get_mut("paths"), dir);
        if load.get("paths").is_some_and(Json::is_empty_container) {
            load.remove("paths");
        }
    }
    found |= drop_from(plugins.get_mut("allow"), PLUGIN_ID);
    if let Some(entries) = plugins.get_mut("entries") {
        found |= entries.remove(PLUGIN_ID).is_some();
    }
    for key in ["load", "allow", "entries"] {
        if found && plugins.get(key).is_some_and(Json::is_empty_container) {
            plugins.remove(key);
        }
    }
    if found && plugins.is_empty_container() {
        root.remove("plugins");
    }
    found
}

pub fn setup(config: &Path, url: &str, fail_open: bool) -> Result<Outcome, String> {
    let dir = plugin_dir(config);
    let dir_s = dir.display().to_string();
    let before = read_optional(config)?;
    let mut root = match &before {
        Some(b) => parse(config, b)?,
        None => Json::Object(Vec::new()),
    };
    edit(config, &mut root, &dir_s, url, fail_open)?;
    let mut out = Outcome::default();
    let mut files_changed = false;
    for (name, text) in PLUGIN_FILES {
        let p = dir.join(name);
        if read_optional(&p)?.as_deref() != Some(text.as_bytes()) {
            write_atomic(&p, text.as_bytes())?;
            files_changed = true;
        }
    }
    if files_changed {
        out.done
            .push(format!("wrote the Parallax plugin to {dir_s}"));
    }
    let after = root.pretty();
    if before.as_deref() == Some(after.as_bytes()) {
        out.done.insert(
            0,
            format!(
                "{} already registers the Parallax plugin; unchanged",
                config.display()
            ),
        );
    } else {
        let verb = write_keeping_backup(config, before.as_deref(), after.as_bytes(), &mut out)?;
        out.done.push(format!(
            "{} {}: plugin `{PLUGIN_ID}` in plugins.load.paths, plugins.allow, plugins.entries",
            verb,
            config.display()
        ));
    }
    out.todo.push(format!(
        "run `parallax serve` at {url}; while it is down the plugin {}",
        if fail_open {
            "lets tool calls run unchecked with a warning (--fail-open: failClosed false)"
        } else {
            "blocks every tool call (it fails closed; --fail-open lets them run instead)"
        }
    ));
    out.todo.push(
        "OpenClaw loads plugins in `openclaw agent --local` and gateway runs; check with \
         `openclaw plugins list`"
            .into(),
    );
    Ok(out)
}

pub fn revert(config: &Path) -> Result<Outcome, String> {
    let dir = plugin_dir(config);
    let mut out = Outcome::default();
    if dir.exists() {
        for (name, _) in PLUGIN_FILES {
            let _ = std::fs::remove_file(dir.join(name));
        }
        if std::fs::remove_dir(&dir).is_ok() {
            out.done.push(format!("removed {}", dir.display()));
            // `extensions/` too when setup's plugin was all it held.
            if let Some(parent) = dir.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
    let Some(before) = read_optional(config)? else {
        out.done.insert(
            0,
            format!("{} does not exist; nothing to revert", config.display()),
        );
        return Ok(out);
    };
    let mut root = parse(config, &before)?;
    if !strip(&mut root, &dir.display().to_string()) {
        out.done.insert(
            0,
            format!("{} has no Parallax plugin; unchanged", config.display()),
        );
        return Ok(out);
    }
    super::finish_revert(config, &root, parse, "the Parallax plugin", &mut out)?;
    Ok(out)
}
