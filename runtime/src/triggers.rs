//! Approval triggers: host functions of CEL rules and policy `when`
//! expressions over a tool call (`tool_args.recipient`, `body`, `subject`).
//!
//! `external_recipient(internal_domains)` and `vip_recipient(vips)` take
//! their lists as arguments: the compiler fills them in from the config's
//! `policy:` section when a rule calls them without, so the lists are part
//! of the compiled rules (and their fingerprint), not a setting read per
//! event.

use crate::prepared::PreparedEvent;
use parallax_cel::{EvalError, Value};
use regex_automata::meta;
use serde_json::Value as Json;
use std::sync::OnceLock;

/// The trigger functions and their CEL signatures, for the checker:
/// (name, argument types as CEL type names, result type).
pub const SIGNATURES: [(&str, &[&str], &str); 9] = [
    ("external_recipient", &["list(string)"], "bool"),
    ("vip_recipient", &["list(string)"], "bool"),
    ("contains_keywords", &["list(string)"], "bool"),
    ("financial_mention", &[], "bool"),
    ("after_hours", &["string", "string", "string"], "bool"),
    ("bulk_send", &["int"], "bool"),
    ("recipient_count", &[], "int"),
    ("is_external_address", &["string", "list(string)"], "bool"),
    ("first_time_recipient", &[], "bool"),
];

const FINANCIAL: &str = r"(?i)(?:[$€£¥]\s?\d|\b(?:usd|eur|gbp|chf)\s?\d|\b\d[\d,.]*\s?(?:usd|eur|gbp|chf|dollars?|euros?)\b|\b(?:invoices?|wire transfer|bank transfer|payments?|refunds?|iban|swift|bic|routing number|account number|revenue|payroll|purchase order|quarterly results|earnings)\b)";

/// Calls trigger `function`; `None` when it is not a trigger.
pub fn call(
    event: &PreparedEvent,
    function: &str,
    args: &[Value],
) -> Option<Result<Value, EvalError>> {
    let r = match (function, args) {
        ("external_recipient", [internal]) => strings(internal)
            .map(|internal| recipients(event).iter().any(|r| is_external(r, &internal))),
        ("is_external_address", [Value::String(r), internal]) => {
            strings(internal).map(|internal| is_external(r, &internal))
        }
        ("vip_recipient", [vips]) => strings(vips).map(|vips| {
            recipients(event)
                .iter()
                .any(|r| vips.iter().any(|v| v.eq_ignore_ascii_case(r)))
        }),
        ("contains_keywords", [words]) => strings(words).map(|words| {
            let text = message(event).to_lowercase();
            words
                .iter()
                .any(|w| !w.is_empty() && text.contains(&w.to_lowercase()))
        }),
        ("financial_mention", []) => {
            static RE: OnceLock<Option<meta::Regex>> = OnceLock::new();
            // parlok counts a call that carries an amount as financial.
            let amount = matches!(
                metadata(event).and_then(|m| m.get("amount")),
                Some(v) if !v.is_null()
            );
            match RE.get_or_init(|| meta::Regex::new(FINANCIAL).ok()) {
                Some(_) if amount => Ok(true),
                Some(re) => Ok(re.is_match(message(event).as_str())),
                None => Err(EvalError::Invalid("financial_mention pattern")),
            }
        }
        ("after_hours", [Value::String(tz), Value::String(start), Value::String(end)]) => {
            after_hours_at(event.event.timestamp, tz, start, end)
                .map_err(|_| EvalError::Invalid("after_hours: bad time zone or time"))
        }
        // More than `n`, as parlok counts it.
        ("bulk_send", [Value::Int(n)]) => Ok(recipients(event).len() as i64 > *n),
        ("first_time_recipient", []) => Ok(first_time_recipient(event)),
        ("recipient_count", []) => return Some(Ok(Value::Int(recipients(event).len() as i64))),
        _ => return None,
    };
    Some(r.map(Value::Bool))
}

fn strings(v: &Value) -> Result<Vec<String>, EvalError> {
    match v {
        Value::List(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.to_string()),
                _ => Err(EvalError::NoOverload("a list of strings")),
            })
            .collect(),
        _ => Err(EvalError::NoOverload("a list of strings")),
    }
}

/// Whether a recipient of the call has not been written to before, in the
/// call's scope (its user, else its session) and adapter. The decision
/// service looks the call's recipients up in the state database and
/// says which are known ([`PreparedEvent::set_known_recipients`]); where
/// nobody looked (`parallax test`, a hook deciding without the server),
/// every recipient counts as new, as parlok does without its state store:
/// the trigger errs towards asking.
pub fn first_time_recipient(event: &PreparedEvent) -> bool {
    let known = event.known_recipients();
    recipients(event)
        .iter()
        .any(|r| !known.is_some_and(|k| k.iter().any(|k| k == &recipient_key(r))))
}

/// A recipient as the known-recipients memory compares it: trimmed, lower
/// case, without `mailto:`.
pub fn recipient_key(r: &str) -> String {
    r.trim().trim_start_matches("mailto:").to_lowercase()
}

/// The adapter of a parlok-shaped call: `tool_name` up to its first dot.
pub fn adapter(event: &PreparedEvent) -> Option<&str> {
    event
        .event
        .tool_name
        .as_deref()
        .and_then(|t| t.split_once('.'))
        .map(|(a, _)| a)
}

