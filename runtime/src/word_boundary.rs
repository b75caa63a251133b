//! Unicode word boundaries rewritten so a DFA can run them.
//!
//! regex-automata's lazy and dense DFAs support `\b` (and `\B`, `\b{start}`,
//! …) in their Unicode meaning only on ASCII text: on the first non-ASCII
//! byte they quit, and the meta engine starts over with the PikeVM, which
//! costs 1–3 µs a byte for one of our injection patterns and tens of µs a
//! byte for a multi-pattern gate holding one. So one pattern with a Unicode
//! `\b` made every scan of text with a single accented letter or CJK
//! character about a thousand times slower (issue 19: 6,203 ns/byte on CJK
//! text).
//!
//! [`dfa_hir`] rewrites such a pattern into one without Unicode word
//! assertions that matches exactly the same haystacks: whether a match
//! exists anywhere is unchanged, only its span may differ (it can take in
//! the character before and after). That is all a gate or an existence check
//! asks; span finding keeps the original pattern.
//!
//! How: a word boundary only says something about the characters on each
//! side, and whether a character is a word character is a property of the
//! character alone. So the pattern is walked left to right with a small
//! state: the kind (word or not) of the character before, when something
//! ahead reads it, and what kind the next character must be, when an
//! assertion asked. Character classes are split into their word and
//! non-word parts where the state must know which was taken; an assertion
//! becomes a requirement on the next character (the end of the text counts
//! as a non-word character), or nothing at all when it can never hold. An
//! assertion at the start reads the character before the match: the rewrite
//! then starts with that character (or the start of the text), and one at
//! the end takes in the character after.
//!
//! So the rewrite is only valid for a search of a whole value: its `^`-like
//! start branch is the start of the haystack, and a search that began
//! inside a value (`Input::range`, a restart after a match) would read the
//! text before it as absent. Its callers in `scan.rs` (a verifier's
//! existence check, the gate for non-ASCII text) search each value from its
//! first byte to its last and never read spans.
//!
//! Checked against the unrewritten pattern by the unit tests below, by
//! tests/scan_reference.rs (the scan on non-ASCII fragments) and by
//! tests/atr_word_boundary.rs (every ATR pattern with a Unicode word
//! assertion, on its own cases and literals with non-ASCII neighbours).

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, Hir, HirKind, Look};
use regex_syntax::hir::{Repetition, Visitor};

/// Whether a character is a word character (`\w`), as a boundary reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Other,
}

impl Kind {
    fn opposite(self) -> Kind {
        match self {
            Kind::Word => Kind::Other,
            Kind::Other => Kind::Word,
        }
    }
}

/// Between two characters of a match being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    /// The kind of the character before, when something ahead reads it.
    prev: Option<Kind>,
    /// What the next character must be (`Other` is also met by the end).
    next: Option<Kind>,
}

const FREE: State = State {
    prev: None,
    next: None,
};

/// Why a pattern was left as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    #[error("pattern does not parse: {0}")]
    Parse(String),
    #[error("a Unicode word boundary inside an unbounded or long repetition")]
    Repetition,
    #[error("a Unicode word boundary next to a byte class that is not ASCII")]
    Bytes,
    #[error("the rewrite grew past its size limit")]
    TooLarge,
    #[error("a Unicode word boundary whose character before was not tracked")]
    Untracked,
}

/// The pattern as an HIR without Unicode word assertions that matches the
/// same haystacks, or `Ok(None)` when it has none (build it as it is).
pub fn dfa_hir(pattern: &str) -> Result<Option<Hir>, RewriteError> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|e| RewriteError::Parse(e.to_string()))?;
    if !has_unicode_word(&hir) {
        return Ok(None);
    }
    let mut rw = Rewriter::new(&hir);
    let starts: Vec<(State, Hir)> = if reads_prev(&hir) {
        // The character before the match, or the start of the text.
        vec![
            (with_prev(Kind::Other), Hir::look(Look::Start)),
            (
                with_prev(Kind::Word),
                Hir::class(Class::Unicode(rw.word.clone())),
            ),
            (
                with_prev(Kind::Other),
                Hir::class(Class::Unicode(rw.other.clone())),
            ),
        ]
    } else {
        vec![(FREE, Hir::empty())]
    };
    let mut branches = Vec::new();
    for (state, prefix) in starts {
        for (end, body) in rw.walk(&hir, state, false)? {
            let suffix = match end.next {
                None => Hir::empty(),
                Some(Kind::Word) => Hir::class(Class::Unicode(rw.word.clone())),
                Some(Kind::Other) => Hir::alternation(vec![
                    Hir::look(Look::End),
                    Hir::class(Class::Unicode(rw.other.clone())),
                ]),
            };
            branches.push(Hir::concat(vec![prefix.clone(), body, suffix]));
        }
    }
    let out = if branches.is_empty() {
        Hir::fail()
    } else {
        Hir::alternation(branches)
    };
    if has_unicode_word(&out) {
        // Every such assertion is consumed by the walk; defensive.
        return Err(RewriteError::TooLarge);
    }
    Ok(Some(out))
}

