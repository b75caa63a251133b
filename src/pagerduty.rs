//! Paging on PagerDuty (`reporting.pagerduty`, Events API v2).
//!
//! A verdict named in `on` (by default `block` and `approve`) triggers one
//! event per deciding rule of at least `min_priority` (and in `rules`, when
//! given). Its `dedup_key` is derived from the session and the rule, so a
//! session that keeps tripping one rule is one incident, not a page per
//! call. When a held call's approval is decided (approved, denied or
//! expired), its rules' incidents for that session are resolved.
//!
//! What is sent is the rule, its reason, the stage, the tool's name and the
//! session: never the event's text (which may hold the very secret a rule
//! caught). Sending is a background task behind a bounded queue with the
//! webhooks' retrying POST: a decision never waits for PagerDuty, and a
//! full queue drops (counted in `parallax_pagerduty_dropped_total`).

use crate::approvals::{Approval, Status};
use crate::metrics::Metrics;
use crate::settings::{PagerDutySettings, ReportingSettings};
use crate::webhook::{self, OutboundClient, Queue, RetryPolicy, Submitted, WebhookError};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Uri};
use parallax_runtime::{Action, Event, Priority, Report};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// The incident of `rule` in `session`: the same key for every call of
/// that session the rule decides (hashed, so the key does not carry the
/// session id to PagerDuty).
pub fn dedup_key(session: Option<&str>, rule: &str) -> String {
    let mut h = Sha256::new();
    h.update(session.unwrap_or("-").as_bytes());
    h.update([0]);
    h.update(rule.as_bytes());
    let hex: String = h
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("parallax-{hex}")
}

/// PagerDuty's severities for Parallax's priorities.
fn severity(p: Priority) -> &'static str {
    match p {
        Priority::Critical => "critical",
        Priority::High => "error",
        Priority::Medium => "warning",
        Priority::Low => "info",
    }
}

fn rule_selected(s: &PagerDutySettings, rule: &str) -> bool {
    s.rules.is_empty()
        || s.rules.iter().any(|r| match r.strip_suffix('*') {
            Some(prefix) => rule.starts_with(prefix),
            None => r == rule,
        })
}

/// The pager: one per server.
pub struct PagerDuty {
    queue: Queue<Value>,
    settings: PagerDutySettings,
    metrics: Arc<Metrics>,
}

impl PagerDuty {
    /// Starts the sender on the current tokio runtime; `None` when
    /// `reporting.pagerduty` is not set.
    pub fn start(
        settings: &ReportingSettings,
        metrics: Arc<Metrics>,
    ) -> Result<Option<Arc<PagerDuty>>, WebhookError> {
        let Some(pd) = &settings.pagerduty else {
            return Ok(None);
        };
        let sender = Arc::new(Sender {
            uri: webhook::parse_url(&pd.events_url)?,
            client: webhook::outbound_client()?,
            policy: RetryPolicy {
                timeout: Duration::from_millis(pd.timeout_ms),
                retries: pd.retries,
            },
            metrics: metrics.clone(),
        });
        let queue = Queue::start(pd.queue_size, move |body| {
            let sender = sender.clone();
            async move { sender.send(body).await }
        });
        Ok(Some(Arc::new(PagerDuty {
            queue,
            settings: pd.clone(),
            metrics,
        })))
    }

