//! Regexes built once per engine, whichever field scanner asks first.
//!
//! Several fields scan for the same patterns: a rule on shell commands has an
//! atom on `command` and one on `shell` with the same pattern (the shipped
//! rules: 260 verifiers, 160 distinct patterns), and `command` and `shell`
//! have the very same gate. Each [`crate::scan::FieldScanner`] builds its parts
//! on first use, so without this every field would compile its own copy of
//! the same NFA: on the realistic mix, the one-off builds were most of what
//! `parallax eval` spent on its first 3,000 events (see
//! [`crate::scan::FieldScanner::gate_dfa`]).
//!
//! A built regex is shared, not its search state: every scratch keeps its
//! own caches, so sharing changes no search, only how often one is compiled.
//! The map lock is held only to find a pattern's slot, never while building;
//! two fields asking for the same pattern at once wait on that slot's
//! [`OnceLock`], and different patterns build in parallel.

use crate::scan::{dfa_gate, linear_regex};
use regex_automata::hybrid::dfa as lazy;
use regex_automata::meta;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

/// One slot a build fills once, shared by everyone who asks for its key.
type Slot<T> = Arc<OnceLock<T>>;

/// The regexes an engine's field scanners share (see the module doc).
#[derive(Default)]
pub struct SharedBuilds {
    /// A verifier's (or span finding's) linear regex, by pattern; `Err` is
    /// the build error's message.
    linear: Mutex<HashMap<String, Slot<Result<meta::Regex, String>>>>,
    /// A gate's forward DFA, by its member patterns in order; `None`: it
    /// cannot be built.
    gates: Mutex<HashMap<Vec<String>, Slot<Option<lazy::DFA>>>>,
}

impl SharedBuilds {
    /// [`linear_regex`] of `pattern`, built once for the whole engine.
    pub fn linear(&self, pattern: &str) -> Result<meta::Regex, String> {
        slot(&self.linear, pattern.to_string())
            .get_or_init(|| linear_regex(pattern).map_err(|e| build_message(&e)))
            .clone()
    }

    /// [`dfa_gate`] of `patterns`, built once for the whole engine.
    pub fn gate(&self, patterns: &[&str]) -> Option<lazy::DFA> {
        slot(
            &self.gates,
            patterns.iter().map(|p| p.to_string()).collect(),
        )
        .get_or_init(|| dfa_gate(patterns))
        .clone()
    }
}

/// What a build error says, with the parser's own message when there is
/// one (the meta error alone only says "error parsing pattern 0").
fn build_message(e: &meta::BuildError) -> String {
    match e.syntax_error() {
        Some(syntax) => format!("{e}: {syntax}"),
        None => e.to_string(),
    }
}

/// The slot of `key` in `map`, made empty on first ask (only a part's first
/// build asks: the scanner keeps what it got). A panic elsewhere while the
/// lock was held leaves the map as it was (slots are only ever added), so
/// a poisoned lock is taken as it is.
fn slot<K: Eq + Hash, T>(map: &Mutex<HashMap<K, Slot<T>>>, key: K) -> Slot<T> {
    map.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(key)
        .or_default()
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots<K, T>(map: &Mutex<HashMap<K, Slot<T>>>) -> usize {
        map.lock().map(|m| m.len()).unwrap_or(0)
    }

    #[test]
    fn a_pattern_asked_twice_is_built_once() {
        let shared = SharedBuilds::default();
        let a = shared.linear(r"cu?rl\s+-d").expect("builds");
        let b = shared.linear(r"cu?rl\s+-d").expect("builds");
        assert_eq!(slots(&shared.linear), 1);
        assert!(a.is_match("curl -d x") && b.is_match("crl  -d"));
        shared.linear("wget").expect("builds");
        assert_eq!(slots(&shared.linear), 2);
    }

    #[test]
    fn a_gate_is_keyed_by_its_patterns_in_order() {
        let shared = SharedBuilds::default();
        assert!(shared.gate(&["ab+", "c"]).is_some());
        assert!(shared.gate(&["ab+", "c"]).is_some());
        assert_eq!(slots(&shared.gates), 1);
        // Pattern i of a gate is member i: another order is another gate.
        assert!(shared.gate(&["c", "ab+"]).is_some());
        assert_eq!(slots(&shared.gates), 2);
    }

    #[test]
    fn a_build_error_is_kept_and_given_to_every_asker() {
        let shared = SharedBuilds::default();
        let first = shared.linear("a(").expect_err("unclosed group");
        let again = shared.linear("a(").expect_err("unclosed group");
        assert_eq!(first, again);
        assert!(first.contains("unclosed"), "{first}");
        assert!(shared.gate(&["a", "b("]).is_none());
    }
}
