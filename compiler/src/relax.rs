//! The linear relaxation of a backtracking pattern.
//!
//! A pattern with look-around or backreferences runs in the bounded
//! backtracking engine (fancy-regex), which is slow. Before it runs, a
//! linear regex whose matches contain every match of the pattern (a
//! superset) is asked first: when that does not match, the pattern cannot.
//! The same relaxed text gives the pattern's required literals.
//!
//! Look-around groups are dropped: they only narrow matches. A
//! backreference matches again the text its group matched, which is a
//! string the group's own pattern matches; so it becomes a non-capturing
//! copy of that group (already relaxed), under `(?ims:…)` since adding
//! those flags only widens what the copy matches, wherever it lands. That
//! keeps the relaxation tight where it matters: ATR's "a word repeated
//! twenty times" (`\b([A-Za-z0-9]{4,20})\s+\1\s+\1…`) relaxed to `.*` for
//! each `\1` matched any prose with twenty spaces, so the backtracking
//! engine ran on every benign message (about 680k instructions of the
//! 1.63 M an ATR benign 1 KB message cost). A backreference falls back to
//! `(?s:.*)` (matches anything, so still a superset) when its group is not
//! closed yet, sits inside a dropped look-around, is named in a way this
//! does not read, when the pattern uses verbose mode or turns Unicode off
//! (a copy moved elsewhere could then read differently), or when copies
//! would grow the text past [`MAX_GROWTH`] times the pattern.

/// Copies stop (and `(?s:.*)` takes over) once the relaxed text is this
/// many times the pattern's length (plus a little): nested backreferences
/// to groups made of backreferences would otherwise grow exponentially.
const MAX_GROWTH: usize = 8;

const ANYTHING: &str = "(?s:.*)";

/// What a backreference may be replaced by.
#[derive(Clone)]
enum Group {
    /// Still open at this output offset (just past its opening).
    Open(usize),
    /// Closed: its relaxed text, without the group's own parentheses.
    Closed(String),
    /// Inside a dropped look-around: unknown.
    Unknown,
}

