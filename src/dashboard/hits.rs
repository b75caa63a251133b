//! Rule hits over a window: the counts `/metrics` exports
//! (`parallax_rule_matches_total`) are totals since start, so the dashboard
//! samples them every [`SAMPLE_EVERY`] and answers "how many in the last
//! hour" as the difference between now and the sample an hour old.
//!
//! With `store.postgres`, each replica also adds the hits between its
//! samples to the fleet's history in the database from the moment it
//! starts, and the windows are computed from the fleet's sum: the chart
//! and the counts are the whole fleet's (up to one sample, ten seconds,
//! behind for the other replicas); `total` is then the fleet's over the
//! history kept (a day).
//!
//! The sampler starts with the dashboard's first data request and keeps a
//! day of samples; each holds only the rules that have fired, so its size
//! follows the rules that fire, not the size of the rule set. A window
//! reaching back past the first sample starts at the first sample, and the
//! answer says so (`from`).

use crate::approvals::store::postgres::PostgresStore;
use crate::metrics::Metrics;
use parallax_runtime::{Engine, Program};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the totals are sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The longest window (and how much history is kept).
pub const MAX_WINDOW_SECS: u64 = 86_400;
/// The window when the page names none.
pub const DEFAULT_WINDOW_SECS: u64 = 3_600;
/// How many rules the answer marks as firing most.
const TOP: usize = 5;

/// Hit totals at one moment: rule id → matches since start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sample {
    /// Seconds since the Unix epoch.
    pub at: f64,
    pub hits: BTreeMap<String, u64>,
}

impl Sample {
    /// The totals `metrics` holds now, summed over stages.
    pub fn take(metrics: &Metrics) -> Sample {
        let mut hits = BTreeMap::new();
        for (rule, _stage, n) in metrics.rule_hits() {
            *hits.entry(rule).or_insert(0) += n;
        }
        Sample { at: now(), hits }
    }

