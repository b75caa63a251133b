//! Required literals of a regex, for the prefilter path.
//!
//! A regex too costly for a dense DFA is found through a set of literals one
//! of which every match must contain: they join the field's Aho-Corasick
//! automaton, and only when one hits does the regex itself run. Prefixes and
//! suffixes alone are weak on real rule sets: `(?i)\b(ignore|…)\s+…
//! (instructions|prompts)` has short common prefixes but a rare inner word.
//! So the HIR is walked here: in every concatenation, runs of exact pieces
//! are multiplied out into longer literals, every piece that must match is a
//! candidate, and the rarest candidate (longest shortest literal, then
//! fewest literals) wins.
//!
//! Literals are ASCII lower-cased and go into an ASCII case-insensitive
//! automaton. A case-insensitive class is read as its letter when its ASCII
//! members are that letter's two cases (Unicode folding adds the Kelvin sign
//! and the long s, which the automaton does not fold: text spelling a
//! required literal with those two characters is not a candidate). Classes
//! of non-ASCII letters in both cases are not literals, since the automaton
//! cannot fold them.

use regex_syntax::hir::{Class, Hir, HirKind};

/// At most this many literals for one regex: beyond it, the automaton grows
/// for little filtering.
const MAX_LITERALS: usize = 64;
/// Literals longer than this add no selectivity worth their bytes.
const MAX_LITERAL_LEN: usize = 48;

type Set = Vec<String>;

/// Lower-cased literals one of which every match of `pattern` contains, or
/// `None` when there is no such set with literals of at least `min_len`
/// bytes.
pub fn required_literals(pattern: &str, min_len: usize) -> Option<Vec<String>> {
    required_literal_groups(pattern, min_len).and_then(|g| g.into_iter().next())
}

/// [`required_literals`] of an already parsed regex.
pub fn required_literals_hir(hir: &Hir, min_len: usize) -> Option<Vec<String>> {
    required_literal_groups_hir(hir, min_len).and_then(|g| g.into_iter().next())
}

/// One or two sets of lower-cased literals, the rarest first: every match
/// of `pattern` contains a literal of each set. A second set comes from
/// another piece of the pattern that every match must also contain, so the
/// scan can ask for a hit in both before it runs the regex (a conjunctive
/// prefilter): common words alone (`before`, `token`) make a verifier a
/// candidate on most prose, a second required word rarely joins them.
/// `None`: not even one such set (see [`required_literals`]).
pub fn required_literal_groups(pattern: &str, min_len: usize) -> Option<Vec<Vec<String>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()?;
    required_literal_groups_hir(&hir, min_len)
}

/// [`required_literal_groups`] of an already parsed regex.
pub fn required_literal_groups_hir(hir: &Hir, min_len: usize) -> Option<Vec<Vec<String>>> {
    let mut sets = required(hir, min_len);
    // Chosen before duplicates go, as the one-set choice always was.
    let first = best_index(&sets)?;
    for s in &mut sets {
        s.sort();
        s.dedup();
    }
    let best = sets.remove(first);
    sets.retain(|s| *s != best);
    let mut groups = vec![best];
    if let Some(second) = best_index(&sets) {
        groups.push(sets.remove(second));
    }
    Some(groups)
}

/// Whether a set may serve as a prefilter at all.
fn acceptable(s: &Set, min_len: usize) -> bool {
    !s.is_empty() && s.len() <= MAX_LITERALS && s.iter().all(|l| l.len() >= min_len)
}

fn score(s: &Set) -> (usize, std::cmp::Reverse<usize>, usize) {
    let shortest = s.iter().map(String::len).min().unwrap_or(0);
    (shortest.min(10), std::cmp::Reverse(s.len()), shortest)
}

/// The rarest of `sets` (longest shortest literal, then fewest literals),
/// the first one on a tie.
fn best_index(sets: &[Set]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, s) in sets.iter().enumerate() {
        if best.is_none_or(|b| score(s) > score(&sets[b])) {
            best = Some(i);
        }
    }
    best
}

