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
#[derive(Debug, Default)]
pub struct Reblocker {
    /// (hash of the key, where the key starts in its arena, its length, whether it is in
    /// `narrow`, its id). The hash is kept so that growing the table never reads the keys again.
    interned: hashbrown::HashTable<(u64, usize, u32, bool, u64)>,
    /// Interned keys (previous id, then the block's source ids) back to back: one arena instead
    /// of one allocation per key. A key whose words all fit in 32 bits (the usual case) goes to
    /// `narrow` at half the memory; a key's arena follows from its words, so equal keys meet.
    keys: Vec<u64>,
    narrow: Vec<u32>,
    next_id: u64,
}

/// The hash of the key `prev` followed by `block`, without building it: four independent
/// lanes so that the multiplications overlap (the hash only finds keys; ids do not depend on it).
fn hash_of(prev: u64, block: &[u64]) -> u64 {
    let mut lanes = [FxHasher::default(); 4];
    let mut chunks = block.chunks_exact(4);
    for c in &mut chunks {
        for (lane, &w) in lanes.iter_mut().zip(c) {
            lane.add(w);
        }
    }
    let mut h = FxHasher::default();
    h.add(prev);
    for &w in chunks.remainder() {
        h.add(w);
    }
    for lane in lanes {
        h.add(lane.hash);
    }
    h.finish()
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
        let complete = complete.min(source.len());
        let chained = (complete / per_block) as u64;
        let mut prev = namespace;
        for k in 0..blocks {
            let id = if k < chained {
                let start = k as usize * per_block;
                let block = &source[start..start + per_block];
                let hash = hash_of(prev, block);
                let fits = prev <= u64::from(u32::MAX) && block.iter().all(|&w| w <= u64::from(u32::MAX));
                let len = per_block + 1;
                let (keys, narrow) = (&self.keys, &self.narrow);
                let found = self.interned.find(hash, |&(h, at, n, in_narrow, _)| {
                    h == hash
                        && n as usize == len
                        && in_narrow == fits
                        && if fits {
                            u64::from(narrow[at]) == prev
                                && narrow[at + 1..at + len].iter().zip(block).all(|(&a, &b)| u64::from(a) == b)
                        } else {
                            keys[at] == prev && keys[at + 1..at + len] == *block
                        }
                });
                match found {
                    Some(e) => e.4,
                    None => {
                        let id = self.next_id;
                        self.next_id = self.next_id.saturating_add(1);
                        let at = if fits {
                            let at = self.narrow.len();
                            // Every word fits (checked above): the casts keep their values.
                            self.narrow.push(prev as u32);
                            self.narrow.extend(block.iter().map(|&w| w as u32));
                            at
                        } else {
                            let at = self.keys.len();
                            self.keys.push(prev);
                            self.keys.extend_from_slice(block);
                            at
                        };
                        let n = u32::try_from(len).unwrap_or(u32::MAX);
                        self.interned.insert_unique(hash, (hash, at, n, fits, id), |e| e.0);
                        id
                    }
                }
            } else {
                self.fresh()
            };
            out.push(id);
            prev = id;
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
