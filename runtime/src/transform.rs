//! Rewrite transforms: what a rule with `transforms:` does to the event it
//! matched (parlok's `rewrite`).
//!
//! A transform is compiled with its rule (the compiler checks every regex
//! and refuses unknown names), travels in the [`Program`](crate::Program)
//! with the rule, and runs only on the slow path, in
//! [`Report::decide`](crate::Report::decide), on the event's own string
//! leaves, so the rewritten event keeps the client's structure.

use crate::action::Action;
use crate::engine::Engine;
use crate::event::Event;
use crate::field::FieldRef;
use crate::redact::{for_each_source_mut, redact_text};
use regex_automata::meta;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Categories whose redaction rules `redact_pii` applies.
pub const PII_CATEGORIES: [&str; 1] = ["pii"];
/// Categories whose redaction rules `redact_secrets` applies.
pub const SECRET_CATEGORIES: [&str; 2] = ["secret_leakage", "secrets"];

/// What `strip_urls` leaves where a URL was.
pub const URL_REMOVED: &str = "[URL]";

const URL_PATTERN: &str = r"(?i)\b(?:https?|ftp|wss?)://[^\s<>\x22']+|\bwww\.[^\s<>\x22']+";

/// One transform and the fields it rewrites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    #[serde(flatten)]
    pub op: TransformOp,
    /// The fields rewritten (the rule's `fields`, or those its conditions
    /// read).
    pub fields: Vec<FieldRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TransformOp {
    /// Every span the program's PII redaction rules find becomes `[REDACTED]`.
    RedactPii,
    /// Every span the program's secret redaction rules find becomes `[REDACTED]`.
    RedactSecrets,
    /// Values longer than `max` characters are cut to `max`.
    ClampLength { max: usize },
    /// URLs become `[URL]`.
    StripUrls,
    /// Every value must match `pattern`, else the event is refused.
    EnforceTemplate { pattern: CachedRegex },
    /// Every match of `pattern` becomes `with` (`$1`, `${name}` expand).
    Replace { pattern: CachedRegex, with: String },
    /// Shouting is calmed; hostile language refuses the event
    /// ([`crate::tone`]).
    ToneCheck,
}

impl TransformOp {
    pub fn name(&self) -> &'static str {
        match self {
            TransformOp::RedactPii => "redact_pii",
            TransformOp::RedactSecrets => "redact_secrets",
            TransformOp::ClampLength { .. } => "clamp_length",
            TransformOp::StripUrls => "strip_urls",
            TransformOp::EnforceTemplate { .. } => "enforce_template",
            TransformOp::Replace { .. } => "replace",
            TransformOp::ToneCheck => "tone_check",
        }
    }
}

/// A regex kept as its source in the program and compiled on first use
/// (the compiler has already checked that it compiles).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CachedRegex {
    pub pattern: String,
    #[serde(skip)]
    compiled: OnceLock<Option<meta::Regex>>,
}

impl CachedRegex {
    pub fn new(pattern: &str) -> CachedRegex {
        CachedRegex {
            pattern: pattern.to_string(),
            compiled: OnceLock::new(),
        }
    }

    /// The regex, or `None` if it does not compile (impossible for a
    /// program the compiler produced).
    pub fn get(&self) -> Option<&meta::Regex> {
        self.compiled
            .get_or_init(|| meta::Regex::new(&self.pattern).ok())
            .as_ref()
    }
}

impl PartialEq for CachedRegex {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

/// Checks a transform regex the way the runtime will compile it.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    meta::Regex::new(pattern)
        .map(|_| ())
        .map_err(|e| format!("invalid regular expression `{pattern}`: {e}"))
}

/// The event rewritten by the transforms of the matched rules.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub event: Event,
    /// Rules (indexes into `Program::rules`) whose `enforce_template` or
    /// `tone_check` a value failed, each with what failed: the event is
    /// refused.
    pub violations: Vec<(u32, String)>,
    /// `redact` rules (a policy's `rewrite`) whose transforms found nothing
    /// to change: the call goes on as it was, so such a rule counts as an
    /// `allow` (parlok's outbound message with nothing to redact is
    /// allowed, not "rewritten" into itself).
    pub unchanged: Vec<u32>,
}

/// Applies, in chain order, the transforms of every matched enforcing rule
/// that has some and acts (`redact` or `approve`); `None` when no such rule
/// matched.
pub fn rewrite(engine: &Engine, event: &Event, matched: &[u32]) -> Option<Rewrite> {
    let program = engine.program();
    let mut out: Option<Rewrite> = None;
    for &r in matched {
        let Some(rule) = program.rules.get(r as usize) else {
            continue;
        };
        if rule.transforms.is_empty()
            || rule.monitor
            || !matches!(rule.action, Action::Redact | Action::Approve)
        {
            continue;
        }
        let rw = out.get_or_insert_with(|| Rewrite {
            event: event.clone(),
            violations: Vec::new(),
            unchanged: Vec::new(),
        });
        let before = (rule.action == Action::Redact).then(|| rw.event.clone());
        for t in &rule.transforms {
            if let Some(why) = apply(engine, t, &mut rw.event) {
                if !rw.violations.iter().any(|(v, _)| *v == r) {
                    rw.violations.push((r, why));
                }
            }
        }
        if before.as_ref() == Some(&rw.event) && !rw.violations.iter().any(|(v, _)| *v == r) {
            rw.unchanged.push(r);
        }
    }
    out
}

