//! Scoring a held-out corpus folder (`tests/fixtures/<name>/`, files in
//! the [`super::corpus`] format) against per-file floors, for the suites
//! that measure a class of attacks and its benign look-alikes on the
//! shipped rules: each file's rates printed, each held to the figure
//! measured when its floor was last raised.

use super::corpus::{self, rate, Expect};
use super::engine_report::report;
use parallax_runtime::action::Action;
use parallax_runtime::Engine;

/// Per file: (flagged at least, blocked at least) for `expect: flagged`;
/// (blocked at most, flagged at most) for `expect: clean`.
pub type Floors<'a> = &'a [(&'a str, f64, f64)];

/// Scores every file of corpus folder `name` on `engine`, printing one
/// line a file (and, with `HELD_OUT_SHOW` set, the notes of the cases
/// judged wrongly); the failures, one line each.
pub fn judge(engine: &Engine, name: &str, floors: Floors<'_>) -> Vec<String> {
    let show = std::env::var_os("HELD_OUT_SHOW").is_some();
    let files = corpus::files(name);
    let mut failures = Vec::new();
    if files.is_empty() {
        failures.push(format!("no corpus under tests/fixtures/{name}"));
    }
    for path in files {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let file = corpus::load(&path);
        let (mut flagged, mut blocked, mut no_line) = (0, 0, 0);
        let mut wrong = Vec::new();
        for case in &file.cases {
            let r = report(engine, case.event());
            flagged += usize::from(r.action != Action::Allow);
            blocked += usize::from(r.action == Action::Block);
            no_line += usize::from(r.action == Action::Allow && r.results.is_empty());
            let miss = match file.expect {
                Expect::Flagged => r.action == Action::Allow,
                _ => r.action != Action::Allow,
            };
            if miss && show {
                wrong.push(case.note.clone());
            }
        }
        let n = file.cases.len();
        let (f, b, quiet) = (rate(flagged, n), rate(blocked, n), rate(no_line, n));
        println!(
            "{file_name:<30} {:?} n={n:<5} flagged {f:.3} blocked {b:.3} no line {quiet:.3}",
            file.expect
        );
        for note in wrong {
            println!("    wrong: {note}");
        }
        let Some(&(_, x, y)) = floors.iter().find(|(n, _, _)| *n == file_name) else {
            failures.push(format!("{file_name}: no floor recorded for this file"));
            continue;
        };
        match file.expect {
            Expect::Flagged => {
                if f < x || b < y {
                    failures.push(format!(
                        "{file_name}: flagged {f:.3} (floor {x}), blocked {b:.3} (floor {y})"
                    ));
                }
            }
            Expect::Clean => {
                if b > x || f > y {
                    failures.push(format!(
                        "{file_name}: blocked {b:.3} (at most {x}), flagged {f:.3} (at most {y})"
                    ));
                }
            }
            Expect::Redacted => failures.push(format!(
                "{file_name}: held-out corpora have no redaction sets"
            )),
        }
    }
    failures
}
