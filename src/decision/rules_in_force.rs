//! The rules in force: one engine and the scratch memory sized for it,
//! swapped whole on reload so a request never mixes two rule sets.

use parallax_runtime::{Engine, Scratch};
use parallax_store::SqlRouting;
use std::sync::{Arc, Mutex};

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
