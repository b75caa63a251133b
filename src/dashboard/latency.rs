//! Percentiles from the evaluation-time histogram `/metrics` exports, so
//! the dashboard shows the very figures a Prometheus scrape sees.
//!
//! A histogram only knows which bucket a value fell in, so a percentile is
//! the upper bound of the bucket where the cumulative count reaches it (the
//! same estimate as Prometheus's `histogram_quantile` at a bucket edge,
//! without interpolation: an upper bound, never an optimistic guess).

use crate::metrics::{latency_bounds, LatencySnapshot};
use serde_json::{json, Value};

/// The `q` quantile (0 < q ≤ 1) in seconds: the upper bound of the first
/// bucket whose cumulative count reaches `q` of the total. `None` with no
/// observations; `f64::INFINITY` when it lies past the last bound.
pub fn quantile(h: &LatencySnapshot, bounds: &[f64], q: f64) -> Option<f64> {
    if h.count == 0 {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * h.count as f64).ceil().max(1.0) as u64;
    let mut cumulative = 0;
    for (n, bound) in h.buckets.iter().zip(bounds) {
        cumulative += n;
        if cumulative >= rank {
            return Some(*bound);
        }
    }
    Some(f64::INFINITY)
}

/// One door's latency as the page shows it: count, mean, p50/p90/p99 (in
/// milliseconds; `null` when nothing was observed, the string `"+Inf"` past
/// the last bucket) and the buckets themselves.
pub fn view(h: &LatencySnapshot) -> Value {
    let bounds = latency_bounds();
    let ms = |q: f64| match quantile(h, bounds, q) {
        None => Value::Null,
        Some(s) if s.is_infinite() => json!("+Inf"),
        Some(s) => json!(s * 1000.0),
    };
    let mean = (h.count > 0).then(|| h.sum_seconds * 1000.0 / h.count as f64);
    let buckets: Vec<Value> = bounds
        .iter()
        .zip(&h.buckets)
        .map(|(b, n)| json!({"le_ms": b * 1000.0, "count": n}))
        .chain(std::iter::once(json!({"le_ms": "+Inf", "count": h.over})))
        .collect();
    json!({
        "count": h.count,
        "mean_ms": mean,
        "p50_ms": ms(0.5),
        "p90_ms": ms(0.9),
        "p99_ms": ms(0.99),
        "buckets": buckets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(buckets: &[u64], over: u64) -> LatencySnapshot {
        LatencySnapshot {
            buckets: buckets.to_vec(),
            over,
            count: buckets.iter().sum::<u64>() + over,
            sum_seconds: 0.0,
        }
    }

    #[test]
    fn a_quantile_is_the_bound_of_the_bucket_that_reaches_it() {
        let bounds = [0.001, 0.01, 0.1];
        // 90 fast, 9 medium, 1 slow.
        let h = snapshot(&[90, 9, 1], 0);
        assert_eq!(quantile(&h, &bounds, 0.5), Some(0.001));
        assert_eq!(
            quantile(&h, &bounds, 0.9),
            Some(0.001),
            "rank 90 is the 90th fast one"
        );
        assert_eq!(quantile(&h, &bounds, 0.91), Some(0.01));
        assert_eq!(quantile(&h, &bounds, 0.99), Some(0.01));
        assert_eq!(quantile(&h, &bounds, 1.0), Some(0.1));
    }

    #[test]
    fn empty_and_overflowing_histograms() {
        let bounds = [0.001, 0.01];
        assert_eq!(quantile(&snapshot(&[0, 0], 0), &bounds, 0.5), None);
        let slow = snapshot(&[1, 0], 3);
        assert_eq!(quantile(&slow, &bounds, 0.25), Some(0.001));
        assert_eq!(quantile(&slow, &bounds, 0.5), Some(f64::INFINITY));
        let v = view(&LatencySnapshot::default());
        assert_eq!(v["count"], 0);
        assert!(v["p99_ms"].is_null() && v["mean_ms"].is_null());
    }

    #[test]
    fn the_view_has_every_bucket_of_the_metrics_histogram() {
        let n = latency_bounds().len();
        let mut buckets = vec![0; n];
        buckets[0] = 4;
        let mut h = snapshot(&buckets, 0);
        h.sum_seconds = 0.000_02;
        let v = view(&h);
        assert_eq!(v["buckets"].as_array().map(Vec::len), Some(n + 1));
        assert_eq!(v["p50_ms"], json!(latency_bounds()[0] * 1000.0));
        let mean = v["mean_ms"].as_f64().unwrap_or(f64::NAN);
        assert!((mean - 0.005).abs() < 1e-12, "{mean}");
    }
}
