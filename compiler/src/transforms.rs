//! Lowering a rule's `transforms:` to the runtime's [`Transform`]s.
//!
//! Each entry is a call, `name` or `name(arg, ...)`, whose arguments are
//! integers or quoted strings (`'...'` or `"..."`; inside, only the quote
//! itself is escaped, `\'`, so regexes keep their backslashes). Unknown
//! names, wrong arguments and invalid regexes are errors naming the
//! transform.

use crate::source::TransformSource;
use parallax_runtime::transform::check_pattern;
use parallax_runtime::{Action, CachedRegex, FieldRef, Transform, TransformOp};

/// The transform names, for messages.
pub const NAMES: [&str; 7] = [
    "redact_pii",
    "redact_secrets",
    "clamp_length(n)",
    "strip_urls",
    "tone_check",
    "enforce_template(regex)",
    "replace(regex, text)",
];

#[derive(Debug, Clone, PartialEq)]
enum Arg {
    Int(i64),
    Str(String),
}

/// Lowers `sources` for a rule with `action`, whose transforms apply to
/// `default_fields` unless an entry names its own.
pub fn lower(
    sources: &[TransformSource],
    action: Action,
    default_fields: &[FieldRef],
) -> Result<Vec<Transform>, String> {
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    if !matches!(action, Action::Redact | Action::Approve) {
        return Err(format!(
            "`transforms` rewrite the event, so they need `action: redact` (or `approve`, \
             applied once approved); this rule is `{action}`"
        ));
    }
    sources
        .iter()
        .map(|s| {
            let (call, fields) = match s {
                TransformSource::Call(c) => (c.as_str(), None),
                TransformSource::WithFields(w) => (w.apply.as_str(), Some(&w.fields)),
            };
            let fields = match fields {
                Some(f) if f.is_empty() => {
                    return Err(format!("transform `{call}`: `fields` must not be empty"))
                }
                Some(f) => f
                    .iter()
                    .map(|n| FieldRef::parse(n).map_err(|e| format!("transform `{call}`: {e}")))
                    .collect::<Result<Vec<_>, _>>()?,
                None => default_fields.to_vec(),
            };
            let op = parse_call(call).map_err(|m| format!("transform `{call}`: {m}"))?;
            Ok(Transform { op, fields })
        })
        .collect()
}

fn parse_call(call: &str) -> Result<TransformOp, String> {
    let call = call.trim();
    let (name, args) = match call.find('(') {
        Some(open) => {
            let Some(inner) = call[open + 1..].strip_suffix(')') else {
                return Err("missing `)` at the end".into());
            };
            (call[..open].trim(), parse_args(inner)?)
        }
        None => (call, Vec::new()),
    };
    let regex = |p: &str| -> Result<CachedRegex, String> {
        check_pattern(p)?;
        Ok(CachedRegex::new(p))
    };
    Ok(match (name, args.as_slice()) {
        ("redact_pii", []) => TransformOp::RedactPii,
        ("redact_secrets", []) => TransformOp::RedactSecrets,
        ("strip_urls", []) => TransformOp::StripUrls,
        ("tone_check", []) => TransformOp::ToneCheck,
        ("clamp_length", [Arg::Int(n)]) if *n > 0 => TransformOp::ClampLength { max: *n as usize },
        ("clamp_length", _) => {
            return Err("takes one positive integer, e.g. clamp_length(500)".into())
        }
        ("enforce_template", [Arg::Str(p)]) => TransformOp::EnforceTemplate { pattern: regex(p)? },
        ("enforce_template", _) => {
            return Err("takes one quoted regex, e.g. enforce_template('^[A-Z]{3}-\\d+$')".into())
        }
        ("replace", [Arg::Str(p), Arg::Str(with)]) => TransformOp::Replace {
            pattern: regex(p)?,
            with: with.clone(),
        },
        ("replace", _) => {
            return Err(
                "takes a quoted regex and a quoted text, e.g. replace('\\d{16}', '[CARD]')".into(),
            )
        }
        ("redact_pii" | "redact_secrets" | "strip_urls" | "tone_check", _) => {
            return Err("takes no arguments".into())
        }
        (other, _) => {
            return Err(format!(
                "unknown transform `{other}` (known: {})",
                NAMES.join(", ")
            ))
        }
    })
}

fn parse_args(s: &str) -> Result<Vec<Arg>, String> {
    let mut out = Vec::new();
    let mut chars = s.trim().chars().peekable();
    while chars.peek().is_some() {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek().copied() {
            Some(q @ ('\'' | '"')) => {
                chars.next();
                let mut text = String::new();
                loop {
                    match chars.next() {
                        None => return Err(format!("unterminated string (missing {q})")),
                        Some('\\') if chars.peek() == Some(&q) => {
                            chars.next();
                            text.push(q);
                        }
                        Some(c) if c == q => break,
                        Some(c) => text.push(c),
                    }
                }
                out.push(Arg::Str(text));
            }
            Some(_) => {
                let mut tok = String::new();
                while let Some(&c) = chars.peek() {
                    if c == ',' || c.is_whitespace() {
                        break;
                    }
                    tok.push(c);
                    chars.next();
                }
                let n = tok.parse::<i64>().map_err(|_| {
                    format!("`{tok}`: an argument is an integer or a quoted string")
                })?;
                out.push(Arg::Int(n));
            }
            None => break,
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some(',') => {}
            Some(c) => return Err(format!("expected `,` between arguments, found `{c}`")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_calls() {
        assert_eq!(
            parse_call("clamp_length(20)"),
            Ok(TransformOp::ClampLength { max: 20 })
        );
        assert_eq!(
            parse_call(r"replace('\d{4}', 'it\'s')"),
            Ok(TransformOp::Replace {
                pattern: CachedRegex::new(r"\d{4}"),
                with: "it's".into()
            })
        );
        assert!(parse_call("shout")
            .unwrap_err()
            .contains("unknown transform `shout`"));
        assert!(parse_call("replace('(', 'x')")
            .unwrap_err()
            .contains("invalid regular expression"));
        assert!(parse_call("clamp_length(0)").is_err());
        assert!(parse_call("strip_urls(1)").is_err());
    }
}
