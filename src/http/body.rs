//! Reading a JSON request body within the operator's limits: its media
//! type, `server.max_body_bytes` (declared or streamed), and
//! `server.request_timeout_ms` for the body to arrive. Every refusal is the
//! JSON error a client can act on.

use super::response::{error, Body};
use crate::metrics::Metrics;
use crate::settings::ServerSettings;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// JSON, or a `+json` type; a request without a type is taken as JSON.
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    let Some(v) = content_type else { return true };
    let Ok(v) = v.to_str() else { return false };
    // Compared without case rather than lowered into a new `String`.
    let mime = v.split(';').next().unwrap_or_default().trim().as_bytes();
    mime.eq_ignore_ascii_case(b"application/json")
        || mime
            .len()
            .checked_sub(5)
            .is_some_and(|at| mime[at..].eq_ignore_ascii_case(b"+json"))
}

/// The whole body of a JSON request, or the error response to send.
pub async fn read_json(
    req: Request<Incoming>,
    server: &ServerSettings,
    metrics: &Metrics,
) -> Result<Bytes, Response<Body>> {
    let max = server.max_body_bytes;
    let reject = |status, code, message| {
        metrics.rejected_requests.fetch_add(1, Relaxed);
        error(status, code, message)
    };
    if !is_json(req.headers().get(CONTENT_TYPE)) {
        return Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON (Content-Type: application/json)".into(),
        ));
    }
    let too_large = || {
        reject(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the body is larger than server.max_body_bytes ({max} bytes)"),
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let timeout = Duration::from_millis(server.request_timeout_ms.max(1));
    let read = Limited::new(req.into_body(), max).collect();
    match tokio::time::timeout(timeout, read).await {
        Err(_) => Err(reject(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the body did not arrive within server.request_timeout_ms ({} ms)",
                server.request_timeout_ms
            ),
        )),
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(error(
            StatusCode::BAD_REQUEST,
            "unreadable_body",
            format!("could not read the body: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The media-type check as it was (the type lowered into a `String`).
    fn lowered(v: &str) -> bool {
        let mime = v
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        mime == "application/json" || mime.ends_with("+json")
    }

    #[test]
    fn is_json_answers_as_the_lowered_comparison() {
        for v in [
            "application/json",
            "Application/JSON; charset=utf-8",
            " application/json ",
            "application/problem+json",
            "APPLICATION/VND.API+JSON;x=1",
            "+json",
            "json",
            "+jso",
            "",
            "text/plain",
            "application/jsonx",
            "application/json+x",
            "text/x+JSON ; q=1",
        ] {
            let header = HeaderValue::from_str(v).expect("a header value");
            assert_eq!(is_json(Some(&header)), lowered(v), "{v:?}");
        }
        assert!(is_json(None));
    }
}
