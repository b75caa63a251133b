//! parlok policy files (`<rules_dir>/policy/*.yaml`, `policy_files:`) as
//! rules of the `policy` engine.
//!
//! A file is `version: 1`, an optional `default: deny|allow` (deny when
//! absent) and `policies:`, each `{name, match: {adapter, action}, when,
//! decision, transforms, via, reason}`. Each policy becomes one rule whose
//! predicate is "this policy matches and no earlier policy of the file
//! did" (the `unless` list, lowered to `And[p, Not(p0), Not(p1), ...]`), so
//! the compiled chain decides as first-match-wins would. With `default:
//! deny` a last rule, `<file>.default`, blocks the calls the file governs
//! (tool names `<adapter>.*` of the adapters its policies name) that no
//! policy matched. `when` is translated to CEL (see [`translate_when`]).

use crate::error::CompileError;
use crate::yaml;
use serde::Deserialize;
use serde_yaml::{Mapping, Value};
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    version: u32,
    #[serde(default)]
    default: Default_,
    #[serde(default)]
    description: Option<String>,
    /// parlok's file-scoped internal domains: when present, what
    /// `recipient.is_external` / `external_recipient` compare with for this
    /// file's policies (instead of the config's `policy.internal_domains`).
    #[serde(default)]
    allowed_domains: Option<Vec<String>>,
    /// parlok's file-scoped VIP list (instead of `policy.vip_recipients`).
    #[serde(default)]
    vip_recipients: Option<Vec<String>>,
    /// parlok's own state database. Parallax keeps its state (approvals,
    /// known recipients) in `approvals.state_path`; accepted so parlok's
    /// files load; it has no effect (docs/POLICIES.md).
    #[serde(default)]
    state_db: Option<String>,
    /// Named patterns: `enforce_template('name')` with one of these names
    /// uses its pattern.
    #[serde(default)]
    templates: std::collections::BTreeMap<String, String>,
    policies: Vec<Policy>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Default_ {
    #[default]
    Deny,
    Allow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Allow,
    Rewrite,
    Approve,
    Deny,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn items(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Match {
    adapter: Option<OneOrMany>,
    action: Option<OneOrMany>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Policy {
    name: String,
    #[serde(default, rename = "match")]
    matches: Match,
    when: Option<String>,
    decision: Decision,
    #[serde(default)]
    transforms: Option<Value>,
    /// Where the approval is asked ([`VIA_NAMES`]): becomes the rule's
    /// `approval.via`, which routes the approval to those notifiers only.
    via: Option<OneOrMany>,
    reason: Option<String>,
    /// Approval terms for `decision: approve` (Parallax's `approval:`).
    approval: Option<Value>,
    /// Parallax's rule cases (`match:` / `no_match:` events).
    tests: Option<Value>,
}

/// Where an approval may be asked (`via:`): the configured notifiers, or
/// `console`, no notifier at all (decided through the approvals API or the
/// dashboard's inbox, as parlok's console prompt is answered by hand).
pub const VIA_NAMES: [&str; 3] = ["slack", "webhook", "console"];

/// parlok's names for its approvers, as its policy files write them in
/// `via:` (its `SlackApproverCard` is `slack_approval_card` in its example
/// file), each with the notifier of Parallax's that does the same job.
pub const VIA_ALIASES: [(&str, &str); 5] = [
    ("slack_approval_card", "slack"),
    ("slack_approver_card", "slack"),
    ("webhook_approver", "webhook"),
    ("webhook_approval", "webhook"),
    ("console_approver", "console"),
];

/// The notifier a `via:` name stands for: one of [`VIA_NAMES`], or the
/// one a parlok approver name ([`VIA_ALIASES`]) maps to.
pub fn canonical_via(name: &str) -> Option<&'static str> {
    let name = name.trim();
    VIA_NAMES.iter().find(|n| **n == name).copied().or_else(|| {
        VIA_ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, n)| *n)
    })
}

