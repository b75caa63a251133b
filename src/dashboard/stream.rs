//! `GET /ui/api/stream`: the live decisions as server-sent events.
//!
//! Each decision is one `event: decision` whose data is
//! [`decision_view::view`]; a viewer that fell behind gets `event: lost`
//! with how many of the oldest it lost (also counted in `/metrics`); a
//! comment line every [`KEEPALIVE`] keeps proxies from closing an idle
//! stream and notices a viewer that left.
//!
//! The page reads it with `fetch` (so the token travels in the
//! `Authorization` header, never in a URL). Building the JSON — masking
//! included — happens here, in the viewer's task, never on the request
//! path; the viewer's socket pushes back on this task only, and the
//! broadcast ring drops the oldest entries for it meanwhile.

use super::decision_view;
use crate::decision::feed::Next;
use crate::decision::DecisionService;
use crate::http::response::Body;
use crate::proxy::stream::ChannelBody;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::Response;
use std::time::Duration;
use tokio::sync::mpsc;

/// Silence after which a keep-alive comment is sent.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// Frames queued for the socket before this viewer's task waits (and the
/// ring starts dropping the oldest for it).
const SOCKET_QUEUE: usize = 16;

/// One server-sent event.
pub fn frame(event: &str, data: &str) -> Bytes {
    let mut s = String::with_capacity(data.len() + event.len() + 16);
    s.push_str("event: ");
    s.push_str(event);
    s.push('\n');
    // `data` is one JSON line; split anyway so a newline can never end
    // the event early.
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    Bytes::from(s)
}

/// Subscribes to the feed and answers with the stream.
pub fn open(service: &DecisionService) -> Response<Body> {
    let mut sub = service.feed().subscribe();
    let (tx, rx) = mpsc::channel::<Bytes>(SOCKET_QUEUE);
    tokio::spawn(async move {
        if tx
            .send(frame("hello", r#"{"stream":"decisions"}"#))
            .await
            .is_err()
        {
            return;
        }
        loop {
            let next = tokio::time::timeout(KEEPALIVE, sub.next()).await;
            let bytes = match next {
                Err(_) => Bytes::from_static(b": keep-alive\n\n"),
                Ok(Next::Item(item)) => {
                    let v = decision_view::view(item.seq, &item.entry);
                    frame("decision", &v.to_string())
                }
                Ok(Next::Lost(n)) => frame("lost", &format!("{{\"lost\":{n}}}")),
                Ok(Next::Closed) => return,
            };
            if tx.send(bytes).await.is_err() {
                // The viewer left; dropping `sub` unsubscribes.
                return;
            }
        }
    });
    let body: Body = ChannelBody::new(rx).boxed();
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_event_even_with_a_newline_in_the_data() {
        assert_eq!(
            &frame("lost", "{\"lost\":3}")[..],
            b"event: lost\ndata: {\"lost\":3}\n\n"
        );
        assert_eq!(&frame("x", "a\nb")[..], b"event: x\ndata: a\ndata: b\n\n");
    }
}
