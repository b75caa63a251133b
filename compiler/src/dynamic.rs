//! The dynamic backend: a compiled program run straight from memory, its
//! predicates interpreted from the IR. Used when the configured rules differ
//! from the baked ones (development, `parallax test`, any config not baked in).

use crate::plan::Compiled;
use parallax_runtime::{Backend, Engine, EngineError, Predicates, ShardDfa};

impl Compiled {
    pub fn into_engine(self) -> Result<Engine, EngineError> {
        let dfas = self
            .dfas
            .into_iter()
            .map(|shards| shards.into_iter().map(ShardDfa::Owned).collect())
            .collect();
        Engine::new(
            self.program,
            dfas,
            Predicates::Interpreted,
            Backend::Dynamic,
        )
    }
}
