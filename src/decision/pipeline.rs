//! Decisions that overlap, for synchronous callers with many events
//! (`parallax eval`): event N is handed to the side-store and the caller
//! goes on to evaluate N+1 while the store judges N, then finishes N once
//! its hits are in. [`DecisionService::decide`] is the same two halves run
//! back to back, so an overlapped decision and a waited-for one are made
//! by the same code.
//!
//! Overlapping changes nothing a verdict depends on, and only where that
//! is so ([`DecisionService::may_overlap`]):
//! - the store thread serves a session's events in the order they were
//!   sent, and the row of an event carries the action and rule ids the
//!   store itself computed (compiled verdict joined with its SQL hits), so
//!   a later event of the session reads the same rows however far ahead
//!   the caller ran. Across sessions the store takes turns
//!   (`parallax_store` `Turns`), which reorders them: that is why only
//!   rules that all read their own session (`SqlRouting::session_keyed`)
//!   may overlap;
//! - finishing a decision writes in-process state a later one reads only
//!   through the approvals database (pending approvals, the
//!   known-recipients memory); without one nothing a finish writes is read
//!   by the next evaluation, so it may come later;
//! - the caller finishes decisions in the order it began them, so reports,
//!   the audit log and metrics come out in input order.

use super::{DecisionService, Origin, Pending, StoreFailure};
use parallax_runtime::{Event, Report};
use parallax_store::{PendingHits, Route, SqlHit};
use std::time::Instant;

/// A decision begun ([`DecisionService::submit`]) and not yet finished.
pub struct InFlight {
    pending: Pending,
    hits: Hits,
    started: Instant,
}

/// What the side-store owes the decision.
enum Hits {
    /// Nothing: no store, or the event was only queued to be recorded.
    None,
    /// The hits of a judged event, still to come.
    Waiting(PendingHits),
    /// The event could not be handed to the store.
    Failed(StoreFailure),
}

impl InFlight {
    /// Whether [`DecisionService::complete`] can finish it without waiting.
    pub fn is_ready(&self) -> bool {
        match &self.hits {
            Hits::Waiting(h) => h.is_ready(),
            Hits::None | Hits::Failed(_) => true,
        }
    }
}

impl DecisionService {
    /// Whether decisions may overlap ([`DecisionService::submit`] of the
    /// next before [`DecisionService::complete`] of this one) without
    /// changing any verdict: see the module's doc.
    pub fn may_overlap(&self) -> bool {
        self.approvals.is_none()
            && (self.store.load().is_none() || self.current.load().sql.session_keyed())
    }

    /// The first half of [`DecisionService::decide`]: the compiled
    /// evaluators, then the event handed to the side-store without waiting
    /// for its hits. `started` is when the caller had the event.
    pub fn submit(&self, event: Event, origin: &Origin, started: Instant) -> InFlight {
        let mut pending = self.begin(event, origin);
        let hits = match (self.store.load_full(), pending.request.take()) {
            (Some(store), Some(req)) if pending.route == Route::Judge => {
                match store.submit_blocking(req) {
                    Ok(h) => Hits::Waiting(h),
                    Err(e) => Hits::Failed(("sql_store", e.to_string())),
                }
            }
            (Some(store), Some(req)) => {
                if let Err(e) = store.record_blocking(req) {
                    tracing::error!(error = %e, "cannot queue an event for the side-store");
                }
                Hits::None
            }
            _ => Hits::None,
        };
        InFlight {
            pending,
            hits,
            started,
        }
    }

    /// The second half: waits for the side-store's hits when they are not
    /// in yet, then the report and its record.
    pub fn complete(&self, decision: InFlight, origin: &Origin) -> Report {
        let InFlight {
            pending,
            hits,
            started,
        } = decision;
        let hits: Option<Result<Vec<SqlHit>, StoreFailure>> = match hits {
            Hits::None => None,
            Hits::Waiting(h) => Some(h.wait().map_err(|e| ("sql_store", e.to_string()))),
            Hits::Failed(f) => Some(Err(f)),
        };
        self.finish(pending, hits, origin, started)
    }
}
