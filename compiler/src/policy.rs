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
    /// Where the approval is asked (`slack`, `webhook`): Parallax sends
    /// every approval to the notifiers configured under `approvals:`; this
    /// is kept in the rule's description.
    via: Option<OneOrMany>,
    reason: Option<String>,
    /// Approval terms for `decision: approve` (Parallax's `approval:`).
    approval: Option<Value>,
    /// Parallax's rule cases (`match:` / `no_match:` events).
    tests: Option<Value>,
}

/// The rules of one policy file, as `policy` engine rule values.
pub fn load_file(path: &Path, stem: &str) -> Result<Vec<Value>, CompileError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let file: PolicyFile = yaml::from_str(&text).map_err(|m| CompileError::file(path, m))?;
    let _ = &file.description;
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
            parts.push(format!(
                "({})",
                translate_when(w).map_err(|m| fail(format!("when: {m}")))?
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
        let mut m = Mapping::new();
        let mut put = |k: &str, v: Value| {
            m.insert(Value::String(k.into()), v);
        };
        put("id", Value::String(id.clone()));
        put("title", Value::String(p.name.clone()));
        let mut description = format!("policy `{}` of {}", p.name, path.display());
        if let Some(via) = &p.via {
            description.push_str(&format!(" (approval via {})", via.items().join(", ")));
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
            put("transforms", t.clone());
        }
        if let Some(a) = &p.approval {
            put("approval", a.clone());
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
const BARE_TRIGGERS: [&str; 3] = ["external_recipient", "vip_recipient", "financial_mention"];
/// Triggers called with arguments.
const CALL_TRIGGERS: [&str; 3] = ["contains_keywords", "after_hours", "bulk_send"];

/// Translates parlok's `when` language to CEL: `and`/`or`/`not` become
/// `&&`/`||`/`!`, call fields (`recipient`, `body`, `subject`,
/// `metadata.*`) are read under `tool_args`, `recipient.is_external` is
/// `external_recipient()`, bare triggers get their `()`; comparisons,
/// `in`, lists, strings and `.matches(...)` are CEL already.
pub fn translate_when(when: &str) -> Result<String, String> {
    let chars: Vec<char> = when.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            // Inside a string only the quote itself is escaped (`\'`), so
            // regexes keep their backslashes; re-emitted as a CEL string.
            let start = i;
            i += 1;
            let mut text = String::new();
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && chars.get(i + 1) == Some(&c) {
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
            out.push_str(&translate_word(word, called)?);
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

fn translate_word(word: &str, called: bool) -> Result<String, String> {
    match word {
        "and" => return Ok("&&".into()),
        "or" => return Ok("||".into()),
        "not" => return Ok("!".into()),
        "in" | "true" | "false" | "null" => return Ok(word.into()),
        "recipient.is_external" => return Ok("external_recipient()".into()),
        "recipient.is_vip" => return Ok("vip_recipient()".into()),
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
}
