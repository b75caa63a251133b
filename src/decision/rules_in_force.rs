//! The rules in force: one engine and the scratch memory sized for it,
//! swapped whole on reload so a request never mixes two rule sets.

use parallax_runtime::{Engine, Scratch};
use parallax_store::SqlRouting;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Builds, on a thread of its own, what `engine` otherwise builds on first
/// use (literal automata, verifier regexes: see
/// [`Engine::build_all`]), so a server's start-up does not wait for it
/// and its first requests do not pay for it. A request that needs a part
/// still being built waits for that part only. A part that cannot be
/// built is logged here; its atoms count as found (fail closed).
/// `done` runs once everything is built (readiness: `GET /ready`).
pub fn warm_up(engine: Arc<Engine>, verifiers: bool, done: impl FnOnce() + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("parallax-warm-up".into())
        .spawn(move || {
            let started = Instant::now();
            match engine.build(verifiers) {
                Ok(()) => {
                    tracing::info!(
                        ms = started.elapsed().as_millis() as u64,
                        verifiers,
                        "scanners built"
                    );
                    done();
                }
                Err(e) => tracing::error!(
                    error = %e,
                    "a scanner part cannot be built; its atoms count as found"
                ),
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no warm-up thread; scanners are built on first use");
    }
}

pub struct RulesInForce {
    pub engine: Arc<Engine>,
    /// Whether a rule calls `first_time_recipient`: only then are a call's
    /// recipients looked up in, and added to, the known-recipients memory.
    pub recipient_memory: bool,
    /// Which events these rules' SQL rules need to see, and which the
    /// caller must wait for (`parallax_store::routing`).
    pub sql: SqlRouting,
    /// Scratch memory for this engine, reused across requests: an
    /// evaluation then allocates nothing in the engine itself.
    scratch: Mutex<Vec<Scratch>>,
}

impl RulesInForce {
    pub fn new(engine: Engine) -> RulesInForce {
        RulesInForce {
            recipient_memory: engine
                .program()
                .cel
                .iter()
                .any(|c| c.source.contains("first_time_recipient")),
            sql: SqlRouting::of(engine.program()),
            engine: Arc::new(engine),
            scratch: Mutex::new(Vec::new()),
        }
    }

    /// A scratch from the pool, or a new one.
    pub fn take_scratch(&self) -> Scratch {
        let pooled = self.scratch.lock().ok().and_then(|mut p| p.pop());
        pooled.unwrap_or_else(|| self.engine.new_scratch())
    }

    /// Returns a scratch to the pool (never one an evaluation panicked
    /// with: the caller drops those).
    pub fn put_scratch(&self, s: Scratch) {
        if let Ok(mut p) = self.scratch.lock() {
            p.push(s);
        }
    }
}
