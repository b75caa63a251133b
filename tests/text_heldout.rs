//! The held-out text corpus (issue 38), scored on the shipped rules as
//! baked (compiled rules and the injection classifier). The files under
//! `tests/fixtures/text_heldout/` were written by a helper given only the
//! class descriptions of the issue (never the rules, the classifier or the
//! decoders): indirect injection in project text, encoded and obfuscated
//! injection, other languages, MCP tool poisoning, model manipulation at
//! `params.before`, secrets leaving, jailbreaks carrying an agent goal
//! (`expect: flagged`: any verdict but `allow` counts), and two benign sets
//! of security-looking text and everyday agent traffic (`expect: clean`).
//!
//! Each file's rates are printed (`cargo test --test text_heldout --
//! --nocapture`; `HELD_OUT_SHOW=1` lists the cases judged wrongly) and held to a floor: the figure measured when the floor
//! was last raised, with the "before" figure (the rules and decoders as
//! they were when the corpus arrived) in the comment. Rules are never
//! tuned to these cases; a floor goes up with a measured gain on the class.

mod support;

use parallax::backend::baked;
use support::held_out;

/// Per file: (flagged at least, blocked at least) for attacks; (blocked at
/// most, flagged at most) for clean sets. The figures measured on
/// 2026-12-05 after the decoders (escapes, hex, hidden text, fields read
/// together); "before" at 7f870b5, before any of them, in the comments.
const FLOORS: held_out::Floors<'static> = &[
    ("indirect_injection.yaml", 0.44, 0.018), // before 0.370 / 0.019; 0.444 with the indirect rules
    ("encoded_injection.yaml", 0.71, 0.25),   // before 0.481 / 0.173
    ("multilingual_injection.yaml", 0.56, 0.035), // before 0.400 / 0.000
    ("tool_poisoning.yaml", 0.68, 0.022), // before 0.422 / 0.022; 0.489 before issue 38's tool-definition rules; now 0.689 / 0.022 (tools/list results read with them)
    ("model_manipulation.yaml", 0.53, 0.0), // before 0.146 / 0.000; 0.244 with the parameter-range rule; now 0.537 / 0.000 (params.before rules, issue 38)
    ("secrets_outbound.yaml", 0.60, 0.35),  // before 0.264 / 0.264
    ("jailbreak_with_goal.yaml", 0.55, 0.30), // before 0.488 / 0.000; 0.558 / 0.302 with the goal rule
    // clean: at most this share blocked, at most this share flagged
    ("benign_security_text.yaml", 0.0, 0.071), // before 0.012 / 0.140; 0.012 / 0.151 with the agent-content rule; now 0.000 / 0.070 (security writing, placeholders)
    ("benign_agent_traffic.yaml", 0.0, 0.03),  // before 0.000 / 0.030
];

#[test]
fn held_out_text_is_judged_by_class() {
    let engine = baked::engine().expect("the baked engine loads");
    let failures = held_out::judge(&engine, "text_heldout", FLOORS);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
