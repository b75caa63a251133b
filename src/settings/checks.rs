//! Checks on operational settings that serde alone cannot make, run when a
//! config is loaded (serve, eval, lint), so a bad value stops start-up with
//! a clear message instead of surfacing at the first alert or request.

use super::Settings;
use crate::webhook;

/// Every problem found, one message each.
pub fn problems(s: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(url) = &s.reporting.webhook_url {
        if let Err(e) = webhook::parse_url(url) {
            out.push(e.to_string());
        }
    }
    if s.server
        .auth_token
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        out.push("server.auth_token is empty; remove it or set a real token".into());
    }
    if s.reporting
        .webhook_secret
        .as_deref()
        .is_some_and(str::is_empty)
    {
        out.push("reporting.webhook_secret is empty; remove it or set a real secret".into());
    }
    let positive = [
        ("server.max_connections", s.server.max_connections),
        ("server.max_json_depth", s.server.max_json_depth),
        ("server.max_string_bytes", s.server.max_string_bytes),
        ("server.max_header_bytes", s.server.max_header_bytes),
        ("reporting.queue_size", s.reporting.queue_size),
        (
            "reporting.webhook_queue_size",
            s.reporting.webhook_queue_size,
        ),
    ];
    for (name, v) in positive {
        if v == 0 {
            out.push(format!("{name} must be at least 1"));
        }
    }
    for (name, url) in [
        ("proxy.anthropic_upstream", &s.proxy.anthropic_upstream),
        ("proxy.openai_upstream", &s.proxy.openai_upstream),
    ] {
        if let Err(e) = crate::proxy::upstream::parse_base(url) {
            out.push(format!("{name}: {e}"));
        }
    }
    if s.proxy
        .session_header
        .parse::<hyper::header::HeaderName>()
        .is_err()
    {
        out.push(format!(
            "proxy.session_header: `{}` is not a valid header name",
            s.proxy.session_header
        ));
    }
    for (name, v) in [
        ("proxy.connect_timeout_ms", s.proxy.connect_timeout_ms),
        ("proxy.response_timeout_ms", s.proxy.response_timeout_ms),
        (
            "proxy.stream_idle_timeout_ms",
            s.proxy.stream_idle_timeout_ms,
        ),
        ("proxy.keepalive_ms", s.proxy.keepalive_ms),
        ("mcp.max_message_bytes", s.mcp.max_message_bytes as u64),
        ("proxy.max_request_bytes", s.proxy.max_request_bytes as u64),
        (
            "proxy.max_response_bytes",
            s.proxy.max_response_bytes as u64,
        ),
    ] {
        if v == 0 {
            out.push(format!("{name} must be at least 1"));
        }
    }
    for (name, token) in &s.approvals.approver_tokens {
        if token.trim().is_empty() {
            out.push(format!("approvals.approver_tokens.{name} is empty"));
        } else if s.server.auth_token.as_deref() == Some(token.as_str()) {
            out.push(format!(
                "approvals.approver_tokens.{name} is server.auth_token: the agent's token must \
                 not be able to approve its own calls"
            ));
        }
    }
    if s.approvals.timeout_seconds == 0 {
        out.push("approvals.timeout_seconds must be at least 1".into());
    }
    if s.server.request_timeout_ms == 0 {
        out.push("server.request_timeout_ms must be at least 1".into());
    }
    if s.reporting.flush_ms == 0 {
        out.push("reporting.flush_ms must be at least 1".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_bad_setting() {
        assert!(problems(&Settings::default()).is_empty());
        let mut s = Settings::default();
        s.reporting.webhook_url = Some("https://hooks.example/x".into());
        s.server.auth_token = Some(" ".into());
        s.server.max_connections = 0;
        let p = problems(&s);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("only http://"));
        assert!(p[1].contains("auth_token"));
        assert!(p[2].contains("max_connections"));
    }
}