    fn total(&self) -> u64 {
        self.hits.values().sum()
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The samples, and the sampler that takes them.
#[derive(Default)]
pub struct History {
    started: AtomicBool,
    samples: Mutex<VecDeque<Sample>>,
    metrics: Mutex<Option<Arc<Metrics>>>,
    /// The fleet's store, and the last sample whose hits were added to it.
    fleet: Mutex<Option<(Arc<PostgresStore>, Sample)>>,
}

impl History {
    /// Starts sampling `metrics` (once; later calls do nothing). The task
    /// ends when the dashboard is dropped (the server stopped).
    pub fn start(self: &Arc<Self>, metrics: Arc<Metrics>) {
        if self.started.swap(true, Relaxed) {
            return;
        }
        self.push(Sample::take(&metrics));
        if let Ok(mut m) = self.metrics.lock() {
            *m = Some(metrics.clone());
        }
        let weak: Weak<History> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(history) = weak.upgrade() else {
                    return;
                };
                let sample = Sample::take(&metrics);
                history.publish(&sample);
                history.push(sample);
            }
        });
    }

    /// Starts sampling at once and adding each sample's new hits to the
    /// fleet's history in `store`.
    pub fn start_fleet(self: &Arc<Self>, metrics: Arc<Metrics>, store: Arc<PostgresStore>) {
        if let Ok(mut f) = self.fleet.lock() {
            if f.is_none() {
                *f = Some((store, Sample::take(&metrics)));
            }
        }
        self.start(metrics);
    }

    /// Adds the hits since the last published sample to the fleet's
    /// history.
    fn publish(&self, sample: &Sample) {
        let Ok(mut guard) = self.fleet.lock() else {
            return;
        };
        let Some((store, last)) = guard.as_mut() else {
            return;
        };
        let delta: Vec<(String, i64)> = sample
            .hits
            .iter()
            .filter_map(|(rule, n)| {
                let d = n.saturating_sub(last.hits.get(rule).copied().unwrap_or(0));
                (d > 0).then(|| (rule.clone(), d.min(i64::MAX as u64) as i64))
            })
            .collect();
        store.record_hits(sample.at.round(), delta);
        *last = sample.clone();
    }

    /// The fleet's samples (cumulative from the oldest kept) and its
    /// current totals (the last sample plus this replica's hits since it),
    /// when a fleet store is set and answers.
    fn fleet_samples(&self, current: &Sample) -> Option<Result<(Vec<Sample>, Sample), String>> {
        let (store, last) = self.fleet.lock().ok()?.clone()?;
        let since = current.at - (MAX_WINDOW_SECS + 2 * SAMPLE_EVERY.as_secs()) as f64;
        let rows = match store.hits_since(since) {
            Ok(rows) => rows,
            Err(e) => return Some(Err(e.to_string())),
        };
        // Rows come ordered by time: each time's sample is the running
        // total once its last row is in (taken when the next time starts,
        // and after the last row).
        let mut samples: Vec<Sample> = Vec::new();
        let mut running: BTreeMap<String, u64> = BTreeMap::new();
        let mut open: Option<f64> = None;
        for (at, rule, n) in rows {
            if open != Some(at) {
                match open {
                    Some(t) => samples.push(Sample {
                        at: t,
                        hits: running.clone(),
                    }),
                    // The history's start: nothing counted yet.
                    None => samples.push(Sample {
                        at: at - SAMPLE_EVERY.as_secs_f64(),
                        hits: BTreeMap::new(),
                    }),
                }
                open = Some(at);
            }
            *running.entry(rule).or_insert(0) += n;
        }
        if let Some(t) = open {
            samples.push(Sample {
                at: t,
                hits: running.clone(),
            });
        }
        let mut now = Sample {
            at: current.at,
            hits: running,
        };
        for (rule, n) in &current.hits {
            let unpublished = n.saturating_sub(last.hits.get(rule).copied().unwrap_or(0));
            if unpublished > 0 {
                *now.hits.entry(rule.clone()).or_insert(0) += unpublished;
            }
        }
        Some(Ok((samples, now)))
    }

    fn push(&self, sample: Sample) {
        if let Ok(mut s) = self.samples.lock() {
            let keep_after = sample.at - (MAX_WINDOW_SECS + 2 * SAMPLE_EVERY.as_secs()) as f64;
            while s.front().is_some_and(|f| f.at < keep_after) {
                s.pop_front();
            }
            s.push_back(sample);
        }
    }

    /// Hits per rule and category over the last `window` seconds.
    pub fn report(&self, engine: &Engine, window: u64) -> Value {
        let current = match self.metrics.lock().ok().and_then(|m| m.clone()) {
            Some(m) => Sample::take(&m),
            None => Sample {
                at: now(),
                ..Sample::default()
            },
        };
        match self.fleet_samples(&current) {
            Some(Ok((samples, now))) => {
                let mut r = window_report(engine.program(), &samples, &now, window);
                r["fleet"] = json!(true);
                return r;
            }
            Some(Err(e)) => {
                // The database is away: this replica's own counts, saying so.
                let mut r = self.local_report(engine, &current, window);
                r["fleet"] = json!(false);
                r["fleet_error"] = json!(e);
                return r;
            }
            None => {}
        }
        self.local_report(engine, &current, window)
    }

    fn local_report(&self, engine: &Engine, current: &Sample, window: u64) -> Value {
        let samples: Vec<Sample> = self
            .samples
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        window_report(engine.program(), &samples, current, window)
    }
}

/// `?window=SECONDS` (60 to a day; an hour when absent).
pub fn window_param(query: Option<&str>) -> Result<u64, String> {
    for pair in query.unwrap_or("").split('&') {
        if let Some(v) = pair.strip_prefix("window=") {
            return match v.parse::<u64>() {
                Ok(n) => Ok(n.clamp(60, MAX_WINDOW_SECS)),
                Err(_) => Err(format!(
                    "`window` is a number of seconds (60 to {MAX_WINDOW_SECS}), not `{v}`"
                )),
            };
        }
    }
    Ok(DEFAULT_WINDOW_SECS)
}

