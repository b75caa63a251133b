//! Rewriting matched text to `[REDACTED]` in the event the client sent.
//!
//! Redaction works on the event's own string leaves, never on a derived
//! copy, so the rewritten event keeps the client's structure and can be
//! swapped in for the original. A canonical field is rewritten in every leaf
//! it can come from (for `command`, `path`, … that is every string argument:
//! a secret found in the command is removed wherever else it appears too).

use crate::event::Event;
use crate::field::{Canonical, FieldRef, JsonRoot, TopField};
use crate::normalize::views;
use crate::validator::Validator;
use regex_automata::{meta, PatternID};
use serde_json::Value;

pub const REDACTED: &str = "[REDACTED]";

/// Replaces every match of `regex` in `text` (that passes `validator`, if
/// any), in the raw text and then in its normalised view, mapped back to
/// the raw offsets; true when anything changed.
pub fn redact_text(regex: &meta::Regex, validator: Option<Validator>, text: &mut String) -> bool {
    let raw = redact_raw(regex, validator, text);
    redact_normalised(regex, validator, text) || raw
}

/// The spans of `text` to rewrite: each match of `regex`, or, when the
/// pattern has groups named `secret…` (`(?P<secret>…)`), the first of them
/// that took part in the match. A rule can so require context around a
/// secret (`password = "…"`, the character after an address) without the
/// context being rewritten too.
fn secret_spans(regex: &meta::Regex, text: &str) -> Vec<std::ops::Range<usize>> {
    let info = regex.group_info();
    let groups: Vec<usize> = (0..info.group_len(PatternID::ZERO))
        .filter(|&g| {
            info.to_name(PatternID::ZERO, g)
                .is_some_and(|n| n.starts_with("secret"))
        })
        .collect();
    if groups.is_empty() {
        return regex.find_iter(text).map(|m| m.range()).collect();
    }
    regex
        .captures_iter(text)
        .filter_map(|caps| {
            groups
                .iter()
                .find_map(|&g| caps.get_group(g))
                .map(|s| s.range())
        })
        .collect()
}

/// Redacts matches only a normalised or decoded view shows (a secret spelt
/// with fullwidth digits or split by zero-width spaces, a key inside a
/// base64 blob: the whole blob goes).
fn redact_normalised(regex: &meta::Regex, validator: Option<Validator>, text: &mut String) -> bool {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for view in views(text) {
        let (norm, map) = (view.text.as_str(), view.map.as_slice());
        for m in secret_spans(regex, norm) {
            if m.is_empty() || validator.is_some_and(|v| !v.check(&norm[m.clone()])) {
                continue;
            }
            ranges.push(source_range(map, m.start, m.end, text.len()));
        }
    }
    if ranges.is_empty() {
        return false;
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in merged {
        out.push_str(&text[last..start]);
        out.push_str(REDACTED);
        last = end;
    }
    out.push_str(&text[last..]);
    *text = out;
    true
}

/// The input range a view's match `start..end` came from. The end is the
/// first input offset past the one the match's last byte came from, so a
/// match ending inside an expansion (a ligature, a decoded base64 blob)
/// takes the whole of what was expanded.
fn source_range(map: &[usize], start: usize, end: usize, len: usize) -> (usize, usize) {
    let from = map.get(start).copied().unwrap_or(len);
    let last = map.get(end.saturating_sub(1)).copied().unwrap_or(from);
    let to = map[end.min(map.len())..]
        .iter()
        .copied()
        .find(|&o| o > last)
        .unwrap_or(len);
    (from.min(to), to)
}

fn redact_raw(regex: &meta::Regex, validator: Option<Validator>, text: &mut String) -> bool {
    let mut out = String::new();
    let mut last = 0;
    for m in secret_spans(regex, text) {
        if m.is_empty() || validator.is_some_and(|v| !v.check(&text[m.clone()])) {
            continue;
        }
        out.push_str(&text[last..m.start]);
        out.push_str(REDACTED);
        last = m.end;
    }
    if last == 0 {
        return false;
    }
    out.push_str(&text[last..]);
    *text = out;
    true
}

/// Rewrites the rest of a PEM private key whose lines were sent as separate
/// array elements (`["-----BEGIN RSA PRIVATE KEY-----", "MIIE…", …]`): the
/// header element is the one a pattern can see, so every element after it
/// up to the END line is replaced as well. True when anything changed.
pub fn redact_split_keys(event: &mut Event) -> bool {
    let mut changed = false;
    for v in [
        &mut event.tool_args,
        &mut event.tool_result,
        &mut event.params,
    ] {
        changed |= split_keys_in(v);
    }
    changed
}

fn opens_key(s: &str) -> bool {
    match s.rfind("-----BEGIN") {
        Some(at) => s[at..].contains("PRIVATE KEY-----") && !s[at..].contains("-----END"),
        None => false,
    }
}

fn split_keys_in(v: &mut Value) -> bool {
    match v {
        Value::Array(items) => {
            let mut changed = false;
            let mut inside = false;
            for item in items.iter_mut() {
                match item {
                    Value::String(s) if inside => {
                        inside = !s.contains("-----END");
                        if s != REDACTED {
                            *s = REDACTED.to_string();
                            changed = true;
                        }
                    }
                    Value::String(s) => inside = opens_key(s),
                    other => {
                        inside = false;
                        changed |= split_keys_in(other);
                    }
                }
            }
            changed
        }
        Value::Object(map) => {
            let mut changed = false;
            for child in map.values_mut() {
                changed |= split_keys_in(child);
            }
            changed
        }
        _ => false,
    }
}

/// Calls `f` on every string leaf of `event` that `field` is made of.
pub fn for_each_source_mut(event: &mut Event, field: &FieldRef, f: &mut dyn FnMut(&mut String)) {
    match field {
        FieldRef::Canonical(Canonical::Text) => {
            if let Some(m) = &mut event.message_text {
                f(m);
            }
            each_string_mut(&mut event.tool_args, f);
            each_string_mut(&mut event.tool_result, f);
            if let Some(r) = &mut event.response_text {
                f(r);
            }
            for s in [&mut event.memory_text, &mut event.query]
                .into_iter()
                .flatten()
            {
                f(s);
            }
            if let Value::Array(docs) = &mut event.documents {
                for doc in docs {
                    if let Some(Value::String(t)) = doc.get_mut("text") {
                        f(t);
                    }
                }
            }
        }
        FieldRef::Canonical(_) => each_string_mut(&mut event.tool_args, f),
        FieldRef::Top(t) => {
            let v = match t {
                TopField::SessionId => event.session_id.as_mut(),
                TopField::Channel => event.channel.as_mut(),
                TopField::UserId => event.user_id.as_mut(),
                TopField::MessageText => event.message_text.as_mut(),
                TopField::ToolName => event.tool_name.as_mut(),
                TopField::Model => event.model.as_mut(),
                TopField::ResponseText => event.response_text.as_mut(),
                TopField::MemoryKey => event.memory_key.as_mut(),
                TopField::MemoryText => event.memory_text.as_mut(),
                TopField::RetrievalQuery => event.query.as_mut(),
                // Who asked is never rewritten.
                TopField::Stage | TopField::Tenant => None,
            };
            if let Some(v) = v {
                f(v);
            }
        }
        FieldRef::Json { root, path } => {
            let v = match root {
                JsonRoot::ToolArgs => &mut event.tool_args,
                JsonRoot::ToolResult => &mut event.tool_result,
                JsonRoot::Params => &mut event.params,
                JsonRoot::Documents => &mut event.documents,
            };
            walk_mut(v, path, f);
        }
    }
}

/// Calls `f` on every string of `v`, depth first, in the order
/// [`crate::prepared::each_string`] reads them.
pub fn each_string_mut(v: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|i| each_string_mut(i, f)),
        Value::Object(map) => map.values_mut().for_each(|i| each_string_mut(i, f)),
        _ => {}
    }
}

