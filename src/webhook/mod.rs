//! Alerts to `reporting.webhook_url`: a background task behind a bounded
//! queue, so `/evaluate` never waits for the receiver.
//!
//! Each notification is retried with exponential backoff on transport
//! errors, per-attempt timeouts and 5xx (or 429) answers (any other 4xx is
//! the receiver refusing it: retrying would not help). Bodies are signed
//! (see [`sign`]).
//!
//! `https://` and `http://` URLs both work: the client is the proxy's
//! rustls connector ([`crate::proxy::upstream::https_connector`]). The
//! queue ([`Queue`]) and the retrying POST ([`post_with_retries`]) are
//! shared with the approvals' notifiers (`crate::approvals::notify`).

pub mod sign;
pub mod slack;

use crate::audit::{record, AuditEntry};
use crate::metrics::Metrics;
use crate::settings::{ReportingSettings, WebhookFormat};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
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
    #[error("`{0}` is not a valid URL: {1}")]
    BadUrl(String, String),
    #[error("cannot set up the TLS client: {0}")]
    Tls(String),
}

/// Checks a webhook URL the way [`Webhook::start`] will.
pub fn parse_url(url: &str) -> Result<Uri, WebhookError> {
    let uri: Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| {
        WebhookError::BadUrl(url.into(), e.to_string())
    })?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.host().is_some() => Ok(uri),
        _ => Err(WebhookError::BadUrl(
            url.into(),
            "expected https://host[:port]/path or http://host[:port]/path".into(),
        )),
    }
}

/// The outbound client of the webhooks and Slack: pooled, over the proxy's
/// rustls connector.
pub type OutboundClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Time to open a connection (TCP and TLS) to a webhook receiver.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A new [`OutboundClient`].
pub fn outbound_client() -> Result<OutboundClient, WebhookError> {
    let https = crate::proxy::upstream::https_connector(CONNECT_TIMEOUT)
        .map_err(|e| WebhookError::Tls(e.to_string()))?;
    Ok(Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .build(https))
}

/// How hard [`post_with_retries`] tries.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Time one attempt may take (to the whole answer).
    pub timeout: Duration,
    /// Retries after the first failed attempt.
    pub retries: u32,
}

/// The largest answer body read (Slack's answers are small JSON).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

enum Attempt {
    Delivered(Bytes),
    Retry(String),
    GiveUp(String),
}

/// Sends the request `make` builds (afresh for each attempt, so it can sign
/// with the current time) until it is answered with a 2xx, retrying with
/// exponential backoff on transport errors, timeouts, 5xx and 429; the
/// answer's body, or why it was not delivered. `on_retry` is called before
/// each retry (for metrics).
pub async fn post_with_retries(
    client: &OutboundClient,
    make: impl Fn() -> Option<Request<Full<Bytes>>>,
    policy: RetryPolicy,
    mut on_retry: impl FnMut(),
) -> Result<Bytes, String> {
    let timeout = policy.timeout.max(Duration::from_millis(1));
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 0;
    loop {
        let Some(req) = make() else {
            return Err("the request could not be built".into());
        };
        let outcome = match tokio::time::timeout(timeout, attempt_once(client, req)).await {
            Ok(o) => o,
            Err(_) => Attempt::Retry(format!("no answer within {timeout:?}")),
        };
        match outcome {
            Attempt::Delivered(body) => return Ok(body),
            Attempt::Retry(why) if attempt < policy.retries => {
                tracing::debug!(attempt, %why, "outbound attempt failed; retrying");
                on_retry();
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                attempt += 1;
            }
            Attempt::Retry(why) | Attempt::GiveUp(why) => {
                return Err(format!("{why} (after {} attempts)", attempt + 1))
            }
        }
    }
}

async fn attempt_once(client: &OutboundClient, req: Request<Full<Bytes>>) -> Attempt {
    match client.request(req).await {
        Err(e) => Attempt::Retry(format!("transport error: {e}")),
        Ok(resp) => {
            let status = resp.status();
            // Read the answer so the connection can be reused.
            let body = Limited::new(resp.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if status.is_success() {
                Attempt::Delivered(body)
            } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
                Attempt::Retry(format!("status {status}"))
            } else {
                Attempt::GiveUp(format!("status {status}"))
            }
        }
    }
}

/// What [`Queue::submit`] did with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    Queued,
    /// The queue is full: the item is dropped.
    Full,
    /// The queue is closed (shutting down): the item is dropped.
    Closed,
}

