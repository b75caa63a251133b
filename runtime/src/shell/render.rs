//! How an expanded word is written back in the canonical rendering of a
//! command: as itself when the shell would read it back as one word, else
//! in single quotes. Quoting matters for rules: `echo 'rm -rf /'` must stay
//! an argument of `echo`, not become an `rm` command in the rendering.

/// Characters that make a word need quoting to be read back as one word.
fn needs_quotes(s: &str) -> bool {
    s.is_empty()
        || s.bytes().any(|b| {
            matches!(
                b,
                b' ' | b'\t'
                    | b'\n'
                    | b'\r'
                    | b';'
                    | b'&'
                    | b'|'
                    | b'<'
                    | b'>'
                    | b'('
                    | b')'
                    | b'\''
                    | b'"'
                    | b'`'
                    | b'\\'
            )
        })
}

/// `s` as one shell word.
pub fn quote(s: &str) -> String {
    if !needs_quotes(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting() {
        assert_eq!(quote("rm"), "rm");
        assert_eq!(quote("/*"), "/*");
        assert_eq!(quote("rm -rf /"), "'rm -rf /'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