fn walk_mut(v: &mut Value, path: &[String], f: &mut dyn FnMut(&mut String)) {
    let Some((seg, rest)) = path.split_first() else {
        return each_string_mut(v, f);
    };
    match v {
        Value::Object(map) => {
            if let Some(child) = map.get_mut(seg.as_str()) {
                walk_mut(child, rest, f);
            }
        }
        Value::Array(items) => match seg.parse::<usize>() {
            Ok(i) => {
                if let Some(child) = items.get_mut(i) {
                    walk_mut(child, rest, f);
                }
            }
            Err(_) => items.iter_mut().for_each(|i| walk_mut(i, path, f)),
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_every_match_and_keeps_the_rest() {
        let re = meta::Regex::new(r"AKIA[0-9A-Z]{16}").unwrap();
        let mut s = "a AKIAABCDEFGHIJKLMNOP b AKIAABCDEFGHIJKLMNOQ".to_string();
        assert!(redact_text(&re, None, &mut s));
        assert_eq!(s, "a [REDACTED] b [REDACTED]");
        let mut clean = "nothing".to_string();
        assert!(!redact_text(&re, None, &mut clean));
        let cards = meta::Regex::new(r"\d{16}").unwrap();
        let mut mixed = "4111111111111111 and 1234567812345678".to_string();
        assert!(redact_text(&cards, Some(Validator::Luhn), &mut mixed));
        assert_eq!(mixed, "[REDACTED] and 1234567812345678");
        let mut hidden = "key AKIA\u{200B}ABCDEFGHIJKLMNOP end".to_string();
        assert!(redact_text(&re, None, &mut hidden));
        assert_eq!(hidden, "key [REDACTED] end");
        // "AKIAABCDEFGHIJKLMNOP x" in base64: the whole blob goes.
        let mut blob = "cfg QUtJQUFCQ0RFRkdISUpLTE1OT1AgeA== end".to_string();
        assert!(redact_text(&re, None, &mut blob));
        assert_eq!(blob, "cfg [REDACTED] end");
        let mut split = Event::from_value(serde_json::json!({"stage": "tool.after",
            "tool_result": {"lines": ["ok", "-----BEGIN RSA PRIVATE KEY-----", "MIIEow", "AAEC",
                "-----END RSA PRIVATE KEY-----", "after"]}}))
        .unwrap();
        assert!(redact_split_keys(&mut split));
        assert_eq!(
            split.tool_result["lines"],
            serde_json::json!([
                "ok",
                "-----BEGIN RSA PRIVATE KEY-----",
                REDACTED,
                REDACTED,
                REDACTED,
                "after"
            ])
        );
        // Only the `secret` group is rewritten, not the context around it.
        let quoted =
            meta::Regex::new(r#"(?:key\s*=\s*"(?P<secret>\w{4,})"|tok:(?P<secret2>\d+))"#).unwrap();
        let mut code = r#"key = "abcd1234"; tok:42 key = x"#.to_string();
        assert!(redact_text(&quoted, None, &mut code));
        assert_eq!(code, r#"key = "[REDACTED]"; tok:[REDACTED] key = x"#);
    }
}
