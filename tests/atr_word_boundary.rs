//! The word-boundary rewrite (`runtime/src/word_boundary.rs`) on every
//! ATR pattern that has a Unicode word assertion: the rewritten HIR must
//! match exactly the haystacks the pattern matches.
//!
//! The scan runs the rewrite instead of the pattern on any text that is not
//! all ASCII (the lazy DFA quits on such text for a Unicode `\b`, and the
//! PikeVM costs microseconds a byte), as an existence check: gate members
//! and verifiers without a validator. So for each pattern — or, for a
//! backtracking one, its relaxation (look-arounds dropped, back-references
//! read as copies of their groups), which is what the scan rewrites — this
//! compares `is_match` of the pattern and of the rewrite over:
//! - the rule's own test and evasion inputs, as written and with non-ASCII
//!   neighbours (`é`, a word character; `中`, one too; U+3000 and `。`, not
//!   word characters) around them and in place of their spaces;
//! - each required literal of the pattern between every pair of those
//!   neighbours and the ASCII ones (space, `_`, `x`, `1`, nothing).
//!
//! A pattern the rewrite declines (`Err`: an assertion inside a long
//! repetition, a non-ASCII byte class) is left to the exact regex by the
//! scan, so it is not compared here; the test reports how many there were
//! and requires that most were rewritten.
//!
//! The second test checks that relaxation itself: wherever a backtracking
//! pattern matches, its relaxation must too.

use parallax_compiler::ir::AtomKind;
use parallax_runtime::word_boundary::dfa_hir;
use regex_automata::meta;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};

#[path = "support/atr_cases.rs"]
mod atr_cases;
#[path = "support/conformance.rs"]
mod conformance;

/// Characters put around and inside the texts: word and non-word, ASCII
/// and not.
const NEIGHBOURS: &[&str] = &["", " ", "_", "x", "1", "é", "中", "\u{3000}", "。", "-"];

/// Texts longer than this are cut (the exact regex runs the PikeVM on
/// non-ASCII text, so long texts would only make the test slow).
const MAX_TEXT: usize = 600;

