//! Re-blocking hash ids from a source block size (16 or 64 tokens) to the target's (512).
//!
//! A target block's id stands for the whole prefix up to its end: it is interned from the id of
//! the previous target block (or the file's namespace root for the first) and the tuple of source
//! ids the block covers. So two rows get the same id at position k exactly when their source ids
//! agree up to the end of block k, whatever the ids mean elsewhere. A block that is not fully
//! covered by hashed, complete source blocks (the partial tail, WEKA's unhashed remainder) gets a
//! fresh id used nowhere else. Namespace roots, interned and fresh ids all come from one counter,
//! so ids from different files (different namespaces) never collide.

use std::hash::Hasher;

/// Interns prefix-chained target block ids across every file of one conversion.
///
/// An open-addressing table of one word per slot (linear probing, at most half full) over an
/// arena of the interned keys: a lookup reads one slot and one key, and a row's slots and keys
/// are first read all together so that their cache misses overlap.
#[derive(Debug, Default)]
pub struct Reblocker {
    /// 0 for an empty slot, else the key's hash's low 32 bits above its position in `arena` + 1.
    slots: Vec<u64>,
    /// `64 - log2(slots.len())`: a hash's slot is its top bits.
    shift: u32,
    /// Interned keys back to back, each [`HEADER`] words (its length in words × 2 + 1 when wide,
    /// its hash, its id; 64-bit values low word first) then the key: the previous target id and
    /// the block's source ids, one word each when all fit in 32 bits, else two (low, high).
    arena: Vec<u32>,
    len: usize,
    next_id: u64,
    /// [`Reblocker::touch_rows`]'s buffer.
    scratch: Vec<u64>,
}

/// Words before an interned key in the arena: header, hash (2), id (2).
const HEADER: usize = 5;

/// Blocks of a row whose slots and keys are read together.
const BATCH: usize = 16;

/// The hash of a target block: chained over the namespace and every source id of the prefix up
/// to the block's end. Equal keys (previous id, block) have equal prefixes, so equal hashes; and
/// the hashes of a row's blocks are known before any of its lookups.
fn chain(hash: u64, block: &[u64]) -> u64 {
    // Four independent lanes so that the multiplications overlap.
    let mut lanes = [FxHasher::default(); 4];
    let mut chunks = block.chunks_exact(4);
    for c in &mut chunks {
        for (lane, &w) in lanes.iter_mut().zip(c) {
            lane.add(w);
        }
    }
    let mut h = FxHasher { hash };
    for &w in chunks.remainder() {
        h.add(w);
    }
    for lane in lanes {
        h.add(lane.hash);
    }
    h.add(block.len() as u64);
    h.hash
}

/// The hashes of the successive complete `per_block`-id blocks of `source` under `namespace`.
fn block_hashes(namespace: u64, source: &[u64], per_block: usize) -> impl Iterator<Item = u64> + '_ {
    source.chunks_exact(per_block).scan(namespace, |h, block| {
        *h = chain(*h, block);
        Some(finish(*h))
    })
}

/// A well-mixed finish of a chained hash (the slot takes its top bits, the tag its low ones).
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn low(w: u64) -> u32 {
    w as u32
}

fn high(w: u64) -> u32 {
    (w >> 32) as u32
}

impl Reblocker {
    pub fn new() -> Self {
        Self::default()
    }

