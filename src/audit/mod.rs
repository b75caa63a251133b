//! The audit trail: one JSON line per decision, written by a dedicated
//! thread behind a bounded queue so that a slow disk never sits on the
//! request path.
//!
//! Nothing is lost silently: a full queue either drops the line, counts it
//! (`parallax_audit_dropped_total`) and warns, or — with
//! `reporting.on_full: block` — makes the request wait for room. Closing
//! the log (graceful shutdown) writes and flushes every queued line.

pub mod record;
pub mod writer;

use crate::metrics::Metrics;
use crate::settings::{OnFull, ReportingSettings};
pub use record::{AuditEntry, DECISION_KIND};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use writer::LogFile;

enum Job {
    Entry(Box<AuditEntry>),
    /// A line that is not a decision (an approval's transition), already
    /// built and holding no secret.
    Record(Box<serde_json::Value>),
    /// Flush now and say so (for tests and admin).
    Flush(SyncSender<()>),
}

pub struct AuditLog {
    path: PathBuf,
    tx: Mutex<Option<SyncSender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    on_full: OnFull,
    log_allows: bool,
    metrics: Arc<Metrics>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit log {path}: {source}")]
pub struct AuditOpenError {
    path: PathBuf,
    source: std::io::Error,
}

impl AuditLog {
    /// Opens (appends to) `path` and starts the writer thread.
    pub fn start(
        path: &Path,
        settings: &ReportingSettings,
        metrics: Arc<Metrics>,
    ) -> Result<AuditLog, AuditOpenError> {
        let err = |source| AuditOpenError {
            path: path.to_path_buf(),
            source,
        };
        let file =
            LogFile::open(path, settings.max_bytes, settings.keep, settings.fsync).map_err(err)?;
        let (tx, rx) = sync_channel::<Job>(settings.queue_size.max(1));
        let flush_every = Duration::from_millis(settings.flush_ms.max(1));
        let m = metrics.clone();
        let thread = std::thread::Builder::new()
            .name("parallax-audit".into())
            .spawn(move || run(file, rx, flush_every, m))
            .map_err(err)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            on_full: settings.on_full,
            log_allows: settings.log_allows,
            metrics,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a decision with this outcome is logged at all.
    pub fn wants(&self, plain_allow: bool) -> bool {
        self.log_allows || !plain_allow
    }

    fn sender(&self) -> Option<SyncSender<Job>> {
        self.tx.lock().ok().and_then(|t| t.clone())
    }

    /// Queues one decision. Never blocks unless `on_full: block`.
    pub fn submit(&self, entry: AuditEntry) {
        self.queue(Job::Entry(Box::new(entry)));
    }

    /// Queues a line that is not a decision (it must hold no secret).
    pub fn submit_record(&self, record: serde_json::Value) {
        self.queue(Job::Record(Box::new(record)));
    }

    fn queue(&self, job: Job) {
        let Some(tx) = self.sender() else {
            self.drop_line("the audit log is closed");
            return;
        };
        self.metrics.audit_queue_depth.fetch_add(1, Relaxed);
        match tx.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(job)) if self.on_full == OnFull::Block => {
                // Back-pressure: wait for the writer. On a multi-threaded
                // runtime, tell tokio this worker is blocked so it moves
                // other tasks elsewhere.
                let sent = run_blocking(move || tx.send(job).is_ok());
                if !sent {
                    self.metrics.audit_queue_depth.fetch_sub(1, Relaxed);
                    self.drop_line("the audit writer stopped");
                }
            }
            Err(TrySendError::Full(_)) => {
                self.metrics.audit_queue_depth.fetch_sub(1, Relaxed);
                self.drop_line("the audit queue is full (reporting.queue_size)");
            }
            Err(TrySendError::Disconnected(_)) => {
                self.metrics.audit_queue_depth.fetch_sub(1, Relaxed);
                self.drop_line("the audit writer stopped");
            }
        }
    }

    fn drop_line(&self, why: &str) {
        let n = self.metrics.audit_dropped.fetch_add(1, Relaxed) + 1;
        // Every drop is counted; the warning is rate-limited so a flood
        // of drops does not also flood the log.
        if n == 1 || n.is_multiple_of(1000) {
            tracing::warn!(dropped_total = n, path = %self.path.display(), "audit line dropped: {why}");
        }
    }

    /// Writes out everything queued so far and waits until it is flushed.
    pub fn flush(&self) {
        let Some(tx) = self.sender() else { return };
        let (ack_tx, ack_rx) = sync_channel(1);
        if tx.send(Job::Flush(ack_tx)).is_ok() {
            let _ = ack_rx.recv();
        }
    }

    /// Stops accepting lines, writes every queued one, flushes and joins
    /// the writer. Idempotent.
    pub fn close(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = thread {
            if t.join().is_err() {
                tracing::error!("the audit writer thread panicked");
            }
        }
    }
}

/// Runs blocking `f`; on a multi-threaded tokio runtime, tells tokio the
/// worker is blocked so it moves its other tasks elsewhere.
pub fn run_blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.close();
    }
}

/// The writer thread: receive, write, flush every `flush_every` while there
/// is something unflushed, and drain the queue before exiting.
fn run(
    mut file: LogFile,
    rx: std::sync::mpsc::Receiver<Job>,
    flush_every: Duration,
    metrics: Arc<Metrics>,
) {
    let mut dirty = false;
    let mut last_flush = Instant::now();
    let flush = |file: &mut LogFile, dirty: &mut bool, last: &mut Instant| {
        if let Err(e) = file.flush() {
            metrics.audit_write_errors.fetch_add(1, Relaxed);
            tracing::error!(error = %e, "cannot flush the audit log");
        }
        *dirty = false;
        *last = Instant::now();
    };
    loop {
        let wait = if dirty {
            flush_every.saturating_sub(last_flush.elapsed())
        } else {
            Duration::from_secs(3600)
        };
        match rx.recv_timeout(wait) {
            Ok(job @ (Job::Entry(_) | Job::Record(_))) => {
                metrics.audit_queue_depth.fetch_sub(1, Relaxed);
                let mut line = match job {
                    Job::Entry(entry) => record::build(&entry).to_string(),
                    Job::Record(v) => v.to_string(),
                    Job::Flush(_) => String::new(),
                };
                line.push('\n');
                match file.append(line.as_bytes()) {
                    Ok(rotated) => {
                        metrics.audit_lines_written.fetch_add(1, Relaxed);
                        if rotated {
                            metrics.audit_rotations.fetch_add(1, Relaxed);
                        }
                    }
                    Err(e) => {
                        metrics.audit_write_errors.fetch_add(1, Relaxed);
                        tracing::error!(error = %e, "cannot write the audit log; line lost");
                    }
                }
                dirty = true;
            }
            Ok(Job::Flush(ack)) => {
                flush(&mut file, &mut dirty, &mut last_flush);
                let _ = ack.send(());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                flush(&mut file, &mut dirty, &mut last_flush);
                return;
            }
        }
        if dirty && last_flush.elapsed() >= flush_every {
            flush(&mut file, &mut dirty, &mut last_flush);
        }
    }
}
