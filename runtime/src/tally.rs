//! How the actions of matched rules combine into one verdict.
//!
//! This is the one place the strength order, monitor mode and the chain stop
//! are decided: the engine tallies the compiled evaluators' rules as it runs
//! them (it needs the chain stop to know when to stop), and the report
//! builder tallies the same rules again together with the rules decided
//! outside the automata (SQL rules), so both agree by construction. A new
//! action is added to [`Action`] and, if it changes how the chain goes on,
//! here — nowhere else.

use crate::action::Action;

/// The running verdict of a chain of matched rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// The action to take: the strongest enforced action; a rule in monitor
    /// mode counts as `detect` at most.
    pub action: Action,
    /// The action had no rule been in monitor mode.
    pub would_action: Action,
    /// An enforced `block` matched: evaluators after the current one do not
    /// run. A monitored block does not stop the chain, so the rules after it
    /// still enforce.
    pub stopped: bool,
}

impl Tally {
    /// Counts one matched rule.
    #[inline]
    pub fn add(&mut self, action: Action, monitor: bool) {
        self.would_action = self.would_action.max(action);
        if monitor {
            self.action = self.action.max(action.min(Action::Detect));
        } else {
            self.action = self.action.max(action);
            self.stopped |= action == Action::Block;
        }
    }

    /// Monitor mode held back a block: the event would have been blocked.
    pub fn would_block(&self) -> bool {
        self.action != Action::Block && self.would_action == Action::Block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strongest_enforced_action_wins_and_monitor_caps_at_detect() {
        let mut t = Tally::default();
        assert_eq!(t.action, Action::Allow);
        t.add(Action::Detect, false);
        t.add(Action::Block, true);
        assert_eq!(t.action, Action::Detect);
        assert_eq!(t.would_action, Action::Block);
        assert!(t.would_block());
        assert!(!t.stopped, "a monitored block must not stop the chain");
        t.add(Action::Redact, false);
        assert_eq!(t.action, Action::Redact);
        t.add(Action::Block, false);
        assert_eq!(t.action, Action::Block);
        assert!(t.stopped);
        assert!(!t.would_block());
    }
}