/// The answer for `window` seconds ending at `current`, from `samples`
/// (oldest first).
pub fn window_report(
    program: &Program,
    samples: &[Sample],
    current: &Sample,
    window: u64,
) -> Value {
    let start = current.at - window as f64;
    let baseline = samples
        .iter()
        .rev()
        .find(|s| s.at <= start)
        .or_else(|| samples.first())
        .cloned()
        .unwrap_or_else(|| Sample {
            at: current.at,
            hits: current.hits.clone(),
        });
    let since = |id: &str| {
        let now = current.hits.get(id).copied().unwrap_or(0);
        now.saturating_sub(baseline.hits.get(id).copied().unwrap_or(0))
    };
    let mut rules: Vec<Value> = Vec::with_capacity(program.rules.len());
    let mut categories: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    for r in &program.rules {
        let hits = since(&r.id);
        let total = current.hits.get(&r.id).copied().unwrap_or(0);
        let category = r.category.clone().unwrap_or_else(|| "uncategorised".into());
        let c = categories.entry(category.clone()).or_insert((0, 0));
        c.0 += hits;
        c.1 += 1;
        let engine = program
            .evaluators
            .get(r.evaluator as usize)
            .map(|e| e.engine.as_str())
            .unwrap_or("?");
        rules.push(json!({
            "id": r.id,
            "title": r.title,
            "category": category,
            "action": r.action,
            "engine": engine,
            "hits": hits,
            "total": total,
            "never_fired": total == 0,
        }));
    }
    // Most hits first; ties by id, so the order is stable.
    rules.sort_by(|a, b| {
        b["hits"]
            .as_u64()
            .cmp(&a["hits"].as_u64())
            .then_with(|| a["id"].as_str().cmp(&b["id"].as_str()))
    });
    for r in rules.iter_mut().take(TOP) {
        if r["hits"].as_u64().unwrap_or(0) > 0 {
            r["top"] = json!(true);
        }
    }
    // The chart: hits between consecutive samples in the window, then up
    // to now.
    let mut points: Vec<&Sample> = samples.iter().filter(|s| s.at >= baseline.at).collect();
    if points.is_empty() {
        points.push(&baseline);
    }
    points.push(current);
    let times: Vec<f64> = points.iter().map(|s| s.at.round()).collect();
    let per_interval: Vec<u64> = std::iter::once(0)
        .chain(
            points
                .windows(2)
                .map(|w| w[1].total().saturating_sub(w[0].total())),
        )
        .collect();
    let categories: Vec<Value> = categories
        .into_iter()
        .map(|(c, (hits, n))| json!({"category": c, "hits": hits, "rules": n}))
        .collect();
    json!({
        "window_seconds": window,
        "from": baseline.at.round(),
        "to": current.at.round(),
        "complete": baseline.at <= start,
        "rules": rules,
        "categories": categories,
        "series": {"t": times, "hits": per_interval},
        "never_fired": program.rules.iter().filter(|r| !current.hits.contains_key(&r.id)).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: f64, hits: &[(&str, u64)]) -> Sample {
        Sample {
            at,
            hits: hits.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn a_window_is_the_difference_from_the_sample_that_old() {
        let program = crate::backend::baked::program().expect("the baked program");
        let rm = "dangerous-rm-rf-root";
        let samples = [
            sample(1000.0, &[(rm, 2)]),
            sample(1010.0, &[(rm, 5)]),
            sample(1020.0, &[(rm, 9)]),
        ];
        let now = sample(1075.0, &[(rm, 12)]);
        // 60 s back from 1075 is 1015: the latest sample at or before it is 1010.
        let r = window_report(&program, &samples, &now, 60);
        assert_eq!(r["from"], 1010.0);
        assert_eq!(r["complete"], true);
        let first = &r["rules"][0];
        assert_eq!(first["id"], rm, "the rule firing most comes first");
        assert_eq!(
            (first["hits"].as_u64(), first["total"].as_u64()),
            (Some(7), Some(12))
        );
        assert_eq!(first["top"], true);
        assert_eq!(r["series"]["t"], json!([1010.0, 1020.0, 1075.0]));
        assert_eq!(r["series"]["hits"], json!([0, 4, 3]));
        let quiet = r["rules"]
            .as_array()
            .and_then(|a| a.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(quiet["never_fired"], true);
        assert!(quiet.get("top").is_none());
        let cat = r["categories"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["category"] == "dangerous_commands"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(cat["hits"], 7);
        assert_eq!(
            r["never_fired"].as_u64(),
            Some(program.rules.len() as u64 - 1)
        );
    }

    #[test]
    fn a_window_older_than_the_history_starts_at_the_first_sample() {
        let program = crate::backend::baked::program().expect("the baked program");
        let samples = [sample(1000.0, &[("dangerous-mkfs", 1)])];
        let now = sample(1100.0, &[("dangerous-mkfs", 4)]);
        let r = window_report(&program, &samples, &now, 3600);
        assert_eq!(
            (r["from"].as_f64(), r["complete"].as_bool()),
            (Some(1000.0), Some(false))
        );
        assert_eq!(r["rules"][0]["hits"], 3);
    }

    #[test]
    fn the_window_parameter() {
        assert_eq!(window_param(None), Ok(DEFAULT_WINDOW_SECS));
        assert_eq!(window_param(Some("window=300")), Ok(300));
        assert_eq!(window_param(Some("x=1&window=5")), Ok(60));
        assert_eq!(window_param(Some("window=999999")), Ok(MAX_WINDOW_SECS));
        let e = window_param(Some("window=an-hour")).unwrap_err();
        assert!(e.contains("`an-hour`"), "{e}");
    }
}
