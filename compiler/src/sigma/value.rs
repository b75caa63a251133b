//! Sigma string values → what an automaton looks for.
//!
//! A plain value is parsed into pieces (text, `*`, `?`), transformed by the
//! value modifiers in order (`wide`, `base64`, `windash`, …), and finally
//! turned into a literal (an Aho-Corasick atom: exact text, found anywhere)
//! or an anchored regex (a DFA atom). Leading and trailing `*` are folded
//! into the match kind first, so `'*foo*'` is the literal `foo`, not a
//! regex.

use super::modifiers::{Kind, Transform};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Bytes(Vec<u8>),
    /// `*`: any run of characters, newlines included.
    AnyStr,
    /// `?`: one character.
    AnyChar,
    /// A Windows option dash: `-`, `/`, en dash, em dash or horizontal bar.
    Dash,
}

/// What to look for, per value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    Literal {
        text: String,
        case_insensitive: bool,
    },
    Regex(String),
    /// The value cannot occur in text (an encoding produced bytes that are
    /// not UTF-8, and event text always is).
    Never,
}

/// Splits a plain value at its wildcards. `\*`, `\?` and `\\` are the
/// escaped characters; any other backslash is literal (Windows paths keep
/// working), as the spec says.
pub fn parse_plain(value: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = value.chars().peekable();
    let flush = |text: &mut String, out: &mut Vec<Piece>| {
        if !text.is_empty() {
            out.push(Piece::Bytes(std::mem::take(text).into_bytes()));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(&n @ ('*' | '?' | '\\')) => {
                    text.push(n);
                    chars.next();
                }
                _ => text.push('\\'),
            },
            '*' => {
                flush(&mut text, &mut out);
                out.push(Piece::AnyStr);
            }
            '?' => {
                flush(&mut text, &mut out);
                out.push(Piece::AnyChar);
            }
            c => text.push(c),
        }
    }
    flush(&mut text, &mut out);
    out
}

fn has_wildcards(p: &[Piece]) -> bool {
    p.iter().any(|p| !matches!(p, Piece::Bytes(_)))
}

fn concat(p: &[Piece]) -> Vec<u8> {
    p.iter()
        .flat_map(|p| match p {
            Piece::Bytes(b) => b.clone(),
            _ => Vec::new(),
        })
        .collect()
}

fn utf16(bytes: &[u8], big_endian: bool) -> Vec<u8> {
    // Pieces are text until an encoding runs; a later encoding of already
    // encoded bytes treats each byte as a Latin-1 character, which is what
    // encoding a byte string to UTF-16 means.
    let units: Vec<u16> = match std::str::from_utf8(bytes) {
        Ok(s) => s.encode_utf16().collect(),
        Err(_) => bytes.iter().map(|&b| u16::from(b)).collect(),
    };
    units
        .iter()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

/// Applies one transformation; a value may become several alternatives
/// (`base64offset` gives three).
pub fn transform(pieces: Vec<Piece>, t: Transform) -> Result<Vec<Vec<Piece>>, String> {
    let name = super::modifiers::transform_name(t);
    let needs_plain = || {
        if has_wildcards(&pieces) {
            Err(format!(
                "modifier `{name}` cannot encode a value with wildcards (`*`, `?`); escape them \
                 (`\\*`) to mean the characters"
            ))
        } else {
            Ok(concat(&pieces))
        }
    };
    Ok(match t {
        Transform::Base64 => vec![vec![Piece::Bytes(
            STANDARD.encode(needs_plain()?).into_bytes(),
        )]],
        Transform::Base64Offset => {
            let v = needs_plain()?;
            // The value at each of the three alignments within a base64
            // stream, with the characters that depend on the unknown
            // neighbouring bytes cut off.
            const START: [usize; 3] = [0, 2, 3];
            const END: [usize; 3] = [0, 3, 2];
            (0..3)
                .map(|i| {
                    let mut padded = vec![b' '; i];
                    padded.extend_from_slice(&v);
                    let enc = STANDARD.encode(&padded);
                    let end_cut = END[(v.len() + i) % 3];
                    let end = enc.len().saturating_sub(end_cut);
                    let s = enc.get(START[i]..end).unwrap_or_default();
                    vec![Piece::Bytes(s.as_bytes().to_vec())]
                })
                .collect()
        }
        Transform::Utf16Le | Transform::Utf16Be | Transform::Utf16 => {
            let be = t == Transform::Utf16Be;
            let mut out: Vec<Piece> = pieces
                .into_iter()
                .map(|p| match p {
                    Piece::Bytes(b) => Piece::Bytes(utf16(&b, be)),
                    other => other,
                })
                .collect();
            if t == Transform::Utf16 {
                out.insert(0, Piece::Bytes(vec![0xff, 0xfe]));
            }
            vec![out]
        }
        Transform::Windash => vec![windash(pieces)],
    })
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// A `-` or `/` that starts an option (not after a word character, before
/// one) becomes a [`Piece::Dash`].
fn windash(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out = Vec::new();
    for p in pieces {
        let Piece::Bytes(b) = p else {
            out.push(p);
            continue;
        };
        let Ok(s) = String::from_utf8(b.clone()) else {
            out.push(Piece::Bytes(b));
            continue;
        };
        let chars: Vec<char> = s.chars().collect();
        let mut text = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let prev = if i == 0 { None } else { Some(chars[i - 1]) };
            let next = chars.get(i + 1).copied();
            if (c == '-' || c == '/') && !is_word(prev) && is_word(next) {
                if !text.is_empty() {
                    out.push(Piece::Bytes(std::mem::take(&mut text).into_bytes()));
                }
                out.push(Piece::Dash);
            } else {
                text.push(c);
            }
        }
        if !text.is_empty() {
            out.push(Piece::Bytes(text.into_bytes()));
        }
    }
    out
}

/// Text-position kinds only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    Equals,
    Contains,
    StartsWith,
    EndsWith,
}

