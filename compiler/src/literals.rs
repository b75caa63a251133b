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
    // A leading `(?i)` would expand every letter into its case variants and
    // swamp the extractor's limits. The literals are lower-cased for an
    // ASCII case-insensitive automaton anyway, so extract from the pattern
    // without the flag. (Non-ASCII case variants such as the long s are
    // folded by the normalised view, which is scanned too.)
    let body = pattern.strip_prefix("(?i)").unwrap_or(pattern);
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(body)
        .ok()?;
    let mut best: Option<Vec<String>> = None;
    for from_start in [true, false] {
        let kind = if from_start {
            ExtractKind::Prefix
        } else {
            ExtractKind::Suffix
        };
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
        let mut full = Vec::with_capacity(lits.len());
        for l in lits {
            match std::str::from_utf8(l.as_bytes()) {
                Ok(s) if s.len() >= min_len => full.push(s.to_ascii_lowercase()),
                _ => {
                    full.clear();
                    break;
                }
            }
        }
        if full.is_empty() {
            continue;
        }
        // Too many literals (a class such as [0-9] multiplies them): cut
        // them to a shorter prefix (or suffix) until few enough remain. A
        // cut literal still occurs in every match, so the set stays a
        // correct prefilter, only a looser one.
        let longest = full.iter().map(String::len).max().unwrap_or(0);
        let mut found = None;
        for keep in (min_len..=longest).rev() {
            let mut cut: Vec<String> = full.iter().map(|l| shorten(l, keep, from_start)).collect();
            cut.sort();
            cut.dedup();
            if cut.len() <= MAX_LITERALS {
                found = Some(cut);
                break;
            }
        }
        let Some(out) = found else { continue };
        let shortest = |v: &[String]| v.iter().map(String::len).min().unwrap_or(0);
        if best.as_ref().is_none_or(|b| shortest(&out) > shortest(b)) {
            best = Some(out);
        }
    }
    best
}

/// The first (or last) `keep` bytes of `s`, on a character boundary.
fn shorten(s: &str, keep: usize, from_start: bool) -> String {
    if s.len() <= keep {
        return s.to_string();
    }
    if from_start {
        let mut end = keep;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    } else {
        let mut start = s.len() - keep;
        while !s.is_char_boundary(start) {
            start += 1;
        }
        s[start..].to_string()
    }
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
        assert!(ci.len() <= 8, "{ci:?}");
        assert!(ci.iter().all(|l| l.len() >= 6));
        assert!(ci
            .iter()
            .any(|l| "ignore".starts_with(l.as_str()) || "instructions".ends_with(l.as_str())));
        assert!(required_literals(r".{0,10}x", 3).is_none());
        // Classes multiply literals; they are cut back to a common prefix.
        let slack = required_literals(
            r"xox[abp]-[0-9]+-[a-z]{10,}|https://hooks\.example\.com/T[A-Z]",
            3,
        )
        .unwrap();
        assert!(
            slack.len() <= 64 && slack.iter().any(|l| l.starts_with("xoxa-")),
            "{slack:?}"
        );
    }
}
