//! A dense numbering of a trace's hash ids, so per-id state lives in flat vectors.
//!
//! Ids are numbered `0..distinct` in first-seen order as they arrive, one at a time, so a trace
//! can be numbered while it is read, without keeping its `u64` ids. Ids come in dense runs in
//! every trace we know (Mooncake ids are consecutive integers; a trace made of copies with
//! shifted ids, or ids with a prefix, has runs too): they are numbered through a table per run of
//! 4,096 ids, which is several times faster and smaller than a hash map of every id. The tables
//! are capped at 4 bytes per id seen plus 64 tables; ids outside them (scattered ids, hashes) go
//! through a seeded hash map.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Ids per chunk of the chunked numbering table.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const UNSEEN: u32 = u32::MAX;
/// The largest number given; ids past `u32::MAX − 1` distinct ones all get it (see
/// [`Interner::overflowed`]).
const LAST_NUMBER: u32 = u32::MAX - 1;

/// Numbers ids in first-seen order.
#[derive(Default)]
pub struct Interner {
    /// Chunk (id >> CHUNK_BITS) → its table's index.
    chunk_of: HashMap<u64, u32, IdHash>,
    /// The last chunk looked up and its index: consecutive ids nearly always share one.
    last: Option<(u64, u32)>,
    /// One slot per id of every chunk, `UNSEEN` until numbered.
    table: Vec<u32>,
    /// Ids outside the chunks (std's seeded hasher: these ids may be anything, and a fixed hash
    /// would let a crafted trace make every lookup collide).
    scattered: HashMap<u64, u32>,
    /// Ids numbered so far (the next number, until it passes [`LAST_NUMBER`]).
    size: u64,
    /// Ids looked up so far (bounds the tables).
    seen: u64,
    /// Set when the tables reached their cap: from then on a new chunk's ids go to
    /// `scattered`, and no table is made again (an id must keep the place it was first given).
    chunks_closed: bool,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of `id`, given it if new.
    #[inline]
    pub fn intern(&mut self, id: u64) -> u32 {
        self.seen += 1;
        let slot = match self.chunk_slot(id) {
            Some(slot) => slot,
            None => return self.intern_scattered(id),
        };
        let n = self.table[slot];
        if n != UNSEEN {
            return n;
        }
        let n = self.next_number();
        self.table[slot] = n;
        n
    }

    /// The slot of `id` in the tables, making its chunk's table if the cap allows.
    #[inline]
    fn chunk_slot(&mut self, id: u64) -> Option<usize> {
        let chunk = id >> CHUNK_BITS;
        let offset = id as usize & (CHUNK - 1);
        if let Some((c, k)) = self.last
            && c == chunk
        {
            return Some(k as usize * CHUNK + offset);
        }
        let k = match self.chunk_of.get(&chunk) {
            Some(&k) => k,
            None => {
                if self.chunks_closed {
                    return None;
                }
                let k =
                    u32::try_from(self.chunk_of.len()).ok().filter(|&k| u64::from(k) <= self.seen / CHUNK as u64 + 64);
                let Some(k) = k else {
                    self.chunks_closed = true;
                    return None;
                };
                self.chunk_of.insert(chunk, k);
                self.table.resize(self.table.len() + CHUNK, UNSEEN);
                k
            }
        };
        self.last = Some((chunk, k));
        Some(k as usize * CHUNK + offset)
    }

    fn intern_scattered(&mut self, id: u64) -> u32 {
        if let Some(&n) = self.scattered.get(&id) {
            return n;
        }
        let n = self.next_number();
        self.scattered.insert(id, n);
        n
    }

    fn next_number(&mut self) -> u32 {
        let n = self.size.min(u64::from(LAST_NUMBER)) as u32;
        self.size += 1;
        n
    }

    /// Number of slots a per-id vector needs (distinct ids, at most `u32::MAX`).
    pub fn size(&self) -> usize {
        self.size.min(u64::from(LAST_NUMBER) + 1) as usize
    }

    /// More than `u32::MAX` distinct ids were met: the extra ones share the last number, so
    /// per-id statistics are not exact (a trace of at least 32 GiB of ids; the CLI refuses it).
    pub fn overflowed(&self) -> bool {
        self.size > u64::from(LAST_NUMBER) + 1
    }
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

/// How many of a row's leading ids an infinite cache holds: those seen in earlier rows, given ids
/// numbered in first-seen order (an [`Interner`]) and `seen`, the count numbered before this row,
/// which it then advances past the row's ids.
pub(crate) fn leading_hits(row_ids: &[u32], seen: &mut u32) -> usize {
    let k = row_ids.iter().position(|&id| id >= *seen).unwrap_or(row_ids.len());
    for &id in &row_ids[k..] {
        *seen = (*seen).max(id.saturating_add(1));
    }
    k
}

/// The per-id table of the analysis' stages (the cache simulation's, the trie's, the pair
/// counts'), handed from one stage to the next: one is held at a time, and its memory is faulted
/// in once instead of once per stage.
#[derive(Default)]
pub(crate) struct Tables {
    words: Vec<u32>,
}

impl Tables {
    /// A table of `n` words, each `fill`.
    pub(crate) fn words(&mut self, n: usize, fill: u32) -> Vec<u32> {
        let mut v = std::mem::take(&mut self.words);
        v.clear();
        v.resize(n, fill);
        v
    }

    /// Takes a table back for the next stage.
    pub(crate) fn keep_words(&mut self, v: Vec<u32>) {
        if v.capacity() > self.words.capacity() {
            self.words = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn numbers(ids: &[u64]) -> (Vec<u32>, Interner) {
        let mut interner = Interner::new();
        (ids.iter().map(|&id| interner.intern(id)).collect(), interner)
    }

    #[test]
    fn runs_of_ids_use_chunks_and_scattered_ids_a_hash_map() {
        let runs: Vec<u64> = (0..3u64).flat_map(|copy| (0..5000).map(move |i| copy * 100_000_000_000 + i)).collect();
        let (n, i) = numbers(&runs);
        assert!(i.scattered.is_empty() && !i.chunks_closed);
        assert_eq!((n[5000], n[14_999], i.size()), (5000, 14_999, 15_000));
        let scattered: Vec<u64> = (0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let (n, i) = numbers(&scattered);
        assert!(i.chunks_closed && !i.scattered.is_empty());
        assert!(i.table.len() <= (5000 / CHUNK + 65) * CHUNK);
        assert_eq!((n[4999], i.size()), (4999, 5000));
    }

    proptest! {
        #[test]
        fn ids_are_numbered_in_first_seen_order(
            ids in prop::collection::vec(prop_oneof![
                0u64..20,
                (1u64 << 40)..(1u64 << 40) + 20,
                Just(u64::MAX),
                any::<u64>(),
            ], 0..400),
        ) {
            let mut first_seen: Vec<u64> = Vec::new();
            let expected: Vec<u32> = ids.iter().map(|id| {
                first_seen.iter().position(|x| x == id).unwrap_or_else(|| { first_seen.push(*id); first_seen.len() - 1 }) as u32
            }).collect();
            let (got, interner) = numbers(&ids);
            prop_assert_eq!(got, expected);
            prop_assert_eq!(interner.size(), first_seen.len());
            prop_assert!(!interner.overflowed());
        }
    }
}
