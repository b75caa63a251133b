//! The live decision feed: every finished decision, offered to whoever is
//! watching (the dashboard's stream, `GET /ui/api/stream`).
//!
//! Why a bounded broadcast and a viewer count of its own:
//! - evaluation must never wait for a viewer, so the channel is a
//!   fixed-size ring (`tokio::sync::broadcast`): a viewer that falls behind
//!   loses the oldest entries, and each lost entry is counted
//!   (`parallax_feed_lagged_total` in `/metrics`);
//! - with nobody watching the feed must cost nothing, so the decision
//!   service asks [`Feed::has_viewers`] — one relaxed atomic load, cheaper
//!   than the channel's own `receiver_count()`, which takes a lock — before
//!   it builds an entry at all.
//!
//! An entry is the audit log's own [`AuditEntry`]: the viewer's side turns
//! it into JSON with the audit's builder, so a streamed event is masked
//! exactly as the audit line is, by the same code, off the request path.

use crate::audit::AuditEntry;
use crate::metrics::MetricsSource;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Entries a viewer may fall behind by before it loses the oldest.
pub const FEED_CAPACITY: usize = 1024;

/// One published decision: its place in the feed and the audit entry.
#[derive(Clone)]
pub struct FeedItem {
    /// 1, 2, 3, ... in publishing order (a viewer sees gaps as losses).
    pub seq: u64,
    pub entry: Arc<AuditEntry>,
}

/// The broadcast of finished decisions.
pub struct Feed {
    tx: broadcast::Sender<FeedItem>,
    viewers: AtomicUsize,
    seq: AtomicU64,
    lagged: AtomicU64,
    published: AtomicU64,
}

/// A viewer's end of the feed; dropping it stops the publishing cost once
/// it was the last one.
pub struct Subscription {
    feed: Arc<Feed>,
    rx: broadcast::Receiver<FeedItem>,
}

/// What a viewer gets next.
pub enum Next {
    Item(FeedItem),
    /// The viewer fell behind and lost this many of the oldest entries.
    Lost(u64),
    /// The feed is gone (the server is stopping).
    Closed,
}

impl Default for Feed {
    fn default() -> Self {
        Feed::with_capacity(FEED_CAPACITY)
    }
}

impl Feed {
    pub fn with_capacity(capacity: usize) -> Feed {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Feed {
            tx,
            viewers: AtomicUsize::new(0),
            seq: AtomicU64::new(0),
            lagged: AtomicU64::new(0),
            published: AtomicU64::new(0),
        }
    }

    /// Whether anyone is watching: checked before an entry is built.
    #[inline]
    pub fn has_viewers(&self) -> bool {
        self.viewers.load(Relaxed) > 0
    }

    /// Offers `entry` to every viewer; never waits.
    pub fn publish(&self, entry: AuditEntry) {
        let seq = self.seq.fetch_add(1, Relaxed) + 1;
        let item = FeedItem {
            seq,
            entry: Arc::new(entry),
        };
        // An error means the last viewer left meanwhile: nothing to do.
        if self.tx.send(item).is_ok() {
            self.published.fetch_add(1, Relaxed);
        }
    }

    /// A new viewer, which sees decisions published from now on.
    pub fn subscribe(self: &Arc<Self>) -> Subscription {
        let rx = self.tx.subscribe();
        self.viewers.fetch_add(1, Relaxed);
        Subscription {
            feed: self.clone(),
            rx,
        }
    }

    /// Viewers connected now.
    pub fn viewers(&self) -> usize {
        self.viewers.load(Relaxed)
    }

    /// Entries lost by slow viewers, all viewers together.
    pub fn lagged(&self) -> u64 {
        self.lagged.load(Relaxed)
    }

    /// Entries published to at least one viewer.
    pub fn published(&self) -> u64 {
        self.published.load(Relaxed)
    }
}

impl Subscription {
    /// The next decision, or how many were lost since the last one.
    pub async fn next(&mut self) -> Next {
        match self.rx.recv().await {
            Ok(item) => Next::Item(item),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                self.feed.lagged.fetch_add(n, Relaxed);
                Next::Lost(n)
            }
            Err(broadcast::error::RecvError::Closed) => Next::Closed,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.feed.viewers.fetch_sub(1, Relaxed);
    }
}

impl MetricsSource for Feed {
    fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP parallax_feed_viewers Live-decision viewers connected (dashboard streams).\n\
             # TYPE parallax_feed_viewers gauge\n\
             parallax_feed_viewers {}\n\
             # HELP parallax_feed_published_total Decisions offered to live viewers.\n\
             # TYPE parallax_feed_published_total counter\n\
             parallax_feed_published_total {}\n\
             # HELP parallax_feed_lagged_total Live-feed entries slow viewers lost (the oldest are dropped, evaluation never waits).\n\
             # TYPE parallax_feed_lagged_total counter\n\
             parallax_feed_lagged_total {}",
            self.viewers(),
            self.published(),
            self.lagged()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Door, Origin};
    use parallax_runtime::{Event, Report};
    use std::time::{Duration, SystemTime};

    fn entry() -> AuditEntry {
        let engine = crate::backend::baked::engine().expect("the baked engine");
        let event = Event::from_value(serde_json::json!({
            "stage": "tool.before", "tool_name": "exec", "tool_args": {"command": "ls"}
        }))
        .expect("an event");
        AuditEntry {
            engine: Arc::new(engine),
            event,
            origin: Origin::door(Door::Library),
            report: Report::failed(
                parallax_runtime::EvaluationFailure {
                    kind: "internal".into(),
                    message: "test".into(),
                    fail_mode: parallax_runtime::FailMode::Closed,
                },
                false,
                Duration::ZERO,
            ),
            at: SystemTime::now(),
        }
    }

    #[tokio::test]
    async fn viewers_are_counted_and_a_slow_one_loses_the_oldest() {
        let feed = Arc::new(Feed::with_capacity(4));
        assert!(!feed.has_viewers());
        let mut sub = feed.subscribe();
        assert!(feed.has_viewers());
        let e = entry();
        for _ in 0..10 {
            feed.publish(AuditEntry {
                engine: e.engine.clone(),
                event: e.event.clone(),
                origin: e.origin.clone(),
                report: e.report.clone(),
                at: e.at,
            });
        }
        match sub.next().await {
            Next::Lost(n) => assert_eq!(n, 6),
            _ => panic!("a viewer 10 behind on a ring of 4 has lost 6"),
        }
        match sub.next().await {
            Next::Item(i) => assert_eq!(i.seq, 7, "the newest four are kept"),
            _ => panic!("an entry after the loss"),
        }
        assert_eq!(feed.lagged(), 6);
        let mut text = String::new();
        feed.render(&mut text);
        assert!(text.contains("parallax_feed_lagged_total 6\n"), "{text}");
        assert!(text.contains("parallax_feed_viewers 1\n"), "{text}");
        drop(sub);
        assert!(
            !feed.has_viewers(),
            "the last viewer gone, publishing stops"
        );
    }
}