fn with_prev(k: Kind) -> State {
    State {
        prev: Some(k),
        next: None,
    }
}

fn is_unicode_word(look: Look) -> bool {
    matches!(
        look,
        Look::WordUnicode
            | Look::WordUnicodeNegate
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode
    )
}

fn has_unicode_word(hir: &Hir) -> bool {
    let looks = hir.properties().look_set();
    looks.iter().any(is_unicode_word)
}

/// Whether `hir` may read the character before it before taking one.
fn reads_prev(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Look(l) => is_unicode_word(*l) && *l != Look::WordEndHalfUnicode,
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) => false,
        HirKind::Repetition(r) => r.max != Some(0) && reads_prev(&r.sub),
        HirKind::Capture(c) => reads_prev(&c.sub),
        HirKind::Alternation(hs) => hs.iter().any(reads_prev),
        HirKind::Concat(hs) => {
            for h in hs {
                if reads_prev(h) {
                    return true;
                }
                if !nullable(h) {
                    return false;
                }
            }
            false
        }
    }
}

/// Whether `hir` can match without taking a character (assertions ignored:
/// "maybe" counts as yes, which only makes the walk track more).
fn nullable(hir: &Hir) -> bool {
    hir.properties().minimum_len().is_none_or(|n| n == 0)
}

/// Whether what follows position `i` of `hs` (then `tail`) may read the
/// character before it.
fn rest_reads(hs: &[Hir], i: usize, tail: bool) -> bool {
    for h in &hs[i + 1..] {
        if reads_prev(h) {
            return true;
        }
        if !nullable(h) {
            return false;
        }
    }
    tail
}

struct Rewriter {
    word: ClassUnicode,
    other: ClassUnicode,
    /// HIR nodes built so far, against `limit`.
    built: usize,
    limit: usize,
}

/// Counts the nodes of an HIR (for the size limit).
struct Count(usize);

impl Visitor for Count {
    type Output = usize;
    type Err = ();
    fn finish(self) -> Result<usize, ()> {
        Ok(self.0)
    }
    fn visit_pre(&mut self, _: &Hir) -> Result<(), ()> {
        self.0 += 1;
        Ok(())
    }
}

impl Rewriter {
    fn new(hir: &Hir) -> Rewriter {
        let word = match regex_syntax::parse(r"\w").map(|h| h.into_kind()) {
            Ok(HirKind::Class(Class::Unicode(c))) => c,
            _ => ClassUnicode::empty(),
        };
        let mut other = word.clone();
        other.negate();
        let size = regex_syntax::hir::visit(hir, Count(0)).unwrap_or(0);
        Rewriter {
            word,
            other,
            built: 0,
            limit: 20_000 + size * 16,
        }
    }

    fn charge(&mut self, n: usize) -> Result<(), RewriteError> {
        self.built += n;
        if self.built > self.limit {
            return Err(RewriteError::TooLarge);
        }
        Ok(())
    }

