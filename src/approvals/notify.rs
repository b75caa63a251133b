//! Telling approvers: a generic signed webhook and a Slack card.
//!
//! Every transition ([`super::Approvals`] calls [`Notifiers::notify`]) is
//! queued for each configured notifier, one bounded queue and one
//! background task each ([`crate::webhook::Queue`]), so deciding or
//! evaluating never waits for a receiver; deliveries are retried with
//! backoff ([`crate::webhook::post_with_retries`]), over http or https.
//!
//! - **Webhook** (`approvals.webhook_url`): a JSON POST per transition,
//!   signed like `reporting:`'s webhook (`X-Parallax-Signature: sha256=`
//!   HMAC over `<timestamp>.<body>` with `approvals.webhook_secret`). The
//!   `created` notification carries callback URLs, `POST
//!   {public_url}/approvals/{id}/callback?decision=approve&approver=alice&token=…`,
//!   the token an HMAC (keyed from the webhook secret) over the id, the
//!   decision, the approver and the approval's deadline: it cannot be
//!   forged or moved to another approval, and it works once, since an
//!   approval is decided once.
//! - **Slack** (`approvals.slack`): a Block Kit card with Approve / Deny
//!   buttons (`chat.postMessage`) on `created`; any later transition, a
//!   click or not, updates it (`chat.update`) with the outcome. The clicks
//!   come back through `POST /slack/interactions` (`crate::http::slack`).
//!   Where a card was posted is kept with the approval in the database, so
//!   it is still updated after a restart.
//!
//! An approval goes to the notifiers its rules name (`approval.via`, a
//! policy's `via:`), or to every configured one when they name none;
//! `via: console` alone tells nobody (the approval is decided through the
//! API or the dashboard). `parallax_approval_notifications_total{notifier,
//! outcome}` counts what was sent, what failed after its retries and what
//! a full queue dropped.

use super::{rfc3339, ticket, Approval, ApprovalBackend, Status};
use crate::metrics::MetricsSource;
use crate::settings::ApprovalsSettings;
use crate::webhook::{self, OutboundClient, Queue, RetryPolicy, Submitted};
use bytes::Bytes;
use hmac::{Hmac, Mac};
use http_body_util::Full;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, Uri};
use serde_json::{json, Value};
use sha2::Sha256;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The Slack buttons' `action_id`s.
pub const SLACK_APPROVE: &str = "parallax_approve";
pub const SLACK_DENY: &str = "parallax_deny";

/// Who decides through a callback when the rule names no approver.
pub const WEBHOOK_APPROVER: &str = "webhook";

/// One transition to tell the notifiers of.
#[derive(Clone)]
struct Notice {
    approval: Approval,
    transition: String,
}

/// A posted Slack card: where it is, to update it.
#[derive(Debug, Clone)]
struct Card {
    channel: String,
    ts: String,
}

/// The notifiers, in the order of [`Counts`]' rows.
const NOTIFIERS: [&str; 2] = ["webhook", "slack"];
/// What became of a notification, in the order of [`Counts`]' columns.
const OUTCOMES: [&str; 3] = ["sent", "failed", "dropped"];

/// Notifications by notifier and outcome, exported on `/metrics`.
#[derive(Default)]
pub struct Counts([[AtomicU64; 3]; 2]);

impl Counts {
    fn add(&self, notifier: usize, outcome: usize) {
        self.0[notifier][outcome].fetch_add(1, Relaxed);
    }
}

impl MetricsSource for Counts {
    fn render(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(
            out,
            "# HELP parallax_approval_notifications_total Approval notifications by notifier: \
             sent, failed after their retries, dropped by a full queue."
        );
        let _ = writeln!(out, "# TYPE parallax_approval_notifications_total counter");
        for (n, name) in NOTIFIERS.iter().enumerate() {
            for (o, outcome) in OUTCOMES.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "parallax_approval_notifications_total{{notifier=\"{name}\",outcome=\"{outcome}\"}} {}",
                    self.0[n][o].load(Relaxed)
                );
            }
        }
    }
}

/// Whether approval `a` is to be sent to `notifier`.
fn routed_to(a: &Approval, notifier: &str) -> bool {
    a.via.is_empty() || a.via.iter().any(|v| v == notifier)
}

struct Shared {
    settings: ApprovalsSettings,
    /// The approvals database, where a posted card's location is kept.
    store: Arc<dyn ApprovalBackend>,
    counts: Arc<Counts>,
    client: OutboundClient,
    /// The address the server listens on: the callbacks' base unless
    /// `approvals.public_url` says otherwise.
    local_url: OnceLock<String>,
    /// Posted cards by approval id, as cached here; the database has them
    /// too (`slack_channel`, `slack_ts`), for after a restart.
    cards: Mutex<HashMap<String, Card>>,
}

