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
//! fixed window, so no allocation happens however long the text.

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

/// The normalised form of a non-ASCII character.
fn normalise(c: char) -> char {
    if is_space(c) {
        return ' ';
    }
    let mut low = c.to_lowercase();
    match (low.next(), low.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Per ASCII byte: its normalised byte (whitespace to a space, digits to
/// `0`, letters lowered) and whether that is a word character
/// (alphanumeric or `_`), in one table so the common case reads no
/// Unicode data.
const ASCII: [(u8, bool); 128] = {
    let mut t = [(0u8, false); 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let n = match c {
            b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' => b' ',
            b'0'..=b'9' => b'0',
            _ => c.to_ascii_lowercase(),
        };
        t[b] = (n, n.is_ascii_alphanumeric() || n == b'_');
        b += 1;
    }
    t
};

#[inline]
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

/// `h` extended by one stream character: its UTF-8 bytes packed
/// little-endian in `packed` (first byte lowest), `len` of them.
#[inline(always)]
fn fnv_char(mut h: u64, mut packed: u32, len: u8) -> u64 {
    for _ in 0..len {
        h = (h ^ u64::from(packed & 0xff)).wrapping_mul(FNV_PRIME);
        packed >>= 8;
    }
    h
}

/// One ASCII byte of FNV-1a.
#[inline(always)]
fn fnv1(h: u64, b: u32) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
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

const TAG3: u64 = (FNV_OFFSET ^ 3).wrapping_mul(FNV_PRIME);
const TAG4: u64 = (FNV_OFFSET ^ 4).wrapping_mul(FNV_PRIME);
const TAG5: u64 = (FNV_OFFSET ^ 5).wrapping_mul(FNV_PRIME);
const TAG_WORD: u64 = (FNV_OFFSET ^ b'w' as u64).wrapping_mul(FNV_PRIME);

/// What receives a [`FeatureStream`]'s features: any `FnMut(position,
/// bucket)`, called once per feature in the Python side's order, or a
/// sink that takes a character's three n-gram buckets at once
/// ([`Sink::grams`]; the scorer's windows check their chunk once for the
/// three instead of once each).
pub trait Sink {
    /// One feature at stream position `pos`.
    fn feature(&mut self, pos: usize, bucket: u32);

    /// The 3-, 4- and 5-gram features ending at `pos`, in that order.
    #[inline(always)]
    fn grams(&mut self, pos: usize, b3: u32, b4: u32, b5: u32) {
        self.feature(pos, b3);
        self.feature(pos, b4);
        self.feature(pos, b5);
    }
}

impl<F: FnMut(usize, u32)> Sink for F {
    #[inline(always)]
    fn feature(&mut self, pos: usize, bucket: u32) {
        self(pos, bucket)
    }
}

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
///
/// The last five stream characters are kept oldest first, each as its
/// UTF-8 bytes packed in a `u32`, with a bit mask of which are not ASCII:
/// while none of the five is (most text), the three n-gram hashes are
/// twelve one-byte FNV steps with no length loop. ASCII input is read
/// straight from the bytes through one table (no `char` decoding, no
/// UTF-8 re-encoding); a non-ASCII character that normalises to itself
/// keeps its source bytes. The FNV-1a n-gram hashes cannot be rolled
/// (FNV has no inverse step for the oldest byte), so each is rehashed
/// from its tag; that is 12 multiplies a character.
///
/// Measured (issue 19, callgrind, `examples/score_1k`): a 1 KB score went
/// from 347 k to 157 k instructions when the ring of re-encoded `char`
/// buffers (a `% 5` per step, a length loop per byte) became this.
pub struct FeatureStream {
    chars: [u32; 5],
    lens: [u8; 5],
    /// Bit k set: `chars[4 - k]` is not ASCII.
    wide: u8,
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
            chars: [0; 5],
            lens: [0; 5],
            wide: 0,
            pos: 0,
            word: None,
            prev_word: None,
            prev_space: true,
            started: false,
        }
    }

    /// Feeds the next piece of the text.
    pub fn push_str(&mut self, text: &str, f: &mut impl Sink) {
        if !self.started {
            self.started = true;
            self.push(u32::from(b' '), 1, false, f);
        }
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                i += 1;
                let (n, word) = ASCII[usize::from(b)];
                if n == b' ' {
                    if self.prev_space {
                        continue;
                    }
                    self.prev_space = true;
                } else {
                    self.prev_space = false;
                }
                self.push(u32::from(n), 1, word, f);
                continue;
            }
            // A non-ASCII character: `i` is on a boundary of a `str`, so
            // one is there.
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            let len = c.len_utf8();
            let n = normalise(c);
            let (packed, nlen) = if n == c {
                let mut buf = [0u8; 4];
                buf[..len].copy_from_slice(&bytes[i..i + len]);
                (u32::from_le_bytes(buf), len as u8)
            } else {
                let mut buf = [0u8; 4];
                let nlen = n.encode_utf8(&mut buf).len() as u8;
                (u32::from_le_bytes(buf), nlen)
            };
            i += len;
            let is_space = n == ' ';
            if is_space && self.prev_space {
                continue;
            }
            self.prev_space = is_space;
            let word = if n.is_ascii() {
                ASCII[n as usize].1
            } else {
                true
            };
            self.push(packed, nlen, word, f);
        }
    }

    /// Ends the text (its trailing space closes the last word).
    pub fn finish(mut self, f: &mut impl Sink) {
        // An empty text is the stream of one space; any other ends with one.
        if !self.started || !self.prev_space {
            self.push(u32::from(b' '), 1, false, f);
        }
    }

    /// Appends one normalised character (`packed`, `len` UTF-8 bytes;
    /// `word`: whether it is a word character).
    #[inline(always)]
    fn push(&mut self, packed: u32, len: u8, word: bool, f: &mut impl Sink) {
        let i = self.pos;
        if word {
            let h = self.word.unwrap_or(TAG_WORD);
            self.word = Some(if len == 1 {
                fnv1(h, packed)
            } else {
                fnv_char(h, packed, len)
            });
        } else if let Some(w) = self.word.take() {
            f.feature(i, bucket(w));
            if let Some(p) = self.prev_word {
                f.feature(i, bucket((p ^ 0x62).wrapping_mul(FNV_PRIME) ^ w));
            }
            self.prev_word = Some(w);
        }
        let c = &mut self.chars;
        c.copy_within(1..5, 0);
        c[4] = packed;
        let l = &mut self.lens;
        l.copy_within(1..5, 0);
        l[4] = len;
        self.wide = ((self.wide << 1) | u8::from(len > 1)) & 0x1f;
        if i >= 4 {
            let (h3, h4, h5) = if self.wide == 0 {
                self.grams_ascii()
            } else {
                self.grams()
            };
            f.grams(i, bucket(h3), bucket(h4), bucket(h5));
        } else {
            for n in 3..=5 {
                if i + 1 >= n {
                    f.feature(i, bucket(self.gram(n)));
                }
            }
        }
        self.pos += 1;
    }

    /// Hash of the last `n` characters (oldest first) behind tag `n`.
    fn gram(&self, n: usize) -> u64 {
        let mut h = fnv(FNV_OFFSET, &[n as u8]);
        for k in 5 - n..5 {
            h = fnv_char(h, self.chars[k], self.lens[k]);
        }
        h
    }

    /// The 3-, 4- and 5-gram hashes when all five characters are ASCII:
    /// the three FNV chains advance side by side (independent multiplies
    /// the CPU overlaps). The same values as [`FeatureStream::gram`].
    #[inline(always)]
    fn grams_ascii(&self) -> (u64, u64, u64) {
        let c = &self.chars;
        let h5 = fnv1(fnv1(TAG5, c[0]), c[1]);
        let h4 = fnv1(TAG4, c[1]);
        let (h5, h4, h3) = (fnv1(h5, c[2]), fnv1(h4, c[2]), fnv1(TAG3, c[2]));
        let (h5, h4, h3) = (fnv1(h5, c[3]), fnv1(h4, c[3]), fnv1(h3, c[3]));
        let (h5, h4, h3) = (fnv1(h5, c[4]), fnv1(h4, c[4]), fnv1(h3, c[4]));
        (h3, h4, h5)
    }

    /// The same with any character of the five wider than a byte.
    fn grams(&self) -> (u64, u64, u64) {
        let (c, l) = (&self.chars, &self.lens);
        let h5 = fnv_char(fnv_char(TAG5, c[0], l[0]), c[1], l[1]);
        let mut h4 = fnv_char(TAG4, c[1], l[1]);
        let mut h5 = h5;
        let mut h3 = TAG3;
        for k in 2..5 {
            h5 = fnv_char(h5, c[k], l[k]);
            h4 = fnv_char(h4, c[k], l[k]);
            h3 = fnv_char(h3, c[k], l[k]);
        }
        (h3, h4, h5)
    }
}
