//! Parallax side-store: a live SQLite window of recent events, and the SQL
//! temporal rules that query it (rate limits, loops, multi-step chains that
//! no single event shows).
//!
//! [`schema`] is the table rules are written against; [`rule`] checks a
//! rule (the compiler uses it at build time); [`Store`] records events and
//! runs the rules; [`StoreHandle`] gives the store a thread of its own so
//! the async server never blocks on SQLite.

pub mod clock;
pub mod condition;
pub mod guard;
pub mod request;
pub mod routing;
pub mod rule;
pub mod schema;
pub mod service;
pub mod shortcut;
pub mod store;
pub mod template;
pub mod window;

pub use clock::{Clock, ManualClock, SystemClock};
pub use guard::{preconditions, Guard};
pub use request::{late_matches, EventRow, SqlHit, StoreRequest};
pub use routing::{Route, RuleMask, SqlRouting};
pub use rule::{check_rule, compile_rule, query_plan, Param, SqlRuleCode};
pub use service::{PendingHits, StoreHandle};
pub use store::{cap_slack, Profile, ShortcutMode, Store, StoreError, Unwritten};

use parallax_runtime::{Program, StateSettings};
use std::sync::Arc;

/// The store `program` needs, on its own thread: `None` when it has no SQL
/// rules (nothing would ever read the window, so nothing is recorded).
pub fn open_for(
    program: &Program,
    settings: &StateSettings,
    clock: Arc<dyn Clock>,
) -> Result<Option<StoreHandle>, StoreError> {
    if program.sql.is_empty() {
        return Ok(None);
    }
    let store = Store::open(program, settings, clock)?;
    let handle = StoreHandle::spawn(store).map_err(StoreError::Thread)?;
    Ok(Some(handle))
}
