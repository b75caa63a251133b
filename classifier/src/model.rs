//! The weights file and the scorer.
//!
//! Layout (little-endian), written by `training/parallax_train/train.py`:
//! `PXIC`, format version `u32`, `dim_bits` `u32`, chunk size `u32`, the
//! int8 scale `f64`, the bias `f64`, then `1 << dim_bits` int8 weights. The
//! baked model is parsed at compile time (`const`), so a malformed or
//! mismatched file fails the build instead of a request.

use crate::features::{self, Sink, CHUNK, DIM_BITS};

/// How many weights a model has.
const DIM: usize = 1 << DIM_BITS;

const HEADER: usize = 4 + 4 + 4 + 4 + 8 + 8;

/// Why a weights file cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("weights file too short for its header")]
    Short,
    #[error("weights file does not start with PXIC")]
    Magic,
    #[error("weights file format version is not 1")]
    Version,
    #[error("weights file's feature size or chunk does not match this scorer's")]
    Shape,
    #[error("weights file has the wrong number of weights for its feature size")]
    Length,
}

/// A quantised logistic-regression model over the hashed features.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    scale: f64,
    bias: f64,
    /// A fixed-size array, so a bucket (below `DIM` by construction) is
    /// read without a bounds check.
    weights: &'static [u8; DIM],
}

const fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

const fn f64_at(b: &[u8], at: usize) -> f64 {
    f64::from_le_bytes([
        b[at],
        b[at + 1],
        b[at + 2],
        b[at + 3],
        b[at + 4],
        b[at + 5],
        b[at + 6],
        b[at + 7],
    ])
}

impl Model {
    /// Reads a weights file (usable in `const`).
    pub const fn parse(bytes: &'static [u8]) -> Result<Model, FormatError> {
        if bytes.len() < HEADER {
            return Err(FormatError::Short);
        }
        if !(bytes[0] == b'P' && bytes[1] == b'X' && bytes[2] == b'I' && bytes[3] == b'C') {
            return Err(FormatError::Magic);
        }
        if u32_at(bytes, 4) != 1 {
            return Err(FormatError::Version);
        }
        if u32_at(bytes, 8) != DIM_BITS || u32_at(bytes, 12) as usize != CHUNK {
            return Err(FormatError::Shape);
        }
        let (_, weights) = bytes.split_at(HEADER);
        let Some(weights) = weights.first_chunk::<DIM>() else {
            return Err(FormatError::Length);
        };
        if weights.len() != bytes.len() - HEADER {
            return Err(FormatError::Length);
        }
        Ok(Model {
            scale: f64_at(bytes, 16),
            bias: f64_at(bytes, 24),
            weights,
        })
    }

    fn logit_of(&self, sum: i64, n: u64) -> f64 {
        if n == 0 {
            return self.bias;
        }
        self.bias + self.scale * (sum as f64) / (n as f64).sqrt()
    }

    /// The model's log-odds for `text`: the highest over windows of two
    /// consecutive chunks of `CHUNK` normalised characters (the whole text
    /// when it is shorter), so the cost is linear in the text and an
    /// injection inside a long benign result keeps its weight.
    pub fn logit(&self, text: &str) -> f64 {
        let mut s = self.stream();
        s.push_str(text);
        s.finish_logit()
    }

    /// Scores a text given in pieces, as if they were joined.
    pub fn stream(&self) -> ScoreStream<'_> {
        ScoreStream {
            model: self,
            features: features::FeatureStream::new(),
            windows: Windows {
                chunk: 0,
                cur: (0, 0),
                prev: None,
                best: f64::NEG_INFINITY,
                any: false,
            },
        }
    }

    /// The probability (0–1) the model gives `text`.
    pub fn score(&self, text: &str) -> f64 {
        1.0 / (1.0 + (-self.logit(text)).exp())
    }
}

