//! A shell parser written for detection: it reads what bash would read —
//! quotes, backslashes, `$'…'`, parameter and command substitution,
//! backticks, process substitution, redirects, here-documents, pipelines,
//! lists, subshells and brace groups — and gives up gracefully on the rest.
//!
//! Why our own and not a crate: the maintained Rust shell parsers either
//! carry a grammar engine without a bound on work or recursion (adversarial
//! agent input must not stall the hot path), or are GPL, or unmaintained.
//! This one makes one pass over the bytes (backtick bodies are read twice:
//! once to find their end, once parsed), nests at most [`MAX_DEPTH`] deep
//! and reads at most [`MAX_SCRIPT_BYTES`]; past either limit it stops and
//! marks the parse `truncated` instead of failing. It never panics on any
//! input (tests/shell_parser.rs and the adversarial cases below).

use super::ast::{Command, HereDoc, Parsed, Part, Pipeline, Redirect, Script, Simple, Word};
use super::decode::ansi_c;

/// Nesting depth followed: substitutions, groups, backticks.
pub const MAX_DEPTH: usize = 8;
/// Bytes of one script read; the rest is left unparsed (`truncated`).
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;

/// Parses `src` as a shell script.
pub fn parse(src: &str) -> Parsed {
    parse_at_depth(src, 0)
}