fn cut(s: &str) -> &str {
    let mut end = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The haystacks one pattern is compared on.
fn haystacks(source: &str, texts: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in texts {
        let t = cut(t);
        out.insert(t.to_string());
        for n in ["é", "中", "\u{3000}"] {
            out.insert(format!("{n}{t}{n}"));
            out.insert(t.replace(' ', n));
        }
    }
    let literals = parallax_compiler::literals::required_literals(source, 1).unwrap_or_default();
    for lit in literals.iter().take(24) {
        for a in NEIGHBOURS {
            for b in NEIGHBOURS {
                out.insert(format!("{a}{lit}{b}"));
            }
        }
        out.insert(format!("{lit} {lit}"));
        out.insert(format!("{lit}é{lit}"));
    }
    out
}

/// Every regex pattern of the ATR corpus, with the case texts of every
/// rule that uses it; `None` without the corpus.
fn atr_patterns(label: &str) -> Option<BTreeMap<String, BTreeSet<String>>> {
    let corpus = conformance::corpus(label, "atr/rules")?;
    let dir = std::env::temp_dir().join(format!(
        "parallax-atr-{}-{}",
        label.replace(' ', "-"),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = dir.join("parallax.yaml");
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/atr/parallax.yaml"
    ))
    .expect("the ATR fixture");
    let mut settings: serde_yaml::Value = serde_yaml::from_str(&fixture).expect("YAML");
    settings["atr_dirs"] = Value::Sequence(vec![corpus.display().to_string().into()]);
    std::fs::write(&config, serde_yaml::to_string(&settings).expect("YAML")).expect("write");
    let rules = parallax_compiler::load(&config).expect("the ATR corpus lowers");
    let _ = std::fs::remove_dir_all(&dir);
    let texts = atr_cases::case_texts(&corpus, &["test_cases", "evasion_tests"]);

    // Pattern → the case texts of every rule that uses it.
    let mut patterns: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for ev in &rules.evaluators {
        for rule in &ev.rules {
            let mut atoms = Vec::new();
            rule.predicate.atoms(&mut atoms);
            for a in atoms {
                if let AtomKind::Regex { pattern, .. } = &rules.atoms[a as usize].kind {
                    let entry = patterns.entry(pattern.clone()).or_default();
                    entry.extend(texts.get(&rule.id).into_iter().flatten().cloned());
                }
            }
        }
    }

    Some(patterns)
}

#[test]
fn the_rewrite_matches_where_each_atr_pattern_does() {
    let Some(patterns) = atr_patterns("ATR word boundaries") else {
        return;
    };
    let (mut rewritten, mut declined, mut compared) = (0usize, 0usize, 0usize);
    let mut too_large = 0usize;
    let mut differences = Vec::new();
    for (pattern, own) in &patterns {
        // What the scan rewrites: the pattern, or a backtracking one's
        // relaxation (runtime/src/scan.rs, `Verifier::any_text`).
        let source = if regex_automata::util::syntax::parse(pattern).is_ok() {
            pattern.clone()
        } else {
            parallax_compiler::literals::relax_backtracking(pattern)
        };
        let hir = match dfa_hir(&source) {
            Ok(Some(hir)) => hir,
            Ok(None) => continue,
            Err(_) => {
                declined += 1;
                continue;
            }
        };
        rewritten += 1;
        let big = || meta::Config::new().nfa_size_limit(Some(64 << 20));
        let exact = meta::Builder::new()
            .configure(big())
            .build(&source)
            .expect("the pattern compiles");
        // The scan builds a forward NFA alone for the rewrite; one whose
        // meta regex (a reverse NFA too) passes the size limit is not
        // compared here, and the scan falls back to the exact regex if its
        // own build fails.
        let Ok(rewrite) = meta::Builder::new().configure(big()).build_from_hir(&hir) else {
            too_large += 1;
            continue;
        };
        let own: Vec<String> = own.iter().cloned().collect();
        for hay in haystacks(&source, &own) {
            compared += 1;
            if exact.is_match(&hay) != rewrite.is_match(&hay) {
                differences.push(format!(
                    "{source:?} on {hay:?}: pattern {}, rewrite {}",
                    exact.is_match(&hay),
                    rewrite.is_match(&hay)
                ));
            }
        }
    }
    println!(
        "{rewritten} patterns rewritten ({declined} declined, {too_large} too large to compare), \
         {compared} haystacks compared, {} differences",
        differences.len()
    );
    assert!(
        differences.is_empty(),
        "{} differences, first ones:\n{}",
        differences.len(),
        differences
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The corpus has 1,000 distinct such patterns; a rewrite that
    // declined them all would make the comparison vacuous.
    assert!(rewritten >= 900, "only {rewritten} patterns rewritten");
    assert!(compared > 100_000, "only {compared} haystacks compared");
}

/// The relaxation of every backtracking ATR pattern
/// (`compiler/src/relax.rs`: look-arounds dropped, a back-reference read as
/// a copy of its group) must match wherever the pattern does: the scan
/// skips the backtracking engine when it does not. Compared on the rule's
/// own cases and on each required literal, and each case's words,
/// repeated (what back-reference patterns look for).
#[test]
fn each_backtracking_atr_patterns_relaxation_matches_where_it_does() {
    let Some(patterns) = atr_patterns("ATR relaxation") else {
        return;
    };
    let (mut backtracking, mut matched, mut skipped) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for (pattern, own) in &patterns {
        if regex_automata::util::syntax::parse(pattern).is_ok() {
            continue;
        }
        backtracking += 1;
        let relaxed = parallax_compiler::literals::relax_backtracking(pattern);
        let big = meta::Config::new().nfa_size_limit(Some(64 << 20));
        let (Ok(fancy), Ok(linear)) = (
            fancy_regex::RegexBuilder::new(pattern)
                .backtrack_limit(parallax_runtime::scan::BACKTRACK_LIMIT)
                .build(),
            meta::Builder::new().configure(big).build(&relaxed),
        ) else {
            skipped += 1;
            continue;
        };
        let mut hays: BTreeSet<String> = own.iter().map(|t| cut(t).to_string()).collect();
        for t in own {
            for word in t.split_whitespace().take(8) {
                hays.insert(format!("{word} ").repeat(24));
            }
        }
        let literals =
            parallax_compiler::literals::required_literals(&relaxed, 1).unwrap_or_default();
        for lit in literals.iter().take(8) {
            hays.insert(format!("{lit} ").repeat(24));
        }
        for hay in &hays {
            if fancy.is_match(hay).unwrap_or(false) {
                matched += 1;
                if !linear.is_match(hay) {
                    misses.push(format!("{pattern:?} relaxed to {relaxed:?} misses {hay:?}"));
                }
            }
        }
    }
    println!(
        "{backtracking} backtracking patterns ({skipped} not compared), \
         {matched} matching haystacks, {} misses",
        misses.len()
    );
    assert!(
        misses.is_empty(),
        "{} misses, first ones:\n{}",
        misses.len(),
        misses
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(matched > 100, "only {matched} haystacks matched: vacuous");
}