    /// Every way `hir`, entered in `state`, can be left: the state after
    /// and what to match for it. `tail`: whether what follows reads the
    /// character before it.
    fn walk(
        &mut self,
        hir: &Hir,
        state: State,
        tail: bool,
    ) -> Result<Vec<(State, Hir)>, RewriteError> {
        self.charge(1)?;
        let out = match hir.kind() {
            HirKind::Empty => vec![(state, Hir::empty())],
            HirKind::Literal(lit) => {
                let Ok(text) = std::str::from_utf8(&lit.0) else {
                    return self.bytes_literal(hir, &lit.0, state, tail);
                };
                let mut s = state;
                for c in text.chars() {
                    let k = kind_of_char(c);
                    if s.next.is_some_and(|n| n != k) {
                        return Ok(Vec::new());
                    }
                    s = State {
                        prev: Some(k),
                        next: None,
                    };
                }
                if !tail {
                    s.prev = None;
                }
                if text.is_empty() {
                    s = state;
                }
                vec![(s, hir.clone())]
            }
            HirKind::Class(class) => self.class(class, hir, state, tail)?,
            HirKind::Look(look) => look_step(*look, state)?.map_or_else(Vec::new, |s| {
                if is_unicode_word(*look) {
                    vec![(s, Hir::empty())]
                } else {
                    vec![(s, hir.clone())]
                }
            }),
            HirKind::Capture(c) => self.walk(&c.sub, state, tail)?,
            HirKind::Alternation(hs) => {
                let mut out = Vec::new();
                for h in hs {
                    out.extend(self.walk(h, state, tail)?);
                }
                merge(out)
            }
            HirKind::Concat(hs) => {
                let mut acc = vec![(state, Vec::<Hir>::new())];
                for (i, h) in hs.iter().enumerate() {
                    let reads = rest_reads(hs, i, tail);
                    // Paths that reach the same state and then take the
                    // same way through `h` share it: (a|b)h, not ah|bh.
                    let mut next: Vec<(State, Hir, Vec<Vec<Hir>>)> = Vec::new();
                    for (s, prefix) in acc {
                        for (s2, h2) in self.walk(h, s, reads)? {
                            match next.iter_mut().find(|(t, g, _)| *t == s2 && *g == h2) {
                                Some((_, _, prefixes)) => prefixes.push(prefix.clone()),
                                None => next.push((s2, h2, vec![prefix.clone()])),
                            }
                        }
                    }
                    acc = Vec::with_capacity(next.len());
                    for (s2, h2, prefixes) in next {
                        let seq = if prefixes.len() == 1 {
                            let mut p = prefixes.into_iter().next().unwrap_or_default();
                            p.push(h2);
                            p
                        } else {
                            self.charge(prefixes.iter().map(Vec::len).sum())?;
                            let alts = prefixes.into_iter().map(Hir::concat).collect();
                            vec![Hir::alternation(alts), h2]
                        };
                        acc.push((s2, seq));
                    }
                }
                merge(
                    acc.into_iter()
                        .map(|(s, seq)| (s, Hir::concat(seq)))
                        .collect(),
                )
            }
            HirKind::Repetition(rep) => self.repetition(rep, hir, state, tail)?,
        };
        self.charge(out.len())?;
        Ok(merge(out))
    }

    fn class(
        &mut self,
        class: &Class,
        hir: &Hir,
        state: State,
        tail: bool,
    ) -> Result<Vec<(State, Hir)>, RewriteError> {
        if state.next.is_none() && !tail {
            return Ok(vec![(FREE, hir.clone())]);
        }
        let parts: Vec<(Kind, Hir)> = match class {
            Class::Unicode(c) => {
                let mut w = c.clone();
                w.intersect(&self.word);
                let mut o = c.clone();
                o.difference(&self.word);
                [(Kind::Word, w), (Kind::Other, o)]
                    .into_iter()
                    .filter(|(_, c)| !c.ranges().is_empty())
                    .map(|(k, c)| (k, Hir::class(Class::Unicode(c))))
                    .collect()
            }
            Class::Bytes(b) => {
                if b.ranges().iter().any(|r| r.end() >= 0x80) {
                    return Err(RewriteError::Bytes);
                }
                let word = ascii_word_bytes();
                let mut w = b.clone();
                w.intersect(&word);
                let mut o = b.clone();
                o.difference(&word);
                [(Kind::Word, w), (Kind::Other, o)]
                    .into_iter()
                    .filter(|(_, c)| !c.ranges().is_empty())
                    .map(|(k, c)| (k, Hir::class(Class::Bytes(c))))
                    .collect()
            }
        };
        Ok(parts
            .into_iter()
            .filter(|(k, _)| state.next.is_none_or(|n| n == *k))
            .map(|(k, h)| {
                let s = State {
                    prev: tail.then_some(k),
                    next: None,
                };
                (s, h)
            })
            .collect())
    }

