//! A dense numbering of a trace's hash ids, so per-id state lives in flat vectors.
//!
//! Mooncake ids are already small consecutive integers; then the ids are used as indices directly
//! and nothing is copied. Sparse ids (huge values, hashes) are interned into `0..distinct` in
//! first-seen order. Ids that are sparse overall but come in dense runs (a trace made of copies
//! with shifted ids, ids with a prefix) are interned through a table per run of 4,096 ids, which
//! is several times faster and smaller than a hash map of every id; ids without such runs go
//! through a hash map.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The trace's ids as indices into per-id vectors of length [`IdSpace::size`].
pub enum IdSpace<'a> {
    /// Ids are small enough to be indices themselves.
    Direct { ids: &'a [u64], size: usize },
    /// Ids were renumbered in first-seen order.
    Interned { ids: Vec<u32>, size: usize },
}

/// Ids per chunk of the chunked interning table.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const UNSEEN: u32 = u32::MAX;

impl<'a> IdSpace<'a> {
    /// Chooses the cheaper numbering for these ids (the concatenation of all rows' ids).
    pub fn new(all: &'a [u64]) -> Self {
        let max = all.iter().copied().max().unwrap_or(0);
        // Direct indexing wastes memory only if the ids are much sparser than their count.
        let direct_limit = (all.len() as u64).saturating_mul(4).saturating_add(1 << 20);
        if max < direct_limit && max < u32::MAX as u64 {
            return IdSpace::Direct { ids: all, size: max as usize + 1 };
        }
        intern_by_chunks(all).unwrap_or_else(|| intern_by_hashing(all))
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

/// Interning through one table slot per id of every chunk that holds an id; `None` when the
/// chunks would take more than 4 bytes per id of the trace (ids without dense runs), or when
/// there are too many distinct ids for `u32` numbers.
fn intern_by_chunks(all: &[u64]) -> Option<IdSpace<'static>> {
    let max_chunks = all.len() / CHUNK + 16;
    let mut chunk_of: HashMap<u64, u32, IdHash> = HashMap::default();
    let mut last: Option<(u64, u32)> = None;
    let mut chunk_index = |id: u64, chunk_of: &mut HashMap<u64, u32, IdHash>| -> Option<u32> {
        let chunk = id >> CHUNK_BITS;
        if let Some((c, k)) = last
            && c == chunk
        {
            return Some(k);
        }
        let next = u32::try_from(chunk_of.len()).ok()?;
        let k = *chunk_of.entry(chunk).or_insert(next);
        if chunk_of.len() > max_chunks {
            return None;
        }
        last = Some((chunk, k));
        Some(k)
    };
    let mut table: Vec<u32> = Vec::new();
    let mut ids: Vec<u32> = Vec::with_capacity(all.len());
    let mut size: u32 = 0;
    for &id in all {
        let k = chunk_index(id, &mut chunk_of)? as usize;
        if table.len() <= k * CHUNK {
            table.resize((k + 1) * CHUNK, UNSEEN);
        }
        let slot = &mut table[k * CHUNK + (id as usize & (CHUNK - 1))];
        if *slot == UNSEEN {
            *slot = size;
            size = size.checked_add(1).filter(|&s| s < UNSEEN)?;
        }
        ids.push(*slot);
    }
    Some(IdSpace::Interned { ids, size: size as usize })
}

/// Interning through a hash map of every id. It keeps std's seeded hasher: these ids may be
/// anything, and a fixed hash would let a crafted trace make every lookup collide.
fn intern_by_hashing(all: &[u64]) -> IdSpace<'static> {
    let mut map: HashMap<u64, u32> = HashMap::new();
    let ids: Vec<u32> = all
        .iter()
        .map(|id| {
            let next = map.len() as u32;
            *map.entry(*id).or_insert(next)
        })
        .collect();
    IdSpace::Interned { ids, size: map.len() }
}

/// A fast hash for the chunk numbers (SplitMix64's finalizer). There are at most one per 4,096
/// ids of the trace, so even a crafted trace cannot make the collisions costly.
type IdHash = BuildHasherDefault<IdHasher>;

#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn numbers(s: &IdSpace, n: usize) -> Vec<usize> {
        (0..n).map(|i| s.at(i)).collect()
    }

    #[test]
    fn small_ids_are_used_directly_and_sparse_ones_interned() {
        let small = [3u64, 1, 3];
        let s = IdSpace::new(&small);
        assert!(matches!(s, IdSpace::Direct { size: 4, .. }));
        assert_eq!((s.at(0), s.at(2)), (3, 3));
        let sparse = [u64::MAX, 7, u64::MAX, 1 << 40];
        let s = IdSpace::new(&sparse);
        assert_eq!(s.size(), 3);
        assert_eq!(numbers(&s, 4), [0, 1, 0, 2]);
    }

    #[test]
    fn runs_of_ids_use_chunks_and_scattered_ids_a_hash_map() {
        let runs: Vec<u64> = (0..3u64).flat_map(|copy| (0..5000).map(move |i| copy * 100_000_000_000 + i)).collect();
        assert!(intern_by_chunks(&runs).is_some());
        let scattered: Vec<u64> = (0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        assert!(intern_by_chunks(&scattered).is_none());
        assert_eq!(IdSpace::new(&scattered).size(), 5000);
    }

    proptest! {
        #[test]
        fn both_internings_number_ids_in_first_seen_order(
            ids in prop::collection::vec(prop_oneof![0u64..20, (1u64 << 40)..(1u64 << 40) + 20, Just(u64::MAX)], 0..200),
        ) {
            let mut first_seen: Vec<u64> = Vec::new();
            let expected: Vec<usize> = ids.iter().map(|id| {
                first_seen.iter().position(|x| x == id).unwrap_or_else(|| { first_seen.push(*id); first_seen.len() - 1 })
            }).collect();
            let by_hashing = intern_by_hashing(&ids);
            prop_assert_eq!(numbers(&by_hashing, ids.len()), expected.clone());
            prop_assert_eq!(by_hashing.size(), first_seen.len());
            let by_chunks = intern_by_chunks(&ids).unwrap();
            prop_assert_eq!(numbers(&by_chunks, ids.len()), expected);
            prop_assert_eq!(by_chunks.size(), first_seen.len());
        }
    }
}