/// Every acceptable set of strings one of which every match of `h`
/// contains, in pattern order: each comes from a different piece of `h`
/// (so a match holds a literal of each), except that an alternation gives
/// one set (its branches' best, joined).
fn required(h: &Hir, min_len: usize) -> Vec<Set> {
    let keep = |s: Set| -> Vec<Set> {
        if acceptable(&s, min_len) {
            vec![s]
        } else {
            Vec::new()
        }
    };
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Vec::new(),
        HirKind::Literal(_) | HirKind::Class(_) => exact(h).map(keep).unwrap_or_default(),
        HirKind::Capture(c) => required(&c.sub, min_len),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub, min_len),
        HirKind::Repetition(_) => Vec::new(),
        HirKind::Alternation(branches) => {
            // Every branch must contribute its own best set.
            let mut out = Vec::new();
            for b in branches {
                let mut sets = required(b, min_len);
                let Some(i) = best_index(&sets) else {
                    return Vec::new();
                };
                out.append(&mut sets.swap_remove(i));
                if out.len() > MAX_LITERALS {
                    return Vec::new();
                }
            }
            keep(out)
        }
        HirKind::Concat(children) => {
            let mut out = Vec::new();
            let mut run: Option<Set> = None;
            for c in children {
                match exact(c) {
                    Some(e) => {
                        run = Some(match run.take() {
                            None => e,
                            Some(r) => match cross(&r, &e) {
                                Some(x) => x,
                                None => {
                                    out.extend(keep(r));
                                    e
                                }
                            },
                        });
                    }
                    None => {
                        if let Some(r) = run.take() {
                            out.extend(keep(r));
                        }
                        out.extend(required(c, min_len));
                    }
                }
            }
            if let Some(r) = run {
                out.extend(keep(r));
            }
            out
        }
    }
}

/// The strings `h` matches when it matches only a few exact strings.
fn exact(h: &Hir) -> Option<Set> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(vec![String::new()]),
        HirKind::Literal(l) => std::str::from_utf8(&l.0)
            .ok()
            .map(|s| vec![s.to_ascii_lowercase()]),
        HirKind::Class(c) => class_char(c).map(|c| vec![c.to_string()]),
        HirKind::Capture(c) => exact(&c.sub),
        HirKind::Repetition(r) if Some(r.min) == r.max && r.min <= 4 => {
            let e = exact(&r.sub)?;
            let mut out = vec![String::new()];
            for _ in 0..r.min {
                out = cross(&out, &e)?;
            }
            Some(out)
        }
        HirKind::Repetition(_) => None,
        HirKind::Alternation(bs) => {
            let mut out = Vec::new();
            for b in bs {
                out.extend(exact(b)?);
                if out.len() > MAX_LITERALS {
                    return None;
                }
            }
            Some(out)
        }
        HirKind::Concat(cs) => cs
            .iter()
            .try_fold(vec![String::new()], |acc, c| cross(&acc, &exact(c)?)),
    }
}

