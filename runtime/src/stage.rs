//! Lifecycle stages of an agent event, and compact sets of them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The point in an agent's lifecycle an event was sent from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// A user message before the model sees it.
    #[serde(rename = "message.before")]
    MessageBefore,
    /// A tool call before it runs.
    #[serde(rename = "tool.before")]
    ToolBefore,
    /// A tool's result before the model sees it.
    #[serde(rename = "tool.after")]
    ToolAfter,
    /// Model parameters before the request is sent.
    #[serde(rename = "params.before")]
    ParamsBefore,
    /// The model's response (`response_text`) before the agent acts on it or
    /// shows it: where output rules (ATR `agent_output`) run.
    #[serde(rename = "response.after")]
    ResponseAfter,
    /// An agent about to write to its memory or context store
    /// (`memory_key`, `memory_text`): a memory that says "always run X" is
    /// persistence, one that carries a secret keeps it for every later run.
    #[serde(rename = "memory.before")]
    MemoryBefore,
    /// A retrieval (RAG) query before it is sent (`query`).
    #[serde(rename = "retrieval.before")]
    RetrievalBefore,
    /// The documents a retrieval returned (`documents`), before they reach
    /// the model: a poisoned document is an indirect injection, answered by
    /// dropping that document rather than the whole retrieval.
    #[serde(rename = "retrieval.after")]
    RetrievalAfter,
}

impl Stage {
    /// Eight stages: [`StageSet`] keeps them in one byte.
    pub const ALL: [Stage; 8] = [
        Stage::MessageBefore,
        Stage::ToolBefore,
        Stage::ToolAfter,
        Stage::ParamsBefore,
        Stage::ResponseAfter,
        Stage::MemoryBefore,
        Stage::RetrievalBefore,
        Stage::RetrievalAfter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::MessageBefore => "message.before",
            Stage::ToolBefore => "tool.before",
            Stage::ToolAfter => "tool.after",
            Stage::ParamsBefore => "params.before",
            Stage::ResponseAfter => "response.after",
            Stage::MemoryBefore => "memory.before",
            Stage::RetrievalBefore => "retrieval.before",
            Stage::RetrievalAfter => "retrieval.after",
        }
    }

    /// Dense index, for per-stage tables.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a stage name that is not one of [`Stage::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown stage `{0}` (expected one of: message.before, tool.before, tool.after, params.before, response.after, memory.before, retrieval.before, retrieval.after)"
)]
pub struct UnknownStage(pub String);

impl FromStr for Stage {
    type Err = UnknownStage;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Stage::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownStage(s.to_string()))
    }
}

/// A set of stages, stored as a bit mask so the hot path tests membership with
/// one AND.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(from = "Vec<Stage>", into = "Vec<Stage>")]
pub struct StageSet(u8);

impl StageSet {
    pub const EMPTY: StageSet = StageSet(0);

    pub fn of(stages: &[Stage]) -> StageSet {
        stages.iter().fold(StageSet::EMPTY, |s, st| s.with(*st))
    }

    pub fn with(self, stage: Stage) -> StageSet {
        StageSet(self.0 | (1 << stage.index()))
    }

    pub fn contains(self, stage: Stage) -> bool {
        self.0 & (1 << stage.index()) != 0
    }

    pub fn union(self, other: StageSet) -> StageSet {
        StageSet(self.0 | other.0)
    }

    pub fn intersect(self, other: StageSet) -> StageSet {
        StageSet(self.0 & other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Stage> {
        Stage::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

impl From<Vec<Stage>> for StageSet {
    fn from(v: Vec<Stage>) -> Self {
        StageSet::of(&v)
    }
}

impl From<StageSet> for Vec<Stage> {
    fn from(s: StageSet) -> Self {
        s.iter().collect()
    }
}

impl fmt::Display for StageSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Stage::as_str).collect();
        write!(f, "[{}]", names.join(", "))
    }
}