pub struct Notifiers {
    webhook: Option<Queue<Notice>>,
    slack: Option<Queue<Notice>>,
    shared: Arc<Shared>,
}

impl Notifiers {
    /// The notifiers `settings` configure, started on the current tokio
    /// runtime; `None` when none is configured, or there is no runtime (a
    /// one-shot command: nothing to notify from), or the TLS client cannot
    /// be set up (logged: approvals still work, by polling).
    pub fn start(
        settings: &ApprovalsSettings,
        store: Arc<dyn ApprovalBackend>,
        counts: Arc<Counts>,
    ) -> Option<Notifiers> {
        let webhook_on = settings.webhook_url.is_some();
        let slack_on = settings.slack.configured();
        if !webhook_on && !slack_on {
            return None;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::debug!("no async runtime: approval notifiers not started");
            return None;
        }
        let client = match webhook::outbound_client() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "approval notifiers not started");
                return None;
            }
        };
        let shared = Arc::new(Shared {
            settings: settings.clone(),
            client,
            store,
            counts,
            local_url: OnceLock::new(),
            cards: Mutex::new(HashMap::new()),
        });
        let size = settings.notify_queue_size;
        let webhook = webhook_on.then(|| {
            let s = shared.clone();
            Queue::start(size, move |n: Notice| {
                let s = s.clone();
                async move { s.send_webhook(&n).await }
            })
        });
        let slack = slack_on.then(|| {
            let s = shared.clone();
            Queue::start(size, move |n: Notice| {
                let s = s.clone();
                async move { s.send_slack(&n).await }
            })
        });
        Some(Notifiers {
            webhook,
            slack,
            shared,
        })
    }

    /// Queues `what` (created, approved, denied, expired) of `a` for each
    /// notifier it is routed to; dropped with a warning when a queue is
    /// full.
    pub fn notify(&self, a: &Approval, what: &str) {
        for (i, (name, q)) in [("webhook", &self.webhook), ("slack", &self.slack)]
            .into_iter()
            .enumerate()
        {
            let Some(q) = q else { continue };
            if !routed_to(a, name) {
                continue;
            }
            let notice = Notice {
                approval: a.clone(),
                transition: what.to_string(),
            };
            if q.submit(notice) == Submitted::Full {
                self.shared.counts.add(i, 2);
                tracing::warn!(
                    id = %a.id, notifier = name, transition = what,
                    "approval notification dropped: queue full (approvals.notify_queue_size)"
                );
            }
        }
    }

    /// The address the server listens on (the callbacks' default base).
    pub fn set_local_addr(&self, addr: SocketAddr) {
        let _ = self.shared.local_url.set(format!("http://{addr}"));
    }

    /// Where the Slack card of approval `id` is (from a click on it).
    pub fn remember_card(&self, id: &str, channel: &str, ts: &str) {
        self.shared.keep_card(id, channel, ts);
        if let Ok(mut cards) = self.shared.cards.lock() {
            cards.insert(
                id.to_string(),
                Card {
                    channel: channel.to_string(),
                    ts: ts.to_string(),
                },
            );
        }
    }

    /// Stops accepting notifications and waits (bounded) for queued ones.
    pub async fn close(&self) {
        if let Some(q) = &self.webhook {
            q.close("approvals webhook").await;
        }
        if let Some(q) = &self.slack {
            q.close("approvals Slack").await;
        }
    }
}

// ---------------------------------------------------------------------------
// Callback tokens
// ---------------------------------------------------------------------------

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return [0; 32];
    };
    for p in parts {
        mac.update(p);
        mac.update(b"\n");
    }
    mac.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The callback tokens' key: derived from `approvals.webhook_secret` (so
/// a token is no webhook signature, nor the reverse); `None` without one.
fn callback_key(settings: &ApprovalsSettings) -> Option<[u8; 32]> {
    let secret = settings.webhook_secret.as_deref()?;
    Some(hmac(
        secret.as_bytes(),
        &[b"parallax approval callback token v1"],
    ))
}

/// The token of a callback that makes `approver` `decision` (approve or
/// deny) approval `a`; `None` without `approvals.webhook_secret`.
pub fn callback_token(
    settings: &ApprovalsSettings,
    a: &Approval,
    decision: &str,
    approver: &str,
) -> Option<String> {
    let key = callback_key(settings)?;
    let expires_ms = format!("{}", (a.expires_at * 1000.0).round() as i64);
    Some(hex(&hmac(
        &key,
        &[
            a.id.as_bytes(),
            decision.as_bytes(),
            approver.as_bytes(),
            expires_ms.as_bytes(),
        ],
    )))
}