fn cross(a: &Set, b: &Set) -> Option<Set> {
    if a.len() * b.len() > MAX_LITERALS {
        return None;
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            if x.len() + y.len() > MAX_LITERAL_LEN {
                return None;
            }
            out.push(format!("{x}{y}"));
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// The one character a class stands for, modulo ASCII case (see the module
/// comment for what that leaves out).
fn class_char(c: &Class) -> Option<char> {
    let chars: Vec<char> = match c {
        Class::Unicode(u) => {
            let mut v = Vec::new();
            for r in u.ranges() {
                for ch in r.start()..=r.end() {
                    v.push(ch);
                    if v.len() > 4 {
                        return None;
                    }
                }
            }
            v
        }
        Class::Bytes(b) => {
            let mut v = Vec::new();
            for r in b.ranges() {
                for byte in r.start()..=r.end() {
                    if !byte.is_ascii() {
                        return None;
                    }
                    v.push(byte as char);
                    if v.len() > 4 {
                        return None;
                    }
                }
            }
            v
        }
    };
    if let [only] = chars[..] {
        return Some(only.to_ascii_lowercase());
    }
    let ascii: Vec<char> = chars.iter().copied().filter(char::is_ascii).collect();
    let letter = ascii.first()?.to_ascii_lowercase();
    let folds_to_letter = |ch: char| match ch {
        '\u{212A}' => letter == 'k',
        '\u{017F}' => letter == 's',
        _ => false,
    };
    let ok = letter.is_ascii_alphabetic()
        && ascii.len() == 2
        && ascii.iter().all(|a| a.to_ascii_lowercase() == letter)
        && chars.iter().all(|c| c.is_ascii() || folds_to_letter(*c));
    ok.then_some(letter)
}

pub use crate::relax::relax_backtracking;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_prefixes_or_suffixes() {
        assert_eq!(
            required_literals(r"curl\s.{0,80}\|\s*sh", 3),
            Some(vec!["curl".to_string()])
        );
        assert!(required_literals(r".{0,10}x", 3).is_none());
        // Case variants fold into one lower-case literal.
        let ci = required_literals(r"(?i)ignore.{0,40}instructions", 3).unwrap();
        assert_eq!(ci, vec!["instructions".to_string()]);
        // A class of several letters ends the exact run before it; each
        // alternation branch still contributes.
        let slack = required_literals(
            r"xox[abp]-[0-9]+-[a-z]{10,}|https://hooks\.example\.com/T[A-Z]",
            3,
        )
        .unwrap();
        assert!(
            slack.len() == 2 && slack.iter().any(|l| l == "xox"),
            "{slack:?}"
        );
    }

    #[test]
    fn prefers_rare_inner_literals() {
        let l = required_literals(
            r"(?i)\b(ignore|skip)\s+(all\s+)?(previous|prior)\s+instructions",
            3,
        )
        .unwrap();
        assert_eq!(l, vec!["instructions".to_string()]);
        // Case-insensitive letters fold to one literal, Kelvin sign or not.
        assert_eq!(
            required_literals(r"(?i)keystore", 3),
            Some(vec!["keystore".to_string()])
        );
        // An optional piece is not required.
        assert_eq!(
            required_literals(r"(?i)(password)?\s*token", 3),
            Some(vec!["token".to_string()])
        );
        // Alternation: each branch contributes its best.
        let l = required_literals(r"(?i)(foo\s+bar|qux\s+baz)", 3).unwrap();
        assert_eq!(l.len(), 2, "{l:?}");
    }

    #[test]
    fn second_group_from_another_required_piece() {
        let groups = |p: &str| required_literal_groups(p, 3).unwrap();
        // The rarest set first, then the next rarest of another piece.
        assert_eq!(
            groups(r"(?i)\b(ignore|skip)\s+(all\s+)?(previous|prior)\s+instructions"),
            vec![
                vec!["instructions".to_string()],
                vec!["previous".to_string(), "prior".to_string()]
            ]
        );
        // Nested concatenations still give pieces of the whole.
        assert_eq!(
            groups(r"(?i)(drop\s+(table|database))\s+now"),
            vec![
                vec!["database".to_string(), "table".to_string()],
                vec!["drop".to_string()]
            ]
        );
        // A piece that is only optional, or too short, gives no group.
        assert_eq!(
            groups(r"curl\s.{0,80}\|\s*sh"),
            vec![vec!["curl".to_string()]]
        );
        assert_eq!(
            groups(r"token(\s+secret)?"),
            vec![vec!["token".to_string()]]
        );
        // The same set twice is one group.
        assert_eq!(groups(r"token.*token"), vec![vec!["token".to_string()]]);
        // An alternation at the top joins its branches into one set: a
        // second piece of one branch is not required of the other.
        assert_eq!(
            groups(r"alpha\s+beta|gamma\s+delta"),
            vec![vec!["alpha".to_string(), "gamma".to_string()]]
        );
    }

    #[test]
    fn non_ascii_case_folding_is_not_a_literal() {
        // Cyrillic in both cases cannot go into an ASCII-folding automaton.
        assert!(required_literals(r"(?i)забудь", 3).is_none());
        // Without case folding it can.
        assert_eq!(
            required_literals(r"忽略之前", 3),
            Some(vec!["忽略之前".to_string()])
        );
    }
}
