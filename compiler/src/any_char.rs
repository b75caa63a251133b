//! `[\s\S]` (and `[\S\s]`, `[\w\W]`, `[\d\D]` …) spelt `(?s:.)`.
//!
//! Patterns written for JavaScript say "any character, newlines included"
//! as a class of a Perl class and its complement, because JavaScript's `.`
//! has no `s` flag in older dialects. The class is every Unicode scalar
//! value, exactly what `(?s:.)` is, but regex-syntax gets there by building
//! the union and then, under `(?i)`, case folding it code point by code
//! point: about a million lookups for each occurrence, every time the
//! pattern is parsed. The ATR corpus has about 1,100 of them under `(?i)`,
//! and that folding was two thirds of the corpus's compile time (45 s of
//! CPU for `parallax lint` before, most of it here). `(?s:.)` parses to the
//! same HIR (the tests compare them) without any folding.
//!
//! The rewrite is lexical and conservative: it only touches such a class at
//! the top level of the pattern (not nested in another class), after any
//! escape has been skipped, and leaves a pattern with the `x` (comments) or
//! `u` flag anywhere in it untouched, where the class could mean something
//! else or sit inside a comment.

/// The two-class spellings of "any character" this rewrites.
const ANY_CHAR_CLASSES: [&str; 6] = [
    r"[\s\S]", r"[\S\s]", r"[\w\W]", r"[\W\w]", r"[\d\D]", r"[\D\d]",
];

/// What replaces them: any character, newline included, without folding.
const ANY_CHAR: &str = "(?s:.)";

/// `pattern` with every top-level any-character class spelt `(?s:.)`; the
/// pattern itself when it has none (or sets a flag that makes the rewrite
/// unsafe to reason about).
pub fn respell(pattern: &str) -> String {
    if !ANY_CHAR_CLASSES.iter().any(|c| pattern.contains(c)) || sets_risky_flag(pattern) {
        return pattern.to_string();
    }
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    // Every boundary below is an ASCII byte, so slicing at them is safe.
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += escape_len(pattern, i),
            b'[' => match ANY_CHAR_CLASSES
                .iter()
                .find(|c| pattern[i..].starts_with(**c))
            {
                Some(c) => {
                    out.push_str(&pattern[copied..i]);
                    out.push_str(ANY_CHAR);
                    i += c.len();
                    copied = i;
                }
                None => i = class_end(pattern, i),
            },
            _ => i += 1,
        }
    }
    out.push_str(&pattern[copied..]);
    out
}

/// Bytes of the escape at `at` (a backslash and the character after it).
fn escape_len(pattern: &str, at: usize) -> usize {
    1 + pattern[at + 1..].chars().next().map_or(0, char::len_utf8)
}

/// Whether a flag group (`(?x)`, `(?-u:…)`, `(?ix)` …) sets or clears `x`
/// or `u`: with comments on, a class may sit in a comment; without Unicode,
/// the classes are byte classes. Either way the pattern is left alone.
fn sets_risky_flag(pattern: &str) -> bool {
    pattern.match_indices("(?").any(|(at, _)| {
        pattern[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
            .any(|c| c == 'x' || c == 'u')
    })
}

/// The position just past the class that opens at `open` (Rust syntax:
/// nested classes, `[:alpha:]` names, a `]` first in the class is literal),
/// or the end of the pattern if it never closes.
fn class_end(pattern: &str, open: usize) -> usize {
    let bytes = pattern.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                i += escape_len(pattern, i);
                continue;
            }
            b'[' if depth > 0 && pattern[i..].starts_with("[:") => {
                match pattern[i + 2..].find(":]") {
                    Some(end) => i += 2 + end + 2,
                    None => i += 1,
                }
                continue;
            }
            b'[' => {
                depth += 1;
                i += 1;
                if bytes.get(i) == Some(&b'^') {
                    i += 1;
                }
                // A `]` right after the opening is a literal bracket.
                if bytes.get(i) == Some(&b']') {
                    i += 1;
                }
                continue;
            }
            b']' => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return i;
                }
                continue;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::respell;

    fn hir(p: &str) -> regex_syntax::hir::Hir {
        regex_syntax::ParserBuilder::new()
            .build()
            .parse(p)
            .unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn each_spelling_becomes_the_same_hir() {
        for class in super::ANY_CHAR_CLASSES {
            for flags in ["", "(?i)", "(?m)", "(?is)", "(?-s)"] {
                let p = format!("{flags}ignore{class}{{0,40}}rules");
                let q = respell(&p);
                assert_eq!(q, format!("{flags}ignore(?s:.){{0,40}}rules"));
                assert_eq!(hir(&p), hir(&q), "{p} vs {q}");
            }
        }
    }

    #[test]
    fn escapes_and_nested_classes_are_left_alone() {
        for p in [
            r"\[\s\S]",
            r"[[\s\S]]",
            r"[^[\s\S]x]",
            r"[][\s\S]",
            r"[[:alpha:][\s\S]]",
            r"(?x)a [\s\S] b",
            r"(?-u:[\s\S])",
            r"(?ix:[\s\S])",
            r"[\s\S",
            r"\\\[\s\S]",
        ] {
            assert_eq!(respell(p), p, "{p}");
        }
    }

    #[test]
    fn the_rest_of_the_pattern_is_kept_byte_for_byte() {
        let p = r"(?i)é[\s\S]{0,9}[a-z\]][\w\W]+\\[\d\D]$";
        let q = respell(p);
        assert_eq!(q, r"(?i)é(?s:.){0,9}[a-z\]](?s:.)+\\(?s:.)$");
        assert_eq!(hir(p), hir(&q));
    }

    #[test]
    fn look_around_patterns_are_respelt_too() {
        // fancy-regex hands the parts without look-around to regex-syntax.
        let p = r"(?i)(?<!no)ignore[\s\S]{0,20}rules";
        assert_eq!(respell(p), r"(?i)(?<!no)ignore(?s:.){0,20}rules");
        let q = respell(p);
        let re = fancy_regex::Regex::new(&q).unwrap();
        assert!(re.is_match("IGNORE all\nthe rules").unwrap());
        assert!(!re.is_match("noignore the rules").unwrap());
    }
}
