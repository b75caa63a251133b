"""Feature hashing for the injection classifier.

This is the specification the Rust scorer (`classifier/src/features.rs`)
implements byte for byte; `classifier/tests/vectors.json`, written by the
pipeline, pins the two together. Change one side and the test fails.

Text is normalised one character at a time (no allocation in Rust):
whitespace (the fixed list `WHITESPACE`) becomes one space and runs of it
collapse, ASCII digits become `0`, and a character whose lower case is one
character is lowered. The stream starts with a space and ends with one.
Features are hashed character 3-, 4- and 5-grams of that stream and word
1- and 2-grams, a word being a run of ASCII letters, digits, `_` or any
non-ASCII non-space character. Every feature occurrence counts once; the
vector is the counts divided by the square root of their total, so a
linear score is a sum of weights and one division.
"""

MASK = (1 << 64) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
DIM_BITS = 18
DIM = 1 << DIM_BITS
CHUNK = 1024  # stream characters per chunk; a window is two chunks

WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)


def fnv_step(h, byte):
    return ((h ^ byte) * FNV_PRIME) & MASK


def fnv_bytes(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def finalize(h):
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    h ^= h >> 33
    return h


def bucket(h):
    return finalize(h) >> (64 - DIM_BITS)


def normalise_char(c):
    if c in WHITESPACE:
        return " "
    if "0" <= c <= "9":
        return "0"
    low = c.lower()
    return low if len(low) == 1 else c


def stream(text):
    """The normalised character stream: leading and trailing space, runs of
    whitespace collapsed."""
    out = [" "]
    for c in text:
        n = normalise_char(c)
        if n == " " and out[-1] == " ":
            continue
        out.append(n)
    if out[-1] != " ":
        out.append(" ")
    return out


def is_word_char(c):
    o = ord(c)
    if o >= 0x80:
        return c != " "
    return c.isalnum() or c == "_"


def features(text):
    """Yields (stream position, bucket) for every feature occurrence, in
    the order the Rust scorer produces them."""
    chars = stream(text)
    encoded = [c.encode("utf-8") for c in chars]
    word_h = None  # raw hash of the word being read
    prev_word = None  # raw hash of the previous word
    for i, c in enumerate(chars):
        # Word grams end at the first character after the word.
        if is_word_char(c):
            if word_h is None:
                word_h = fnv_step(FNV_OFFSET, 0x77)
            word_h = fnv_bytes(word_h, encoded[i])
        elif word_h is not None:
            yield i, bucket(word_h)
            if prev_word is not None:
                yield i, bucket(((prev_word ^ 0x62) * FNV_PRIME ^ word_h) & MASK)
            prev_word = word_h
            word_h = None
        for n in (3, 4, 5):
            if i + 1 >= n:
                h = fnv_step(FNV_OFFSET, n)
                for j in range(i + 1 - n, i + 1):
                    h = fnv_bytes(h, encoded[j])
                yield i, bucket(h)


def chunk_sums(text):
    """Per chunk of `CHUNK` stream positions: the buckets seen (with
    repeats), for training and for windowed scoring."""
    chunks = []
    for pos, b in features(text):
        k = pos // CHUNK
        while len(chunks) <= k:
            chunks.append([])
        chunks[k].append(b)
    return chunks