    fn fresh(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    /// A new id namespace: source ids under different namespaces never share a target id.
    pub fn namespace(&mut self) -> u64 {
        self.fresh()
    }

    /// A fresh id, distinct from every other id this re-blocker hands out.
    pub fn fresh_id(&mut self) -> u64 {
        self.fresh()
    }

    /// Pushes the `ceil(input_length / target)` target ids of one row onto `out`.
    ///
    /// `per_block` = target / source block size; `complete` = how many leading source ids cover a
    /// complete, hashed block (the caller knows the format's edge rule).
    pub fn reblock(
        &mut self,
        namespace: u64,
        source: &[u64],
        complete: usize,
        per_block: usize,
        blocks: u64,
        out: &mut Vec<u64>,
    ) {
        let per_block = per_block.max(1);
        let chained = (complete.min(source.len()) / per_block).min(usize::try_from(blocks).unwrap_or(usize::MAX));
        self.reserve(chained);
        let mut hashes_of = block_hashes(namespace, &source[..chained * per_block], per_block);
        let mut prev = namespace;
        for first in (0..chained).step_by(BATCH) {
            let batch = (chained - first).min(BATCH);
            let mut hashes = [0u64; BATCH];
            for (h, next) in hashes.iter_mut().zip(&mut hashes_of).take(batch) {
                *h = next;
            }
            let mut slots = hashes;
            self.touch(&mut slots[..batch]);
            for (j, &h) in hashes[..batch].iter().enumerate() {
                let start = (first + j) * per_block;
                prev = self.intern(h, prev, &source[start..start + per_block]);
                out.push(prev);
            }
        }
        for _ in chained as u64..blocks {
            let id = self.fresh();
            out.push(id);
        }
    }

    /// Replaces each hash by its first slot, then reads the keys those slots point to: every
    /// load issued before any is needed, so that their cache misses overlap (the lookups that
    /// follow find them cached).
    fn touch(&self, hashes: &mut [u64]) {
        if self.slots.is_empty() {
            return;
        }
        for h in hashes.iter_mut() {
            *h = self.slots[(*h >> self.shift) as usize];
        }
        let mut sum = 0u32;
        for &slot in hashes.iter() {
            if slot != 0 {
                sum ^= self.arena.get(low(slot) as usize - 1).copied().unwrap_or(0);
            }
        }
        std::hint::black_box(sum);
    }

    /// Reads the slots and keys that the complete blocks of the rows `sources` (under
    /// `namespace`, `per_block` source ids a block) will look up, all before any is needed, so
    /// that their cache misses overlap: a hint for rows about to be re-blocked, which then find
    /// them cached. The ids handed out do not depend on it.
    pub fn touch_rows<'s>(&mut self, namespace: u64, per_block: usize, sources: impl Iterator<Item = &'s [u64]>) {
        if self.slots.is_empty() || per_block == 0 {
            return;
        }
        let mut hashes = std::mem::take(&mut self.scratch);
        hashes.clear();
        for source in sources {
            hashes.extend(block_hashes(namespace, source, per_block));
        }
        self.touch(&mut hashes);
        self.scratch = hashes;
    }

    /// Room for `more` keys at most half full, growing (and placing every key again) when needed.
    fn reserve(&mut self, more: usize) {
        let want = (self.len + more).saturating_mul(2).max(16);
        if want <= self.slots.len() {
            return;
        }
        let size = want.next_power_of_two();
        // Written now, not `vec![0; size]`: zeroed memory from the system is mapped to the shared
        // zero page until first written, so the lookups' reads followed by inserts' writes would
        // take a copy-on-write fault (and a TLB flush on every core) per page.
        #[allow(clippy::slow_vector_initialization)] // deliberate, see above
        let slots = {
            let mut slots = Vec::with_capacity(size);
            slots.resize(size, 0);
            slots
        };
        self.slots = slots;
        self.shift = 64 - size.trailing_zeros();
        let mut pos = 0;
        while pos + HEADER <= self.arena.len() {
            let words = (self.arena[pos] >> 1) as usize;
            let hash = u64::from(self.arena[pos + 1]) | u64::from(self.arena[pos + 2]) << 32;
            let mut i = (hash >> self.shift) as usize;
            while self.slots[i] != 0 {
                i = (i + 1) & (size - 1);
            }
            self.slots[i] = u64::from(low(hash)) << 32 | (pos as u64 + 1);
            pos += HEADER + words;
        }
    }

    /// The id of the key (`prev`, `block`) with hash `hash`, interned if new. A key that would
    /// take the arena past 2³² words (16 GB) gets a fresh id instead.
    fn intern(&mut self, hash: u64, prev: u64, block: &[u64]) -> u64 {
        let wide = high(prev) != 0 || block.iter().any(|&w| high(w) != 0);
        let words = (block.len() + 1) << usize::from(wide);
        if words >= (u32::MAX >> 2) as usize {
            return self.fresh();
        }
        let header = (words as u32) << 1 | u32::from(wide);
        let tag = u64::from(low(hash)) << 32;
        let mask = self.slots.len() - 1;
        let mut i = (hash >> self.shift) as usize;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                break;
            }
            if slot & !u64::from(u32::MAX) == tag {
                let pos = low(slot) as usize - 1;
                if self.arena[pos] == header && self.key_is(pos + HEADER, wide, prev, block) {
                    return u64::from(self.arena[pos + 3]) | u64::from(self.arena[pos + 4]) << 32;
                }
            }
            i = (i + 1) & mask;
        }
        let pos = self.arena.len();
        if pos + HEADER + words >= u32::MAX as usize {
            return self.fresh();
        }
        let id = self.fresh();
        self.arena.extend([header, low(hash), high(hash), low(id), high(id)]);
        if wide {
            for w in std::iter::once(prev).chain(block.iter().copied()) {
                self.arena.extend([low(w), high(w)]);
            }
        } else {
            self.arena.push(low(prev));
            self.arena.extend(block.iter().map(|&w| low(w)));
        }
        self.slots[i] = tag | (pos as u64 + 1);
        self.len += 1;
        id
    }

    /// Whether the key at `at` (of the width and length already checked) is (`prev`, `block`).
    fn key_is(&self, at: usize, wide: bool, prev: u64, block: &[u64]) -> bool {
        let key = std::iter::once(prev).chain(block.iter().copied());
        if wide {
            let stored = self.arena[at..at + 2 * (block.len() + 1)].chunks_exact(2);
            stored.zip(key).all(|(s, w)| s[0] == low(w) && s[1] == high(w))
        } else {
            self.arena[at..at + block.len() + 1].iter().zip(key).all(|(&s, w)| u64::from(s) == w)
        }
    }
}

