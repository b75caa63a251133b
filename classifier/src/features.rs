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
            let (buf, len) = &self.chars[(self.next + 5 - 1 - k) % 5];
            h = fnv(h, &buf[..usize::from(*len)]);
        }
        h
    }
}

/// Calls `f(position, bucket)` for every feature occurrence of `text`, in
/// the order the Python side yields them.
pub fn for_each_feature(text: &str, mut f: impl FnMut(usize, u32)) {
    let mut state = Stream {
        ring: Ring {
            chars: [([0; 4], 0); 5],
            next: 0,
        },
        pos: 0,
        word: None,
        prev_word: None,
    };
    state.push(' ', &mut f);
    let mut prev_space = true;
    for c in text.chars() {
        let n = normalise(c);
        if n == ' ' && prev_space {
            continue;
        }
        prev_space = n == ' ';
        state.push(n, &mut f);
    }
    if !prev_space {
        state.push(' ', &mut f);
    }
}

struct Stream {
    ring: Ring,
    pos: usize,
    word: Option<u64>,
    prev_word: Option<u64>,
}

impl Stream {
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
        for n in 3..=5 {
            if i + 1 >= n {
                f(i, bucket(self.ring.gram(n)));
            }
        }
        self.pos += 1;
    }
}