/// The baked injection model (`classifier/weights/injection.bin`).
pub const INJECTION: Model = match Model::parse(include_bytes!("../weights/injection.bin")) {
    Ok(m) => m,
    Err(_) => {
        panic!("classifier/weights/injection.bin is not a valid weights file for this scorer")
    }
};

/// Chunk sums and the best window so far. A character's three n-gram
/// features arrive together ([`Sink::grams`]): one chunk check and one
/// count for the three, and the weights are a fixed-size array read
/// without a bounds check. Measured (issue 19, callgrind,
/// `examples/score_1k 1000`): 314.3 M -> 280.4 M instructions for 2,000
/// scores, 157 k -> 140 k a 1 KB score, same score sum.
struct Windows {
    chunk: usize,
    cur: (i64, u64),
    prev: Option<(i64, u64)>,
    best: f64,
    any: bool,
}

impl Windows {
    /// Moves to the chunk of stream position `pos` (positions only grow),
    /// closing the window of every chunk passed.
    #[inline(always)]
    fn seek(&mut self, model: &Model, pos: usize) {
        let k = pos / CHUNK;
        while k > self.chunk {
            if let Some(p) = self.prev {
                self.best = self
                    .best
                    .max(model.logit_of(p.0 + self.cur.0, p.1 + self.cur.1));
            }
            self.prev = Some(self.cur);
            self.cur = (0, 0);
            self.chunk += 1;
        }
    }

    #[inline(always)]
    fn weight(model: &Model, b: u32) -> i64 {
        i64::from(model.weights[b as usize & (DIM - 1)] as i8)
    }

    #[inline]
    fn add(&mut self, model: &Model, pos: usize, b: u32) {
        self.any = true;
        self.seek(model, pos);
        self.cur.0 += Self::weight(model, b);
        self.cur.1 += 1;
    }

    /// Three features at one position: one chunk check, one count. The
    /// same sums as three [`Windows::add`] calls (integer sums).
    #[inline(always)]
    fn add3(&mut self, model: &Model, pos: usize, b3: u32, b4: u32, b5: u32) {
        self.any = true;
        self.seek(model, pos);
        self.cur.0 += Self::weight(model, b3) + Self::weight(model, b4) + Self::weight(model, b5);
        self.cur.1 += 3;
    }
}

/// The windows as the feature stream's [`Sink`].
struct WindowSink<'a, 'm> {
    model: &'m Model,
    windows: &'a mut Windows,
}

impl Sink for WindowSink<'_, '_> {
    #[inline(always)]
    fn feature(&mut self, pos: usize, b: u32) {
        self.windows.add(self.model, pos, b);
    }

    #[inline(always)]
    fn grams(&mut self, pos: usize, b3: u32, b4: u32, b5: u32) {
        self.windows.add3(self.model, pos, b3, b4, b5);
    }
}

/// A text scored piece by piece ([`Model::stream`]): no allocation, one
/// pass.
pub struct ScoreStream<'m> {
    model: &'m Model,
    features: features::FeatureStream,
    windows: Windows,
}

impl ScoreStream<'_> {
    /// Feeds the next piece of the text.
    pub fn push_str(&mut self, text: &str) {
        let mut sink = WindowSink {
            model: self.model,
            windows: &mut self.windows,
        };
        self.features.push_str(text, &mut sink);
    }

    /// The log-odds of the whole text.
    pub fn finish_logit(self) -> f64 {
        let ScoreStream {
            model,
            features,
            mut windows,
        } = self;
        features.finish(&mut WindowSink {
            model,
            windows: &mut windows,
        });
        if !windows.any {
            return model.bias;
        }
        match windows.prev {
            None => model.logit_of(windows.cur.0, windows.cur.1),
            Some(p) => windows
                .best
                .max(model.logit_of(p.0 + windows.cur.0, p.1 + windows.cur.1)),
        }
    }

    /// The probability (0–1) of the whole text.
    pub fn finish(self) -> f64 {
        1.0 / (1.0 + (-self.finish_logit()).exp())
    }
}
