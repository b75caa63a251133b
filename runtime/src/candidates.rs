//! Which verifiers a value's literal hits made candidates.
//!
//! A prefiltered verifier runs only when one of its required literals hit
//! in the value. Common words make weak literals (`before`, `token` hit in
//! most prose), so a verifier may carry a second group from another piece
//! every match contains ([`crate::program::VerifierPlan::conjunctive`]):
//! it runs only when both groups hit. Both sets use the engine-wide
//! verifier numbering and live in [`crate::engine::Scratch`], emptied after
//! each value.

use crate::bitset::BitSet;

#[derive(Debug, Clone, Default)]
pub struct Candidates {
    /// A literal of the verifier's (first) group hit.
    first: BitSet,
    /// A literal of a conjunctive verifier's second group hit.
    second: BitSet,
    /// Whether `second` has a bit set (most values set none: it is then
    /// not cleared).
    second_used: bool,
}

impl Candidates {
    pub fn new(verifiers: usize) -> Candidates {
        Candidates {
            first: BitSet::new(verifiers),
            second: BitSet::new(verifiers),
            second_used: false,
        }
    }

    #[inline]
    pub fn hit_first(&mut self, slot: usize) {
        self.first.insert(slot);
    }

    #[inline]
    pub fn hit_second(&mut self, slot: usize) {
        self.second.insert(slot);
        self.second_used = true;
    }

    /// Verifiers whose first group hit, ascending.
    pub fn first_hits(&self) -> impl Iterator<Item = usize> + '_ {
        self.first.iter()
    }

    /// Whether a conjunctive verifier's second group hit.
    #[inline]
    pub fn second_hit(&self, slot: usize) -> bool {
        self.second_used && self.second.contains(slot)
    }

    pub fn clear(&mut self) {
        self.first.clear();
        if self.second_used {
            self.second.clear();
            self.second_used = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_hits_are_kept_apart_and_cleared() {
        let mut c = Candidates::new(130);
        c.hit_first(3);
        c.hit_second(3);
        c.hit_second(129);
        assert_eq!(c.first_hits().collect::<Vec<_>>(), vec![3]);
        assert!(c.second_hit(3) && c.second_hit(129) && !c.second_hit(4));
        c.clear();
        assert_eq!(c.first_hits().count(), 0);
        assert!(!c.second_hit(3) && !c.second_hit(129));
    }
}
