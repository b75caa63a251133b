//! The responses every endpoint shares: one body type (a whole buffer or a
//! stream, boxed, so the proxy can stream what the JSON endpoints send in
//! one piece), JSON bodies, and the `{"error": {"code", "message"}}` shape
//! with the status that says whose fault it is.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

/// An error a response body may end with (a proxied upstream that broke).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Every response body.
pub type Body = http_body_util::combinators::BoxBody<Bytes, BoxError>;

/// A body of `bytes`, in one piece.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

pub fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub fn error(status: StatusCode, code: &str, message: String) -> Response<Body> {
    let body = json!({"error": {"code": code, "message": message}});
    json_response(status, body.to_string().into_bytes())
}

pub fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("this endpoint only accepts {allow}"),
    );
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    r
}
