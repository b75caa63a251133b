//! Tokens of CEL source text, with every literal form of the specification:
//! decimal and hex ints, `u`-suffixed uints, doubles, the four quote styles,
//! raw (`r`) and bytes (`b`) prefixes, and all escapes.

use crate::ast::Span;
use crate::error::ParseError;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An int literal's magnitude; the parser applies a leading `-` so that
    /// `-9223372036854775808` is representable.
    Int(u64),
    Uint(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
    Ident(String),
    /// A backtick-quoted field name: `` a.`b-c` ``.
    QuotedIdent(String),
    Punct(&'static str),
    Eof,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

const PUNCTS: [&str; 25] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",",
    "(", ")", "[", "]", "{", "}", "=",
];

pub fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lx = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
    };
    let mut out = Vec::new();
    loop {
        let t = lx.next()?;
        let eof = t.tok == Tok::Eof;
        out.push(t);
        if eof {
            return Ok(out);
        }
    }
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

fn span(start: usize, end: usize) -> Span {
    Span {
        start: start as u32,
        end: end as u32,
    }
}

impl Lexer<'_> {
    fn err(&self, start: usize, end: usize, msg: impl Into<String>) -> ParseError {
        ParseError {
            message: msg.into(),
            span: span(start, end.max(start + 1).min(self.src.len().max(start + 1))),
        }
    }

    fn peek(&self, off: usize) -> u8 {
        self.bytes.get(self.pos + off).copied().unwrap_or(0)
    }

    fn skip_space(&mut self) {
        loop {
            match self.peek(0) {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.pos += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn next(&mut self) -> Result<Token, ParseError> {
        self.skip_space();
        let start = self.pos;
        if start >= self.bytes.len() {
            return Ok(Token {
                tok: Tok::Eof,
                span: span(start, start),
            });
        }
        let c = self.peek(0);
        let tok = if c.is_ascii_digit() || (c == b'.' && self.peek(1).is_ascii_digit()) {
            self.number()?
        } else if c == b'_' || c.is_ascii_alphabetic() {
            // String prefixes: r, b, and both in either order, any case.
            let mut raw = false;
            let mut bytes = false;
            let mut i = 0;
            while i < 2 {
                match self.peek(i) {
                    b'r' | b'R' if !raw => raw = true,
                    b'b' | b'B' if !bytes => bytes = true,
                    _ => break,
                }
                i += 1;
            }
            if i > 0 && matches!(self.peek(i), b'"' | b'\'') {
                self.pos += i;
                self.string(start, raw, bytes)?
            } else {
                while self.peek(0) == b'_' || self.peek(0).is_ascii_alphanumeric() {
                    self.pos += 1;
                }
                Tok::Ident(self.src[start..self.pos].to_string())
            }
        } else if c == b'"' || c == b'\'' {
            self.string(start, false, false)?
        } else if c == b'`' {
            self.pos += 1;
            let body = self.pos;
            while self.pos < self.bytes.len() && self.bytes[self.pos] != b'`' {
                self.pos += 1;
            }
            if self.pos >= self.bytes.len() {
                return Err(self.err(start, self.pos, "unterminated quoted identifier"));
            }
            let name = self.src[body..self.pos].to_string();
            self.pos += 1;
            Tok::QuotedIdent(name)
        } else {
            let rest = &self.src[start..];
            match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                Some(p) => {
                    self.pos += p.len();
                    Tok::Punct(p)
                }
                None => {
                    let ch = rest.chars().next().unwrap_or('?');
                    return Err(self.err(
                        start,
                        start + ch.len_utf8(),
                        format!("unexpected character '{}'", ch.escape_debug()),
                    ));
                }
            }
        };
        Ok(Token {
            tok,
            span: span(start, self.pos),
        })
    }

    fn number(&mut self) -> Result<Tok, ParseError> {
        let start = self.pos;
        if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X') {
            self.pos += 2;
            let digits = self.pos;
            while self.peek(0).is_ascii_hexdigit() {
                self.pos += 1;
            }
            let text = &self.src[digits..self.pos];
            let v = u64::from_str_radix(text, 16)
                .map_err(|_| self.err(start, self.pos, "invalid hex literal"))?;
            return self.int_suffix(start, v);
        }
        while self.peek(0).is_ascii_digit() {
            self.pos += 1;
        }
        let mut is_double = false;
        if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            is_double = true;
            self.pos += 1;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(0), b'+' | b'-') {
                self.pos += 1;
            }
            if self.peek(0).is_ascii_digit() {
                is_double = true;
                while self.peek(0).is_ascii_digit() {
                    self.pos += 1;
                }
            } else {
                self.pos = save;
            }
        }
        let text = &self.src[start..self.pos];
        if is_double {
            let v: f64 = text
                .parse()
                .map_err(|_| self.err(start, self.pos, "invalid double literal"))?;
            return Ok(Tok::Double(v));
        }
        let v: u64 = text
            .parse()
            .map_err(|_| self.err(start, self.pos, "integer literal out of range"))?;
        self.int_suffix(start, v)
    }

    fn int_suffix(&mut self, start: usize, v: u64) -> Result<Tok, ParseError> {
        if matches!(self.peek(0), b'u' | b'U') {
            self.pos += 1;
            return Ok(Tok::Uint(v));
        }
        if self.peek(0) == b'_' || self.peek(0).is_ascii_alphanumeric() {
            return Err(self.err(start, self.pos + 1, "invalid number literal"));
        }
        Ok(Tok::Int(v))
    }

    fn string(&mut self, start: usize, raw: bool, bytes: bool) -> Result<Tok, ParseError> {
        let q = self.peek(0);
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.pos += if triple { 3 } else { 1 };
        let mut out: Vec<u8> = Vec::new();
        loop {
            if self.pos >= self.bytes.len() {
                return Err(self.err(start, self.pos, "unterminated string literal"));
            }
            let c = self.bytes[self.pos];
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.pos += if triple { 3 } else { 1 };
                break;
            }
            if !triple && (c == b'\n' || c == b'\r') {
                return Err(self.err(start, self.pos, "newline in single-quoted string literal"));
            }
            if c == b'\\' && raw {
                // A raw string keeps the backslash, but `\<quote>` does not
                // end the literal.
                out.push(c);
                self.pos += 1;
                if self.pos < self.bytes.len() {
                    out.push(self.bytes[self.pos]);
                    self.pos += 1;
                }
                continue;
            }
            if c == b'\\' {
                self.escape(&mut out, bytes)?;
                continue;
            }
            out.push(c);
            self.pos += 1;
        }
        if bytes {
            Ok(Tok::Bytes(out))
        } else {
            String::from_utf8(out)
                .map(Tok::String)
                .map_err(|_| self.err(start, self.pos, "string literal is not valid UTF-8"))
        }
    }

    fn hex(&mut self, n: usize, at: usize) -> Result<u32, ParseError> {
        let digits = self.src.get(self.pos..self.pos + n).unwrap_or("");
        if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.err(at, self.pos + n, "invalid hex escape"));
        }
        self.pos += n;
        u32::from_str_radix(digits, 16).map_err(|_| self.err(at, self.pos, "invalid hex escape"))
    }

    fn escape(&mut self, out: &mut Vec<u8>, bytes: bool) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let c = self.peek(0);
        self.pos += 1;
        let simple = match c {
            b'\\' => Some(b'\\'),
            b'?' => Some(b'?'),
            b'"' => Some(b'"'),
            b'\'' => Some(b'\''),
            b'`' => Some(b'`'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(());
        }
        // Octal and \x escapes are a byte in bytes literals and a code point
        // in strings; \u and \U are always code points.
        let (code, is_byte) = match c {
            b'x' | b'X' => (self.hex(2, at)?, bytes),
            b'u' if !bytes => (self.hex(4, at)?, false),
            b'U' if !bytes => (self.hex(8, at)?, false),
            b'0'..=b'3' => {
                let d1 = self.peek(0);
                let d2 = self.peek(1);
                if !(b'0'..=b'7').contains(&d1) || !(b'0'..=b'7').contains(&d2) {
                    return Err(self.err(at, self.pos + 2, "invalid octal escape"));
                }
                self.pos += 2;
                (
                    (c - b'0') as u32 * 64 + (d1 - b'0') as u32 * 8 + (d2 - b'0') as u32,
                    bytes,
                )
            }
            _ => return Err(self.err(at, self.pos, "invalid escape sequence")),
        };
        if is_byte {
            out.push(code as u8);
        } else {
            let ch = char::from_u32(code)
                .ok_or_else(|| self.err(at, self.pos, "escape is not a valid code point"))?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        Ok(())
    }
}
