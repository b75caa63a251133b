//! The held-out tool-call corpus (issue 37), scored on the shipped rules as
//! baked. `tests/fixtures/toolcall_heldout/` was written by a helper given
//! only the class descriptions of the issue (never the rules, never the
//! detection code), so it measures classes, not phrasings: destructive
//! commands, credential stores, persistence, privilege escalation, supply
//! chain, exfiltration, destructive SQL (`expect: flagged`: any verdict but
//! `allow` counts), and 1,150 everyday developer commands plus hard
//! look-alikes (`expect: clean`, which also counts "no line at all").
//!
//! Each file's rates are printed (`cargo test --test toolcall_heldout --
//! --nocapture`) and held to a floor per file: the figure measured when the
//! floor was last raised, so a change that loses detection (or adds false
//! positives) fails here. Rules are never tuned to these cases; when a
//! class is covered better, the floor goes up with the measurement.

mod support;

use parallax::backend::baked;
use support::held_out;

/// Per file: (flagged at least, blocked at least) for attacks;
/// (blocked at most, flagged at most) for clean sets. Raised to the figures
/// measured after the first catalogues of issue 37 (irreversible actions,
/// credential stores, persistence, privilege escalation; "before" at
/// 53b1cf8 in the comments).
const FLOORS: held_out::Floors<'static> = &[
    ("credentials.yaml", 0.82, 0.71),     // before 0.46 / 0.30
    ("destructive.yaml", 0.83, 0.74),     // before 0.58 / 0.29
    ("exfiltration.yaml", 0.75, 0.53), // before 0.778 / 0.537; the rsync -e ssh reverse-shell fix costs one case
    ("persistence.yaml", 0.81, 0.42),  // before 0.63 / 0.26
    ("privesc.yaml", 0.87, 0.58),      // before 0.87 / 0.22
    ("sql_destructive.yaml", 0.65, 0.51), // before 0.56 / 0.41
    ("supply_chain.yaml", 0.57, 0.43), // before 0.290 / 0.145; typosquat check 0.580 / 0.435 (40/69, 30/69)
    // clean: at most this share blocked, at most this share flagged
    // false-positive round (issue 37): before 0.003 / 0.114 (no line 0.886); now 0.001 / 0.008 (no line 0.992)
    ("everyday_commands.yaml", 0.001, 0.008),
    // false-positive round (issue 37): before 0.039 / 0.268 (no line 0.732); now 0.000 / 0.055 (no line 0.945)
    ("lookalikes_clean.yaml", 0.0, 0.056),
];

#[test]
fn held_out_tool_calls_are_judged_by_class() {
    let engine = baked::engine().expect("the baked engine loads");
    let failures = held_out::judge(&engine, "toolcall_heldout", FLOORS);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
