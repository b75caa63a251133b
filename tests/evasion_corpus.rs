//! Parallax's own evasion corpus (issue 20), scored on the shipped rules as
//! baked: attacks written to get past pattern matching (other languages,
//! obfuscation, personas, secrets spread over a structure) and the hard
//! benign look-alikes that must pass untouched. Each file under
//! `tests/fixtures/evasion_corpus/` says what its cases expect:
//!
//! - `flagged`: any verdict but `allow` counts as caught;
//! - `redacted`: the verdict is `redact` and none of the case's `secrets`
//!   is left anywhere in the redacted event (or `block`, which withholds it
//!   all);
//! - `clean`: neither blocked nor rewritten (a `detect` is counted as a
//!   false positive, reported, but tolerated up to the limit below).
//!
//! The rates are printed (`cargo test --test evasion_corpus -- --nocapture`)
//! and held to the targets: evasions caught ≥ 0.90, benign work
//! neither blocked nor rewritten ≥ 0.95.

mod support;

use parallax::backend::baked;
use parallax_runtime::action::Action;
use parallax_runtime::engine::Engine;
use support::corpus::{self, rate, Case, Expect};
use support::engine_report::{report, rule_ids};

struct Score {
    total: usize,
    good: usize,
    flagged: usize,
    misses: Vec<String>,
}

fn judge(engine: &Engine, expect: Expect, case: &Case) -> (bool, bool, String) {
    let report = report(engine, case.event());
    let rules = rule_ids(&report);
    let flagged = report.action != Action::Allow;
    let left: Vec<&String> = match &report.redacted_event {
        Some(red) => {
            let text = red.to_string();
            case.secrets
                .iter()
                .filter(|s| text.contains(s.as_str()))
                .collect()
        }
        None => case.secrets.iter().collect(),
    };
    let good = match expect {
        Expect::Flagged => flagged,
        // A block withholds the whole result: nothing of it leaks either.
        Expect::Redacted => {
            report.action == Action::Block || (report.action == Action::Redact && left.is_empty())
        }
        Expect::Clean => !matches!(report.action, Action::Block | Action::Redact),
    };
    let why = format!(
        "{:?} {:?}: action {} rules {rules:?}{}",
        expect,
        case.note,
        report.action,
        if left.is_empty() {
            String::new()
        } else {
            format!(" secrets left: {left:?}")
        }
    );
    (good, flagged, why)
}

fn score(engine: &Engine, want: &[Expect]) -> Score {
    let mut s = Score {
        total: 0,
        good: 0,
        flagged: 0,
        misses: Vec::new(),
    };
    for path in corpus::files("evasion_corpus") {
        let file = corpus::load(&path);
        if !want.contains(&file.expect) {
            continue;
        }
        for case in &file.cases {
            let (good, flagged, why) = judge(engine, file.expect, case);
            s.total += 1;
            s.good += usize::from(good);
            s.flagged += usize::from(flagged);
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if !good || (file.expect == Expect::Clean && flagged) {
                s.misses.push(format!("{name}: {why}"));
            }
        }
    }
    s
}

#[test]
fn evasions_are_caught_and_benign_work_passes() {
    let engine = baked::engine().expect("the baked engine");
    let attacks = score(&engine, &[Expect::Flagged, Expect::Redacted]);
    let benign = score(&engine, &[Expect::Clean]);
    let caught = rate(attacks.good, attacks.total);
    let untouched = rate(benign.good, benign.total);
    let fp = rate(benign.flagged, benign.total);
    println!(
        "evasions caught {}/{} = {caught:.3}; benign neither blocked nor rewritten {}/{} = {untouched:.3}; benign flagged at all {}/{} = {fp:.3}",
        attacks.good, attacks.total, benign.good, benign.total, benign.flagged, benign.total
    );
    for m in attacks.misses.iter().chain(&benign.misses) {
        println!("  {m}");
    }
    assert!(
        attacks.total >= 50 && benign.total >= 40,
        "the corpus is all there"
    );
    assert!(caught >= 0.90, "evasions caught {caught:.3} < 0.90");
    assert!(untouched >= 0.95, "benign untouched {untouched:.3} < 0.95");
    // Flags on benign text (a `detect`) are reported above, not failed on:
    // the score is of every shipped rule, the classifier's included.
}
