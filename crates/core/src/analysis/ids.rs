//! A dense numbering of a trace's hash ids, so per-id state lives in flat vectors.
//!
//! Ids are numbered `0..distinct` in first-seen order as they arrive, one at a time, so a trace
//! can be numbered while it is read, without keeping its `u64` ids. Ids come in dense runs in
//! every trace we know (Mooncake ids are consecutive integers; a trace made of copies with
//! shifted ids, or ids with a prefix, has runs too). Ids first seen as they rise, each new one
//! the one after the last (Mooncake's ids, each copy's of a trace repeated with shifted ids), are
//! kept as runs: an id's number is its distance from its run's first id, and nothing is stored
//! per id. Other ids are numbered through a table per run of 4,096 ids, which is several times
//! faster and smaller than a hash map of every id. The tables are capped at 4 bytes per id seen
//! plus 64 tables; ids outside them (scattered ids, hashes) go through a seeded hash map.

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
    /// Runs of ids numbered one after the other, by first id: each starts above every id seen
    /// before it, and the last one grows while every number given since it started is its own.
    runs: Vec<Run>,
    /// The ids the runs hold.
    in_runs: u64,
    /// The largest id seen: an id above it is new.
    largest: Option<u64>,
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
        if let Some(run) = self.runs.last_mut() {
            let past_start = id.wrapping_sub(run.start);
            if past_start < run.len {
                return run.first + past_start as u32;
            }
            // The id after the last run's, the numbers since it started all its own: above
            // every id seen.
            if past_start == run.len
                && run.start.checked_add(run.len).is_some()
                && u64::from(run.first) + run.len == self.size
                && self.size < u64::from(LAST_NUMBER)
            {
                run.len += 1;
                self.in_runs += 1;
                self.largest = Some(id);
                return self.next_number();
            }
        }
        if self.largest.is_none_or(|m| id > m) {
            self.largest = Some(id);
            if self.runs_pay() && self.size < u64::from(LAST_NUMBER) {
                self.runs.push(Run { start: id, len: 1, first: self.size as u32 });
                self.in_runs += 1;
                return self.next_number();
            }
        } else if let Some(n) = self.in_earlier_run(id) {
            return n;
        }
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

    /// Whether another run may start: at most [`MAX_RUNS`], and once there are more than 8,
    /// 64 ids a run on average (scattered ids make runs of one, and stop making them).
    fn runs_pay(&self) -> bool {
        let n = self.runs.len() as u64;
        n < MAX_RUNS && (n < 8 || self.in_runs >= 64 * n)
    }

    /// The number of `id` when a run before the last holds it.
    fn in_earlier_run(&self, id: u64) -> Option<u32> {
        let earlier = &self.runs[..self.runs.len().saturating_sub(1)];
        let run = &earlier[earlier.partition_point(|r| r.start <= id).checked_sub(1)?];
        let past_start = id - run.start;
        (past_start < run.len).then(|| run.first + past_start as u32)
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

/// Most runs of ids an [`Interner`] keeps.
const MAX_RUNS: u64 = 1 << 12;

/// Ids `start..start + len` numbered `first..first + len`.
#[derive(Clone, Copy, Debug)]
struct Run {
    start: u64,
    len: u64,
    first: u32,
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

    /// Each id's place among the distinct ids in the order they are first met, and how many
    /// there are: the numbering's oracle.
    fn first_seen_order(ids: &[u64]) -> (Vec<u32>, usize) {
        let mut first_seen: Vec<u64> = Vec::new();
        let places = ids
            .iter()
            .map(|id| {
                first_seen.iter().position(|x| x == id).unwrap_or_else(|| {
                    first_seen.push(*id);
                    first_seen.len() - 1
                }) as u32
            })
            .collect();
        (places, first_seen.len())
    }

    fn numbers(ids: &[u64]) -> (Vec<u32>, Interner) {
        let mut interner = Interner::new();
        (ids.iter().map(|&id| interner.intern(id)).collect(), interner)
    }

    #[test]
    fn ids_first_seen_as_they_rise_need_no_table() {
        // Mooncake's rows: a shared first block, then each row's new blocks, the next ids.
        let rows: Vec<u64> = (0..2000u64).flat_map(|r| [0].into_iter().chain(1 + r * 7..1 + (r + 1) * 7)).collect();
        let (n, i) = numbers(&rows);
        assert!(i.table.is_empty() && i.scattered.is_empty());
        assert_eq!((n[8], n[9], i.size()), (0, 8, 14_001));
        // An id below the first one ends the run: later ids go through the tables, the run's
        // keep their numbers.
        let (n, i) = numbers(&[5, 6, 3, 7, 6, 8, 5]);
        assert_eq!(n, [0, 1, 2, 3, 1, 4, 0]);
        assert!(!i.table.is_empty());
        // A run ends at the largest id, never wrapping round to 0.
        assert_eq!(numbers(&[u64::MAX, 0, 2, u64::MAX]).0, [0, 1, 2, 0]);
        // Copies of a trace with shifted ids: a run each, looked up again in any order.
        let copies: Vec<u64> = (0..50u64).flat_map(|c| (0..300).map(move |i| c * 1_000_000 + i)).collect();
        let again: Vec<u64> = copies.iter().rev().step_by(7).copied().collect();
        let (n, i) = numbers(&[copies.clone(), again.clone()].concat());
        assert!(i.table.is_empty() && i.runs.len() == 50);
        let expected: Vec<u32> = again.iter().map(|id| ((id / 1_000_000) * 300 + id % 1_000_000) as u32).collect();
        assert_eq!(&n[copies.len()..], expected);
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
            let (expected, distinct) = first_seen_order(&ids);
            let (got, interner) = numbers(&ids);
            prop_assert_eq!(got, expected);
            prop_assert_eq!(interner.size(), distinct);
            prop_assert!(!interner.overflowed());
        }

        /// Copies of rows of rising ids, shifted, with other ids between them: runs started,
        /// ended and looked up again number the ids in first-seen order.
        #[test]
        fn runs_of_rising_ids_are_numbered_in_first_seen_order(
            rows in prop::collection::vec((1u64..6, prop::bool::ANY), 1..30),
            copies in 1u64..5,
            shift in prop_oneof![Just(0u64), 1u64..40, Just(u64::MAX / 3)],
            between in prop::collection::vec(prop_oneof![0u64..60, any::<u64>()], 0..6),
        ) {
            let mut ids = Vec::new();
            for c in 0..copies {
                let mut next = 0u64;
                for (k, &(new, shared)) in rows.iter().enumerate() {
                    if shared {
                        ids.push(c.wrapping_mul(shift));
                    }
                    ids.extend((next..next + new).map(|i| c.wrapping_mul(shift).wrapping_add(i)));
                    next += new;
                    if let Some(&x) = between.get(k) {
                        ids.push(x);
                    }
                }
            }
            let (expected, distinct) = first_seen_order(&ids);
            let (got, interner) = numbers(&ids);
            prop_assert_eq!(got, expected);
            prop_assert_eq!(interner.size(), distinct);
        }
    }
}
