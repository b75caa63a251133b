//! A time limit an evaluation checks as it goes.
//!
//! The engine cannot be interrupted from outside: a thread running a scan
//! runs it to its end. So the caller that wants a bound (the decision
//! service's `server.eval_timeout_ms`) puts an instant in the scratch, and
//! the engine looks at the clock between fields, between values, between
//! verifiers and every few matches of a long match walk. Once the instant
//! passed, the evaluation stops where it is and says so
//! ([`crate::Scratch::timed_out`]); the caller answers with its fail_mode
//! and the thread is free again, instead of finishing a result nobody
//! reads.
//!
//! Every single pass is linear in its input, so the gaps between checks
//! are bounded by the size of one value times the cost of one pass.

use std::cell::Cell;
use std::time::Instant;

/// When an evaluation must stop, and whether it did.
#[derive(Debug, Default, Clone)]
pub struct Deadline {
    at: Option<Instant>,
    /// Latched: once seen past, no further clock read is needed.
    passed: Cell<bool>,
}

impl Deadline {
    /// No limit: [`Deadline::passed`] is always false and reads no clock.
    pub fn none() -> Deadline {
        Deadline::default()
    }

    /// Stop at `at`.
    pub fn at(at: Instant) -> Deadline {
        Deadline {
            at: Some(at),
            passed: Cell::new(false),
        }
    }

    /// Whether the limit has passed (reads the clock when there is one).
    #[inline]
    pub fn passed(&self) -> bool {
        if self.passed.get() {
            return true;
        }
        match self.at {
            Some(at) if Instant::now() >= at => {
                self.passed.set(true);
                true
            }
            _ => false,
        }
    }

    /// Whether a check found the limit passed (no clock read).
    pub fn was_passed(&self) -> bool {
        self.passed.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn none_never_passes_and_a_past_instant_latches() {
        let d = Deadline::none();
        assert!(!d.passed() && !d.was_passed());
        let d = Deadline::at(Instant::now());
        assert!(!d.was_passed());
        assert!(d.passed() && d.was_passed());
        let d = Deadline::at(Instant::now() + Duration::from_secs(3600));
        assert!(!d.passed());
    }
}
