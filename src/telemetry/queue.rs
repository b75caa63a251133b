//! The hand-over from a finished span to the exporter: a bounded queue and
//! one task that sends it in batches.
//!
//! The SDK's own `BatchSpanProcessor` keeps its count of spans dropped on a
//! full queue to itself (it logs it at shutdown), and /metrics must show
//! it; so the processor here is the same design with the count in
//! [`Metrics`]: `on_end` is a `try_send` (never a wait, never a lock held
//! across I/O), a batch goes out when `max_batch` spans are waiting or
//! `flush_ms` after the first of them, one export at a time, each bounded
//! by the exporter's timeout. While an export is slow the queue fills and
//! further spans are dropped: a decision never waits for the receiver.

use crate::metrics::Metrics;
use crate::settings::TelemetrySettings;
use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};

/// The processor the tracer provider calls when a span ends.
pub struct QueueProcessor {
    tx: mpsc::Sender<SpanData>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for QueueProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueProcessor")
            .field("capacity", &self.tx.max_capacity())
            .finish_non_exhaustive()
    }
}

impl SpanProcessor for QueueProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        // Counted before the send so the exporter's decrement never runs
        // first.
        self.metrics.telemetry_queue_depth.fetch_add(1, Relaxed);
        if self.tx.try_send(span).is_err() {
            self.metrics.telemetry_queue_depth.fetch_sub(1, Relaxed);
            self.metrics.telemetry_spans_dropped.fetch_add(1, Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// Stops the export task ([`Handle::close`]).
pub struct Handle {
    closing: Arc<Notify>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Handle {
    /// Asks the task to send what is queued and stop; waits at most `wait`.
    pub async fn close(&self, wait: Duration) {
        self.closing.notify_one();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            if tokio::time::timeout(wait, task).await.is_err() {
                tracing::warn!("telemetry: queued spans not all sent at shutdown");
            }
        }
    }
}

/// The processor and the task behind it, on the current Tokio runtime.
pub fn start<E: SpanExporter + 'static>(
    exporter: E,
    settings: &TelemetrySettings,
    metrics: Arc<Metrics>,
) -> (QueueProcessor, Handle) {
    let (tx, rx) = mpsc::channel(settings.queue_size.max(1));
    let closing = Arc::new(Notify::new());
    let task = tokio::spawn(run(
        exporter,
        rx,
        closing.clone(),
        settings.max_batch.max(1),
        Duration::from_millis(settings.flush_ms.max(1)),
        metrics.clone(),
    ));
    (
        QueueProcessor { tx, metrics },
        Handle {
            closing,
            task: Mutex::new(Some(task)),
        },
    )
}

/// Batches spans off `rx` and exports them until closed, then sends what
/// is left.
async fn run<E: SpanExporter>(
    exporter: E,
    mut rx: mpsc::Receiver<SpanData>,
    closing: Arc<Notify>,
    max_batch: usize,
    flush: Duration,
    metrics: Arc<Metrics>,
) {
    let mut batch = Vec::with_capacity(max_batch);
    loop {
        // Wait for a first span (or the end).
        let first = tokio::select! {
            s = rx.recv() => s,
            _ = closing.notified() => None,
        };
        let Some(first) = first else { break };
        batch.push(first);
        // Then for more, until the batch is full or `flush` has passed.
        let deadline = tokio::time::Instant::now() + flush;
        let mut closed = false;
        while batch.len() < max_batch {
            tokio::select! {
                s = rx.recv() => match s {
                    Some(s) => batch.push(s),
                    None => { closed = true; break }
                },
                _ = tokio::time::sleep_until(deadline) => break,
                _ = closing.notified() => { closed = true; break }
            }
        }
        export(&exporter, &mut batch, &metrics).await;
        if closed {
            break;
        }
    }
    // Closing: what is still queued goes out too.
    rx.close();
    while let Some(s) = rx.recv().await {
        batch.push(s);
        if batch.len() >= max_batch {
            export(&exporter, &mut batch, &metrics).await;
        }
    }
    export(&exporter, &mut batch, &metrics).await;
}

async fn export<E: SpanExporter>(exporter: &E, batch: &mut Vec<SpanData>, metrics: &Metrics) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len() as u64;
    metrics.telemetry_queue_depth.fetch_sub(n, Relaxed);
    let spans = std::mem::take(batch);
    match exporter.export(spans).await {
        Ok(()) => {
            metrics.telemetry_spans_exported.fetch_add(n, Relaxed);
        }
        Err(e) => {
            metrics.telemetry_spans_failed.fetch_add(n, Relaxed);
            tracing::warn!(error = %e, spans = n, "telemetry: export failed");
        }
    }
}
