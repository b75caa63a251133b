//! Whether a rule's regex compiles, checked while lowering so the error
//! names the rule (the planner builds the real automata much later).
//!
//! Shared by the regex engine's lowering and Sigma's `re` modifier; kept
//! apart from both because lowering already imports `sigma`, and Sigma
//! reaching back into `lower` for this made the two import each other.

/// Checks that a regex compiles, with the engine's own message if not.
pub fn check_regex(pattern: &str) -> Result<(), String> {
    regex_automata::meta::Regex::new(pattern)
        .map(|_| ())
        .map_err(|e| match e.syntax_error() {
            Some(s) => format!("invalid regex `{pattern}`: {s}"),
            None => format!("regex `{pattern}` cannot be compiled: {e}"),
        })
}
