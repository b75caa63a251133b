//! Decoders for the literals a command decodes in place: `$'…'` and
//! `printf`/`echo -e` escapes, base64 (`base64 -d`), hex (`xxd -r -p`).
//! Each is one pass over its input and returns at most as many bytes as it
//! reads, so a decoded payload never grows the work.

/// Decodes the backslash escapes of `$'…'` (bash's ANSI-C quoting).
pub fn ansi_c(raw: &str) -> String {
    escapes(raw, false)
}

/// Decodes `printf`'s format escapes and fills `%s`/`%b`/`%d`/`%c` from
/// `args` (missing ones are empty; extra ones repeat the format, as printf
/// does, up to a bound).
pub fn printf(format: &str, args: &[String]) -> String {
    let mut out = String::new();
    let mut next = 0usize;
    let mut rounds = 0;
    loop {
        let mut chars = format.chars().peekable();
        let mut used_any = false;
        let mut plain = String::new();
        while let Some(c) = chars.next() {
            if c != '%' {
                plain.push(c);
                continue;
            }
            // Flags, width and precision are ignored.
            while chars
                .peek()
                .is_some_and(|c| matches!(c, '-' | '+' | ' ' | '#' | '0'..='9' | '.'))
            {
                chars.next();
            }
            match chars.next() {
                Some('%') => plain.push('%'),
                Some(conv) => {
                    out.push_str(&escapes(&std::mem::take(&mut plain), false));
                    let arg = args.get(next).map(String::as_str).unwrap_or_default();
                    next += 1;
                    used_any = true;
                    match conv {
                        'b' => out.push_str(&escapes(arg, true)),
                        'c' => out.extend(arg.chars().next()),
                        _ => out.push_str(arg),
                    }
                }
                None => plain.push('%'),
            }
        }
        out.push_str(&escapes(&plain, false));
        rounds += 1;
        if !used_any || next >= args.len() || rounds >= 64 {
            break;
        }
    }
    out
}

/// `echo -e` escapes.
pub fn echo_e(raw: &str) -> String {
    escapes(raw, true)
}

/// Backslash escapes: `\n \t \\ \' \" \a \b \e \f \r \v`, `\xHH`, `\NNN`
/// (octal; `\0NNN` when `zero_octal`, as `echo -e` and `%b` write it),
/// `\uHHHH`, `\UHHHHHHHH`. Unknown escapes are kept as written.
fn escapes(raw: &str, zero_octal: bool) -> String {
    let b = raw.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let digits = |i: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut v = 0u32;
        let mut n = 0;
        while n < max {
            match b.get(i + n).and_then(|&c| (c as char).to_digit(radix)) {
                Some(d) => {
                    v = v * radix + d;
                    n += 1;
                }
                None => break,
            }
        }
        (v, n)
    };
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        let simple = match c {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' | b'E' => Some(27),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' => Some(b'\\'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            b'?' => Some(b'?'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        match c {
            b'x' => {
                let (v, n) = digits(i, 2, 16);
                if n == 0 {
                    out.extend_from_slice(b"\\x");
                } else {
                    out.push(v as u8);
                    i += n;
                }
            }
            b'u' | b'U' => {
                let (v, n) = digits(i, if c == b'u' { 4 } else { 8 }, 16);
                match char::from_u32(v).filter(|_| n > 0) {
                    Some(ch) => {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        i += n;
                    }
                    None => {
                        out.push(b'\\');
                        out.push(c);
                    }
                }
            }
            b'0'..=b'7' => {
                let start = if zero_octal && c == b'0' { i } else { i - 1 };
                let (v, n) = digits(start, 3, 8);
                out.push((v & 0xFF) as u8);
                i = start + n;
            }
            _ => {
                out.push(b'\\');
                out.push(c);
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard or URL-safe base64, padding optional, whitespace ignored;
/// `None` when it is not base64 or decodes to something that is not text.
pub fn base64(input: &str) -> Option<String> {
    text(base64_bytes(input)?)
}

/// Base64 of UTF-16LE text, as PowerShell's `-EncodedCommand` takes it;
/// `None` when it is not base64 or not UTF-16 text.
pub fn base64_utf16le(input: &str) -> Option<String> {
    let bytes = base64_bytes(input)?;
    if bytes.len() < 2 || !bytes.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    let s = String::from_utf16(&units).ok()?;
    text(s.into_bytes())
}

fn base64_bytes(input: &str) -> Option<Vec<u8>> {
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    for c in input.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        bits = (bits << 6) | v as u32;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    Some(out)
}

/// Hex digits (`xxd -r -p`), whitespace ignored.
pub fn hex(input: &str) -> Option<String> {
    let digits: Vec<u8> = input.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() / 2);
    for pair in digits.chunks(2) {
        let h = (pair[0] as char).to_digit(16)?;
        let l = (pair[1] as char).to_digit(16)?;
        out.push((h * 16 + l) as u8);
    }
    text(out)
}

/// Decoded bytes as text, if they are mostly printable UTF-8.
fn text(bytes: Vec<u8>) -> Option<String> {
    let s = String::from_utf8(bytes).ok()?;
    let printable = s
        .chars()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .count();
    (!s.is_empty() && printable * 10 >= s.chars().count() * 9).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoders() {
        assert_eq!(ansi_c(r"\x72\x6d \055rf \u002f"), "rm -rf /");
        assert_eq!(ansi_c(r"\162\155"), "rm");
        assert_eq!(printf(r"\x72\x6d -%s /", &["rf".into()]), "rm -rf /");
        assert_eq!(printf("%s\\n", &["a".into(), "b".into()]), "a\nb\n");
        assert_eq!(echo_e(r"\0162m"), "rm");
        assert_eq!(base64("cm0gLXJmIC8=").as_deref(), Some("rm -rf /"));
        assert_eq!(base64("cm0gLXJmIC8").as_deref(), Some("rm -rf /"));
        assert_eq!(base64("not base64!"), None);
        assert_eq!(hex("726d202d7266202f").as_deref(), Some("rm -rf /"));
        assert_eq!(hex("zz"), None);
        assert_eq!(ansi_c("\\"), "\\");
        assert_eq!(ansi_c(r"\x"), "\\x");
        assert_eq!(ansi_c(r"\uZZ"), "\\uZZ");
    }
}
