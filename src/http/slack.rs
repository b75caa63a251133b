//! `POST /slack/interactions`: the Approve / Deny buttons of the approval
//! cards (`crate::approvals::notify`).
//!
//! Slack cannot send the server's bearer token, so this path is routed
//! before the bearer check and its own check comes first: Slack's request
//! signature, `X-Slack-Signature: v0=<hex HMAC-SHA256>` over
//! `v0:<X-Slack-Request-Timestamp>:<raw body>` keyed with
//! `approvals.slack.signing_secret`, compared in constant time, with the
//! timestamp within five minutes of now (a captured request cannot be
//! replayed later). Anything unsigned, forged or stale gets 401 and changes
//! nothing. Then the clicking Slack user must be mapped to an approver name
//! (`approvals.slack.approvers`), and the rule's approver list applies to
//! that name as to any other approver.

use super::response::{error, json_response, method_not_allowed, Body};
use crate::approvals::{notify, DecideError};
use crate::decision::DecisionService;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// How far Slack's timestamp may be from now.
pub const REPLAY_WINDOW_SECONDS: i64 = 5 * 60;

const TIMESTAMP: &str = "x-slack-request-timestamp";
const SIGNATURE: &str = "x-slack-signature";

/// `v0=<hex>`: Slack's signature of `body` sent at `timestamp`.
pub fn signature(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut out = String::from("v0=");
    for b in tag {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn unauthorized(code: &str, message: &str) -> Response<Body> {
    error(StatusCode::UNAUTHORIZED, code, message.into())
}

/// Checks the request's Slack signature: the refusal when it fails.
fn refusal(headers: &HeaderMap, body: &[u8], secret: &str) -> Option<Response<Body>> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(ts), Some(sig)) = (header(TIMESTAMP), header(SIGNATURE)) else {
        return Some(unauthorized(
            "unsigned",
            "Slack interactions carry X-Slack-Request-Timestamp and X-Slack-Signature",
        ));
    };
    let Ok(at) = ts.trim().parse::<i64>() else {
        return Some(unauthorized(
            "invalid_signature",
            "X-Slack-Request-Timestamp is not a Unix time",
        ));
    };
    let now = crate::approvals::now() as i64;
    if (now - at).abs() > REPLAY_WINDOW_SECONDS {
        return Some(unauthorized(
            "stale_request",
            "X-Slack-Request-Timestamp is more than five minutes from now (a replay?)",
        ));
    }
    let want = signature(secret.as_bytes(), ts.trim(), body);
    if !bool::from(want.as_bytes().ct_eq(sig.trim().as_bytes())) {
        tracing::warn!("Slack interaction with a bad signature refused");
        return Some(unauthorized(
            "invalid_signature",
            "X-Slack-Signature does not match (approvals.slack.signing_secret)",
        ));
    }
    None
}

fn bad(message: &str) -> Response<Body> {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_interaction",
        message.into(),
    )
}

pub async fn interactions(req: Request<Incoming>, service: &DecisionService) -> Response<Body> {
    if req.method() != Method::POST {
        return method_not_allowed("POST");
    }
    let Some(approvals) = service.approvals() else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no rule asks for approval (`action: approve`)".into(),
        );
    };
    let slack = &approvals.settings.slack;
    let Some(secret) = slack.signing_secret.clone().filter(|_| slack.configured()) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "Slack approvals are not configured (approvals.slack)".into(),
        );
    };
    let (parts, body) = req.into_parts();
    let limit = service.settings.server.max_body_bytes;
    let body = match Limited::new(body, limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body could not be read (at most {limit} bytes)"),
            )
        }
    };
    // Nothing below runs for a request Slack did not sign.
    if let Some(refused) = refusal(&parts.headers, &body, &secret) {
        return refused;
    }
    let Some(payload) = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "payload")
        .map(|(_, v)| v.into_owned())
    else {
        return bad("the body is a form with `payload=<json>`");
    };
    let Ok(p) = serde_json::from_str::<Value>(&payload) else {
        return bad("`payload` is not JSON");
    };
    if p["type"] != "block_actions" {
        return bad("only block_actions (the card's buttons) are handled");
    }
    let action = &p["actions"][0];
    let approve = match action["action_id"].as_str() {
        Some(notify::SLACK_APPROVE) => true,
        Some(notify::SLACK_DENY) => false,
        _ => return bad("not a Parallax approval button"),
    };
    let Some(id) = action["value"].as_str() else {
        return bad("the button names no approval");
    };
    let user = p["user"]["id"].as_str().unwrap_or("");
    let Some(name) = slack.approvers.get(user) else {
        tracing::warn!(
            slack_user = user,
            id,
            "Slack user not in approvals.slack.approvers"
        );
        return error(
            StatusCode::FORBIDDEN,
            "slack_user_not_mapped",
            format!("Slack user `{user}` is not an approver (approvals.slack.approvers)"),
        );
    };
    let channel = p["channel"]["id"]
        .as_str()
        .or(p["container"]["channel_id"].as_str());
    let ts = p["message"]["ts"]
        .as_str()
        .or(p["container"]["message_ts"].as_str());
    if let (Some(n), Some(channel), Some(ts)) = (approvals.notifiers(), channel, ts) {
        n.remember_card(id, channel, ts);
    }
    let comment = format!("via Slack (user {user})");
    match approvals.decide(id, approve, name, Some(&comment), service.audit()) {
        Ok(_) => json_response(StatusCode::OK, b"{}".to_vec()),
        Err(DecideError::Closed(a)) => super::approval_callback::closed(&a),
        Err(DecideError::NotFound(id)) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no approval `{id}`"),
        ),
        Err(e @ DecideError::NotAllowed { .. }) => {
            error(StatusCode::FORBIDDEN, "approver_not_allowed", e.to_string())
        }
        Err(DecideError::Store(e)) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
        }
    }
}
