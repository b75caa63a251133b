//! `POST /approvals/{id}/callback?decision=approve|deny&approver=NAME&token=T`:
//! the approvals webhook's callback URLs (`crate::approvals::notify`).
//!
//! No bearer token: the token in the URL is the credential, an HMAC over
//! the id, the decision, the approver and the approval's deadline, keyed
//! from `approvals.webhook_secret`. A forged token, or one for another
//! approval, decision or approver, gets 403 `invalid_token` (an unknown id
//! too, so ids cannot be probed); a token whose approval is decided or
//! expired already gets 409 `approval_closed` with the outcome on record —
//! which makes every token single-use, since an approval is decided once.

use super::response::{error, json_response, Body};
use crate::approvals::{self, notify, Approvals, DecideError};
use crate::decision::DecisionService;
use hyper::{Response, StatusCode};
use serde_json::json;

pub fn handle(
    query: Option<&str>,
    id: &str,
    approvals: &Approvals,
    service: &DecisionService,
) -> Response<Body> {
    let (mut decision, mut approver, mut token) = (None, None, None);
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match &*k {
            "decision" => decision = Some(v.into_owned()),
            "approver" => approver = Some(v.into_owned()),
            "token" => token = Some(v.into_owned()),
            _ => {}
        }
    }
    let approve = match decision.as_deref() {
        Some("approve") => true,
        Some("deny") => false,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "`decision` is approve or deny".into(),
            )
        }
    };
    let (Some(approver), Some(token)) = (approver, token) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            "a callback carries `approver` and `token` (use the URL of the notification as sent)"
                .into(),
        );
    };
    let forged = || {
        error(
            StatusCode::FORBIDDEN,
            "invalid_token",
            "this callback token is not valid for this approval, decision and approver".into(),
        )
    };
    let _ = approvals.expire_due(service.audit());
    let a = match approvals.get(id) {
        Ok(Some(a)) => a,
        Ok(None) => return forged(),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    };
    let verb = if approve { "approve" } else { "deny" };
    if !notify::callback_token_ok(&approvals.settings, &a, verb, &approver, &token) {
        tracing::warn!(id, approver = %approver, "approval callback with an invalid token");
        return forged();
    }
    // The token is bound to the approver it was issued for; the webhook's
    // own identity stands for "any approver" on a rule that names none.
    let comment = Some("via the approvals webhook callback");
    match approvals.decide(id, approve, &approver, comment, service.audit()) {
        Ok(a) => json_response(StatusCode::OK, approvals::full(&a).to_string().into_bytes()),
        Err(DecideError::Closed(a)) => closed(&a),
        Err(DecideError::NotFound(_)) => forged(),
        Err(e @ DecideError::NotAllowed { .. }) => {
            error(StatusCode::FORBIDDEN, "approver_not_allowed", e.to_string())
        }
        Err(DecideError::Store(e)) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
        }
    }
}

/// 409 with the outcome on record (as `POST /approvals/{id}/approve` does).
pub fn closed(a: &approvals::Approval) -> Response<Body> {
    let body = json!({
        "error": {
            "code": "approval_closed",
            "message": format!(
                "approval `{}` is {} already; the recorded outcome stands",
                a.id,
                a.status.as_str()
            ),
        },
        "approval": approvals::ticket(a),
    });
    json_response(StatusCode::CONFLICT, body.to_string().into_bytes())
}
