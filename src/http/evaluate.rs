//! `POST /evaluate`: a JSON event in, the decision out. A thin translation:
//! the body is read within limits, parsed and checked into an [`Event`],
//! and handed to the decision service; the report is the response.

use super::body;
use super::json_limits;
use super::response::{error, json_response, Body};
use crate::decision::DecisionService;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use parallax_runtime::{Event, EventError};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

pub async fn evaluate(req: Request<Incoming>, service: &DecisionService) -> Response<Body> {
    let server = &service.settings.server;
    // `parallax hook` says it is the hook door (recorded, never decisive).
    let origin = crate::hooks::client::origin_from_headers(req.headers())
        .for_tenant(super::auth::tenant_of(&req));
    // `?wait=SECONDS`: hold the answer while an approval is pending.
    let wait = match wait_param(req.uri().query()) {
        Ok(w) => w,
        Err(message) => return error(StatusCode::BAD_REQUEST, "invalid_query", message),
    };
    let body = match body::read_json(req, server, &service.metrics).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let started = Instant::now();
    let event = match parse_event(&body, server.max_json_depth, server.max_string_bytes) {
        Ok(e) => e,
        Err((code, message)) => {
            if code == "limit_exceeded" {
                service.metrics.rejected_requests.fetch_add(1, Relaxed);
            }
            return error(StatusCode::BAD_REQUEST, code, message);
        }
    };
    let report = service.decide_waiting(event, &origin, started, wait).await;
    match serde_json::to_vec(&report) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("could not encode the verdict: {e}"),
        ),
    }
}

/// The `wait` query parameter (seconds, fractions allowed), zero without
/// one.
pub fn wait_param(query: Option<&str>) -> Result<std::time::Duration, String> {
    let Some(q) = query else {
        return Ok(std::time::Duration::ZERO);
    };
    for pair in q.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == "wait" {
            return match v.parse::<f64>() {
                Ok(s) if s.is_finite() && s >= 0.0 => {
                    Ok(std::time::Duration::from_secs_f64(s.min(86_400.0)))
                }
                _ => Err(format!("`wait` must be a number of seconds, not `{v}`")),
            };
        }
    }
    Ok(std::time::Duration::ZERO)
}

/// A body as an event, or the error code (`malformed_json`,
/// `limit_exceeded`, `invalid_event`) and a message naming the problem.
pub fn parse_event(
    body: &[u8],
    max_depth: usize,
    max_string: usize,
) -> Result<Event, (&'static str, String)> {
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => {
            return Err((
                "malformed_json",
                format!(
                    "malformed JSON: the body is not valid UTF-8 (byte {})",
                    e.valid_up_to()
                ),
            ))
        }
    };
    // The common case straight into the event's fields (no `Value` tree
    // for the object, no map to take apart), when it keeps to the limits;
    // anything else takes the value path below, which names the problem.
    if let Some(plain) = Event::parse_plain(text) {
        if json_limits::event_within(&plain, max_depth, max_string) {
            return Ok(plain.event);
        }
    }
    // From the checked text: serde_json then skips validating UTF-8 a
    // second time (from_slice checks every string it reads).
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        (
            "malformed_json",
            EventError::Json(e.to_string()).to_string(),
        )
    })?;
    json_limits::check(&value, max_depth, max_string)
        .map_err(|e| ("limit_exceeded", e.to_string()))?;
    Event::from_value(value).map_err(|e| {
        let code = match e {
            EventError::Json(_) => "malformed_json",
            _ => "invalid_event",
        };
        (code, e.to_string())
    })
}

#[cfg(test)]
mod tests {
    /// `parse_event` parses the UTF-8-checked text with `from_str` where it
    /// used `from_slice`: over valid, malformed and adversarial bodies
    /// (escapes, lone surrogates, trailing bytes, deep nesting, numbers at
    /// the edges), both give the same value or the same error message.
    #[test]
    fn from_str_parses_as_from_slice_did() {
        let bodies: &[&str] = &[
            r#"{"stage":"tool.before","tool_name":"exec","tool_args":{"command":"rm -rf /"}}"#,
            r#"{"stage":"message.before","message_text":"caf\u00e9 \ud83d\ude00 ü 中"}"#,
            r#"{"stage":"tool.before","#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00x"}"#,
            r#"{"a":"\x"}"#,
            "{\"a\":\"tab\tinside\"}",
            r#"{"a":1} trailing"#,
            "{\"a\":1}\n\t ",
            r#"[1e400]"#,
            r#"[-0, 18446744073709551616, 1.5e-400]"#,
            r#"{"a":1,"a":2}"#,
            "",
            "   ",
            "nul",
            &"[".repeat(200),
            &format!("{}{}", "[".repeat(100), "]".repeat(100)),
        ];
        for body in bodies {
            let slice = serde_json::from_slice::<serde_json::Value>(body.as_bytes())
                .map_err(|e| e.to_string());
            let text = serde_json::from_str::<serde_json::Value>(body).map_err(|e| e.to_string());
            assert_eq!(slice, text, "{body}");
        }
    }
}