/// Parses `src` as a script nested `depth` levels deep (for `bash -c`
/// strings and decoded payloads, which count against the same limit).
pub fn parse_at_depth(src: &str, depth: usize) -> Parsed {
    let mut truncated = false;
    let mut end = src.len();
    if end > MAX_SCRIPT_BYTES {
        end = MAX_SCRIPT_BYTES;
        while !src.is_char_boundary(end) {
            end -= 1;
        }
        truncated = true;
    }
    let mut p = Parser {
        src: &src.as_bytes()[..end],
        pos: 0,
        depth,
        heredocs: Vec::new(),
        pending: Vec::new(),
        truncated,
    };
    if depth > MAX_DEPTH {
        p.truncated = true;
        return Parsed {
            truncated: true,
            ..Parsed::default()
        };
    }
    let script = p.script(Close::Eof);
    Parsed {
        script,
        heredocs: p.heredocs,
        truncated: p.truncated,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Close {
    Eof,
    Paren,
    Brace,
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    depth: usize,
    heredocs: Vec<HereDoc>,
    /// Here-documents whose bodies start after the next newline:
    /// (delimiter, strip leading tabs, index into `heredocs`).
    pending: Vec<(String, bool, usize)>,
    truncated: bool,
}

/// Words that open or close a compound command; at the start of a command
/// they are skipped and the command after them read.
const RESERVED: [&str; 14] = [
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "esac", "function",
    "in", "select",
];

/// Collects a word's parts, merging adjacent literals of the same quoting.
#[derive(Default)]
struct WordBuilder {
    parts: Vec<Part>,
    buf: Vec<u8>,
    quoted: bool,
}

impl WordBuilder {
    fn push_bytes(&mut self, b: &[u8], quoted: bool) {
        if !self.buf.is_empty() && self.quoted != quoted {
            self.flush();
        }
        self.quoted = quoted;
        self.buf.extend_from_slice(b);
    }
    fn push_str(&mut self, s: &str, quoted: bool) {
        self.push_bytes(s.as_bytes(), quoted);
    }
    fn flush(&mut self) {
        if !self.buf.is_empty() {
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            self.parts.push(Part::Lit {
                text,
                quoted: self.quoted,
            });
            self.buf.clear();
        }
    }
    fn part(&mut self, p: Part) {
        self.flush();
        self.parts.push(p);
    }
    /// Marks an empty quoted string (`''`) as present.
    fn empty_quoted(&mut self) {
        self.flush();
        self.parts.push(Part::Lit {
            text: String::new(),
            quoted: true,
        });
    }
    fn finish(mut self) -> Word {
        self.flush();
        Word { parts: self.parts }
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }
    fn peek_at(&self, n: usize) -> Option<u8> {
        self.src.get(self.pos + n).copied()
    }
    fn starts(&self, s: &str) -> bool {
        self.src[self.pos..].starts_with(s.as_bytes())
    }
    fn eof(&self) -> bool {
        self.pos >= self.src.len()
    }

    /// Length of the UTF-8 character starting at `pos`.
    fn char_len(&self) -> usize {
        let b = self.src[self.pos];
        let n = if b < 0x80 {
            1
        } else if b >= 0xF0 {
            4
        } else if b >= 0xE0 {
            3
        } else {
            2
        };
        n.min(self.src.len() - self.pos)
    }

    fn skip_blanks(&mut self) {
        while let Some(b) = self.peek() {
            if is_blank(b) {
                self.pos += 1;
            } else if b == b'\\' && self.peek_at(1) == Some(b'\n') {
                self.pos += 2;
            } else if b == b'#' {
                while self.peek().is_some_and(|b| b != b'\n') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// Entering a nested construct: false (and the rest skipped) past the limit.
    fn enter(&mut self) -> bool {
        if self.depth >= MAX_DEPTH {
            self.truncated = true;
            self.pos = self.src.len();
            return false;
        }
        self.depth += 1;
        true
    }

    fn at_close(&self, close: Close) -> bool {
        match (close, self.peek()) {
            (Close::Paren, Some(b')')) => true,
            (Close::Brace, Some(b'}')) => {
                matches!(
                    self.peek_at(1),
                    None | Some(b' ' | b'\t' | b'\n' | b';' | b')' | b'&' | b'|')
                )
            }
            _ => false,
        }
    }

    fn script(&mut self, close: Close) -> Script {
        let mut script = Script::default();
        loop {
            self.skip_blanks();
            let Some(b) = self.peek() else { break };
            if self.at_close(close) {
                break;
            }
            let set_sep = |script: &mut Script, sep: &'static str| {
                if let Some(last) = script.items.last_mut() {
                    last.1 = sep;
                }
            };
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.read_heredocs();
                    set_sep(&mut script, ";");
                    continue;
                }
                b';' => {
                    self.pos += 1;
                    if self.peek() == Some(b';') {
                        self.pos += 1;
                    }
                    set_sep(&mut script, ";");
                    continue;
                }
                b'&' if self.peek_at(1) == Some(b'&') => {
                    self.pos += 2;
                    set_sep(&mut script, "&&");
                    continue;
                }
                b'&' if self.peek_at(1) != Some(b'>') => {
                    self.pos += 1;
                    set_sep(&mut script, "&");
                    continue;
                }
                b'|' if self.peek_at(1) == Some(b'|') => {
                    self.pos += 2;
                    set_sep(&mut script, "||");
                    continue;
                }
                b')' | b'|' => {
                    // Stray: skip it so the parse always moves on.
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            let before = self.pos;
            let pipeline = self.pipeline(close);
            if !pipeline.commands.is_empty() {
                script.items.push((pipeline, ";"));
            }
            if self.pos == before {
                self.pos += self.char_len();
            }
        }
        script
    }

    fn pipeline(&mut self, close: Close) -> Pipeline {
        let mut p = Pipeline::default();
        loop {
            if let Some(c) = self.command(close) {
                p.commands.push(c);
            }
            self.skip_blanks();
            if self.peek() == Some(b'|') && self.peek_at(1) != Some(b'|') {
                self.pos += 1;
                if self.peek() == Some(b'&') {
                    self.pos += 1;
                }
                loop {
                    self.skip_blanks();
                    if self.peek() == Some(b'\n') {
                        self.pos += 1;
                        self.read_heredocs();
                    } else {
                        break;
                    }
                }
                continue;
            }
            break;
        }
        p
    }

    fn command(&mut self, close: Close) -> Option<Command> {
        self.skip_blanks();
        if self.at_close(close) {
            return None;
        }
        match self.peek()? {
            b'(' if self.peek_at(1) != Some(b'(') => {
                self.pos += 1;
                if !self.enter() {
                    return None;
                }
                let body = self.script(Close::Paren);
                self.depth -= 1;
                if self.peek() == Some(b')') {
                    self.pos += 1;
                }
                let redirects = self.trailing_redirects();
                return Some(Command::Group {
                    body,
                    subshell: true,
                    redirects,
                });
            }
            b'{' if matches!(self.peek_at(1), Some(b' ' | b'\t' | b'\n')) => {
                self.pos += 1;
                if !self.enter() {
                    return None;
                }
                let body = self.script(Close::Brace);
                self.depth -= 1;
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                }
                let redirects = self.trailing_redirects();
                return Some(Command::Group {
                    body,
                    subshell: false,
                    redirects,
                });
            }
            _ => {}
        }
        let mut s = Simple::default();
        loop {
            self.skip_blanks();
            let Some(b) = self.peek() else { break };
            if self.at_close(close) || matches!(b, b';' | b'|' | b'\n' | b')') {
                break;
            }
            if b == b'&' && self.peek_at(1) != Some(b'>') {
                break;
            }
            if b == b'(' {
                // `name()` of a function definition; anything else ends the command.
                if self.peek_at(1) == Some(b')') {
                    self.pos += 2;
                    continue;
                }
                break;
            }
            if let Some(r) = self.redirect() {
                s.redirects.push(r);
                continue;
            }
            let before = self.pos;
            let word = self.word(false);
            if self.pos == before {
                self.pos += self.char_len();
                continue;
            }
            if s.words.is_empty() {
                if let Some((name, value)) = split_assignment(&word) {
                    s.assigns.push((name, value));
                    continue;
                }
                if s.assigns.is_empty() && is_reserved(&word) {
                    continue;
                }
            }
            s.words.push(word);
        }
        if s.words.is_empty() && s.assigns.is_empty() && s.redirects.is_empty() {
            None
        } else {
            Some(Command::Simple(s))
        }
    }

    fn trailing_redirects(&mut self) -> Vec<Redirect> {
        let mut out = Vec::new();
        loop {
            self.skip_blanks();
            match self.redirect() {
                Some(r) => out.push(r),
                None => break,
            }
        }
        out
    }

    /// A redirect at the current position, if there is one (`<(` is a word).
    fn redirect(&mut self) -> Option<Redirect> {
        let start = self.pos;
        let mut fd: Option<u32> = None;
        let mut i = self.pos;
        while i < self.src.len() && self.src[i].is_ascii_digit() && i - start < 4 {
            i += 1;
        }
        if i > start && matches!(self.src.get(i), Some(b'<' | b'>')) {
            fd = std::str::from_utf8(&self.src[start..i])
                .ok()
                .and_then(|s| s.parse().ok());
            self.pos = i;
        }
        const OPS: [&str; 12] = [
            "&>>", "<<<", "<<-", "&>", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">",
        ];
        let op = OPS.iter().find(|op| self.starts(op)).copied();
        let Some(op) = op else {
            self.pos = start;
            return None;
        };
        if (op == "<" || op == ">") && self.peek_at(1) == Some(b'(') {
            self.pos = start;
            return None;
        }
        self.pos += op.len();
        self.skip_blanks();
        let target = self.word(false);
        let mut heredoc = None;
        if op == "<<" || op == "<<-" {
            let (delim, quoted) = literal_text(&target);
            let idx = self.heredocs.len();
            self.heredocs.push(HereDoc {
                body: String::new(),
                literal: quoted,
            });
            self.pending.push((delim, op == "<<-", idx));
            heredoc = Some(idx);
        }
        Some(Redirect {
            fd,
            op,
            target,
            heredoc,
        })
    }

    /// After a newline: the bodies of the here-documents opened on the line.
    fn read_heredocs(&mut self) {
        for (delim, strip, idx) in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            while !self.eof() {
                let end = self.src[self.pos..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.src.len(), |n| self.pos + n);
                let line = String::from_utf8_lossy(&self.src[self.pos..end]);
                self.pos = (end + 1).min(self.src.len());
                let cmp = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if cmp == delim {
                    break;
                }
                body.push_str(cmp);
                body.push('\n');
            }
            if let Some(h) = self.heredocs.get_mut(idx) {
                h.body = body;
            }
        }
    }

    /// One word. `in_brace`: inside `${name:-…}`, where `}` ends the word
    /// and blanks belong to it.
    fn word(&mut self, in_brace: bool) -> Word {
        let mut w = WordBuilder::default();
        while let Some(b) = self.peek() {
            if in_brace {
                if b == b'}' {
                    break;
                }
            } else if is_blank(b)
                || matches!(b, b'\n' | b';' | b'&' | b'|' | b')' | b'(')
                || ((b == b'<' || b == b'>') && self.peek_at(1) != Some(b'('))
            {
                break;
            }
            match b {
                b'\\' => {
                    self.pos += 1;
                    if self.peek() == Some(b'\n') {
                        self.pos += 1;
                    } else if !self.eof() {
                        let n = self.char_len();
                        w.push_bytes(&self.src[self.pos..self.pos + n], true);
                        self.pos += n;
                    }
                }
                b'\'' => {
                    self.pos += 1;
                    let end = self.find(b'\'');
                    if end == self.pos {
                        w.empty_quoted();
                    }
                    w.push_bytes(&self.src[self.pos..end], true);
                    self.pos = (end + 1).min(self.src.len());
                }
                b'"' => {
                    self.pos += 1;
                    self.dquote(&mut w);
                }
                b'$' => self.dollar(&mut w, false),
                b'`' => self.backtick(&mut w, false),
                b'<' | b'>' => {
                    let output = b == b'>';
                    self.pos += 2;
                    if !self.enter() {
                        break;
                    }
                    let script = self.script(Close::Paren);
                    self.depth -= 1;
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                    }
                    w.part(Part::Process { script, output });
                }
                _ => {
                    let n = self.char_len();
                    w.push_bytes(&self.src[self.pos..self.pos + n], false);
                    self.pos += n;
                }
            }
        }
        w.finish()
    }

    /// Position of the next `b` from `pos`, or the end.
    fn find(&self, b: u8) -> usize {
        self.src[self.pos..]
            .iter()
            .position(|&c| c == b)
            .map_or(self.src.len(), |n| self.pos + n)
    }

    /// The inside of `"…"`, after the opening quote; consumes the closing one.
    fn dquote(&mut self, w: &mut WordBuilder) {
        let start = self.pos;
        let mut any = false;
        while let Some(b) = self.peek() {
            match b {
                b'"' => {
                    self.pos += 1;
                    if !any && self.pos - 1 == start {
                        w.empty_quoted();
                    }
                    return;
                }
                b'\\' => {
                    match self.peek_at(1) {
                        Some(b'\n') => self.pos += 2,
                        Some(c @ (b'$' | b'`' | b'"' | b'\\')) => {
                            w.push_bytes(&[c], true);
                            self.pos += 2;
                        }
                        _ => {
                            w.push_bytes(b"\\", true);
                            self.pos += 1;
                        }
                    }
                    any = true;
                }
                b'$' => {
                    self.dollar(w, true);
                    any = true;
                }
                b'`' => {
                    self.backtick(w, true);
                    any = true;
                }
                _ => {
                    let n = self.char_len();
                    w.push_bytes(&self.src[self.pos..self.pos + n], true);
                    self.pos += n;
                    any = true;
                }
            }
        }
    }

    /// `$…` at the current position.
    fn dollar(&mut self, w: &mut WordBuilder, quoted: bool) {
        self.pos += 1;
        match self.peek() {
            Some(b'\'') if !quoted => {
                self.pos += 1;
                let start = self.pos;
                while let Some(b) = self.peek() {
                    if b == b'\\' {
                        self.pos = (self.pos + 2).min(self.src.len());
                    } else if b == b'\'' {
                        break;
                    } else {
                        self.pos += 1;
                    }
                }
                let raw = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
                self.pos = (self.pos + 1).min(self.src.len());
                let text = ansi_c(&raw);
                if text.is_empty() {
                    w.empty_quoted();
                }
                w.push_str(&text, true);
            }
            Some(b'"') if !quoted => {
                self.pos += 1;
                self.dquote(w);
            }
            Some(b'(') if self.peek_at(1) == Some(b'(') => {
                let start = self.pos - 1;
                let mut depth = 0usize;
                while let Some(b) = self.peek() {
                    self.pos += 1;
                    if b == b'(' {
                        depth += 1;
                    } else if b == b')' {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                }
                let raw = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
                w.part(Part::Raw(raw));
            }
            Some(b'(') => {
                self.pos += 1;
                if !self.enter() {
                    return;
                }
                let script = self.script(Close::Paren);
                self.depth -= 1;
                if self.peek() == Some(b')') {
                    self.pos += 1;
                }
                w.part(Part::Command { script, quoted });
            }
            Some(b'{') => {
                self.pos += 1;
                self.brace_param(w, quoted);
            }
            Some(b) if is_name_start(b) => {
                let start = self.pos;
                while self.peek().is_some_and(is_name) {
                    self.pos += 1;
                }
                let name = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
                w.part(Part::Var {
                    name,
                    quoted,
                    default: None,
                });
            }
            Some(b) if b.is_ascii_digit() || b"@*#?$!-".contains(&b) => {
                self.pos += 1;
                w.part(Part::Var {
                    name: (b as char).to_string(),
                    quoted,
                    default: None,
                });
            }
            _ => w.push_bytes(b"$", quoted),
        }
    }

    /// `${…}` after the `${`.
    fn brace_param(&mut self, w: &mut WordBuilder, quoted: bool) {
        let start = self.pos;
        while self.peek().is_some_and(is_name) {
            self.pos += 1;
        }
        let name = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
        if !name.is_empty() && self.peek() == Some(b'}') {
            self.pos += 1;
            w.part(Part::Var {
                name,
                quoted,
                default: None,
            });
            return;
        }
        let op_len = if self.starts(":-") || self.starts(":=") {
            2
        } else if matches!(self.peek(), Some(b'-' | b'=')) {
            1
        } else {
            0
        };
        // `${v:?msg}`, `${v?}`, `${v%suffix}`, `${v#prefix}` (and `%%`, `##`)
        // are, for detection, the variable itself: the message or pattern
        // is read and dropped.
        let drop_len = if self.starts(":?") || self.starts("%%") || self.starts("##") {
            2
        } else if matches!(self.peek(), Some(b'?' | b'%' | b'#')) {
            1
        } else {
            0
        };
        if !name.is_empty() && (op_len > 0 || drop_len > 0) {
            // A default's word is kept as the fallback; a dropped one is
            // parsed only to find the closing `}`.
            let keeps_word = op_len > 0;
            self.pos += if keeps_word { op_len } else { drop_len };
            if !self.enter() {
                return;
            }
            let word = self.word(true);
            self.depth -= 1;
            if self.peek() == Some(b'}') {
                self.pos += 1;
            }
            w.part(Part::Var {
                name,
                quoted,
                default: keeps_word.then_some(word),
            });
            return;
        }
        // Any other form is kept as written, up to its matching brace.
        let mut depth = 1usize;
        while let Some(b) = self.peek() {
            self.pos += 1;
            if b == b'{' {
                depth += 1;
            } else if b == b'}' {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
        }
        let raw = format!("${{{}", String::from_utf8_lossy(&self.src[start..self.pos]));
        w.part(Part::Raw(raw));
    }

    /// `` `…` ``: the body unescaped, then parsed as a script of its own.
    fn backtick(&mut self, w: &mut WordBuilder, quoted: bool) {
        self.pos += 1;
        let mut body = Vec::new();
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'`' => break,
                b'\\' if matches!(self.peek(), Some(b'$' | b'`' | b'\\')) => {
                    body.push(self.src[self.pos]);
                    self.pos += 1;
                }
                _ => body.push(b),
            }
        }
        if self.depth >= MAX_DEPTH {
            self.truncated = true;
            return;
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        let mut sub = Parser {
            src: body.as_bytes(),
            pos: 0,
            depth: self.depth + 1,
            heredocs: std::mem::take(&mut self.heredocs),
            pending: Vec::new(),
            truncated: false,
        };
        let script = sub.script(Close::Eof);
        self.heredocs = sub.heredocs;
        self.truncated |= sub.truncated;
        w.part(Part::Command { script, quoted });
    }
}

/// The text of a word made only of literals, and whether any was quoted.
pub fn literal_text(w: &Word) -> (String, bool) {
    let mut s = String::new();
    let mut quoted = false;
    for p in &w.parts {
        match p {
            Part::Lit { text, quoted: q } => {
                s.push_str(text);
                quoted |= q;
            }
            Part::Raw(r) => s.push_str(r),
            Part::Var { name, .. } => {
                s.push('$');
                s.push_str(name);
            }
            _ => {}
        }
    }
    (s, quoted)
}

fn is_reserved(w: &Word) -> bool {
    match w.parts.as_slice() {
        [Part::Lit {
            text,
            quoted: false,
        }] => RESERVED.contains(&text.as_str()) || text == "}" || text == "{",
        _ => false,
    }
}

/// `NAME=value` (an unquoted name, then `=`) as an assignment.
fn split_assignment(w: &Word) -> Option<(String, Word)> {
    let Some(Part::Lit {
        text,
        quoted: false,
    }) = w.parts.first()
    else {
        return None;
    };
    let (name, rest) = text.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    if name.is_empty() || !name.bytes().all(is_name) || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let mut parts = Vec::with_capacity(w.parts.len());
    if !rest.is_empty() {
        parts.push(Part::Lit {
            text: rest.to_string(),
            quoted: false,
        });
    }
    parts.extend(w.parts[1..].iter().cloned());
    Some((name.to_string(), Word { parts }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<String> {
        let p = parse(src);
        let mut out = Vec::new();
        for (pl, _) in &p.script.items {
            for c in &pl.commands {
                if let Command::Simple(s) = c {
                    for w in &s.words {
                        out.push(literal_text(w).0);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn quoting_is_removed() {
        assert_eq!(words(r#""rm" -rf '/'"#), ["rm", "-rf", "/"]);
        assert_eq!(words(r"\rm -r\f /"), ["rm", "-rf", "/"]);
        assert_eq!(words(r"r''m -rf /"), ["rm", "-rf", "/"]);
        assert_eq!(words(r"$'\x72\x6d' -rf /"), ["rm", "-rf", "/"]);
        assert_eq!(words("a ''"), ["a", ""]);
    }

    #[test]
    fn lists_pipelines_and_groups() {
        let p = parse("a | b && (c; d) || { e; } & f\ng");
        assert_eq!(p.script.items.len(), 5);
        assert_eq!(p.script.items[0].0.commands.len(), 2);
        assert_eq!(p.script.items[0].1, "&&");
        assert_eq!(p.script.items[1].1, "||");
        assert_eq!(p.script.items[2].1, "&");
    }

    #[test]
    fn heredoc_bodies() {
        let p = parse("bash <<'EOF'\nrm -rf /\nEOF\necho done");
        assert_eq!(p.heredocs.len(), 1);
        assert_eq!(p.heredocs[0].body, "rm -rf /\n");
        assert!(p.heredocs[0].literal);
        assert_eq!(p.script.items.len(), 2);
    }

    #[test]
    fn adversarial_inputs_end() {
        let deep = "$(".repeat(10_000);
        assert!(parse(&deep).truncated);
        let ticks = "`".repeat(10_001);
        parse(&ticks);
        let braces = "${a:-".repeat(5000);
        assert!(parse(&braces).truncated);
        let big = "a".repeat(MAX_SCRIPT_BYTES + 10);
        assert!(parse(&big).truncated);
        for s in [
            "\\", "'", "\"", "$", "${", "$((", "<<", "2>", "(((", ")))", "{ ", "é\\", "\"\\",
        ] {
            parse(s);
        }
    }
}
