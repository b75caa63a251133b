//! Feature hashing, identical to `training/parallax_train/features.py`
//! (the specification; `tests/vectors.rs` pins the two together on
//! vectors the pipeline writes).
//!
//! The text becomes a stream of normalised characters — a leading space,
//! whitespace runs collapsed to one space, ASCII digits as `0`, characters
//! lowered when their lower case is one character, a trailing space — and
//! every character of it ends up to three character n-grams (3, 4, 5) and,
//! when it closes a word, a word unigram and bigram. Each is hashed with
//! FNV-1a (64-bit) behind a one-byte tag, mixed by a finaliser, and its top
//! `DIM_BITS` bits name its weight. The last five characters live in a
//! fixed ring, so no allocation happens however long the text.

pub const DIM_BITS: u32 = 18;
pub const CHUNK: usize = 1024;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The characters treated as whitespace (Python's and Rust's own
/// definitions differ, so both sides use this list).
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{0b}'
            | '\u{0c}'
            | '\r'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

fn normalise(c: char) -> char {
    // ASCII, most of every text: the same answers without the Unicode
    // tables.
    if c.is_ascii() {
        return match c {
            '\t' | '\n' | '\u{0b}' | '\u{0c}' | '\r' | ' ' => ' ',
            '0'..='9' => '0',
            _ => c.to_ascii_lowercase(),
        };
    }
    if is_space(c) {
        return ' ';
    }
    if c.is_ascii_digit() {
        return '0';
    }
    let mut low = c.to_lowercase();
    match (low.next(), low.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

fn is_word_char(c: char) -> bool {
    if c as u32 >= 0x80 {
        c != ' '
    } else {
        c.is_ascii_alphanumeric() || c == '_'
    }
}

#[inline]
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

#[inline]
fn bucket(mut h: u64) -> u32 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h >> (64 - DIM_BITS)) as u32
}

/// The last five stream characters, UTF-8 encoded.
struct Ring {
    chars: [([u8; 4], u8); 5],
    next: usize,
}

impl Ring {
    fn push(&mut self, c: char) {
        let mut buf = [0u8; 4];
        let len = c.encode_utf8(&mut buf).len() as u8;
        self.chars[self.next] = (buf, len);
        self.next = (self.next + 1) % 5;
    }

    /// Hash of the last `n` characters (oldest first) behind tag `n`.
    fn gram(&self, n: usize) -> u64 {
        let mut h = fnv(FNV_OFFSET, &[n as u8]);
        for k in (0..n).rev() {
            h = self.step(h, k);
        }
        h
    }

    /// `h` extended by the character `k` places before the newest.
    #[inline(always)]
    fn step(&self, h: u64, k: usize) -> u64 {
        let (buf, len) = &self.chars[(self.next + 4 - k) % 5];
        fnv(h, &buf[..usize::from(*len)])
    }

    /// The 3-, 4- and 5-gram hashes ending at the newest character, once
    /// five are in the ring: the three FNV chains advance side by side
    /// (independent multiplies the CPU overlaps) instead of one after the
    /// other. The same values as [`Ring::gram`].
    #[inline(always)]
    fn grams(&self) -> (u64, u64, u64) {
        let mut h5 = self.step(TAG5, 4);
        h5 = self.step(h5, 3);
        let mut h4 = self.step(TAG4, 3);
        let mut h3 = TAG3;
        for k in (0..3).rev() {
            h5 = self.step(h5, k);
            h4 = self.step(h4, k);
            h3 = self.step(h3, k);
        }
        (h3, h4, h5)
    }
}

const TAG3: u64 = (FNV_OFFSET ^ 3).wrapping_mul(FNV_PRIME);
const TAG4: u64 = (FNV_OFFSET ^ 4).wrapping_mul(FNV_PRIME);
const TAG5: u64 = (FNV_OFFSET ^ 5).wrapping_mul(FNV_PRIME);

/// Calls `f(position, bucket)` for every feature occurrence of `text`, in
/// the order the Python side yields them.
pub fn for_each_feature(text: &str, mut f: impl FnMut(usize, u32)) {
    let mut s = FeatureStream::new();
    s.push_str(text, &mut f);
    s.finish(&mut f);
}

/// The features of a text given in pieces (a field with several values,
/// scored as if joined): the same features as the joined text, without
/// joining it.
pub struct FeatureStream {
    ring: Ring,
    pos: usize,
    word: Option<u64>,
    prev_word: Option<u64>,
    prev_space: bool,
    started: bool,
}

impl Default for FeatureStream {
    fn default() -> Self {
        FeatureStream::new()
    }
}

impl FeatureStream {
    pub const fn new() -> FeatureStream {
        FeatureStream {
            ring: Ring {
                chars: [([0; 4], 0); 5],
                next: 0,
            },
            pos: 0,
            word: None,
            prev_word: None,
            prev_space: true,
            started: false,
        }
    }

    /// Feeds the next piece of the text.
    pub fn push_str(&mut self, text: &str, f: &mut impl FnMut(usize, u32)) {
        if !self.started {
            self.started = true;
            self.push(' ', f);
        }
        for c in text.chars() {
            let n = normalise(c);
            if n == ' ' && self.prev_space {
                continue;
            }
            self.prev_space = n == ' ';
            self.push(n, f);
        }
    }

    /// Ends the text (its trailing space closes the last word).
    pub fn finish(mut self, f: &mut impl FnMut(usize, u32)) {
        // An empty text is the stream of one space; any other ends with one.
        if !self.started || !self.prev_space {
            self.push(' ', f);
        }
    }

    #[inline]
    fn push(&mut self, c: char, f: &mut impl FnMut(usize, u32)) {
        let i = self.pos;
        if is_word_char(c) {
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf).as_bytes();
            let h = self.word.unwrap_or_else(|| fnv(FNV_OFFSET, b"w"));
            self.word = Some(fnv(h, bytes));
        } else if let Some(w) = self.word.take() {
            f(i, bucket(w));
            if let Some(p) = self.prev_word {
                f(i, bucket((p ^ 0x62).wrapping_mul(FNV_PRIME) ^ w));
            }
            self.prev_word = Some(w);
        }
        self.ring.push(c);
        if i >= 4 {
            let (h3, h4, h5) = self.ring.grams();
            f(i, bucket(h3));
            f(i, bucket(h4));
            f(i, bucket(h5));
        } else {
            for n in 3..=5 {
                if i + 1 >= n {
                    f(i, bucket(self.ring.gram(n)));
                }
            }
        }
        self.pos += 1;
    }
}