/// A linear-syntax pattern whose matches contain every match of `pattern`
/// (see the module comment). Its required literals are therefore required
/// by `pattern` too.
pub fn relax_backtracking(pattern: &str) -> String {
    let b: Vec<char> = pattern.chars().collect();
    let copies_allowed = !has_unsafe_flags(&b);
    let budget = pattern.len().saturating_mul(MAX_GROWTH) + 1024;
    let mut out = String::with_capacity(pattern.len());
    // Capture groups in number order (group 1 first), with their names.
    let mut groups: Vec<Group> = Vec::new();
    let mut names: Vec<(String, usize)> = Vec::new();
    // Per open parenthesis: the capture group it opened, if any.
    let mut open: Vec<Option<usize>> = Vec::new();
    let mut i = 0;
    let mut in_class = false;
    let backref = |out: &mut String, groups: &[Group], g: Option<usize>| match g
        .and_then(|g| groups.get(g))
    {
        Some(Group::Closed(text)) if copies_allowed && out.len() + text.len() < budget => {
            out.push_str("(?ims:");
            out.push_str(&non_capturing(text));
            out.push(')');
        }
        _ => out.push_str(ANYTHING),
    };
    while i < b.len() {
        let c = b[i];
        if c == '\\' && i + 1 < b.len() {
            let n = b[i + 1];
            if !in_class && n.is_ascii_digit() && n != '0' {
                let mut j = i + 1;
                let mut number = 0usize;
                while j < b.len() && b[j].is_ascii_digit() {
                    number = number
                        .saturating_mul(10)
                        .saturating_add(b[j] as usize - '0' as usize);
                    j += 1;
                }
                backref(&mut out, &groups, number.checked_sub(1));
                i = j;
                continue;
            }
            if !in_class && n == 'k' && b.get(i + 2) == Some(&'<') {
                let end = (i + 3..b.len()).find(|&j| b[j] == '>').unwrap_or(b.len());
                let name: String = b[(i + 3).min(end)..end].iter().collect();
                backref(&mut out, &groups, group_named(&name, &names));
                i = end + 1;
                continue;
            }
            out.push(c);
            out.push(n);
            i += 2;
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push(c);
                // A `]` right after `[` or `[^` is a literal member.
                if b.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if b.get(i + 1) == Some(&']') {
                    out.push(']');
                    i += 1;
                }
                i += 1;
            }
            '(' => {
                let rest: String = b[i..b.len().min(i + 4)].iter().collect();
                if ["(?=", "(?!", "(?<=", "(?<!"]
                    .iter()
                    .any(|p| rest.starts_with(p))
                {
                    let (end, captures) = skip_group(&b, i);
                    // Their groups still take numbers.
                    for name in captures {
                        if let Some(name) = name {
                            names.push((name, groups.len()));
                        }
                        groups.push(Group::Unknown);
                    }
                    i = end;
                    continue;
                }
                if rest.starts_with("(?P=") {
                    let end = (i + 4..b.len()).find(|&j| b[j] == ')').unwrap_or(b.len());
                    let name: String = b[i + 4..end].iter().collect();
                    backref(&mut out, &groups, group_named(&name, &names));
                    i = end + 1;
                    continue;
                }
                match capture_at(&b, i) {
                    Some((name, body)) => {
                        if let Some(name) = name {
                            names.push((name, groups.len()));
                        }
                        out.push_str(&b[i..body].iter().collect::<String>());
                        open.push(Some(groups.len()));
                        groups.push(Group::Open(out.len()));
                        i = body;
                    }
                    None => {
                        out.push(c);
                        open.push(None);
                        i += 1;
                    }
                }
            }
            ')' => {
                if let Some(Some(g)) = open.pop() {
                    if let Some(Group::Open(start)) = groups.get(g) {
                        let text = out.get(*start..).unwrap_or("").to_string();
                        groups[g] = Group::Closed(text);
                    }
                }
                out.push(c);
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The group a `\k<…>` or `(?P=…)` names: by name, or by number.
fn group_named(name: &str, names: &[(String, usize)]) -> Option<usize> {
    if let Ok(n) = name.parse::<usize>() {
        return n.checked_sub(1);
    }
    names.iter().rev().find(|(n, _)| n == name).map(|(_, g)| *g)
}

/// Whether a copied group could read differently where it lands: verbose
/// mode (whitespace and `#` change meaning) or Unicode turned off (`\xFF`
/// is then a byte) anywhere in the pattern.
fn has_unsafe_flags(b: &[char]) -> bool {
    let s: String = b.iter().collect();
    let mut rest = s.as_str();
    while let Some(at) = rest.find("(?") {
        let flags: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
            .collect();
        if flags.contains('x')
            || flags
                .split_once('-')
                .is_some_and(|(_, off)| off.contains('u'))
        {
            return true;
        }
        rest = &rest[at + 2..];
    }
    false
}

/// When a capture group opens at `i`: its name (if named) and the index
/// of its body's first character.
fn capture_at(b: &[char], i: usize) -> Option<(Option<String>, usize)> {
    if b.get(i + 1) != Some(&'?') {
        return Some((None, i + 1));
    }
    let named_from = match (b.get(i + 2), b.get(i + 3)) {
        (Some('P'), Some('<')) => i + 4,
        (Some('<'), Some(c)) if *c != '=' && *c != '!' => i + 3,
        _ => return None,
    };
    let end = (named_from..b.len()).find(|&j| b[j] == '>')?;
    Some((Some(b[named_from..end].iter().collect()), end + 1))
}

/// `text` with every capture group made non-capturing (a copy must not
/// add groups, nor repeat a group's name).
fn non_capturing(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    while i < b.len() {
        let c = b[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(n) = b.get(i + 1) {
                    out.push(*n);
                }
                i += 2;
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                if let Some((_, body)) = capture_at(&b, i) {
                    out.push_str("(?:");
                    i = body;
                    continue;
                }
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The index just past the group opening at `start` (a look-around being
/// dropped), and the capture groups that open inside it, in order, with
/// their names.
fn skip_group(b: &[char], start: usize) -> (usize, Vec<Option<String>>) {
    let mut depth = 0usize;
    let mut captures = Vec::new();
    let mut i = start;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            '\\' => i += 1,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                depth += 1;
                if i > start {
                    if let Some((name, _)) = capture_at(b, i) {
                        captures.push(name);
                    }
                }
            }
            ')' if !in_class => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return (i + 1, captures);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (b.len(), captures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_look_around() {
        assert_eq!(relax_backtracking(r"foo(?!bar)baz"), "foobaz");
        assert_eq!(relax_backtracking(r"(?<=x[)])y"), "y");
        assert_eq!(relax_backtracking(r"[(?=]x"), "[(?=]x");
    }

    #[test]
    fn a_backreference_becomes_a_copy_of_its_group() {
        assert_eq!(relax_backtracking(r"(a+)\1"), "(a+)(?ims:a+)");
        assert_eq!(
            relax_backtracking(r"\b([a-z]{4,20})\s+\1\b"),
            r"\b([a-z]{4,20})\s+(?ims:[a-z]{4,20})\b"
        );
        // Named groups, both spellings of a named backreference, and
        // nested groups made non-capturing in the copy.
        assert_eq!(
            relax_backtracking(r"(?P<w>(x)y)-\k<w>-(?P=w)"),
            "(?P<w>(x)y)-(?ims:(?:x)y)-(?ims:(?:x)y)"
        );
        // A copy of a group holding a backreference holds its copy.
        assert_eq!(
            relax_backtracking(r"(a)(b\1)\2"),
            "(a)(b(?ims:a))(?ims:b(?ims:a))"
        );
    }

    #[test]
    fn falls_back_to_anything_when_a_copy_is_unsafe() {
        // Not closed yet.
        assert_eq!(relax_backtracking(r"(a\1)"), "(a(?s:.*))");
        // Inside a dropped look-around (and the numbering counts it).
        assert_eq!(relax_backtracking(r"(?=(a))(b)\1\2"), "(b)(?s:.*)(?ims:b)");
        // Verbose mode, or Unicode off, anywhere.
        assert_eq!(relax_backtracking(r"(?x)(a b)\1"), "(?x)(a b)(?s:.*)");
        assert_eq!(
            relax_backtracking(r"(?-u:(\xFF))\1"),
            r"(?-u:(\xFF))(?s:.*)"
        );
        // No such group.
        assert_eq!(relax_backtracking(r"(a)\2"), "(a)(?s:.*)");
    }

    #[test]
    fn relaxed_patterns_match_what_the_pattern_matches() {
        let cases = [
            (
                r"(?i)\b([A-Za-z0-9]{4,20})\s+\1\s+\1\b",
                "Spam spam SPAM now",
            ),
            (r"(?i:(abc))\1", "ABCABC"),
            (r"(\w+)@(?=\S)\1", "me@me"),
            (r"(?s)(a.b)\1", "a\nba\nb"),
        ];
        for (pattern, hay) in cases {
            let fancy = fancy_regex::Regex::new(pattern).expect("fancy parses it");
            assert!(fancy.is_match(hay).unwrap(), "{pattern} on {hay:?}");
            let relaxed = relax_backtracking(pattern);
            let linear = regex_automata::meta::Regex::new(&relaxed)
                .expect("the relaxation is linear syntax");
            assert!(linear.is_match(hay), "{relaxed} misses {hay:?}");
        }
        // And it is tight enough to skip prose with short words.
        let relaxed = relax_backtracking(r"(?i)\b([A-Za-z0-9]{4,20})\s+\1\s+\1\s+\1\b");
        let linear = regex_automata::meta::Regex::new(&relaxed).unwrap();
        assert!(!linear.is_match("Summarise the design document and list the open questions"));
    }
}