/// A bounded queue in front of one background task, which handles the
/// items one at a time, in order. Submitting never waits.
pub struct Queue<T> {
    tx: Mutex<Option<mpsc::Sender<T>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl<T: Send + 'static> Queue<T> {
    /// Starts the task on the current tokio runtime.
    pub fn start<F, Fut>(size: usize, mut handle: F) -> Queue<T>
    where
        F: FnMut(T) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (tx, mut rx) = mpsc::channel::<T>(size.max(1));
        let task = tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                handle(item).await;
            }
        });
        Queue {
            tx: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
        }
    }

    pub fn submit(&self, item: T) -> Submitted {
        let tx = self.tx.lock().ok().and_then(|t| t.clone());
        let Some(tx) = tx else {
            return Submitted::Closed;
        };
        match tx.try_send(item) {
            Ok(()) => Submitted::Queued,
            Err(mpsc::error::TrySendError::Full(_)) => Submitted::Full,
            Err(mpsc::error::TrySendError::Closed(_)) => Submitted::Closed,
        }
    }

    /// Stops accepting items and waits (bounded) for the queued ones.
    pub async fn close(&self, what: &str) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            if tokio::time::timeout(DRAIN_TIMEOUT, task).await.is_err() {
                tracing::warn!("{what} queue not drained within {DRAIN_TIMEOUT:?}; giving up");
            }
        }
    }
}

pub struct Webhook {
    queue: Queue<AuditEntry>,
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
        let sender = Arc::new(Sender {
            uri: parse_url(url)?,
            client: outbound_client()?,
            settings: settings.clone(),
            metrics: metrics.clone(),
        });
        let queue = Queue::start(settings.webhook_queue_size, move |entry| {
            let sender = sender.clone();
            async move { sender.send(entry).await }
        });
        Ok(Some(Webhook {
            queue,
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
        // Counted before it is queued, so the sender's decrement cannot
        // come first.
        self.metrics.webhook_queue_depth.fetch_add(1, Relaxed);
        match self.queue.submit(entry) {
            Submitted::Queued => {}
            Submitted::Closed => {
                self.metrics.webhook_queue_depth.fetch_sub(1, Relaxed);
            }
            Submitted::Full => {
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
    }

    /// Stops accepting notifications and waits (bounded) for queued ones.
    pub async fn close(&self) {
        self.queue.close("webhook").await;
    }
}

struct Sender {
    uri: Uri,
    client: OutboundClient,
    settings: ReportingSettings,
    metrics: Arc<Metrics>,
}

impl Sender {
    async fn send(&self, entry: AuditEntry) {
        self.metrics.webhook_queue_depth.fetch_sub(1, Relaxed);
        let record = record::build(&entry);
        let body = Bytes::from(match self.settings.webhook_format {
            WebhookFormat::Json => record.to_string(),
            WebhookFormat::Slack => slack::message(&record).to_string(),
        });
        let policy = RetryPolicy {
            timeout: Duration::from_millis(self.settings.webhook_timeout_ms),
            retries: self.settings.webhook_retries,
        };
        let secret = self.settings.webhook_secret.as_deref();
        let make = || Some(signed_post(&self.uri, secret, body.clone()));
        let retried = || {
            self.metrics.webhook_retries.fetch_add(1, Relaxed);
        };
        match post_with_retries(&self.client, make, policy, retried).await {
            Ok(_) => {
                self.metrics.webhook_sent.fetch_add(1, Relaxed);
            }
            Err(why) => {
                self.metrics.webhook_failed.fetch_add(1, Relaxed);
                tracing::warn!(url = %self.uri, %why, "webhook notification not delivered");
            }
        }
    }
}

/// A JSON `POST` of `body` to `uri`, stamped with the current time and,
/// with a secret, signed (see [`sign`]).
pub fn signed_post(uri: &Uri, secret: Option<&str>, body: Bytes) -> Request<Full<Bytes>> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut req = Request::new(Full::new(body.clone()));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri.clone();
    let h = req.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(sign::TIMESTAMP_HEADER, HeaderValue::from(now));
    if let Some(secret) = secret {
        let sig = sign::signature(secret.as_bytes(), now, &body);
        if let Ok(v) = HeaderValue::from_str(&sig) {
            h.insert(sign::SIGNATURE_HEADER, v);
        }
    }
    req
}
