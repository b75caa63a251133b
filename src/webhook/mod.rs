//! Alerts to `reporting.webhook_url`: a background task behind a bounded
//! queue, so `/evaluate` never waits for the receiver.
//!
//! Each notification is retried with exponential backoff on transport
//! errors, per-attempt timeouts and 5xx answers (a 4xx is the receiver
//! refusing it: retrying would not help). Bodies are signed (see [`sign`]).
//!
//! Only `http://` URLs are supported: this build carries no TLS client, and
//! an `https://` URL is rejected at start-up rather than failing later.

pub mod sign;
pub mod slack;

use crate::audit::{record, AuditEntry};
use crate::metrics::Metrics;
use crate::settings::{ReportingSettings, WebhookFormat};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Delay before the first retry; doubled each time, capped at [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long shutdown waits for queued notifications.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("reporting.webhook_url `{0}` is not a valid URL: {1}")]
    BadUrl(String, String),
    #[error(
        "reporting.webhook_url `{0}`: only http:// URLs are supported by this build \
         (no TLS client is compiled in); put a local TLS-terminating relay in front"
    )]
    Https(String),
}

/// Checks a webhook URL the way [`Webhook::start`] will.
pub fn parse_url(url: &str) -> Result<Uri, WebhookError> {
    let uri: Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| {
        WebhookError::BadUrl(url.into(), e.to_string())
    })?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(uri),
        Some("https") => Err(WebhookError::Https(url.into())),
        _ => Err(WebhookError::BadUrl(
            url.into(),
            "expected http://host[:port]/path".into(),
        )),
    }
}

pub struct Webhook {
    tx: Mutex<Option<mpsc::Sender<AuditEntry>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    settings: ReportingSettings,
    metrics: Arc<Metrics>,
}

impl Webhook {
    /// Starts the sender task on the current tokio runtime.
    pub fn start(
        settings: &ReportingSettings,
        metrics: Arc<Metrics>,
    ) -> Result<Option<Webhook>, WebhookError> {
        let Some(url) = &settings.webhook_url else {
            return Ok(None);
        };
        let uri = parse_url(url)?;
        let (tx, rx) = mpsc::channel(settings.webhook_queue_size.max(1));
        let sender = Sender {
            uri,
            client: Client::builder(TokioExecutor::new()).build_http(),
            settings: settings.clone(),
            metrics: metrics.clone(),
        };
        let task = tokio::spawn(sender.run(rx));
        Ok(Some(Webhook {
            tx: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
            settings: settings.clone(),
            metrics,
        }))
    }

    /// Whether a verdict of this action is sent.
    pub fn wants(&self, action: parallax_runtime::Action) -> bool {
        self.settings.webhook_events.contains(&action)
    }

    /// Queues a notification; drops (counted, warned) when the queue is full.
    pub fn submit(&self, entry: AuditEntry) {
        let tx = self.tx.lock().ok().and_then(|t| t.clone());
        let Some(tx) = tx else { return };
        self.metrics.webhook_queue_depth.fetch_add(1, Relaxed);
        if tx.try_send(entry).is_err() {
            self.metrics.webhook_queue_depth.fetch_sub(1, Relaxed);
            let n = self.metrics.webhook_dropped.fetch_add(1, Relaxed) + 1;
            if n == 1 || n.is_multiple_of(1000) {
                tracing::warn!(
                    dropped_total = n,
                    "webhook notification dropped: queue full (reporting.webhook_queue_size)"
                );
            }
        }
    }

    /// Stops accepting notifications and waits (bounded) for queued ones.
    pub async fn close(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            if tokio::time::timeout(DRAIN_TIMEOUT, task).await.is_err() {
                tracing::warn!("webhook queue not drained within {DRAIN_TIMEOUT:?}; giving up");
            }
        }
    }
}

struct Sender {
    uri: Uri,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    settings: ReportingSettings,
    metrics: Arc<Metrics>,
}

enum Attempt {
    Delivered,
    Retry(String),
    GiveUp(String),
}

impl Sender {
    async fn run(self, mut rx: mpsc::Receiver<AuditEntry>) {
        while let Some(entry) = rx.recv().await {
            self.metrics.webhook_queue_depth.fetch_sub(1, Relaxed);
            let record = record::build(&entry);
            let body = match self.settings.webhook_format {
                WebhookFormat::Json => record.to_string(),
                WebhookFormat::Slack => slack::message(&record).to_string(),
            };
            self.deliver(Bytes::from(body)).await;
        }
    }

    async fn deliver(&self, body: Bytes) {
        let timeout = Duration::from_millis(self.settings.webhook_timeout_ms.max(1));
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0;
        loop {
            let outcome = match tokio::time::timeout(timeout, self.attempt(body.clone())).await {
                Ok(o) => o,
                Err(_) => Attempt::Retry(format!("no answer within {timeout:?}")),
            };
            match outcome {
                Attempt::Delivered => {
                    self.metrics.webhook_sent.fetch_add(1, Relaxed);
                    return;
                }
                Attempt::Retry(why) if attempt < self.settings.webhook_retries => {
                    tracing::debug!(attempt, %why, "webhook attempt failed; retrying");
                    self.metrics.webhook_retries.fetch_add(1, Relaxed);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    attempt += 1;
                }
                Attempt::Retry(why) | Attempt::GiveUp(why) => {
                    self.metrics.webhook_failed.fetch_add(1, Relaxed);
                    tracing::warn!(url = %self.uri, attempts = attempt + 1, %why, "webhook notification not delivered");
                    return;
                }
            }
        }
    }

    async fn attempt(&self, body: Bytes) -> Attempt {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut req = Request::new(Full::new(body.clone()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(sign::TIMESTAMP_HEADER, HeaderValue::from(now));
        if let Some(secret) = &self.settings.webhook_secret {
            let sig = sign::signature(secret.as_bytes(), now, &body);
            if let Ok(v) = HeaderValue::from_str(&sig) {
                h.insert(sign::SIGNATURE_HEADER, v);
            }
        }
        match self.client.request(req).await {
            Err(e) => Attempt::Retry(format!("transport error: {e}")),
            Ok(resp) => {
                let status = resp.status();
                // Read the answer so the connection can be reused.
                let _ = resp.into_body().collect().await;
                if status.is_success() {
                    Attempt::Delivered
                } else if status.is_server_error() {
                    Attempt::Retry(format!("status {status}"))
                } else {
                    Attempt::GiveUp(format!("status {status}"))
                }
            }
        }
    }
}
