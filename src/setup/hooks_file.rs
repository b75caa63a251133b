//! The editor of `{"hooks": {"<Event>": [{"matcher"?, "hooks": [...]}]}}`
//! files (Claude Code's settings, Codex's hooks.json).

use super::json::Json;
use super::{read_optional, write_keeping_backup, Outcome};
use std::path::Path;

/// One matcher group Parallax adds.
pub struct Group {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub handler: Json,
}

/// Whether a hook handler is one `parallax setup <framework>` writes: a
/// command running `… hook <framework>`, or an HTTP hook to
/// `…/hooks/<framework>`.
pub fn is_ours(handler: &Json, framework: &str) -> bool {
    let command = handler.get("command").and_then(Json::as_str);
    let url = handler.get("url").and_then(Json::as_str);
    command.is_some_and(|c| {
        let c = c.trim_end();
        c.contains(&format!(" hook {framework} ")) || c.ends_with(&format!(" hook {framework}"))
    }) || url.is_some_and(|u| {
        u.trim_end_matches('/')
            .ends_with(&format!("/hooks/{framework}"))
    })
}

/// A settings file as a JSON object (empty when blank); anything else is
/// an error saying nothing was written.
pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<Json, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| format!("{} is not UTF-8 text; nothing written", path.display()))?;
    if text.trim().is_empty() {
        return Ok(Json::Object(Vec::new()));
    }
    let root = Json::parse(text).map_err(|e| {
        format!(
            "cannot parse {} as JSON ({e}); fix or move it, nothing written",
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

/// Takes Parallax's groups out of `root`; how many.
fn strip(path: &Path, root: &mut Json, framework: &str) -> Result<usize, String> {
    let Some(hooks) = root.get_mut("hooks") else {
        return Ok(0);
    };
    let Json::Object(events) = hooks else {
        return Err(format!(
            "{}: `hooks` is not an object; nothing written",
            path.display()
        ));
    };
    let mut removed = 0;
    let mut emptied = Vec::new();
    for (event, groups) in events.iter_mut() {
        let Json::Array(list) = groups else { continue };
        let before = list.len();
        list.retain(|g| {
            let handlers = match g.get("hooks") {
                Some(Json::Array(h)) if !h.is_empty() => h,
                _ => return true,
            };
            !handlers.iter().all(|h| is_ours(h, framework))
        });
        removed += before - list.len();
        if list.is_empty() && before > 0 {
            emptied.push(event.clone());
        }
    }
    events.retain(|(k, _)| !emptied.contains(k));
    if removed > 0 && hooks.is_empty_container() {
        root.remove("hooks");
    }
    Ok(removed)
}

/// Adds `groups` to the file at `path` (replacing Parallax's earlier ones).
pub fn apply(path: &Path, groups: &[Group], framework: &str) -> Result<Outcome, String> {
    let before = read_optional(path)?;
    let mut root = match &before {
        Some(b) => parse(path, b)?,
        None => Json::Object(Vec::new()),
    };
    strip(path, &mut root, framework)?;
    let hooks = root
        .entry("hooks", Json::Object(Vec::new()))
        .filter(|h| matches!(h, Json::Object(_)))
        .ok_or_else(|| format!("{}: `hooks` is not an object", path.display()))?;
    for g in groups {
        let list = hooks
            .entry(g.event, Json::Array(Vec::new()))
            .ok_or_else(|| format!("{}: `hooks` is not an object", path.display()))?;
        let Json::Array(list) = list else {
            return Err(format!(
                "{}: `hooks.{}` is not an array; nothing written",
                path.display(),
                g.event
            ));
        };
        let mut group = Vec::new();
        if let Some(m) = g.matcher {
            group.push(("matcher".to_owned(), Json::str(m)));
        }
        group.push(("hooks".to_owned(), Json::Array(vec![g.handler.clone()])));
        list.push(Json::Object(group));
    }
    let after = root.pretty();
    let mut out = Outcome::default();
    let events: Vec<&str> = groups.iter().map(|g| g.event).collect();
    if before.as_deref() == Some(after.as_bytes()) {
        out.done.push(format!(
            "{} already has Parallax's hooks ({}); unchanged",
            path.display(),
            events.join(", ")
        ));
        return Ok(out);
    }
    let verb = write_keeping_backup(path, before.as_deref(), after.as_bytes(), &mut out)?;
    out.done.push(format!(
        "{} {}: Parallax hooks on {}",
        verb,
        path.display(),
        events.join(", ")
    ));
    Ok(out)
}

/// Takes Parallax's groups out of the file at `path`.
pub fn revert(path: &Path, framework: &str) -> Result<Outcome, String> {
    let mut out = Outcome::default();
    let Some(before) = read_optional(path)? else {
        out.done.push(format!(
            "{} does not exist; nothing to revert",
            path.display()
        ));
        return Ok(out);
    };
    let mut root = parse(path, &before)?;
    let removed = strip(path, &mut root, framework)?;
    if removed == 0 {
        out.done.push(format!(
            "{} has no Parallax hooks; unchanged",
            path.display()
        ));
        return Ok(out);
    }
    super::finish_revert(
        path,
        &root,
        parse,
        &format!("{removed} Parallax hook group(s)"),
        &mut out,
    )?;
    Ok(out)
}
