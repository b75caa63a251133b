//! Counters behind `GET /metrics`, rendered in the Prometheus text
//! exposition format (version 0.0.4).
//!
//! Written by hand rather than with `prometheus-client`: the set is small
//! and fixed (a few counters, gauges and one histogram), the text format is
//! a handful of line shapes, and plain atomics keep the request path to a
//! few relaxed increments with no registry lookups. Labels are escaped per
//! the format (backslash, quote, newline).
//!
//! Extension point: another subsystem (e.g. a SQL side-store) adds its own
//! series by implementing [`MetricsSource`] and registering it with
//! [`Metrics::add_source`]; its text is appended to every scrape.

use crate::decision::Door;
use parallax_runtime::{Action, Stage};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds of the evaluation latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005,
    0.01, 0.1,
];

/// Series contributed by another subsystem.
pub trait MetricsSource: Send + Sync {
    /// Appends complete `# HELP`/`# TYPE` blocks and samples to `out`.
    fn render(&self, out: &mut String);
}

#[derive(Default)]
pub struct Metrics {
    /// Indexed by door, stage and action ([`decision_index`]).
    decisions: DecisionCounts,
    would_block: AtomicU64,
    evaluation_failures: AtomicU64,
    /// (rule id, stage) -> hits.
    rule_hits: Mutex<BTreeMap<(String, &'static str), u64>>,
    /// The evaluation-time histogram, one per front door (indexed by
    /// [`Door::index`]); the unlabelled series is their sum.
    latency: [Histogram; Door::ALL.len()],
    pub audit_queue_depth: AtomicU64,
    pub audit_lines_written: AtomicU64,
    pub audit_dropped: AtomicU64,
    pub audit_write_errors: AtomicU64,
    pub audit_rotations: AtomicU64,
    pub webhook_queue_depth: AtomicU64,
    pub webhook_sent: AtomicU64,
    pub webhook_dropped: AtomicU64,
    pub webhook_retries: AtomicU64,
    pub webhook_failed: AtomicU64,
    pub pagerduty_sent: AtomicU64,
    pub pagerduty_dropped: AtomicU64,
    pub pagerduty_failed: AtomicU64,
    pub telemetry_queue_depth: AtomicU64,
    pub telemetry_spans_exported: AtomicU64,
    pub telemetry_spans_dropped: AtomicU64,
    pub telemetry_spans_failed: AtomicU64,
    pub rejected_requests: AtomicU64,
    pub unauthorized: AtomicU64,
    pub reloads_ok: AtomicU64,
    /// Approval transitions: created, approved, denied, expired.
    pub approvals: [AtomicU64; 4],
    pub reloads_failed: AtomicU64,
    sources: Mutex<Vec<Arc<dyn MetricsSource>>>,
}

/// Upper bounds of the evaluation latency buckets, in seconds, in order
/// (the last bucket, `+Inf`, is implied).
pub fn latency_bounds() -> &'static [f64] {
    &LATENCY_BUCKETS
}

/// One evaluation-time histogram.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

/// A histogram read at one moment: per-bucket (not cumulative) counts
/// for the bounds of [`latency_bounds`], then the count past the last one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencySnapshot {
    pub buckets: Vec<u64>,
    pub over: u64,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Histogram {
    fn snapshot(&self) -> LatencySnapshot {
        let buckets: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let count = self.count.load(Relaxed);
        LatencySnapshot {
            over: count.saturating_sub(buckets.iter().sum()),
            buckets,
            count,
            sum_seconds: self.sum_ns.load(Relaxed) as f64 / 1e9,
        }
    }
}

impl LatencySnapshot {
    fn add(&mut self, other: &LatencySnapshot) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.over += other.over;
        self.count += other.count;
        self.sum_seconds += other.sum_seconds;
    }
}

/// The actions a decision can return, in the order metrics list them.
const ACTIONS: [Action; 5] = Action::ALL;

/// One counter per (door, stage, action).
const DECISION_SERIES: usize = Door::ALL.len() * Stage::ALL.len() * ACTIONS.len();

fn action_index(a: Action) -> usize {
    match a {
        Action::Allow => 0,
        Action::Detect => 1,
        Action::Redact => 2,
        Action::Approve => 3,
        Action::Block => 4,
    }
}

/// The decision counters (an array too long for a derived `Default`).
struct DecisionCounts([AtomicU64; DECISION_SERIES]);