/// Applies one transform; what failed when a value fails
/// `enforce_template` or `tone_check`.
fn apply(engine: &Engine, t: &Transform, event: &mut Event) -> Option<String> {
    let mut ok = true;
    let mut failed: Option<String> = None;
    for field in &t.fields {
        match &t.op {
            TransformOp::RedactPii => {
                redact_category(engine, &PII_CATEGORIES, field, event);
                for_each_source_mut(event, field, &mut |s| {
                    crate::transform_detectors::redact_builtin_pii(s);
                });
            }
            TransformOp::RedactSecrets => {
                redact_category(engine, &SECRET_CATEGORIES, field, event);
                for_each_source_mut(event, field, &mut |s| {
                    crate::transform_detectors::redact_builtin_secrets(s);
                });
            }
            TransformOp::ToneCheck => for_each_source_mut(event, field, &mut |s| {
                if failed.is_none() {
                    if let Some(word) = crate::tone::hostile_phrase(s) {
                        failed = Some(format!("tone_check: hostile language (`{word}`)"));
                    }
                }
                crate::tone::calm(s);
            }),
            TransformOp::ClampLength { max } => for_each_source_mut(event, field, &mut |s| {
                if let Some((cut, _)) = s.char_indices().nth(*max) {
                    s.truncate(cut);
                }
            }),
            TransformOp::StripUrls => {
                static URLS: OnceLock<Option<meta::Regex>> = OnceLock::new();
                if let Some(re) = URLS.get_or_init(|| meta::Regex::new(URL_PATTERN).ok()) {
                    for_each_source_mut(event, field, &mut |s| replace_all(re, URL_REMOVED, s));
                }
            }
            TransformOp::EnforceTemplate { pattern } => {
                let re = pattern.get();
                for_each_source_mut(event, field, &mut |s| {
                    ok &= re.is_some_and(|re| re.is_match(s.as_str()));
                });
            }
            TransformOp::Replace { pattern, with } => {
                if let Some(re) = pattern.get() {
                    for_each_source_mut(event, field, &mut |s| replace_all(re, with, s));
                }
            }
        }
    }
    if !ok {
        return Some("a value does not match its template".into());
    }
    failed
}

/// The spans of the program's redaction rules of `categories` (rules that
/// are themselves plain redaction rules, not transform rules), redacted in
/// `field`.
fn redact_category(engine: &Engine, categories: &[&str], field: &FieldRef, event: &mut Event) {
    let program = engine.program();
    let mut atoms = Vec::new();
    for rule in &program.rules {
        let in_category = rule
            .category
            .as_deref()
            .is_some_and(|c| categories.contains(&c));
        if in_category && rule.action == Action::Redact && rule.transforms.is_empty() {
            rule.predicate.positive_atoms(&mut atoms);
        }
    }
    atoms.sort_unstable();
    atoms.dedup();
    for atom in atoms {
        let (Some(re), Some(spec)) = (engine.span_regex(atom), program.atoms.get(atom as usize))
        else {
            continue;
        };
        for_each_source_mut(event, field, &mut |s| {
            redact_text(re, spec.validator, s);
        });
    }
}

/// Replaces every non-empty match of `re` in `s` with `with`, expanding
/// `$1` / `${name}` groups.
fn replace_all(re: &meta::Regex, with: &str, s: &mut String) {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut changed = false;
    let mut caps = re.create_captures();
    let mut at = 0;
    while at <= s.len() {
        let input = regex_automata::Input::new(s.as_str()).range(at..);
        re.search_captures(&input, &mut caps);
        let Some(m) = caps.get_match() else {
            break;
        };
        if m.is_empty() {
            at = m.end() + s[m.end()..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        out.push_str(&s[last..m.start()]);
        caps.interpolate_string_into(s.as_str(), with, &mut out);
        last = m.end();
        at = m.end();
        changed = true;
    }
    if changed {
        out.push_str(&s[last..]);
        *s = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_expands_groups_and_keeps_the_rest() {
        let re = meta::Regex::new(r"ACME-(\d+)").unwrap();
        let mut s = "see ACME-12 and ACME-7.".to_string();
        replace_all(&re, "ACME-#$1", &mut s);
        assert_eq!(s, "see ACME-#12 and ACME-#7.");
        let urls = meta::Regex::new(URL_PATTERN).unwrap();
        let mut s = "go to https://evil.example/x?a=1 or www.x.io now".to_string();
        replace_all(&urls, URL_REMOVED, &mut s);
        assert_eq!(s, "go to [URL] or [URL] now");
        let empty = meta::Regex::new(r"x*").unwrap();
        let mut s = "abc".to_string();
        replace_all(&empty, "-", &mut s);
        assert_eq!(s, "abc");
    }
}
