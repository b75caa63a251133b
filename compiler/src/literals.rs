//! Required literals of a regex, for the prefilter path.
//!
//! A regex too costly for a dense DFA is found through literals every match
//! must begin (or end) with: they join the field's Aho-Corasick automaton,
//! and only when one hits does the regex itself run. regex-syntax's
//! extractor gives a finite set of prefixes or suffixes when one exists; the
//! longer the shortest literal, the fewer false candidates benign text
//! raises.

use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};

/// At most this many literals for one regex: beyond it, the automaton grows
/// for little filtering.
const MAX_LITERALS: usize = 64;

/// Lower-cased literals one of which every match of `pattern` contains, or
/// `None` when there is no such set with literals of at least `min_len`
/// bytes. Lower-casing is safe: the literals go into an ASCII
/// case-insensitive automaton, which then finds a superset of candidates.
pub fn required_literals(pattern: &str, min_len: usize) -> Option<Vec<String>> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()?;
    let mut best: Option<Vec<String>> = None;
    for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
        // Generous limits: case-insensitive literals expand into every case
        // variant, which lower-casing folds back into one.
        let seq: Seq = Extractor::new()
            .kind(kind)
            .limit_total(4096)
            .limit_literal_len(64)
            .extract(&hir);
        let Some(lits) = seq.literals() else { continue };
        if lits.is_empty() {
            continue;
        }
        let mut out = Vec::with_capacity(lits.len());
        for l in lits {
            match std::str::from_utf8(l.as_bytes()) {
                Ok(s) if s.len() >= min_len => out.push(s.to_ascii_lowercase()),
                _ => {
                    out.clear();
                    break;
                }
            }
        }
        if out.is_empty() {
            continue;
        }
        out.sort();
        out.dedup();
        if out.len() > MAX_LITERALS {
            continue;
        }
        let shortest = |v: &[String]| v.iter().map(String::len).min().unwrap_or(0);
        if best.as_ref().is_none_or(|b| shortest(&out) > shortest(b)) {
            best = Some(out);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_prefixes_or_suffixes() {
        assert_eq!(
            required_literals(r"curl\s.{0,80}\|\s*sh", 3),
            Some(vec!["curl".to_string()])
        );
        // Case variants fold into one lower-case literal, prefix or suffix.
        let ci = required_literals(r"(?i)ignore.{0,40}instructions", 3).unwrap();
        // (Unicode folding adds variants such as the long s, `ſ`.)
        assert!(ci.len() <= 8, "{ci:?}");
        assert!(ci.iter().all(|l| l.len() >= 6));
        assert!(ci
            .iter()
            .any(|l| "ignore".starts_with(l.as_str()) || "instructions".ends_with(l.as_str())));
        assert!(required_literals(r".{0,10}x", 3).is_none());
    }
}
