//! Errors in each API's own shape, so an SDK or agent reads them as it
//! reads the provider's: Anthropic `{"type":"error","error":{"type",
//! "message"}}`, OpenAI `{"error":{"message","type","code"}}`. Never plain
//! text, never a hang.

use super::api::Provider;
use crate::http::response::{json_response, Body};
use hyper::{Response, StatusCode};
use serde_json::json;

/// What went wrong, in the providers' vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The client's request cannot be inspected (not JSON, too large).
    InvalidRequest,
    /// The upstream could not be reached or broke off.
    Upstream,
    /// The upstream did not answer in time.
    Timeout,
    /// The request is one the configuration says not to forward.
    Forbidden,
}

pub fn api_error(provider: Provider, kind: Kind, message: String) -> Response<Body> {
    let status = match kind {
        Kind::InvalidRequest => StatusCode::BAD_REQUEST,
        Kind::Upstream => StatusCode::BAD_GATEWAY,
        Kind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        Kind::Forbidden => StatusCode::FORBIDDEN,
    };
    let body = match provider {
        Provider::Anthropic => json!({
            "type": "error",
            "error": {
                "type": match kind {
                    Kind::InvalidRequest => "invalid_request_error",
                    Kind::Forbidden => "permission_error",
                    Kind::Upstream | Kind::Timeout => "api_error",
                },
                "message": message,
            }
        }),
        Provider::OpenAi => json!({
            "error": {
                "message": message,
                "type": match kind {
                    Kind::InvalidRequest => "invalid_request_error",
                    Kind::Forbidden => "permission_error",
                    Kind::Upstream | Kind::Timeout => "server_error",
                },
                "param": null,
                "code": match kind {
                    Kind::InvalidRequest => "invalid_request",
                    Kind::Forbidden => "forbidden_by_parallax",
                    Kind::Upstream => "upstream_unavailable",
                    Kind::Timeout => "upstream_timeout",
                },
            }
        }),
    };
    json_response(status, body.to_string().into_bytes())
}
