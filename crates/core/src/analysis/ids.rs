//! A dense numbering of a trace's hash ids, so per-id state lives in flat vectors.
//!
//! Mooncake ids are already small consecutive integers; then the ids are used as indices directly
//! and nothing is copied. Sparse ids (hashes, huge values) are interned into `0..distinct` first.

use std::collections::HashMap;

/// The trace's ids as indices into per-id vectors of length [`IdSpace::size`].
pub enum IdSpace<'a> {
    /// Ids are small enough to be indices themselves.
    Direct { ids: &'a [u64], size: usize },
    /// Ids were renumbered in first-seen order.
    Interned { ids: Vec<u32>, size: usize },
}

impl<'a> IdSpace<'a> {
    /// Chooses the cheaper numbering for these ids (the concatenation of all rows' ids).
    pub fn new(all: &'a [u64]) -> Self {
        let max = all.iter().copied().max().unwrap_or(0);
        // Direct indexing wastes memory only if the ids are much sparser than their count.
        let direct_limit = (all.len() as u64).saturating_mul(4).saturating_add(1 << 20);
        if max < direct_limit && max < u32::MAX as u64 {
            return IdSpace::Direct { ids: all, size: max as usize + 1 };
        }
        let mut map: HashMap<u64, u32> = HashMap::with_capacity(all.len() / 2);
        let ids: Vec<u32> = all
            .iter()
            .map(|id| {
                let next = map.len() as u32;
                *map.entry(*id).or_insert(next)
            })
            .collect();
        IdSpace::Interned { ids, size: map.len() }
    }

    /// Number of slots a per-id vector needs.
    pub fn size(&self) -> usize {
        match self {
            IdSpace::Direct { size, .. } | IdSpace::Interned { size, .. } => *size,
        }
    }

    /// Index of the id at arena position `i`.
    #[inline]
    pub fn at(&self, i: usize) -> usize {
        match self {
            IdSpace::Direct { ids, .. } => ids[i] as usize,
            IdSpace::Interned { ids, .. } => ids[i] as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ids_are_used_directly_and_sparse_ones_interned() {
        let small = [3u64, 1, 3];
        let s = IdSpace::new(&small);
        assert!(matches!(s, IdSpace::Direct { size: 4, .. }));
        assert_eq!((s.at(0), s.at(2)), (3, 3));
        let sparse = [u64::MAX, 7, u64::MAX, 1 << 40];
        let s = IdSpace::new(&sparse);
        assert_eq!(s.size(), 3);
        assert_eq!((0..4).map(|i| s.at(i)).collect::<Vec<_>>(), [0, 1, 0, 2]);
    }
}
