//! Which session a proxied request belongs to: the key of the SQL rules'
//! window (rates, loops, lockouts) and of the audit trail.
//!
//! In order: the configured header (`proxy.session_header`, default
//! `x-parallax-session`), for deployments that know their sessions; the
//! session the agent itself sends — Claude Code's `x-claude-code-session-id`
//! header, else its `metadata.user_id` in Messages requests (it embeds the
//! session; of a JSON user_id, only its `session_id`), Codex's `session-id`
//! header, a Responses `prompt_cache_key`, OpenAI's `user`/`safety_identifier`; else
//! the client connection (`conn-<ip>:<port>`): an agent keeps one
//! connection open for its session, and two agents never share one.

use super::api::ModelApi;
use hyper::header::HeaderMap;
use serde_json::Value;
use std::net::SocketAddr;

/// Longest session id kept (a header could be anything).
const MAX_LEN: usize = 256;

fn clip(s: &str) -> Option<String> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut end = s.len().min(MAX_LEN);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Some(s[..end].to_string())
}

/// The session inside a Claude Code `metadata.user_id`: recent versions
/// send a JSON object as that string (`{"device_id":…,"account_uuid":…,
/// "session_id":…}`), whose `session_id` is the session; the device id is a
/// per-machine fingerprint that need not be in every audit line. Older ones
/// send a flat `user_…_session_…` string, kept whole.
fn claude_user_session(user_id: &str) -> Option<String> {
    if !user_id.starts_with('{') {
        return None;
    }
    let v: Value = serde_json::from_str(user_id).ok()?;
    v.get("session_id")?.as_str().and_then(clip)
}

pub fn session_id(
    headers: &HeaderMap,
    header: &str,
    api: ModelApi,
    body: &Value,
    peer: Option<SocketAddr>,
) -> String {
    let from_header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(clip)
    };
    if let Some(s) = from_header(header) {
        return s;
    }
    let from_body = |path: &[&str]| {
        let mut v = body;
        for k in path {
            v = v.get(*k)?;
        }
        v.as_str().and_then(clip)
    };
    let found = match api {
        ModelApi::Messages => from_header("x-claude-code-session-id").or_else(|| {
            from_body(&["metadata", "user_id"]).map(|u| claude_user_session(&u).unwrap_or(u))
        }),
        ModelApi::ChatCompletions | ModelApi::Responses => from_header("session-id")
            .or_else(|| from_body(&["prompt_cache_key"]))
            .or_else(|| from_body(&["metadata", "session_id"]))
            .or_else(|| from_body(&["safety_identifier"]))
            .or_else(|| from_body(&["user"])),
    };
    if let Some(s) = found {
        return s;
    }
    match peer {
        Some(p) => format!("conn-{p}"),
        None => "conn-unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_then_body_then_connection() {
        let mut h = HeaderMap::new();
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let body = json!({"metadata": {"user_id": "user_x_session_1"}});
        assert_eq!(
            session_id(
                &h,
                "x-parallax-session",
                ModelApi::Messages,
                &body,
                Some(peer)
            ),
            "user_x_session_1"
        );
        h.insert("x-parallax-session", "ops-7".parse().unwrap());
        assert_eq!(
            session_id(
                &h,
                "x-parallax-session",
                ModelApi::Messages,
                &body,
                Some(peer)
            ),
            "ops-7"
        );
        let h = HeaderMap::new();
        assert_eq!(
            session_id(
                &h,
                "x-parallax-session",
                ModelApi::Responses,
                &json!({}),
                Some(peer)
            ),
            "conn-127.0.0.1:5000"
        );
        // Claude Code 2.1.x: a JSON user_id, and the same session in a header.
        let user_id = r#"{"device_id":"ee98","account_uuid":"","session_id":"4d4b-62b7"}"#;
        let body = json!({"metadata": {"user_id": user_id}});
        let messages = |h: &HeaderMap| {
            session_id(
                h,
                "x-parallax-session",
                ModelApi::Messages,
                &body,
                Some(peer),
            )
        };
        assert_eq!(messages(&HeaderMap::new()), "4d4b-62b7");
        let mut h = HeaderMap::new();
        h.insert("x-claude-code-session-id", "4d4b-hdr".parse().unwrap());
        assert_eq!(messages(&h), "4d4b-hdr");
        let odd = json!({"metadata": {"user_id": "{not json"}});
        assert_eq!(
            session_id(
                &HeaderMap::new(),
                "x-parallax-session",
                ModelApi::Messages,
                &odd,
                None
            ),
            "{not json"
        );
        let mut h = HeaderMap::new();
        h.insert("session-id", "codex-thread".parse().unwrap());
        assert_eq!(
            session_id(
                &h,
                "x-parallax-session",
                ModelApi::Responses,
                &json!({}),
                None
            ),
            "codex-thread"
        );
    }
}