/// parlok's `after_hours(tz, start_hour, end_hour)` names the *working*
/// day (true outside it); Parallax's `after_hours(tz, 'HH:MM', 'HH:MM')`
/// names the after-hours window. The integer form is rewritten to the
/// window from the day's end to its start.
fn translate_after_hours_hours(when: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = when;
    while let Some(at) = rest.find("after_hours(") {
        let open = at + "after_hours(".len();
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        let Some(close) = rest.find(')') else { break };
        let args: Vec<&str> = rest[..close].split(',').map(str::trim).collect();
        let hours: Option<Vec<u32>> = match args.as_slice() {
            [_, s, e] => [s, e].iter().map(|a| a.parse::<u32>().ok()).collect(),
            _ => None,
        };
        if let Some(h) = hours {
            if h.iter().any(|h| *h > 24) {
                return Err(format!(
                    "after_hours({}): hours are 0 to 24",
                    &rest[..close]
                ));
            }
            out.push_str(&format!(
                "{}, '{:02}:00', '{:02}:00'",
                args[0],
                h[1] % 24,
                h[0] % 24
            ));
            rest = &rest[close..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A list literal for a `when` (a trigger's explicit argument).
fn list_literal(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|i| quote(i))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The rules of one policy file, as `policy` engine rule values.
pub fn load_file(path: &Path, stem: &str) -> Result<Vec<Value>, CompileError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let file: PolicyFile = yaml::from_str(&text).map_err(|m| CompileError::file(path, m))?;
    let _ = (&file.description, &file.state_db);
    let lists = FileLists {
        internal: file.allowed_domains.as_deref().map(list_literal),
        vips: file.vip_recipients.as_deref().map(list_literal),
    };
    if file.version != 1 {
        return Err(CompileError::file(
            path,
            format!(
                "version {}: this build reads policy files of version 1",
                file.version
            ),
        ));
    }
    let mut rules = Vec::new();
    let mut earlier: Vec<String> = Vec::new();
    let mut adapters: Vec<String> = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, p) in file.policies.iter().enumerate() {
        let id = format!("{stem}.{}", p.name);
        let fail = |m: String| CompileError::rule(path, &id, m);
        if p.name.trim().is_empty() {
            return Err(CompileError::file(
                path,
                format!("policies[{i}]: `name` must not be empty"),
            ));
        }
        if !names.insert(p.name.clone()) {
            return Err(fail("two policies of the file have this name".into()));
        }
        let mut parts = Vec::new();
        let adapter = p.matches.adapter.as_ref().map(OneOrMany::items);
        let action = p.matches.action.as_ref().map(OneOrMany::items);
        match &adapter {
            Some(list) => {
                for a in list {
                    if a.is_empty() || a.contains(['.', '\'', '\\']) {
                        return Err(fail(format!(
                            "match.adapter `{a}`: an adapter is a plain name such as `slack`"
                        )));
                    }
                    if !adapters.contains(a) {
                        adapters.push(a.clone());
                    }
                }
            }
            None => {
                if !adapters.iter().any(|a| a == "*") {
                    adapters.push("*".into());
                }
            }
        }
        parts.push(tool_name_test(adapter.as_deref(), action.as_deref()).map_err(fail)?);
        if let Some(w) = &p.when {
            let when = translate_after_hours_hours(w).map_err(|m| fail(format!("when: {m}")))?;
            parts.push(format!(
                "({})",
                translate_when_with(&when, &lists).map_err(|m| fail(format!("when: {m}")))?
            ));
        }
        let expr = parts.join(" && ");
        let action = match p.decision {
            Decision::Allow => "allow",
            Decision::Rewrite => "redact",
            Decision::Approve => "approve",
            Decision::Deny => "block",
        };
        if p.decision == Decision::Rewrite && p.transforms.is_none() {
            return Err(fail("decision `rewrite` needs `transforms`".into()));
        }
        if matches!(p.decision, Decision::Allow | Decision::Deny) && p.transforms.is_some() {
            return Err(fail(
                "`transforms` are for `rewrite` and `approve` decisions".into(),
            ));
        }
        if p.via.is_some() && p.decision != Decision::Approve {
            return Err(fail("`via` is for `approve` decisions".into()));
        }
        let mut via = Vec::new();
        for v in p.via.as_ref().map(OneOrMany::items).unwrap_or_default() {
            let Some(n) = canonical_via(&v) else {
                return Err(fail(format!(
                    "via `{v}`: an approval is asked via {} (or parlok's approver names {})",
                    VIA_NAMES.join(", "),
                    VIA_ALIASES
                        .iter()
                        .map(|(a, _)| *a)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            if !via.iter().any(|x: &String| x == n) {
                via.push(n.to_string());
            }
        }
        let mut m = Mapping::new();
        let mut put = |k: &str, v: Value| {
            m.insert(Value::String(k.into()), v);
        };
        put("id", Value::String(id.clone()));
        put("title", Value::String(p.name.clone()));
        let mut description = format!("policy `{}` of {}", p.name, path.display());
        if !via.is_empty() {
            description.push_str(&format!(" (approval via {})", via.join(", ")));
        }
        put("description", Value::String(description));
        put("action", Value::String(action.into()));
        put("category", Value::String("policy".into()));
        put("expr", Value::String(expr.clone()));
        put(
            "unless",
            Value::Sequence(earlier.iter().cloned().map(Value::String).collect()),
        );
        if let Some(r) = &p.reason {
            put("reason", Value::String(r.clone()));
        }
        if let Some(t) = &p.transforms {
            put(
                "transforms",
                named_templates(t, &file.templates).map_err(fail)?,
            );
        }
        if let Some(a) = approval_terms(p.approval.as_ref(), &via).map_err(fail)? {
            put("approval", a);
        }
        if let Some(t) = &p.tests {
            put("tests", t.clone());
        }
        rules.push(Value::Mapping(m));
        earlier.push(expr);
    }
    if file.default == Default_::Deny {
        let governed = if adapters.iter().any(|a| a == "*") {
            "tool_name.contains('.')".to_string()
        } else {
            adapters
                .iter()
                .map(|a| format!("tool_name.startsWith('{a}.')"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        if !governed.is_empty() {
            let mut m = Mapping::new();
            let mut put = |k: &str, v: Value| {
                m.insert(Value::String(k.into()), v);
            };
            put("id", Value::String(format!("{stem}.default")));
            put(
                "title",
                Value::String("no policy matched (default deny)".into()),
            );
            put(
                "description",
                Value::String(format!(
                    "the default of {}: calls of its adapters no policy matched are denied",
                    path.display()
                )),
            );
            put("action", Value::String("block".into()));
            put("category", Value::String("policy".into()));
            put(
                "reason",
                Value::String(format!(
                    "no policy of `{stem}` allows this call (default deny)"
                )),
            );
            put("expr", Value::String(governed));
            put(
                "unless",
                Value::Sequence(earlier.into_iter().map(Value::String).collect()),
            );
            rules.push(Value::Mapping(m));
        }
    }
    Ok(rules)
}

/// A policy's `approval:` with its `via:` folded in (`approval.via`).
fn approval_terms(approval: Option<&Value>, via: &[String]) -> Result<Option<Value>, String> {
    if via.is_empty() {
        return Ok(approval.cloned());
    }
    let mut m = match approval {
        Some(Value::Mapping(m)) => m.clone(),
        Some(_) => return Err("`approval` must be a mapping".into()),
        None => Mapping::new(),
    };
    if m.contains_key("via") {
        return Err("`via` is given twice: as the policy's `via` and in `approval.via`".into());
    }
    m.insert(
        Value::String("via".into()),
        Value::Sequence(via.iter().cloned().map(Value::String).collect()),
    );
    Ok(Some(Value::Mapping(m)))
}

/// `enforce_template('name')` where `name` is one of the file's
/// `templates:` becomes `enforce_template('<its pattern>')`.
fn named_templates(
    transforms: &Value,
    templates: &std::collections::BTreeMap<String, String>,
) -> Result<Value, String> {
    if templates.is_empty() {
        return Ok(transforms.clone());
    }
    let expand = |spec: &str| -> String {
        let inner = spec
            .trim()
            .strip_prefix("enforce_template(")
            .and_then(|r| r.strip_suffix(')'))
            .map(str::trim);
        let name = inner.and_then(|a| {
            a.strip_prefix('\'')
                .and_then(|a| a.strip_suffix('\''))
                .or_else(|| a.strip_prefix('"').and_then(|a| a.strip_suffix('"')))
        });
        match name.and_then(|n| templates.get(n)) {
            Some(pattern) => format!("enforce_template({})", quote(pattern)),
            None => spec.to_string(),
        }
    };
    let one = |v: &Value| -> Value {
        match v {
            Value::String(s) => Value::String(expand(s)),
            Value::Mapping(m) => {
                let mut m = m.clone();
                if let Some(Value::String(s)) = m.get("apply").cloned() {
                    m.insert(Value::String("apply".into()), Value::String(expand(&s)));
                }
                Value::Mapping(m)
            }
            other => other.clone(),
        }
    };
    Ok(match transforms {
        Value::Sequence(items) => Value::Sequence(items.iter().map(one).collect()),
        other => one(other),
    })
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `tool_name` is `<adapter>.<action>`: the CEL test for a `match`.
fn tool_name_test(
    adapters: Option<&[String]>,
    actions: Option<&[String]>,
) -> Result<String, String> {
    let names: Vec<String> = match (adapters, actions) {
        (Some(ads), Some(acts)) => {
            let mut v = Vec::new();
            for a in ads {
                for act in acts {
                    v.push(format!("tool_name == {}", quote(&format!("{a}.{act}"))));
                }
            }
            v
        }
        (Some(ads), None) => ads
            .iter()
            .map(|a| format!("tool_name.startsWith({})", quote(&format!("{a}."))))
            .collect(),
        (None, Some(acts)) => acts
            .iter()
            .map(|act| format!("tool_name.endsWith({})", quote(&format!(".{act}"))))
            .collect(),
        (None, None) => vec!["tool_name.contains('.')".into()],
    };
    if names.is_empty() {
        return Err("`match` lists must not be empty".into());
    }
    Ok(format!("({})", names.join(" || ")))
}

/// Fields a `when` reads, under `tool_args`.
const CALL_FIELDS: [&str; 5] = ["recipient", "recipients", "body", "subject", "metadata"];
/// Event fields a `when` may read as they are.
const EVENT_FIELDS: [&str; 6] = [
    "tool_name",
    "tool_args",
    "user_id",
    "session_id",
    "channel",
    "stage",
];
/// Triggers written without parentheses.
const BARE_TRIGGERS: [&str; 4] = [
    "external_recipient",
    "vip_recipient",
    "financial_mention",
    "first_time_recipient",
];
/// Triggers called with arguments.
const CALL_TRIGGERS: [&str; 3] = ["contains_keywords", "after_hours", "bulk_send"];

/// Translates parlok's `when` language to CEL: `and`/`or`/`not` become
/// `&&`/`||`/`!`, call fields (`recipient`, `body`, `subject`,
/// `metadata.*`) are read under `tool_args`, `recipient.is_external` is
/// `external_recipient()`, bare triggers get their `()`; comparisons,
/// `in`, lists, strings and `.matches(...)` are CEL already.
pub fn translate_when(when: &str) -> Result<String, String> {
    translate_when_with(when, &FileLists::default())
}

/// A file's own `allowed_domains` / `vip_recipients`, as CEL list literals:
/// when present, the recipient triggers of its policies compare with them.
#[derive(Default)]
struct FileLists {
    internal: Option<String>,
    vips: Option<String>,
}

fn translate_when_with(when: &str, lists: &FileLists) -> Result<String, String> {
    let chars: Vec<char> = when.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            // Inside a string, `\\` is one backslash and `\'` the quote,
            // as parlok reads them (`'\\bdrop'` is the regex `\bdrop`); any
            // other backslash is kept, so `'\d{4}'` stays the regex `\d{4}`
            // (parlok keeps unknown escapes too). Re-emitted as a CEL string.
            let start = i;
            i += 1;
            let mut text = String::new();
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && matches!(chars.get(i + 1), Some(n) if *n == c || *n == '\\')
                {
                    i += 1;
                }
                text.push(chars[i]);
                i += 1;
            }
            if i >= chars.len() {
                return Err(format!("unterminated string starting at {}", start + 1));
            }
            i += 1;
            out.push_str(&quote(&text));
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let word = word.trim_end_matches('.');
            i = start + word.chars().count();
            let called = chars[i..].iter().find(|c| !c.is_whitespace()) == Some(&'(');
            out.push_str(&translate_word(word, called, lists)?);
            continue;
        }
        if c == '=' && chars.get(i + 1) != Some(&'=') && (i == 0 || !"=!<>".contains(chars[i - 1]))
        {
            return Err("`=` is not a comparison: write `==`".into());
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

fn translate_word(word: &str, called: bool, lists: &FileLists) -> Result<String, String> {
    // A recipient trigger without arguments compares with the file's own
    // list when it has one (else the compiler fills in the config's).
    let with_list = |name: &str, list: &Option<String>| match list {
        Some(l) => format!("{name}({l})"),
        None => format!("{name}()"),
    };
    match word {
        "and" => return Ok("&&".into()),
        "or" => return Ok("||".into()),
        "not" => return Ok("!".into()),
        "in" | "true" | "false" | "null" => return Ok(word.into()),
        "recipient.is_external" => return Ok(with_list("external_recipient", &lists.internal)),
        "recipient.is_vip" => return Ok(with_list("vip_recipient", &lists.vips)),
        "recipient.is_first_time" => return Ok("first_time_recipient()".into()),
        "external_recipient" if !called => {
            return Ok(with_list("external_recipient", &lists.internal))
        }
        "vip_recipient" if !called => return Ok(with_list("vip_recipient", &lists.vips)),
        _ => {}
    }
    if !word.contains('.') {
        if BARE_TRIGGERS.contains(&word) {
            return Ok(if called {
                word.into()
            } else {
                format!("{word}()")
            });
        }
        if CALL_TRIGGERS.contains(&word) {
            if !called {
                return Err(format!("`{word}` takes arguments, e.g. `{word}(...)`"));
            }
            return Ok(word.into());
        }
        if called && ["size", "has", "int", "string", "double"].contains(&word) {
            return Ok(word.into());
        }
    }
    // A field path, maybe ending in a method (`body.matches`).
    let (path, method) = match word.rsplit_once('.') {
        Some((p, m)) if called => (p, Some(m)),
        _ => (word, None),
    };
    let head = path.split('.').next().unwrap_or(path);
    let field = if CALL_FIELDS.contains(&head) {
        format!("tool_args.{path}")
    } else if EVENT_FIELDS.contains(&head) {
        path.to_string()
    } else {
        return Err(format!(
            "unknown name `{head}` (a `when` reads {}, {}, and the triggers {}, {})",
            CALL_FIELDS.join(", "),
            EVENT_FIELDS.join(", "),
            BARE_TRIGGERS.join(", "),
            CALL_TRIGGERS.join(", ")
        ));
    };
    Ok(match method {
        Some(m) => format!("{field}.{m}"),
        None => field,
    })
}

#[cfg(test)]
mod tests {
    use super::translate_when;

    #[test]
    fn translates_the_when_language() {
        assert_eq!(
            translate_when("recipient.is_external and not body.matches('(?i)draft')").unwrap(),
            "external_recipient() && ! tool_args.body.matches('(?i)draft')"
        );
        assert_eq!(
            translate_when("metadata.priority in ['high', \"urgent\"] or financial_mention")
                .unwrap(),
            "tool_args.metadata.priority in ['high', 'urgent'] || financial_mention()"
        );
        assert_eq!(
            translate_when("bulk_send(20) and subject == 'and or not'").unwrap(),
            "bulk_send(20) && tool_args.subject == 'and or not'"
        );
        assert!(translate_when("password == 'x'")
            .unwrap_err()
            .contains("unknown name `password`"));
        assert!(translate_when("body = 'x'").is_err());
    }

    #[test]
    fn reads_strings_and_after_hours_as_parlok_does() {
        // `\\` is one backslash, other escapes are kept for the regex.
        assert_eq!(
            translate_when(r#"body.matches("(?i)\\bdrop\\s+\d")"#).unwrap(),
            r"tool_args.body.matches('(?i)\\bdrop\\s+\\d')"
        );
        assert_eq!(
            super::translate_after_hours_hours("after_hours('UTC', 9, 17) and x").unwrap(),
            "after_hours('UTC', '17:00', '09:00') and x"
        );
        assert_eq!(
            super::translate_after_hours_hours("after_hours('UTC', '18:00', '08:00')").unwrap(),
            "after_hours('UTC', '18:00', '08:00')"
        );
        assert!(super::translate_after_hours_hours("after_hours('UTC', 9, 25)").is_err());
        let lists = super::FileLists {
            internal: Some("['a.test']".into()),
            vips: None,
        };
        assert_eq!(
            super::translate_when_with(
                "recipient.is_external or external_recipient or recipient.is_vip \
                 or recipient.is_first_time",
                &lists
            )
            .unwrap(),
            "external_recipient(['a.test']) || external_recipient(['a.test']) || vip_recipient() \
             || first_time_recipient()"
        );
    }
}