/// Whether `token` is the callback token for these (constant time).
pub fn callback_token_ok(
    settings: &ApprovalsSettings,
    a: &Approval,
    decision: &str,
    approver: &str,
    token: &str,
) -> bool {
    callback_token(settings, a, decision, approver)
        .is_some_and(|want| bool::from(want.as_bytes().ct_eq(token.as_bytes())))
}

/// Percent-encodes a query value (approver names are free text).
fn query_value(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

// ---------------------------------------------------------------------------
// The webhook
// ---------------------------------------------------------------------------

impl Shared {
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            timeout: Duration::from_millis(self.settings.notify_timeout_ms),
            retries: self.settings.notify_retries,
        }
    }

    fn base_url(&self) -> String {
        self.settings
            .public_url
            .clone()
            .or_else(|| self.local_url.get().cloned())
            .unwrap_or_else(|| "http://127.0.0.1:9920".into())
            .trim_end_matches('/')
            .to_string()
    }

    /// The approve / deny URLs, one pair per approver who may decide (the
    /// rule's, or [`WEBHOOK_APPROVER`] when it names none).
    fn callbacks(&self, a: &Approval) -> Vec<Value> {
        let base = self.base_url();
        let who: Vec<String> = if a.approvers.is_empty() {
            vec![WEBHOOK_APPROVER.to_string()]
        } else {
            a.approvers.clone()
        };
        let url = |decision: &str, approver: &str| {
            callback_token(&self.settings, a, decision, approver).map(|t| {
                format!(
                    "{base}/approvals/{}/callback?decision={decision}&approver={}&token={t}",
                    a.id,
                    query_value(approver)
                )
            })
        };
        who.iter()
            .map(|w| json!({"approver": w, "approve": url("approve", w), "deny": url("deny", w)}))
            .collect()
    }

    fn webhook_body(&self, n: &Notice) -> Value {
        let a = &n.approval;
        let mut body = json!({
            "kind": "approval",
            "transition": n.transition,
            "approval": ticket(a),
            "event": a.event,
            "session_id": a.session_id,
        });
        if a.status == Status::Pending {
            let callbacks = self.callbacks(a);
            body["approve_url"] = callbacks[0]["approve"].clone();
            body["deny_url"] = callbacks[0]["deny"].clone();
            body["callbacks"] = Value::Array(callbacks);
        }
        body
    }

    async fn send_webhook(&self, n: &Notice) {
        let Some(url) = &self.settings.webhook_url else {
            return;
        };
        let uri = match webhook::parse_url(url) {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(error = %e, "approvals.webhook_url");
                return;
            }
        };
        let body = Bytes::from(self.webhook_body(n).to_string());
        let secret = self.settings.webhook_secret.as_deref();
        let make = || Some(webhook::signed_post(&uri, secret, body.clone()));
        match webhook::post_with_retries(&self.client, make, self.policy(), || {}).await {
            Ok(_) => self.counts.add(0, 0),
            Err(why) => {
                self.counts.add(0, 1);
                tracing::warn!(id = %n.approval.id, transition = %n.transition, %why,
                    "approval webhook notification not delivered");
            }
        }
    }

    /// Writes where approval `id`'s card is to the database (logged when
    /// it cannot: the in-memory copy still serves until a restart).
    fn keep_card(&self, id: &str, channel: &str, ts: &str) {
        if let Err(e) = self.store.set_slack_card(id, channel, ts) {
            tracing::warn!(%id, error = %e, "where the approval's Slack card is was not saved");
        }
    }

    // -----------------------------------------------------------------------
    // Slack
    // -----------------------------------------------------------------------

    /// Calls Slack's Web API `method` with `body`; its answer when `ok`.
    async fn slack_call(&self, method: &str, body: &Value) -> Result<Value, String> {
        let slack = &self.settings.slack;
        let token = slack.bot_token.as_deref().unwrap_or_default();
        let url = format!("{}/{method}", slack.api_base.trim_end_matches('/'));
        let uri: Uri = url.parse().map_err(|e| format!("`{url}`: {e}"))?;
        let auth = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "approvals.slack.bot_token is not a valid header value".to_string())?;
        let bytes = Bytes::from(body.to_string());
        let make = || {
            let mut req = Request::new(Full::new(bytes.clone()));
            *req.method_mut() = Method::POST;
            *req.uri_mut() = uri.clone();
            let h = req.headers_mut();
            h.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=utf-8"),
            );
            h.insert(AUTHORIZATION, auth.clone());
            Some(req)
        };
        let answer = webhook::post_with_retries(&self.client, make, self.policy(), || {}).await?;
        let v: Value = serde_json::from_slice(&answer)
            .map_err(|e| format!("Slack's answer is not JSON: {e}"))?;
        if v["ok"] == true {
            Ok(v)
        } else {
            Err(format!(
                "Slack said {}",
                v["error"].as_str().unwrap_or("not ok")
            ))
        }
    }

    async fn send_slack(&self, n: &Notice) {
        let a = &n.approval;
        if n.transition == "created" && a.status == Status::Pending {
            let channel = self.settings.slack.channel.clone().unwrap_or_default();
            let mut body = card(a);
            body["channel"] = json!(channel);
            match self.slack_call("chat.postMessage", &body).await {
                Ok(v) => {
                    self.counts.add(1, 0);
                    let card = Card {
                        channel: v["channel"].as_str().unwrap_or(&channel).to_string(),
                        ts: v["ts"].as_str().unwrap_or_default().to_string(),
                    };
                    self.keep_card(&a.id, &card.channel, &card.ts);
                    if let Ok(mut cards) = self.cards.lock() {
                        cards.insert(a.id.clone(), card);
                    }
                }
                Err(why) => {
                    self.counts.add(1, 1);
                    tracing::warn!(id = %a.id, %why, "approval Slack card not posted");
                }
            }
            return;
        }
        let cached = self.cards.lock().ok().and_then(|mut c| c.remove(&a.id));
        let saved = a
            .slack_card
            .clone()
            .map(|(channel, ts)| Card { channel, ts });
        let Some(at) = cached.or(saved) else {
            return;
        };
        let mut body = outcome_card(a);
        body["channel"] = json!(at.channel);
        body["ts"] = json!(at.ts);
        match self.slack_call("chat.update", &body).await {
            Ok(_) => self.counts.add(1, 0),
            Err(why) => {
                self.counts.add(1, 1);
                tracing::warn!(id = %a.id, %why, "approval Slack card not updated");
            }
        }
    }
}

