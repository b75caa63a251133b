//! The store's clock. Windows are measured on it, never on the client's
//! timestamp, so an agent cannot move its own events out of a window.
//! Tests inject a [`ManualClock`] to drive a session through minutes of time
//! in milliseconds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync + 'static {
    /// Epoch seconds.
    fn now(&self) -> f64;
}

/// The server's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(at: f64) -> ManualClock {
        ManualClock(Arc::new(AtomicU64::new(at.to_bits())))
    }

    pub fn set(&self, at: f64) {
        self.0.store(at.to_bits(), Ordering::SeqCst);
    }

    pub fn advance(&self, seconds: f64) {
        self.set(self.now() + seconds);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
}