/// The Firefox/rustc multiply-rotate hash: interning needs speed, not DoS resistance.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    fn run(r: &mut Reblocker, ns: u64, source: &[u64], complete: usize, per: usize, blocks: u64) -> Vec<u64> {
        let mut out = Vec::new();
        r.reblock(ns, source, complete, per, blocks, &mut out);
        out
    }

    #[test]
    fn thirty_two_sixteen_token_ids_make_one_block() {
        let mut r = Reblocker::new();
        let ns = r.namespace();
        let a: Vec<u64> = (0..70).collect();
        // 70 × 16 = 1120 tokens, the last source block partial: ceil(1120/512) = 3 blocks, the third fresh.
        let x = run(&mut r, ns, &a, 69, 32, 3);
        let y = run(&mut r, ns, &a, 69, 32, 3);
        assert_eq!(x[..2], y[..2]);
        assert_ne!(x[2], y[2]);
        // Same second block's source ids after a different first block: a different id.
        let mut b = a.clone();
        b[0] = 999;
        let z = run(&mut r, ns, &b, 69, 32, 3);
        assert_ne!(z[0], x[0]);
        assert_ne!(z[1], x[1]);
        // Another namespace never meets the first one.
        let other = r.namespace();
        let w = run(&mut r, other, &a, 69, 32, 3);
        assert!(w.iter().all(|id| !x.contains(id)));
    }

    #[test]
    fn ids_wider_than_32_bits_intern_like_narrow_ones() {
        let mut r = Reblocker::new();
        let ns = r.namespace();
        let wide: Vec<u64> = (0..8).map(|i| (1 << 40) + i).collect();
        let mut narrow_twin = wide.clone();
        for w in &mut narrow_twin {
            *w &= u64::from(u32::MAX);
        }
        let a = run(&mut r, ns, &wide, 8, 4, 2);
        let b = run(&mut r, ns, &wide, 8, 4, 2);
        let c = run(&mut r, ns, &narrow_twin, 8, 4, 2);
        let d = run(&mut r, ns, &narrow_twin, 8, 4, 2);
        assert_eq!(a, b);
        assert_eq!(c, d);
        assert!(a.iter().all(|id| !c.contains(id)));
    }

    fn source_rows() -> impl Strategy<Value = Vec<(Vec<u64>, bool)>> {
        // Few distinct ids so that long common prefixes are frequent.
        prop::collection::vec(
            (prop::collection::vec(prop_oneof![0u64..3, Just(u64::MAX)], 0..40), any::<bool>()),
            1..25,
        )
    }

    proptest! {
        /// At every chained position: equal ids ⇔ equal source prefixes (same namespace); fresh
        /// tail ids are never used twice.
        #[test]
        fn equal_prefixes_iff_equal_ids(rows in source_rows(), per in 1usize..5) {
            let mut r = Reblocker::new();
            let ns = r.namespace();
            let mut outs = Vec::new();
            for (src, partial_tail) in &rows {
                // A partial tail: the last source block is incomplete.
                let complete = if *partial_tail { src.len().saturating_sub(1) } else { src.len() };
                let blocks = src.len().div_ceil(per) as u64;
                // Reading ahead is a hint only: it must not change any id.
                if *partial_tail {
                    r.touch_rows(ns, per, rows.iter().map(|(s, _)| s.as_slice()));
                }
                outs.push((run(&mut r, ns, src, complete, per, blocks), complete));
            }
            let mut fresh_seen = HashSet::new();
            for (i, (ids_i, complete_i)) in outs.iter().enumerate() {
                prop_assert_eq!(ids_i.len(), rows[i].0.len().div_ceil(per));
                for (k, id) in ids_i.iter().enumerate() {
                    let chained_i = (k + 1) * per <= *complete_i;
                    if !chained_i {
                        prop_assert!(fresh_seen.insert(*id), "fresh id reused");
                    }
                    for (j, (ids_j, complete_j)) in outs.iter().enumerate() {
                        let Some(other) = ids_j.get(k) else { continue };
                        let chained_j = (k + 1) * per <= *complete_j;
                        if i == j || !chained_i || !chained_j {
                            continue;
                        }
                        let end = (k + 1) * per;
                        let same_prefix = rows[i].0[..end] == rows[j].0[..end];
                        prop_assert_eq!(id == other, same_prefix, "row {} vs {} block {}", i, j, k);
                    }
                }
            }
        }
    }
}