/// Slack's `<`, `>` and `&` escaping, and at most `max` characters.
fn text(s: &str, max: usize) -> String {
    let escaped = webhook::slack::escape(s);
    if escaped.chars().count() <= max {
        escaped
    } else {
        let mut t: String = escaped.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// What the card says of the approval, buttons aside.
fn summary(a: &Approval) -> Vec<Value> {
    let tool = a.event["tool_name"].as_str().unwrap_or("-");
    let rule = a.rule_ids.first().map(String::as_str).unwrap_or("-");
    let approvers = if a.approvers.is_empty() {
        "any approver".to_string()
    } else {
        a.approvers.join(", ")
    };
    let event = serde_json::to_string_pretty(&a.event).unwrap_or_default();
    vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "text": format!(
            "*{}*\nRule `{}` · tool `{}` · session `{}`\nApprovers: {} · expires {} (then {})",
            text(&a.reason, 500),
            text(rule, 200),
            text(tool, 200),
            text(a.session_id.as_deref().unwrap_or("-"), 200),
            text(&approvers, 300),
            rfc3339(a.expires_at),
            serde_json::to_value(a.on_timeout).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
        )}}),
        json!({"type": "section", "text": {"type": "mrkdwn",
            "text": format!("```{}```", text(&event, 2500).replace("```", "'''"))}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn",
            "text": format!("Parallax approval `{}`", a.id)}]}),
    ]
}

/// The `chat.postMessage` body (without `channel`) of a pending approval.
pub fn card(a: &Approval) -> Value {
    let mut blocks =
        vec![json!({"type": "header", "text": {"type": "plain_text", "text": "Approval needed"}})];
    blocks.extend(summary(a));
    blocks.push(json!({
        "type": "actions",
        "block_id": "parallax_approval",
        "elements": [
            {"type": "button", "action_id": SLACK_APPROVE, "value": a.id, "style": "primary",
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": SLACK_DENY, "value": a.id, "style": "danger",
             "text": {"type": "plain_text", "text": "Deny"}},
        ],
    }));
    json!({
        "text": format!("Approval needed: {} ({})", text(&a.reason, 200), a.id),
        "blocks": blocks,
    })
}

/// The `chat.update` body (without `channel`, `ts`): the outcome, no
/// buttons.
pub fn outcome_card(a: &Approval) -> Value {
    let head = match a.status {
        Status::Approved => format!("Approved by {}", a.decided_by.as_deref().unwrap_or("?")),
        Status::Denied => format!("Denied by {}", a.decided_by.as_deref().unwrap_or("?")),
        Status::Expired => format!(
            "Expired without a decision: {}",
            if a.outcome.as_deref() == Some("allow") {
                "allowed"
            } else {
                "denied"
            }
        ),
        Status::Pending => "Approval needed".to_string(),
    };
    let mut blocks =
        vec![json!({"type": "header", "text": {"type": "plain_text", "text": text(&head, 140)}})];
    blocks.extend(summary(a));
    if let Some(c) = &a.comment {
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn",
            "text": format!("Comment: {}", text(c, 1000))}]}));
    }
    json!({
        "text": format!("{head}: {} ({})", text(&a.reason, 200), a.id),
        "blocks": blocks,
    })
}
