//! The JSON responses every endpoint shares: a body with its type, and the
//! `{"error": {"code", "message"}}` shape with the status that says whose
//! fault it is.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

pub type Body = Full<Bytes>;

pub fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
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
