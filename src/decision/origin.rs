//! Where an event came from: which front door, which agent framework, which
//! session. The decision service records it (audit line, metrics); it does
//! not change what the rules decide.

use serde::Serialize;

/// The front door an event came in through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Door {
    /// `POST /evaluate`.
    Http,
    /// `parallax eval`.
    Eval,
    /// Called in-process through the library (embedders, tests).
    Library,
    /// The model-API proxy (`/anthropic/...`, `/openai/...`).
    Proxy,
    /// An agent framework's hook: `parallax hook <framework>` (its
    /// in-process fallback, or the server it asked) and
    /// `POST /hooks/<framework>`.
    Hook,
    /// The MCP gateway: `parallax mcp wrap` (stdio) and `parallax mcp
    /// proxy` (Streamable HTTP).
    Mcp,
}

impl Door {
    /// Every door, in the order metrics list them.
    pub const ALL: [Door; 6] = [
        Door::Http,
        Door::Eval,
        Door::Library,
        Door::Proxy,
        Door::Hook,
        Door::Mcp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Door::Http => "http",
            Door::Eval => "eval",
            Door::Library => "library",
            Door::Proxy => "proxy",
            Door::Hook => "hook",
            Door::Mcp => "mcp",
        }
    }

    /// Position in [`Door::ALL`].
    pub fn index(self) -> usize {
        match self {
            Door::Http => 0,
            Door::Eval => 1,
            Door::Library => 2,
            Door::Proxy => 3,
            Door::Hook => 4,
            Door::Mcp => 5,
        }
    }
}

/// An event's origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    pub door: Door,
    /// The agent framework, when the front door knows it (`claudecode`,
    /// `codex`, `openclaw`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    /// The session, when the front door knows it from outside the event (a
    /// header, a hook payload). An event without a `session_id` gets this
    /// one before it is evaluated, so the SQL rules and the audit line see
    /// it; an event's own `session_id` is never overwritten.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The tenant the request's token names (`tenants:`), never the
    /// client's say: it becomes the event's `tenant`, always overwriting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl Origin {
    /// An event from `door`, nothing else known.
    pub fn door(door: Door) -> Origin {
        Origin {
            door,
            framework: None,
            session_id: None,
            tenant: None,
        }
    }

    /// What the origin knows that the event does not say: its session,
    /// when the event has none, and always the authenticated tenant (an
    /// event cannot name one).
    pub fn stamp(&self, event: &mut parallax_runtime::Event) {
        if event.session_id.is_none() {
            event.session_id.clone_from(&self.session_id);
        }
        event.tenant.clone_from(&self.tenant);
    }

    /// The same origin for `tenant` (from the request's authentication).
    pub fn for_tenant(mut self, tenant: Option<String>) -> Origin {
        self.tenant = tenant;
        self
    }
}
