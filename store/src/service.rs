//! The store's own thread. SQLite calls block; the async server must never
//! run them on its worker threads, so one thread owns the connection and
//! handlers talk to it over a channel, awaiting a oneshot reply. One owner
//! also means no locking around the connection and a strict order of
//! events within a session, which is what windows are about.
//!
//! Sessions take turns ([`Turns`]): the thread serves one queued event of
//! each waiting session in rotation, so a session with thousands of
//! requests in flight delays another session's request by at most one of
//! its own, never by its whole backlog.

use crate::request::{SqlHit, StoreRequest};
use crate::store::{Store, StoreError};
use parallax_runtime::Program;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Requests waiting for the store thread; senders wait (asynchronously)
/// beyond this, which bounds memory under a burst.
const QUEUE: usize = 4096;

/// Most events in one transaction (group commit). A batch also ends
/// whenever the thread runs out of work and parks, so under light traffic
/// each event is committed within [`SPIN`] of its answer, and under heavy
/// traffic SQLite opens and commits one transaction per this many events
/// instead of one per statement.
const BATCH: usize = 256;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

enum Job {
    /// An event to record (and judge, when its request says so); no reply
    /// when the caller does not wait ([`StoreHandle::record`]).
    Process(Box<StoreRequest>, Option<Reply<Vec<SqlHit>>>),
    RowCount(Reply<u64>),
    LoadRules(Box<Program>, Reply<()>),
}

/// The handle the server keeps; dropping it stops the thread after the
/// queued requests and closes the store (checkpointing a state file).
pub struct StoreHandle {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// See [`StoreHandle::lost_events`].
    lost: Arc<AtomicU64>,
}

impl StoreHandle {
    /// Moves `store` onto a thread of its own.
    pub fn spawn(mut store: Store) -> std::io::Result<StoreHandle> {
        let (tx, mut rx) = mpsc::channel::<Job>(QUEUE);
        let lost = Arc::new(AtomicU64::new(0));
        let counted = lost.clone();
        let thread = std::thread::Builder::new()
            .name("parallax-store".into())
            .spawn(move || {
                let lost = counted;
                // A failed commit loses every row of its batch.
                let commit = |store: &mut Store, batch: usize| {
                    if !store.end_batch() {
                        lost.fetch_add(batch as u64, Relaxed);
                    }
                };
                let mut turns = Turns::default();
                let mut batch = 0usize;
                loop {
                    if turns.is_empty() {
                        // The open batch is committed before the thread
                        // parks, never while more work is arriving.
                        let job = next_job(&mut rx, || {
                            commit(&mut store, batch);
                            batch = 0;
                        });
                        match job {
                            Some(job) => turns.push(job),
                            None => break,
                        }
                    }
                    // Everything else already waiting joins the rotation
                    // (up to the bound), so the next turn is chosen among
                    // all waiting sessions, not just the oldest request.
                    while turns.accepts() {
                        match rx.try_recv() {
                            Ok(job) => turns.push(job),
                            Err(_) => break,
                        }
                    }
                    if let Some(job) = turns.pop() {
                        if batch == 0 {
                            store.begin_batch();
                        }
                        if !run(&mut store, job) {
                            lost.fetch_add(1, Relaxed);
                        }
                        batch += 1;
                        if batch >= BATCH {
                            commit(&mut store, batch);
                            batch = 0;
                        }
                    }
                }
                commit(&mut store, batch);
            })?;
        Ok(StoreHandle {
            tx: Some(tx),
            thread: Some(thread),
            lost,
        })
    }

    /// Events this store answered, or queued without a wait, and then
    /// could not record: the insert after the answer failed, or the commit
    /// of their batch did (each of its events counts). They are missing
    /// from later windows; each failure is also logged. An insert that
    /// fails before the answer (a rule needed the row) is the caller's
    /// error instead and is not counted here.
    pub fn lost_events(&self) -> u64 {
        self.lost.load(Relaxed)
    }

    fn sender(&self) -> Result<&mpsc::Sender<Job>, StoreError> {
        self.tx.as_ref().ok_or(StoreError::Closed)
    }

    /// Records the event and runs the SQL rules; for async callers.
    pub async fn process(&self, req: StoreRequest) -> Result<Vec<SqlHit>, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.sender()?
            .send(Job::Process(Box::new(req), Some(reply)))
            .await
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// The same for synchronous callers (`parallax eval`). Must not be
    /// called from inside an async runtime.
    pub fn process_blocking(&self, req: StoreRequest) -> Result<Vec<SqlHit>, StoreError> {
        self.submit_blocking(req)?.wait()
    }