impl Position {
    pub fn of(kind: Kind) -> Option<Position> {
        Some(match kind {
            Kind::Equals => Position::Equals,
            Kind::Contains => Position::Contains,
            Kind::StartsWith => Position::StartsWith,
            Kind::EndsWith => Position::EndsWith,
            _ => return None,
        })
    }
}

/// The atom for a transformed value.
pub fn matcher(pieces: Vec<Piece>, mut pos: Position, cased: bool) -> Matcher {
    // Bytes back to text, merging neighbours.
    let mut ps: Vec<PieceText> = Vec::new();
    for p in pieces {
        match p {
            Piece::Bytes(b) => match String::from_utf8(b) {
                Ok(s) => match ps.last_mut() {
                    Some(PieceText::Text(t)) => t.push_str(&s),
                    _ => ps.push(PieceText::Text(s)),
                },
                Err(_) => return Matcher::Never,
            },
            Piece::AnyStr => ps.push(PieceText::AnyStr),
            Piece::AnyChar => ps.push(PieceText::AnyChar),
            Piece::Dash => ps.push(PieceText::Dash),
        }
    }
    ps.retain(|p| !matches!(p, PieceText::Text(t) if t.is_empty()));
    while ps.first() == Some(&PieceText::AnyStr) {
        ps.remove(0);
        pos = match pos {
            Position::Equals => Position::EndsWith,
            Position::StartsWith => Position::Contains,
            p => p,
        };
    }
    while ps.last() == Some(&PieceText::AnyStr) {
        ps.pop();
        pos = match pos {
            Position::Equals => Position::StartsWith,
            Position::EndsWith => Position::Contains,
            p => p,
        };
    }
    if pos == Position::Contains {
        match ps.as_slice() {
            [] => return Matcher::Regex(r"\A".into()),
            [PieceText::Text(t)] if cased || t.is_ascii() => {
                return Matcher::Literal {
                    text: t.clone(),
                    case_insensitive: !cased,
                }
            }
            _ => {}
        }
    }
    // ASCII text folds ASCII case only (`(?i-u:…)`), as the literal
    // automaton does: the same answer for `contains` whichever path an atom
    // takes, and DFAs a fraction of the size of Unicode case folding.
    let mut re = String::new();
    if matches!(pos, Position::Equals | Position::StartsWith) {
        re.push_str(r"\A");
    }
    for p in &ps {
        match p {
            PieceText::Text(t) => {
                let e = regex_syntax::escape(t);
                if cased {
                    re.push_str(&e);
                } else if t.is_ascii() {
                    re.push_str(&format!("(?i-u:{e})"));
                } else {
                    re.push_str(&format!("(?i:{e})"));
                }
            }
            PieceText::AnyStr => re.push_str("(?s:.)*"),
            PieceText::AnyChar => re.push_str("(?s:.)"),
            PieceText::Dash => re.push_str("[\\-/\u{2013}\u{2014}\u{2015}]"),
        }
    }
    if matches!(pos, Position::Equals | Position::EndsWith) {
        re.push_str(r"\z");
    }
    Matcher::Regex(re)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PieceText {
    Text(String),
    AnyStr,
    AnyChar,
    Dash,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Piece {
        Piece::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn wildcards_and_escapes() {
        assert_eq!(
            parse_plain("a*b?c"),
            vec![b("a"), Piece::AnyStr, b("b"), Piece::AnyChar, b("c")]
        );
        assert_eq!(parse_plain(r"a\*b"), vec![b("a*b")]);
        assert_eq!(parse_plain(r"a\?b"), vec![b("a?b")]);
        assert_eq!(parse_plain(r"a\\b"), vec![b(r"a\b")]);
        // `\\*` is an escaped backslash followed by a wildcard.
        assert_eq!(parse_plain(r"a\\*"), vec![b(r"a\"), Piece::AnyStr]);
        // A lone backslash is literal (Windows paths).
        assert_eq!(parse_plain(r"C:\Windows\x"), vec![b(r"C:\Windows\x")]);
    }

    #[test]
    fn edge_stars_fold_into_the_position() {
        let m = |v: &str, p| matcher(parse_plain(v), p, false);
        assert_eq!(
            m("*foo*", Position::Equals),
            Matcher::Literal {
                text: "foo".into(),
                case_insensitive: true
            }
        );
        assert_eq!(
            m("*foo", Position::Equals),
            Matcher::Regex(r"(?i-u:foo)\z".into())
        );
        assert_eq!(
            m("foo*", Position::Equals),
            Matcher::Regex(r"\A(?i-u:foo)".into())
        );
        assert_eq!(
            m("foo", Position::Equals),
            Matcher::Regex(r"\A(?i-u:foo)\z".into())
        );
        assert_eq!(
            m("a*b", Position::Contains),
            Matcher::Regex(r"(?i-u:a)(?s:.)*(?i-u:b)".into())
        );
        assert_eq!(
            m("a?b", Position::StartsWith),
            Matcher::Regex(r"\A(?i-u:a)(?s:.)(?i-u:b)".into())
        );
        assert_eq!(
            matcher(parse_plain("Foo"), Position::Contains, true),
            Matcher::Literal {
                text: "Foo".into(),
                case_insensitive: false
            }
        );
        assert_eq!(
            matcher(parse_plain("F*x"), Position::EndsWith, true),
            Matcher::Regex(r"F(?s:.)*x\z".into())
        );
        assert_eq!(m("", Position::Equals), Matcher::Regex(r"\A\z".into()));
        assert_eq!(m("é", Position::Contains), Matcher::Regex("(?i:é)".into()));
    }

    #[test]
    fn base64_and_offsets() {
        let one = |t| transform(vec![b("ping")], t).unwrap();
        assert_eq!(one(Transform::Base64), vec![vec![b("cGluZw==")]]);
        // Each offset's encoding is a substring of the value encoded at
        // that alignment inside any longer text.
        let offs = one(Transform::Base64Offset);
        assert_eq!(offs.len(), 3);
        for (i, v) in offs.iter().enumerate() {
            let Piece::Bytes(enc) = &v[0] else { panic!() };
            let enc = String::from_utf8(enc.clone()).unwrap();
            let mut text = "x".repeat(i).into_bytes();
            text.extend_from_slice(b"ping and more");
            assert!(STANDARD.encode(&text).contains(&enc), "offset {i}: {enc}");
        }
        assert!(transform(vec![b("a"), Piece::AnyStr], Transform::Base64).is_err());
    }

    #[test]
    fn utf16_variants() {
        assert_eq!(
            transform(vec![b("ab")], Transform::Utf16Le).unwrap(),
            vec![vec![Piece::Bytes(vec![b'a', 0, b'b', 0])]]
        );
        assert_eq!(
            transform(vec![b("ab")], Transform::Utf16Be).unwrap(),
            vec![vec![Piece::Bytes(vec![0, b'a', 0, b'b'])]]
        );
        assert_eq!(
            transform(vec![b("a")], Transform::Utf16).unwrap(),
            vec![vec![
                Piece::Bytes(vec![0xff, 0xfe]),
                Piece::Bytes(vec![b'a', 0])
            ]]
        );
        // BOM bytes are not UTF-8: such a value can never be in event text.
        let v = transform(vec![b("a")], Transform::Utf16).unwrap().remove(0);
        assert_eq!(matcher(v, Position::Contains, false), Matcher::Never);
    }

    #[test]
    fn windash_marks_option_dashes_only() {
        let v = transform(vec![b("cmd -enc x-y /c")], Transform::Windash)
            .unwrap()
            .remove(0);
        assert_eq!(
            v,
            vec![b("cmd "), Piece::Dash, b("enc x-y "), Piece::Dash, b("c")]
        );
        assert_eq!(
            matcher(v, Position::Contains, false),
            Matcher::Regex(
                "(?i-u:cmd )[\\-/\u{2013}\u{2014}\u{2015}](?i-u:enc x\\-y )[\\-/\u{2013}\u{2014}\u{2015}](?i-u:c)"
                    .into()
            )
        );
    }
}
