//! W3C trace context across the HTTP front doors.
//!
//! A request's `traceparent` (and `tracestate`) is read into an
//! OpenTelemetry [`Context`] that the route's future runs within
//! ([`within`]); the decision service takes `Context::current()` as the
//! parent of its decision span, so no front door has to pass the context
//! along by hand. A proxied model call runs within its own span's context,
//! and so does its response body while it streams ([`ContextBody`]):
//! decisions on a streamed answer join the same trace. The proxy's
//! upstream request carries that span's `traceparent` ([`inject_current`]).
//!
//! With telemetry off none of this runs: no context is read, and the
//! proxy forwards the agent's trace headers as it forwards its other
//! headers.

use super::Telemetry;
use crate::http::response::Body;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper::HeaderMap;
use opentelemetry::context::FutureExt;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

/// The caller's trace context from `headers`, when telemetry is on (an
/// empty context when the request has no valid `traceparent`).
pub fn extract(telemetry: Option<&Telemetry>, headers: &HeaderMap) -> Option<Context> {
    telemetry?;
    Some(TraceContextPropagator::new().extract(&HeaderExtractor(headers)))
}

/// Runs `fut` within `cx` (every poll sees it as `Context::current()`),
/// or as it is when there is none.
pub async fn within<F: Future>(cx: Option<Context>, fut: F) -> F::Output {
    match cx {
        Some(cx) => fut.with_context(cx).await,
        None => fut.await,
    }
}

/// Replaces the trace headers of an upstream request with the current
/// span's (the proxy's span for this call), when there is one; otherwise
/// leaves `headers` as they are.
pub fn inject_current(headers: &mut HeaderMap) {
    let cx = Context::current();
    if !cx.span().span_context().is_valid() {
        return;
    }
    headers.remove("traceparent");
    headers.remove("tracestate");
    TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
}

/// `response` with its body read within `cx` and the span of `cx` ended
/// when the body is done.
pub fn finish_within(response: hyper::Response<Body>, cx: Context) -> hyper::Response<Body> {
    let status = response.status().as_u16();
    response.map(|b| Body::new(ContextBody::new(b, cx, status)))
}

/// A response body that runs within a proxy call's context while it is
/// read, and ends the call's span when it is done (or dropped: the agent
/// went away).
pub struct ContextBody<B> {
    inner: B,
    cx: Context,
}

impl<B> ContextBody<B> {
    /// `inner`, read within `cx`; `status` is recorded on the span now.
    pub fn new(inner: B, cx: Context, status: u16) -> ContextBody<B> {
        cx.span().set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        ContextBody { inner, cx }
    }
}

impl<B> Drop for ContextBody<B> {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

impl<B: HttpBody<Data = Bytes> + Unpin> HttpBody for ContextBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let _guard = self.cx.clone().attach();
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_current_span_the_trace_headers_are_left_alone() {
        let mut h = HeaderMap::new();
        h.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        let before = h.clone();
        inject_current(&mut h);
        assert_eq!(h, before);
    }

    #[test]
    fn extraction_is_off_without_telemetry() {
        let mut h = HeaderMap::new();
        h.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        assert!(extract(None, &h).is_none());
    }
}
