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
use parallax_runtime::action::Action;
use support::corpus::{self, rate, Expect};
use support::engine_report::report;

/// Per file: (flagged at least, blocked at least) for attacks;
/// (blocked at most, flagged at most) for clean sets. Raised to the figures
/// measured after the first catalogues of issue 37 (irreversible actions,
/// credential stores, persistence, privilege escalation; "before" at
/// 53b1cf8 in the comments).
const FLOORS: &[(&str, f64, f64)] = &[
    ("credentials.yaml", 0.82, 0.71),     // before 0.46 / 0.30
    ("destructive.yaml", 0.83, 0.74),     // before 0.58 / 0.29
    ("exfiltration.yaml", 0.75, 0.53), // before 0.778 / 0.537; the rsync -e ssh reverse-shell fix costs one case
    ("persistence.yaml", 0.81, 0.42),  // before 0.63 / 0.26
    ("privesc.yaml", 0.87, 0.58),      // before 0.87 / 0.22
    ("sql_destructive.yaml", 0.65, 0.51), // before 0.56 / 0.41
    ("supply_chain.yaml", 0.28, 0.14), // before 0.28 / 0.14 (not yet covered)
    // clean: at most this share blocked, at most this share flagged
    ("everyday_commands.yaml", 0.004, 0.12), // before 0.007 / 0.117; now 0.003 / 0.114
    ("lookalikes_clean.yaml", 0.04, 0.27), // before 0.031 / 0.276; now 0.039 / 0.268 (one more blocked)
];

#[test]
fn held_out_tool_calls_are_judged_by_class() {
    let engine = baked::engine().expect("the baked engine loads");
    let mut failures = Vec::new();
    for path in corpus::files("toolcall_heldout") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let file = corpus::load(&path);
        let (mut flagged, mut blocked, mut no_line) = (0, 0, 0);
        for case in &file.cases {
            let r = report(&engine, case.event());
            flagged += usize::from(r.action != Action::Allow);
            blocked += usize::from(r.action == Action::Block);
            no_line += usize::from(r.action == Action::Allow && r.results.is_empty());
        }
        let n = file.cases.len();
        let (f, b, quiet) = (rate(flagged, n), rate(blocked, n), rate(no_line, n));
        println!(
            "{name:<26} {:?} n={n:<5} flagged {f:.3} blocked {b:.3} no line {quiet:.3}",
            file.expect
        );
        let Some(&(_, x, y)) = FLOORS.iter().find(|(n, _, _)| *n == name) else {
            failures.push(format!("{name}: no floor recorded for this file"));
            continue;
        };
        match file.expect {
            Expect::Flagged => {
                if f < x || b < y {
                    failures.push(format!(
                        "{name}: flagged {f:.3} (floor {x}), blocked {b:.3} (floor {y})"
                    ));
                }
            }
            Expect::Clean => {
                if b > x || f > y {
                    failures.push(format!(
                        "{name}: blocked {b:.3} (at most {x}), flagged {f:.3} (at most {y})"
                    ));
                }
            }
            Expect::Redacted => failures.push(format!("{name}: this corpus has no redaction sets")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