    /// A literal of bytes that are not UTF-8 (`(?-u)` patterns): ASCII
    /// bytes are read as characters, anything else is not rewritten.
    fn bytes_literal(
        &mut self,
        hir: &Hir,
        bytes: &[u8],
        state: State,
        tail: bool,
    ) -> Result<Vec<(State, Hir)>, RewriteError> {
        if bytes.iter().any(|b| *b >= 0x80) {
            return Err(RewriteError::Bytes);
        }
        let text: String = bytes.iter().map(|&b| b as char).collect();
        let lit = Hir::literal(text.as_bytes());
        let mut out = self.walk(&lit, state, tail)?;
        for (_, h) in &mut out {
            *h = hir.clone();
        }
        Ok(out)
    }

    fn repetition(
        &mut self,
        rep: &Repetition,
        hir: &Hir,
        state: State,
        tail: bool,
    ) -> Result<Vec<(State, Hir)>, RewriteError> {
        let inner_looks = has_unicode_word(&rep.sub);
        if !inner_looks && state.next.is_none() && !tail {
            return Ok(vec![(FREE, hir.clone())]);
        }
        if inner_looks {
            // Unrolled: m copies, then up to (max - m) optional ones.
            let max = match rep.max {
                Some(max) if max <= 8 && rep.min <= max => max,
                _ => return Err(RewriteError::Repetition),
            };
            let mut optional = Hir::empty();
            for _ in rep.min..max {
                let step = Hir::concat(vec![(*rep.sub).clone(), optional]);
                optional = if rep.greedy {
                    Hir::alternation(vec![step, Hir::empty()])
                } else {
                    Hir::alternation(vec![Hir::empty(), step])
                };
            }
            let mut parts: Vec<Hir> = (0..rep.min).map(|_| (*rep.sub).clone()).collect();
            parts.push(optional);
            self.charge(parts.len() * 4)?;
            return self.walk(&Hir::concat(parts), state, tail);
        }
        // No assertion inside, but the state matters at one end or both:
        // the first copy meets what the state asks of the next character,
        // the last one says what the last character was.
        if nullable(&rep.sub) {
            return Err(RewriteError::Repetition);
        }
        let mut out = Vec::new();
        if rep.min == 0 {
            out.push((state, Hir::empty()));
        }
        if rep.min <= 1 && rep.max.is_none_or(|m| m >= 1) {
            out.extend(self.walk(&rep.sub, state, tail)?);
        }
        if rep.max.is_none_or(|m| m >= 2) {
            let middle = Hir::repetition(Repetition {
                min: rep.min.saturating_sub(2),
                max: rep.max.map(|m| m - 2),
                greedy: rep.greedy,
                sub: rep.sub.clone(),
            });
            for (_, first) in self.walk(&rep.sub, state, false)? {
                for (s, last) in self.walk(&rep.sub, FREE, tail)? {
                    out.push((s, Hir::concat(vec![first.clone(), middle.clone(), last])));
                }
            }
        }
        Ok(merge(out))
    }
}

/// The state after an assertion, or `Ok(None)` when it cannot hold.
///
/// Every Unicode word assertion but `\b{end-half}` reads the character
/// before it. [`reads_prev`] and [`rest_reads`] make the walk keep that
/// character's kind up to any such assertion, so `s.prev` is always known
/// here; if it ever were not, guessing either way could drop or add
/// matches, so the whole rewrite is declined instead (the scan then runs the
/// exact regex: slower, never wrong).
fn look_step(look: Look, s: State) -> Result<Option<State>, RewriteError> {
    // What the assertion asks: (kind of the character before, of the next).
    let (want_prev, want_next) = match look {
        Look::WordUnicode => (None, s.prev.map(Kind::opposite)),
        Look::WordUnicodeNegate => (None, s.prev),
        Look::WordStartUnicode => (Some(Kind::Other), Some(Kind::Word)),
        Look::WordEndUnicode => (Some(Kind::Word), Some(Kind::Other)),
        Look::WordStartHalfUnicode => (Some(Kind::Other), None),
        Look::WordEndHalfUnicode => (None, Some(Kind::Other)),
        _ => return Ok(Some(s)),
    };
    if look != Look::WordEndHalfUnicode && s.prev.is_none() {
        return Err(RewriteError::Untracked);
    }
    if let (Some(w), Some(p)) = (want_prev, s.prev) {
        if w != p {
            return Ok(None);
        }
    }
    let next = match (s.next, want_next) {
        (Some(a), Some(b)) if a != b => return Ok(None),
        (a, b) => a.or(b),
    };
    Ok(Some(State { prev: s.prev, next }))
}

