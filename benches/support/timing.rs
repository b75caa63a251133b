//! Latency distributions from our own timing loop.
//!
//! Criterion reports a robust mean per iteration; a budget on p99 needs the
//! tail of single evaluations, so each is timed alone here. The clock read
//! costs tens of nanoseconds, measured by [`timer_overhead`] and printed
//! beside the figures (not subtracted).

// Each bench includes only what it uses of this shared module.
#![allow(dead_code)]

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Percentiles of single-call latencies, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Dist {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub samples: usize,
}

impl Dist {
    pub fn from_sorted(ns: &[u64]) -> Dist {
        let at = |q: f64| {
            let i = ((ns.len() as f64 - 1.0) * q).round() as usize;
            ns[i] as f64
        };
        Dist {
            p50: at(0.50),
            p99: at(0.99),
            p999: at(0.999),
            samples: ns.len(),
        }
    }
}

/// Times `f` call by call for about `budget` (at least 1,000 calls, at most
/// 200,000) after a warm-up, and returns the distribution.
pub fn sample(budget: Duration, f: impl FnMut()) -> Dist {
    sample_min(budget, 1_000, f)
}

/// [`sample`] with at least `min` calls (for slow baselines).
pub fn sample_min(budget: Duration, min: usize, mut f: impl FnMut()) -> Dist {
    let warm = Instant::now();
    while warm.elapsed() < budget / 10 {
        f();
    }
    let mut ns = Vec::with_capacity(200_000);
    let started = Instant::now();
    while ns.len() < min || (started.elapsed() < budget && ns.len() < 200_000) {
        let t = Instant::now();
        f();
        ns.push(t.elapsed().as_nanos() as u64);
    }
    ns.sort_unstable();
    Dist::from_sorted(&ns)
}

/// Median cost of the clock read pair around an empty call.
pub fn timer_overhead() -> f64 {
    sample(Duration::from_millis(200), || black_box(())).p50
}

pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1_000_000.0 {
        format!("{:.2} ms", ns / 1_000_000.0)
    } else if ns >= 1_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else {
        format!("{ns:.0} ns")
    }
}
