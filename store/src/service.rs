//! The store's own thread. SQLite calls block; the async server must never
//! run them on its worker threads, so one thread owns the connection and
//! handlers talk to it over a channel, awaiting a oneshot reply. One owner
//! also means no locking around the connection and a strict order of
//! events, which is what windows are about.

use crate::request::{SqlHit, StoreRequest};
use crate::store::{Store, StoreError};
use parallax_runtime::Program;
use tokio::sync::{mpsc, oneshot};

/// Requests waiting for the store thread; senders wait (asynchronously)
/// beyond this, which bounds memory under a burst.
const QUEUE: usize = 4096;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

enum Job {
    Process(Box<StoreRequest>, Reply<Vec<SqlHit>>),
    RowCount(Reply<u64>),
    LoadRules(Box<Program>, Reply<()>),
}

/// The handle the server keeps; dropping it stops the thread after the
/// queued requests and closes the store (checkpointing a state file).
pub struct StoreHandle {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StoreHandle {
    /// Moves `store` onto a thread of its own.
    pub fn spawn(mut store: Store) -> std::io::Result<StoreHandle> {
        let (tx, mut rx) = mpsc::channel::<Job>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("parallax-store".into())
            .spawn(move || {
                while let Some(job) = next_job(&mut rx) {
                    match job {
                        Job::Process(req, reply) => {
                            let _ = reply.send(store.process(&req));
                        }
                        Job::RowCount(reply) => {
                            let _ = reply.send(store.row_count());
                        }
                        Job::LoadRules(program, reply) => {
                            let _ = reply.send(store.load_rules(&program));
                        }
                    }
                }
            })?;
        Ok(StoreHandle {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    fn sender(&self) -> Result<&mpsc::Sender<Job>, StoreError> {
        self.tx.as_ref().ok_or(StoreError::Closed)
    }

    /// Records the event and runs the SQL rules; for async callers.
    pub async fn process(&self, req: StoreRequest) -> Result<Vec<SqlHit>, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.sender()?
            .send(Job::Process(Box::new(req), reply))
            .await
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// The same for synchronous callers (`parallax eval`). Must not be
    /// called from inside an async runtime.
    pub fn process_blocking(&self, req: StoreRequest) -> Result<Vec<SqlHit>, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.sender()?
            .blocking_send(Job::Process(Box::new(req), reply))
            .map_err(|_| StoreError::Closed)?;
        blocking_reply(rx)
    }

    /// Replaces the SQL rules with `program`'s (a reload), keeping the
    /// recorded window. Must not be called from inside an async runtime.
    pub fn load_rules_blocking(&self, program: &Program) -> Result<(), StoreError> {
        let (reply, rx) = oneshot::channel();
        self.sender()?
            .blocking_send(Job::LoadRules(Box::new(program.clone()), reply))
            .map_err(|_| StoreError::Closed)?;
        rx.blocking_recv().map_err(|_| StoreError::Closed)?
    }

    /// Rows in the window now.
    pub async fn row_count(&self) -> Result<u64, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.sender()?
            .send(Job::RowCount(reply))
            .await
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

/// How long the store thread polls for the next job before it parks.
/// Waking a parked thread costs tens of microseconds, several times what
/// recording an event and running the rules costs; under steady traffic the
/// next request arrives well within this, so the thread never parks.
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

fn next_job(rx: &mut mpsc::Receiver<Job>) -> Option<Job> {
    let started = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
            Err(mpsc::error::TryRecvError::Empty) if started.elapsed() < SPIN => {
                std::hint::spin_loop()
            }
            Err(mpsc::error::TryRecvError::Empty) => return rx.blocking_recv(),
        }
    }
}

/// Waits for a reply, polling briefly before parking (see [`SPIN`]).
fn blocking_reply<T>(mut rx: oneshot::Receiver<Result<T, StoreError>>) -> Result<T, StoreError> {
    let started = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(r) => return r,
            Err(oneshot::error::TryRecvError::Closed) => return Err(StoreError::Closed),
            Err(oneshot::error::TryRecvError::Empty) if started.elapsed() < SPIN => {
                std::hint::spin_loop()
            }
            Err(oneshot::error::TryRecvError::Empty) => {
                return rx.blocking_recv().map_err(|_| StoreError::Closed)?
            }
        }
    }
}

impl Drop for StoreHandle {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
