//! A fixed-size bit set, reused across evaluations so that recording which
//! atoms hit never allocates.

#[derive(Debug, Clone, Default)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    pub fn new(bits: usize) -> BitSet {
        BitSet {
            words: vec![0; bits.div_ceil(64)],
        }
    }

    #[inline]
    pub fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    pub fn remove(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// Makes this set equal to `other` (of the same size).
    pub fn copy_from(&mut self, other: &BitSet) {
        self.words.copy_from_slice(&other.words);
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// Indices of the set bits, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(wi * 64 + bit)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_contains_iter_clear() {
        let mut b = BitSet::new(130);
        for i in [0, 63, 64, 129] {
            b.insert(i);
        }
        assert!(b.contains(63) && b.contains(129) && !b.contains(1));
        assert!(!b.contains(10_000), "out of range is simply absent");
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![0, 63, 64, 129]);
        let mut c = BitSet::new(130);
        c.copy_from(&b);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![0, 63, 64, 129]);
        b.clear();
        assert!(b.is_empty());
    }
}