fn kind_of_char(c: char) -> Kind {
    if regex_syntax::try_is_word_character(c).unwrap_or(false) {
        Kind::Word
    } else {
        Kind::Other
    }
}

fn ascii_word_bytes() -> ClassBytes {
    ClassBytes::new([
        ClassBytesRange::new(b'0', b'9'),
        ClassBytesRange::new(b'A', b'Z'),
        ClassBytesRange::new(b'_', b'_'),
        ClassBytesRange::new(b'a', b'z'),
    ])
}

/// Joins the ways that end in the same state into one alternation (order
/// kept: leftmost-first preference among them stays as written).
fn merge(ways: Vec<(State, Hir)>) -> Vec<(State, Hir)> {
    let mut out: Vec<(State, Vec<Hir>)> = Vec::new();
    for (s, h) in ways {
        match out.iter_mut().find(|(t, _)| *t == s) {
            Some((_, hs)) => hs.push(h),
            None => out.push((s, vec![h])),
        }
    }
    out.into_iter()
        .map(|(s, hs)| (s, Hir::alternation(hs)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta;

    fn exact(p: &str) -> meta::Regex {
        meta::Regex::new(p).unwrap()
    }

    fn rewritten(p: &str) -> meta::Regex {
        let hir = dfa_hir(p).unwrap().expect("has a Unicode word boundary");
        meta::Builder::new().build_from_hir(&hir).unwrap()
    }

    /// The rewrite finds a match exactly where the pattern does.
    fn same(p: &str, hays: &[&str]) {
        let (a, b) = (exact(p), rewritten(p));
        for h in hays {
            assert_eq!(a.is_match(h), b.is_match(h), "pattern {p:?} on {h:?}");
        }
    }

    const HAYS: &[&str] = &[
        "",
        "ignore",
        "ignore all previous instructions",
        "éignore all",
        "中ignore all",
        "ignoreé",
        "ignore中",
        "x ignore. all",
        "ignore\u{3000}all",
        "no match here",
        "ignoreignore",
        "_ignore",
        "ignore_",
        "é。",
        "a é b",
        "é",
        "。",
        "ab",
        "a b",
        "适合 ignore",
        "ignore all 指示",
        "ignoreall",
    ];

    #[test]
    fn matches_where_the_original_does() {
        for p in [
            r"\bignore\b",
            r"\bignore",
            r"ignore\b",
            r"(?i)\b(ignore|forget)\b.{0,20}\ball\b",
            r"\Bgnore",
            r"ignor\B",
            r"\b",
            r"\B",
            r"é\b",
            r"\bé",
            r"\b。",
            r"。\b",
            r"a\b\s*b",
            r"a\s*\bb",
            r"\b\w+\b",
            r"(?:\bab?\b\s){1,3}",
            r"\b{start}ignore\b{end}",
            r"\b{start-half}all",
            r"all\b{end-half}",
            r"^\bignore",
            r"ignore\b$",
            r"(?m)^\s*\bignore\b",
            r"(?:ignore|\ball)\b",
            r"\b(?:x|)\b",
            r"(?:a|b){0,3}\b",
            r"[^a]\b",
            r".\b.",
            r"(?:\b\w){1,3}",
        ] {
            same(p, HAYS);
        }
    }

    #[test]
    fn leaves_other_patterns_alone() {
        assert_eq!(dfa_hir(r"(?-u:\b)ab(?-u:\b)"), Ok(None));
        assert_eq!(dfa_hir(r"ab+c"), Ok(None));
        assert!(matches!(dfa_hir(r"("), Err(RewriteError::Parse(_))));
        assert_eq!(dfa_hir(r"(?:\ba)+"), Err(RewriteError::Repetition));
    }

    #[test]
    fn the_rewrite_runs_in_the_lazy_dfa_on_any_text() {
        // The PikeVM would make this take seconds; the lazy DFA does not
        // quit on non-ASCII text once the assertion is gone.
        let hir = dfa_hir(r"(?i)\b(you|ai|model)\b").unwrap().unwrap();
        assert!(!has_unicode_word(&hir));
        let re = meta::Builder::new().build_from_hir(&hir).unwrap();
        let hay = "적어 ".repeat(20_000) + "the model";
        assert!(re.is_match(&hay));
        assert!(!re.is_match("적어 ".repeat(20_000).as_str()));
    }
}