    /// Queues the event to be recorded and judged and returns at once; the
    /// hits are had from [`PendingHits::wait`]. A synchronous caller that
    /// has more events to decide (`parallax eval`) evaluates the next while
    /// the store works on this one, instead of waiting for each in turn.
    /// Must not be called from inside an async runtime.
    pub fn submit_blocking(&self, req: StoreRequest) -> Result<PendingHits, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.sender()?
            .blocking_send(Job::Process(Box::new(req), Some(reply)))
            .map_err(|_| StoreError::Closed)?;
        Ok(PendingHits(rx))
    }

    /// Queues the event to be recorded without waiting for it (an event no
    /// SQL rule judges, see [`crate::Route::Record`]). Waits only while the
    /// queue is full. The session's later events are served after it, so
    /// they see its row.
    pub async fn record(&self, req: StoreRequest) -> Result<(), StoreError> {
        self.sender()?
            .send(Job::Process(Box::new(req), None))
            .await
            .map_err(|_| StoreError::Closed)
    }

    /// [`StoreHandle::record`] for synchronous callers.
    pub fn record_blocking(&self, req: StoreRequest) -> Result<(), StoreError> {
        self.sender()?
            .blocking_send(Job::Process(Box::new(req), None))
            .map_err(|_| StoreError::Closed)
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

/// The store's answer to one submitted event, still to come
/// ([`StoreHandle::submit_blocking`]).
pub struct PendingHits(oneshot::Receiver<Result<Vec<SqlHit>, StoreError>>);

impl PendingHits {
    /// Whether the hits are in, so [`PendingHits::wait`] returns at once
    /// (false too when the store thread is gone: `wait` then says so).
    pub fn is_ready(&self) -> bool {
        !self.0.is_empty()
    }

    /// The hits, waiting for them if need be (polling briefly, then
    /// parking, as [`StoreHandle::process_blocking`]).
    pub fn wait(self) -> Result<Vec<SqlHit>, StoreError> {
        blocking_reply(self.0)
    }
}

/// Runs one job; false when it was an event the caller was already done
/// with (answered, or queued without a wait) and its row could not be
/// written.
fn run(store: &mut Store, job: Job) -> bool {
    match job {
        Job::Process(req, Some(reply)) => {
            // The caller has its answer before the row is written: when
            // every rule was answered beside SQLite the insert and the
            // bounds (at the row cap, nearly all of an event's cost) are
            // done after the reply, still before the next job.
            match store.judge(&req) {
                Ok((hits, rest)) => {
                    let _ = reply.send(Ok(hits));
                    if let Err(e) = store.write(&req, rest) {
                        tracing::error!(error = %e, "cannot record an event in the side-store");
                        return false;
                    }
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            }
        }
        Job::Process(req, None) => {
            if let Err(e) = store.process(&req) {
                tracing::error!(error = %e, "cannot record an event in the side-store");
                return false;
            }
        }
        Job::RowCount(reply) => {
            let _ = reply.send(store.row_count());
        }
        Job::LoadRules(program, reply) => {
            let _ = reply.send(store.load_rules(&program));
        }
    }
    true
}

/// Events taken off the channel, waiting for their session's turn.
///
/// Round robin over sessions: `order` lists the sessions with waiting
/// events, each served one event per turn and sent to the back while it has
/// more. Events without a session share one turn. Within a session the
/// order of arrival is kept (windows depend on it). A job that is not an
/// event (a reload, a count) is a barrier: nothing is taken off the channel
/// after it until every event before it has been served, so a reload
/// applies exactly from the events sent after it.
#[derive(Default)]
struct Turns {
    queues: HashMap<Option<String>, VecDeque<Job>>,
    order: VecDeque<Option<String>>,
    events: usize,
    barrier: Option<Job>,
}

impl Turns {
    fn is_empty(&self) -> bool {
        self.events == 0 && self.barrier.is_none()
    }

    /// Whether to take more off the channel: not past a barrier, and not
    /// beyond [`QUEUE`] events here (the channel then fills and senders
    /// wait, as they would without the rotation).
    fn accepts(&self) -> bool {
        self.barrier.is_none() && self.events < QUEUE
    }

    fn push(&mut self, job: Job) {
        let Job::Process(req, reply) = job else {
            self.barrier = Some(job);
            return;
        };
        let queue = self.queues.entry(req.row.session_id.clone()).or_default();
        if queue.is_empty() {
            self.order.push_back(req.row.session_id.clone());
        }
        queue.push_back(Job::Process(req, reply));
        self.events += 1;
    }

    /// The next session's next event; the barrier once no event is left.
    fn pop(&mut self) -> Option<Job> {
        while let Some(session) = self.order.pop_front() {
            let Some(queue) = self.queues.get_mut(&session) else {
                continue;
            };
            let Some(job) = queue.pop_front() else {
                self.queues.remove(&session);
                continue;
            };
            if queue.is_empty() {
                self.queues.remove(&session);
            } else {
                self.order.push_back(session);
            }
            self.events -= 1;
            return Some(job);
        }
        self.barrier.take()
    }
}

/// How long the store thread polls for the next job before it parks.
/// Waking a parked thread costs tens of microseconds, several times what
/// recording an event and running the rules costs; under steady traffic the
/// next request arrives well within this, so the thread never parks.
///
/// Each poll yields the CPU (`yield_now`, not a spin hint): the caller
/// waiting for a reply and the store thread waiting for a job poll at the
/// same time, and on a machine with fewer free cores than polling threads
/// a spinning poller held the core the other side needed for its time
/// slice (2 cores, other work running: `handle/roundtrip` 116 µs against
/// 36 µs for `store/process` alone).
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// The next job, polling for [`SPIN`] first; `before_parking` runs once
/// if none came by then (it commits the open batch).
fn next_job(rx: &mut mpsc::Receiver<Job>, before_parking: impl FnOnce()) -> Option<Job> {
    let started = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::error::TryRecvError::Disconnected) => {
                before_parking();
                return None;
            }
            Err(mpsc::error::TryRecvError::Empty) if started.elapsed() < SPIN => {
                std::thread::yield_now()
            }
            Err(mpsc::error::TryRecvError::Empty) => {
                before_parking();
                return rx.blocking_recv();
            }
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
                std::thread::yield_now()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::EventRow;
    use parallax_runtime::{Action, Stage};

    fn event(session: Option<&str>, n: i64) -> Job {
        let req = StoreRequest {
            row: EventRow {
                stage: Stage::ToolBefore,
                client_ts: None,
                session_id: session.map(str::to_string),
                user_id: None,
                channel: None,
                tool_name: None,
                command: None,
                path: None,
                url: None,
                tool_args: None,
                text_len: n,
                metadata: None,
                rule_ids: "[]".into(),
            },
            action: Action::Allow,
            rule_ids: Vec::new(),
            run_rules: true,
            now: None,
            rules: None,
        };
        Job::Process(Box::new(req), Some(oneshot::channel().0))
    }

    /// (session, n) of the popped event, or None for the barrier.
    fn popped(t: &mut Turns) -> Option<(Option<String>, i64)> {
        match t.pop()? {
            Job::Process(req, _) => Some((req.row.session_id.clone(), req.row.text_len)),
            _ => Some((Some("<barrier>".into()), -1)),
        }
    }

    #[test]
    fn sessions_take_turns_and_keep_their_own_order() {
        let mut t = Turns::default();
        for n in 0..4 {
            t.push(event(Some("hot"), n));
        }
        t.push(event(Some("other"), 100));
        t.push(event(None, 200));
        t.push(event(Some("hot"), 4));
        let order: Vec<_> = std::iter::from_fn(|| popped(&mut t)).collect();
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            order,
            vec![
                (s("hot"), 0),
                (s("other"), 100),
                (None, 200),
                (s("hot"), 1),
                (s("hot"), 2),
                (s("hot"), 3),
                (s("hot"), 4),
            ],
            "the second session waits for one hot event, not four"
        );
        assert!(t.is_empty());
    }

    #[test]
    fn a_control_job_waits_for_the_events_before_it_and_stops_intake() {
        let mut t = Turns::default();
        t.push(event(Some("a"), 1));
        t.push(Job::RowCount(oneshot::channel().0));
        assert!(!t.accepts(), "nothing is taken past a barrier");
        assert_eq!(popped(&mut t), Some((Some("a".into()), 1)));
        assert_eq!(popped(&mut t), Some((Some("<barrier>".into()), -1)));
        assert!(t.is_empty() && t.accepts());
    }
}