    /// Pages for a decision whose action is in `on`: one trigger per
    /// deciding rule that qualifies.
    pub fn on_decision(&self, event: &Event, report: &Report) {
        if !self.settings.on.contains(&report.action) {
            return;
        }
        let approval = report
            .approval
            .as_ref()
            .and_then(|a| a["id"].as_str())
            .map(str::to_string);
        for r in &report.results {
            // The rules that made the verdict what it is.
            if r.monitor || r.action != report.action {
                continue;
            }
            if r.priority < self.settings.min_priority || !rule_selected(&self.settings, &r.rule_id)
            {
                continue;
            }
            let tool = event.tool_name.as_deref().unwrap_or("-");
            let verb = if r.action == Action::Approve {
                "held for approval"
            } else {
                "blocked"
            };
            let summary = format!("Parallax {verb}: {} ({}) on {tool}", r.rule_id, r.reason);
            self.submit(json!({
                "routing_key": self.settings.routing_key,
                "event_action": "trigger",
                "dedup_key": dedup_key(event.session_id.as_deref(), &r.rule_id),
                "payload": {
                    "summary": truncate(&summary, 1024),
                    "source": "parallax",
                    "severity": severity(r.priority),
                    "component": tool,
                    "group": event.stage.as_str(),
                    "class": r.action.as_str(),
                    "custom_details": {
                        "rule_id": r.rule_id,
                        "title": r.title,
                        "reason": r.reason,
                        "action": r.action.as_str(),
                        "priority": r.priority.as_str(),
                        "stage": event.stage.as_str(),
                        "tool_name": event.tool_name,
                        "session_id": event.session_id,
                        "approval_id": approval,
                    },
                },
            }));
        }
    }

    /// Resolves the incidents of a decided approval (one per rule).
    pub fn on_approval(&self, a: &Approval) {
        if a.status == Status::Pending {
            return;
        }
        for rule in &a.rule_ids {
            self.submit(json!({
                "routing_key": self.settings.routing_key,
                "event_action": "resolve",
                "dedup_key": dedup_key(a.session_id.as_deref(), rule),
            }));
        }
    }

    fn submit(&self, body: Value) {
        match self.queue.submit(body) {
            Submitted::Queued | Submitted::Closed => {}
            Submitted::Full => {
                let n = self.metrics.pagerduty_dropped.fetch_add(1, Relaxed) + 1;
                if n == 1 || n.is_multiple_of(1000) {
                    tracing::warn!(
                        dropped_total = n,
                        "PagerDuty event dropped: queue full (reporting.pagerduty.queue_size)"
                    );
                }
            }
        }
    }

    /// Stops accepting events and waits (bounded) for queued ones.
    pub async fn close(&self) {
        self.queue.close("pagerduty").await;
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => s[..cut].to_string(),
        None => s.to_string(),
    }
}

struct Sender {
    uri: Uri,
    client: OutboundClient,
    policy: RetryPolicy,
    metrics: Arc<Metrics>,
}

impl Sender {
    async fn send(&self, body: Value) {
        let bytes = Bytes::from(body.to_string());
        let make = || {
            let mut req = Request::new(Full::new(bytes.clone()));
            *req.method_mut() = Method::POST;
            *req.uri_mut() = self.uri.clone();
            req.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            Some(req)
        };
        match webhook::post_with_retries(&self.client, make, self.policy, || {}).await {
            Ok(_) => {
                self.metrics.pagerduty_sent.fetch_add(1, Relaxed);
            }
            Err(why) => {
                self.metrics.pagerduty_failed.fetch_add(1, Relaxed);
                // The routing key is in the body, never in the log.
                tracing::warn!(url = %self.uri, %why, "PagerDuty event not delivered");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_incident_per_session_and_rule() {
        let a = dedup_key(Some("s-1"), "rule-a");
        assert_eq!(a, dedup_key(Some("s-1"), "rule-a"));
        assert_ne!(a, dedup_key(Some("s-2"), "rule-a"));
        assert_ne!(a, dedup_key(Some("s-1"), "rule-b"));
        assert!(!a.contains("s-1"));
        let s = PagerDutySettings {
            rules: vec!["sql-*".into(), "exact".into()],
            ..PagerDutySettings::default()
        };
        assert!(rule_selected(&s, "sql-lockout") && rule_selected(&s, "exact"));
        assert!(!rule_selected(&s, "exactly") && !rule_selected(&s, "other"));
    }
}
