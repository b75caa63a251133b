//! Rewriting a streamed (SSE) model response on the fly.
//!
//! A task reads the upstream body, parses it ([`super::sse`]), and hands
//! each event to the API's [`Rewriter`], a synchronous state machine: text
//! passes through as it comes, a tool call is held from its start to its
//! end, then the rewriter asks for a verdict ([`Pending`]), the task gets it
//! from the decision service, and the rewriter emits the call, its
//! rewritten form or a text saying it was blocked, at the same index.
//! While a call is held the client gets keep-alives. The client receives
//! what the task writes into a bounded channel: a slow client slows the
//! upstream read (back-pressure), and a client that goes away stops it.

use super::sse::{encode_comment, encode_event, SseEvent, SseItem, SseParser};
use super::verdict::{Inspector, Outcome};
use crate::budgets::usage::{StreamUsage, Usage};
use crate::http::response::{Body, BoxError};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use serde_json::Value;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// A verdict the rewriter needs before it can go on.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The event to decide (its JSON).
    pub event: Value,
    /// What it is, for the block text (`tool call \`Bash\``).
    pub what: String,
}

/// One API's streaming rewriter.
pub trait Rewriter: Send {
    /// Takes one upstream event; writes what can go out now to `out`; asks
    /// for a verdict when a held piece is complete.
    fn push(&mut self, ev: SseEvent, out: &mut Vec<SseEvent>) -> Option<Pending>;
    /// The verdict on the last [`Pending`]; writes what follows from it,
    /// and asks for the next verdict when several pieces completed at once.
    fn resolve(&mut self, outcome: Outcome, out: &mut Vec<SseEvent>) -> Option<Pending>;
    /// Whether a tool call is being held (keep-alives are due).
    fn holding(&self) -> bool;
    /// Writes one keep-alive in the API's form.
    fn keepalive(&self, out: &mut Vec<u8>);
    /// The upstream ended: writes what is left (never an unevaluated call).
    fn finish(&mut self, out: &mut Vec<SseEvent>);
    /// An error event in the API's form, for a stream that broke off.
    fn error_event(&self, message: &str) -> SseEvent;
}

/// A response body fed by a channel (also the MCP gateway's streams).
pub struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    pub fn new(rx: mpsc::Receiver<Bytes>) -> ChannelBody {
        ChannelBody { rx }
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

/// Timing of a rewritten stream.
#[derive(Debug, Clone, Copy)]
pub struct StreamTiming {
    /// Longest silence from the upstream before the stream is ended.
    pub idle: Duration,
    /// Keep-alive period while a tool call is held.
    pub keepalive: Duration,
    /// Largest line or event accepted from the upstream.
    pub max_event_bytes: usize,
}

/// Reads a stream's usage as its events pass and hands it on when the
/// stream is over, however it ends (finished, broken off, the client gone):
/// on drop.
pub struct UsageTap {
    usage: StreamUsage,
    done: Option<UsageDone>,
}

/// What receives a finished stream's usage and model.
type UsageDone = Box<dyn FnOnce(Usage, Option<&str>) + Send>;

impl UsageTap {
    pub fn new(
        usage: StreamUsage,
        done: impl FnOnce(Usage, Option<&str>) + Send + 'static,
    ) -> UsageTap {
        UsageTap {
            usage,
            done: Some(Box::new(done)),
        }
    }

    fn observe(&mut self, e: &SseEvent) {
        self.usage.observe(e.event.as_deref(), &e.data);
    }
}

impl Drop for UsageTap {
    fn drop(&mut self) {
        if let (Some(done), Some((u, model))) = (self.done.take(), self.usage.result()) {
            done(u, model.as_deref());
        }
    }
}

/// Starts rewriting `upstream` and returns the body the client reads.
pub fn rewrite(
    upstream: Incoming,
    rewriter: Box<dyn Rewriter>,
    inspector: Inspector,
    timing: StreamTiming,
    tap: Option<UsageTap>,
) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(run(upstream, rewriter, inspector, timing, tx, tap));
    ChannelBody::new(rx).boxed()
}

/// Encodes `events` and sends them; false once the client is gone.
async fn send(tx: &mpsc::Sender<Bytes>, events: &mut Vec<SseEvent>) -> bool {
    if events.is_empty() {
        return true;
    }
    let mut buf = Vec::new();
    for e in events.drain(..) {
        encode_event(&e, &mut buf);
    }
    tx.send(Bytes::from(buf)).await.is_ok()
}

async fn run(
    mut upstream: Incoming,
    mut rw: Box<dyn Rewriter>,
    inspector: Inspector,
    timing: StreamTiming,
    tx: mpsc::Sender<Bytes>,
    mut tap: Option<UsageTap>,
) {
    let mut parser = SseParser::with_limit(timing.max_event_bytes);
    let mut items = Vec::new();
    let mut out = Vec::new();
    let mut keepalive = tokio::time::interval(timing.keepalive);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    keepalive.reset();
    loop {
        let frame = tokio::select! {
            f = tokio::time::timeout(timing.idle, upstream.frame()) => f,
            _ = keepalive.tick(), if rw.holding() => {
                let mut buf = Vec::new();
                rw.keepalive(&mut buf);
                if tx.send(Bytes::from(buf)).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let chunk = match frame {
            Err(_) => {
                let msg = format!(
                    "the upstream stream was silent for more than {} ms \
                     (proxy.stream_idle_timeout_ms)",
                    timing.idle.as_millis()
                );
                tracing::warn!("{msg}");
                out.push(rw.error_event(&msg));
                let _ = send(&tx, &mut out).await;
                return;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                tracing::warn!(error = %e, "the upstream stream broke off");
                out.push(rw.error_event(&format!("the upstream stream broke off: {e}")));
                let _ = send(&tx, &mut out).await;
                return;
            }
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(d) => d,
                Err(_) => continue,
            },
        };
        if let Err(e) = parser.feed(&chunk, &mut items) {
            tracing::warn!(error = %e, "unreadable upstream stream");
            out.push(rw.error_event(&format!("unreadable upstream stream: {e}")));
            let _ = send(&tx, &mut out).await;
            return;
        }
        for item in items.drain(..) {
            match item {
                SseItem::Comment(c) => {
                    if !send(&tx, &mut out).await {
                        return;
                    }
                    let mut buf = Vec::new();
                    encode_comment(&c, &mut buf);
                    if tx.send(Bytes::from(buf)).await.is_err() {
                        return;
                    }
                }
                SseItem::Event(e) => {
                    if let Some(t) = tap.as_mut() {
                        t.observe(&e);
                    }
                    let mut pending = rw.push(e, &mut out);
                    while let Some(p) = pending {
                        if !send(&tx, &mut out).await {
                            return;
                        }
                        let outcome = inspector.decide(p.event, &p.what).await;
                        pending = rw.resolve(outcome, &mut out);
                    }
                    if !send(&tx, &mut out).await {
                        return;
                    }
                }
            }
        }
    }
    let truncated = parser.has_pending();
    parser.finish(&mut items);
    rw.finish(&mut out);
    if truncated {
        // The upstream stopped inside an event: whatever it was is not
        // forwarded, and the client is told the stream is incomplete.
        tracing::warn!("the upstream stream ended inside an event");
        out.push(rw.error_event("the upstream stream ended inside an event"));
    }
    let _ = send(&tx, &mut out).await;
}