impl Default for DecisionCounts {
    fn default() -> Self {
        DecisionCounts(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl std::ops::Index<usize> for DecisionCounts {
    type Output = AtomicU64;
    fn index(&self, i: usize) -> &AtomicU64 {
        &self.0[i]
    }
}

fn decision_index(door: Door, stage: Stage, action: Action) -> usize {
    (door.index() * Stage::ALL.len() + stage.index()) * ACTIONS.len() + action_index(action)
}

impl Metrics {
    pub fn new() -> Arc<Metrics> {
        Arc::new(Metrics::default())
    }

    pub fn add_source(&self, source: Arc<dyn MetricsSource>) {
        if let Ok(mut s) = self.sources.lock() {
            s.push(source);
        }
    }

    /// Records one decision.
    pub fn decision<'a>(
        &self,
        door: Door,
        stage: Stage,
        action: Action,
        would_block: bool,
        rules: impl Iterator<Item = &'a str>,
        elapsed: Duration,
    ) {
        self.decisions[decision_index(door, stage, action)].fetch_add(1, Relaxed);
        if would_block {
            self.would_block.fetch_add(1, Relaxed);
        }
        let mut rules = rules.peekable();
        if rules.peek().is_some() {
            if let Ok(mut hits) = self.rule_hits.lock() {
                for r in rules {
                    *hits.entry((r.to_string(), stage.as_str())).or_insert(0) += 1;
                }
            }
        }
        let secs = elapsed.as_secs_f64();
        let h = &self.latency[door.index()];
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| secs <= *b) {
            h.buckets[i].fetch_add(1, Relaxed);
        }
        h.count.fetch_add(1, Relaxed);
        h.sum_ns
            .fetch_add(elapsed.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }

    /// The evaluation-time histogram of each front door, as `/metrics`
    /// exports it (the dashboard's latency view reads this).
    pub fn latency_by_door(&self) -> Vec<(Door, LatencySnapshot)> {
        Door::ALL
            .iter()
            .map(|&d| (d, self.latency[d.index()].snapshot()))
            .collect()
    }

    /// Rule matches so far: (rule id, stage, count).
    pub fn rule_hits(&self) -> Vec<(String, &'static str, u64)> {
        self.rule_hits
            .lock()
            .map(|h| h.iter().map(|((r, s), n)| (r.clone(), *s, *n)).collect())
            .unwrap_or_default()
    }

    pub fn evaluation_failed(&self) {
        self.evaluation_failures.fetch_add(1, Relaxed);
    }

    /// Decisions that returned `action`, whatever the door and stage.
    pub fn decisions(&self, action: Action) -> u64 {
        Door::ALL
            .iter()
            .flat_map(|&d| {
                Stage::ALL
                    .iter()
                    .map(move |&s| decision_index(d, s, action))
            })
            .map(|i| self.decisions[i].load(Relaxed))
            .sum()
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        header(
            &mut out,
            "parallax_decisions_total",
            "counter",
            "Decisions returned, by front door, stage and action (series that are still 0 are left out).",
        );
        for door in Door::ALL {
            for stage in Stage::ALL {
                for action in ACTIONS {
                    let n = self.decisions[decision_index(door, stage, action)].load(Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "parallax_decisions_total{{door=\"{}\",stage=\"{}\",action=\"{}\"}} {n}",
                            door.as_str(),
                            stage.as_str(),
                            action.as_str(),
                        );
                    }
                }
            }
        }
        counter(
            &mut out,
            "parallax_would_block_total",
            "Decisions monitor mode kept from blocking.",
            self.would_block.load(Relaxed),
        );
        counter(
            &mut out,
            "parallax_evaluation_failures_total",
            "Evaluations that failed and were answered by fail_mode.",
            self.evaluation_failures.load(Relaxed),
        );
        header(
            &mut out,
            "parallax_rule_matches_total",
            "counter",
            "Rule matches, by rule id and stage.",
        );
        if let Ok(hits) = self.rule_hits.lock() {
            for ((rule, stage), n) in hits.iter() {
                let _ = writeln!(
                    out,
                    "parallax_rule_matches_total{{rule=\"{}\",stage=\"{}\"}} {n}",
                    escape(rule),
                    stage
                );
            }
        }
        header(
            &mut out,
            "parallax_evaluation_seconds",
            "histogram",
            "Time from parsed request to verdict.",
        );
        let by_door = self.latency_by_door();
        let mut total = LatencySnapshot::default();
        for (_, h) in &by_door {
            total.add(h);
        }
        histogram(&mut out, "parallax_evaluation_seconds", "", &total);
        header(
            &mut out,
            "parallax_door_evaluation_seconds",
            "histogram",
            "Time from parsed request to verdict, by front door (doors with no decision are left out).",
        );
        for (door, h) in by_door.iter().filter(|(_, h)| h.count > 0) {
            let label = format!("door=\"{}\",", door.as_str());
            histogram(&mut out, "parallax_door_evaluation_seconds", &label, h);
        }
        let gauges: [(&str, &str, &AtomicU64); 3] = [
            (
                "parallax_audit_queue_depth",
                "Audit lines waiting for the writer.",
                &self.audit_queue_depth,
            ),
            (
                "parallax_webhook_queue_depth",
                "Webhook notifications waiting to be sent.",
                &self.webhook_queue_depth,
            ),
            (
                "parallax_telemetry_queue_depth",
                "Decision spans waiting for the OTLP exporter.",
                &self.telemetry_queue_depth,
            ),
        ];
        for (name, help, v) in gauges {
            header(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {}", v.load(Relaxed));
        }
        let counters: [(&str, &str, &AtomicU64); 18] = [
            (
                "parallax_audit_lines_written_total",
                "Audit lines written to the log.",
                &self.audit_lines_written,
            ),
            (
                "parallax_audit_dropped_total",
                "Audit lines dropped because the queue was full.",
                &self.audit_dropped,
            ),
            (
                "parallax_audit_write_errors_total",
                "Failed writes, flushes or rotations of the audit log.",
                &self.audit_write_errors,
            ),
            (
                "parallax_audit_rotations_total",
                "Audit log rotations.",
                &self.audit_rotations,
            ),
            (
                "parallax_webhook_sent_total",
                "Webhook notifications delivered (2xx).",
                &self.webhook_sent,
            ),
            (
                "parallax_webhook_dropped_total",
                "Webhook notifications dropped because the queue was full.",
                &self.webhook_dropped,
            ),
            (
                "parallax_webhook_retries_total",
                "Webhook attempts retried after a transport error or 5xx.",
                &self.webhook_retries,
            ),
            (
                "parallax_webhook_failed_total",
                "Webhook notifications given up on.",
                &self.webhook_failed,
            ),
            (
                "parallax_pagerduty_sent_total",
                "PagerDuty events (trigger, resolve) accepted (2xx).",
                &self.pagerduty_sent,
            ),
            (
                "parallax_pagerduty_dropped_total",
                "PagerDuty events dropped because the queue was full.",
                &self.pagerduty_dropped,
            ),
            (
                "parallax_pagerduty_failed_total",
                "PagerDuty events given up on.",
                &self.pagerduty_failed,
            ),
            (
                "parallax_telemetry_spans_exported_total",
                "Decision spans the OTLP receiver accepted.",
                &self.telemetry_spans_exported,
            ),
            (
                "parallax_telemetry_spans_dropped_total",
                "Decision spans dropped because the export queue was full.",
                &self.telemetry_spans_dropped,
            ),
            (
                "parallax_telemetry_spans_failed_total",
                "Decision spans in export requests that failed.",
                &self.telemetry_spans_failed,
            ),
            (
                "parallax_rejected_requests_total",
                "Requests refused for a limit (size, depth, timeout, ...).",
                &self.rejected_requests,
            ),
            (
                "parallax_unauthorized_total",
                "Requests refused for a missing or wrong bearer token.",
                &self.unauthorized,
            ),
            (
                "parallax_reloads_total",
                "Successful rule reloads.",
                &self.reloads_ok,
            ),
            (
                "parallax_reload_failures_total",
                "Rule reloads that failed (the running rules were kept).",
                &self.reloads_failed,
            ),
        ];
        for (name, help, v) in counters {
            counter(&mut out, name, help, v.load(Relaxed));
        }
        header(
            &mut out,
            "parallax_approvals_total",
            "counter",
            "Approval transitions: created, approved, denied, expired.",
        );
        for (t, v) in ["created", "approved", "denied", "expired"]
            .iter()
            .zip(&self.approvals)
        {
            let _ = writeln!(
                out,
                "parallax_approvals_total{{transition=\"{t}\"}} {}",
                v.load(Relaxed)
            );
        }
        if let Ok(sources) = self.sources.lock() {
            for s in sources.iter() {
                s.render(&mut out);
            }
        }
        out
    }
}

/// The SQL side-store's series, appended to a scrape when there is a
/// store (`src/http/admin.rs` reads them from its handle): the rows in its
/// window (`None` when the store did not answer the count) and the events
/// it answered, or queued without a wait, and then could not record
/// ([`parallax_store::StoreHandle::lost_events`]).
pub fn render_sql_store(out: &mut String, rows: Option<u64>, lost_events: u64) {
    if let Some(rows) = rows {
        header(
            out,
            "parallax_sql_store_rows",
            "gauge",
            "Events in the SQL side-store's window.",
        );
        let _ = writeln!(out, "parallax_sql_store_rows {rows}");
    }
    counter(
        out,
        "parallax_sql_store_write_failures_total",
        "Events the SQL side-store answered (or queued without waiting) and then failed to record: missing from later windows.",
        lost_events,
    );
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A histogram's `_bucket`, `_sum` and `_count` samples; `label` is
/// empty or `name="value",`.
fn histogram(out: &mut String, name: &str, label: &str, h: &LatencySnapshot) {
    let mut cumulative = 0;
    for (b, n) in LATENCY_BUCKETS.iter().zip(&h.buckets) {
        cumulative += n;
        let _ = writeln!(out, "{name}_bucket{{{label}le=\"{b}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_bucket{{{label}le=\"+Inf\"}} {}", h.count);
    let braces = |l: &str| {
        if l.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", l.trim_end_matches(','))
        }
    };
    let _ = writeln!(out, "{name}_sum{} {}", braces(label), h.sum_seconds);
    let _ = writeln!(out, "{name}_count{} {}", braces(label), h.count);
}

fn counter(out: &mut String, name: &str, help: &str, v: u64) {
    header(out, name, "counter", help);
    let _ = writeln!(out, "{name} {v}");
}

/// A label value escaped for the text format (also for other subsystems'
/// series, through [`MetricsSource`]).
pub fn escape_label(v: &str) -> String {
    escape(v)
}

/// Label value escaping of the text format.
fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histogram_and_escaped_labels() {
        let m = Metrics::default();
        m.decision(
            Door::Http,
            Stage::ToolBefore,
            Action::Block,
            false,
            ["a\"b"].into_iter(),
            Duration::from_micros(30),
        );
        m.decision(
            Door::Eval,
            Stage::ToolAfter,
            Action::Allow,
            false,
            std::iter::empty(),
            Duration::from_secs(1),
        );
        let text = m.render();
        assert!(text.contains(
            "parallax_decisions_total{door=\"http\",stage=\"tool.before\",action=\"block\"} 1\n"
        ));
        assert!(text.contains(
            "parallax_decisions_total{door=\"eval\",stage=\"tool.after\",action=\"allow\"} 1\n"
        ));
        assert!(
            !text.contains("action=\"redact\""),
            "zero series are left out"
        );
        assert_eq!(m.decisions(Action::Block), 1);
        assert!(
            text.contains("parallax_rule_matches_total{rule=\"a\\\"b\",stage=\"tool.before\"} 1\n")
        );
        assert!(text.contains("parallax_evaluation_seconds_bucket{le=\"0.00005\"} 1\n"));
        assert!(text.contains("parallax_evaluation_seconds_bucket{le=\"0.1\"} 1\n"));
        assert!(text.contains("parallax_evaluation_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert!(text.contains("parallax_evaluation_seconds_count 2\n"));
        assert!(text
            .contains("parallax_door_evaluation_seconds_bucket{door=\"http\",le=\"0.00005\"} 1\n"));
        assert!(text.contains("parallax_door_evaluation_seconds_count{door=\"eval\"} 1\n"));
        assert!(!text.contains("door=\"mcp\",le"), "idle doors are left out");
        let http = &m.latency_by_door()[Door::Http.index()].1;
        assert_eq!((http.count, http.over), (1, 0));
        let eval = &m.latency_by_door()[Door::Eval.index()].1;
        assert_eq!(
            (eval.count, eval.over),
            (1, 1),
            "1 s is past the last bound"
        );
    }
}