fn metadata(event: &PreparedEvent) -> Option<&serde_json::Map<String, Json>> {
    event
        .event
        .tool_args
        .get("metadata")
        .and_then(Json::as_object)
}

/// The call's recipients: `tool_args.recipient` (or `recipients`), a
/// string (split at `,` and `;`) or a list of strings, and parlok's
/// `metadata.recipients`; each once.
pub fn recipients(event: &PreparedEvent) -> Vec<String> {
    let args = &event.event.tool_args;
    let mut out: Vec<String> = Vec::new();
    let meta = metadata(event).and_then(|m| m.get("recipients"));
    for value in [args.get("recipient"), args.get("recipients"), meta] {
        match value {
            Some(Json::String(s)) => out.extend(
                s.split([',', ';'])
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string),
            ),
            Some(Json::Array(items)) => out.extend(
                items
                    .iter()
                    .filter_map(Json::as_str)
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string),
            ),
            _ => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|r| seen.insert(recipient_key(r)));
    out
}

/// `subject` and `body` of the call, joined by a line break.
fn message(event: &PreparedEvent) -> String {
    let args = &event.event.tool_args;
    ["subject", "body"]
        .iter()
        .filter_map(|k| args.get(*k).and_then(Json::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A recipient is external when it is an e-mail address or a domain (or a
/// URL's host) outside `internal` (each domain counts with its
/// subdomains). A Slack channel (`#sales`), a user mention (`@ana`) or an
/// id (`U024BE7LH`) is internal.
pub fn is_external(recipient: &str, internal: &[String]) -> bool {
    let r = recipient.trim().trim_start_matches("mailto:");
    if r.starts_with('#') || r.starts_with('@') {
        return false;
    }
    let host = match r.rsplit_once('@') {
        Some((_, domain)) => domain,
        None => {
            let no_scheme = r.split_once("://").map_or(r, |(_, rest)| rest);
            let host = no_scheme.split(['/', ':', '?']).next().unwrap_or("");
            if !host.contains('.') || host.contains(char::is_whitespace) {
                return false;
            }
            host
        }
    };
    let host = host.trim_end_matches(['>', '.']).to_ascii_lowercase();
    !internal.iter().any(|d| {
        let d = d.trim().trim_start_matches('@').to_ascii_lowercase();
        host == d || host.ends_with(&format!(".{d}"))
    })
}

/// Checks `after_hours` arguments: a real IANA time zone and `HH:MM` times.
pub fn check_after_hours(tz: &str, start: &str, end: &str) -> Result<(), String> {
    jiff::tz::TimeZone::get(tz).map_err(|e| format!("time zone `{tz}`: {e}"))?;
    minutes(start)?;
    minutes(end)?;
    Ok(())
}

fn minutes(hhmm: &str) -> Result<i32, String> {
    let bad = || format!("`{hhmm}` is not a time of day (HH:MM)");
    let (h, m) = hhmm.split_once(':').ok_or_else(bad)?;
    let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if !(0..=23).contains(&h) || !(0..=59).contains(&m) {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

/// Whether the event's time (its `timestamp`, else now) falls, in time zone
/// `tz`, in the window from `start` to `end` (wrapping past midnight when
/// `end` is earlier than `start`: `"18:00"` to `"08:00"` is the night).
pub fn after_hours_at(
    timestamp: Option<f64>,
    tz: &str,
    start: &str,
    end: &str,
) -> Result<bool, String> {
    let zone = jiff::tz::TimeZone::get(tz).map_err(|e| e.to_string())?;
    let instant = match timestamp {
        Some(t) if t.is_finite() => {
            jiff::Timestamp::from_millisecond((t * 1000.0) as i64).map_err(|e| e.to_string())?
        }
        _ => jiff::Timestamp::now(),
    };
    let local = instant.to_zoned(zone);
    let now = i32::from(local.hour()) * 60 + i32::from(local.minute());
    let (s, e) = (minutes(start)?, minutes(end)?);
    Ok(if s <= e {
        now >= s && now < e
    } else {
        now >= s || now < e
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_recipients() {
        let internal = vec!["acme.com".to_string()];
        assert!(!is_external("#sales", &internal));
        assert!(!is_external("@ana", &internal));
        assert!(!is_external("U024BE7LH", &internal));
        assert!(!is_external("bob@acme.com", &internal));
        assert!(!is_external("bob@eu.acme.com", &internal));
        assert!(is_external("bob@acme.com.evil.io", &internal));
        assert!(is_external("eve@gmail.com", &internal));
        assert!(is_external("partner.io", &internal));
    }

    #[test]
    fn after_hours_uses_the_zone() {
        // 2024-01-15T20:30:00Z: 21:30 in Berlin, 15:30 in New York.
        let t = Some(1_705_350_600.0);
        assert_eq!(
            after_hours_at(t, "Europe/Berlin", "18:00", "08:00"),
            Ok(true)
        );
        assert_eq!(
            after_hours_at(t, "America/New_York", "18:00", "08:00"),
            Ok(false)
        );
        assert!(check_after_hours("Mars/Olympus", "18:00", "08:00").is_err());
        assert!(check_after_hours("UTC", "25:00", "08:00").is_err());
    }
}
