//! KV-cache what-if: the theoretical hit rate of a finite LRU prefix cache, by capacity.
//!
//! Rows are served in file order, one after the other. A row looks its blocks up when it starts,
//! then touches them tail first: vLLM frees a finished request's blocks in that order, so the
//! least recently used of them is its last block and its first one stays longest. A block hits
//! an LRU cache of `C` blocks exactly when its reuse distance (distinct blocks touched since its
//! previous access and before its row) is below `C`. A row's hit is its leading run of hits (a
//! prefix cache stops at the first miss), so a block counts for capacity `C` when the running
//! maximum of reuse distances up to it is below `C`. Reuse distances come from one pass with a Fenwick tree
//! over access times (a bit per time, counted per word); one histogram over capacity buckets then yields the whole curve. With an
//! unbounded capacity this is exactly the reference's theoretical (infinite-cache) hit rate.

use serde::{Deserialize, Serialize};

use super::ids::Tables;
use super::input::AnalysisInput;

/// One point of the curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CachePoint {
    /// Capacity in blocks (`None`: unbounded).
    pub capacity_blocks: Option<u64>,
    /// Mean over rows with hash ids of the fraction of leading blocks that hit.
    pub hit_rate: f64,
}

/// Capacities 1, 2, 3, 4, 6, 8, 12, … (powers of two and 1.5× between) up to the number of
/// distinct blocks, then the unbounded cache.
fn capacities(distinct: usize) -> Vec<u64> {
    let mut caps = Vec::new();
    let mut p: u64 = 1;
    while (p as usize) < distinct {
        caps.push(p);
        let mid = p + p / 2;
        if mid > p && (mid as usize) < distinct {
            caps.push(mid);
        }
        p *= 2;
    }
    if distinct > 0 {
        caps.push(distinct as u64);
    }
    caps.dedup();
    caps
}

/// The index of the first capacity above a reuse distance `rd < distinct` in [`capacities`]`(distinct)`
/// (the bucket of a block that hits from that capacity on): the number of capacities ≤ `rd`,
/// counted from `rd`'s bit length since the capacities below `distinct` are 1 and then 2^k and
/// 3·2^(k−1) for k ≥ 1.
#[inline]
fn bucket_of(rd: u64) -> usize {
    match rd {
        0 => 0,
        1 => 1,
        _ => {
            let k = (63 - rd.leading_zeros()) as usize;
            2 * k + usize::from(3u64 << (k - 1) <= rd)
        }
    }
}

/// The hit-rate curve of a finite LRU cache (see the module documentation); `distinct` is the
/// number of distinct ids of the trace.
pub(crate) fn lru_hit_rate_curve(input: &AnalysisInput, distinct: usize, tables: &mut Tables) -> Vec<CachePoint> {
    let ids = input.ids();
    let total = ids.len();
    let mut last_access = tables.words(input.id_space(), u32::MAX);
    let mut dead = Marks::new(total);
    let caps = capacities(distinct);
    // bucket[j]: weight of blocks that first hit at capacity caps[j]; the last bucket is the
    // unbounded cache.
    let mut bucket = vec![0.0f64; caps.len() + 1];
    let mut rows_with_ids = 0usize;
    let mut t = 0usize;
    for (_, range) in input.iter() {
        if range.is_empty() {
            continue;
        }
        rows_with_ids += 1;
        let w = 1.0 / range.len() as f64;
        let row = &ids[range];
        // The row's hits, looked up when it starts: a block's reuse distance counts the distinct
        // blocks touched after its previous access and before this row. `j` is the bucket of the
        // running maximum of the row's distances; capacities start at 1, so a distance of 0 hits
        // in every cache: bucket 0.
        let mut j = 0usize;
        for &id in row {
            let prev = last_access[id as usize];
            if prev == u32::MAX {
                break;
            }
            let prev = prev as usize;
            // The distance is at most the number of accesses in between: when even that stays
            // below the bucket's capacity the bucket holds, and nothing needs counting (the
            // usual case for the blocks after a row's first: their distances are alike).
            let between = t - prev - 1;
            if caps.get(j).is_none_or(|&c| between as u64 >= c) {
                // Distinct blocks between the two accesses = accesses between them minus those
                // superseded by a later access of their block (kept as "dead" marks).
                let rd = (between - dead.count_from(prev + 1)) as u64;
                j = j.max(bucket_of(rd).min(caps.len()));
            }
            bucket[j] += w;
        }
        // Then the row's blocks are touched tail first, the order in which vLLM frees a finished
        // request's blocks, so a prompt's first block (the one other prompts share) is the last
        // of them to go. First accesses need no bookkeeping at all, which keeps big traces cheap.
        for &id in row.iter().rev() {
            let prev = last_access[id as usize];
            last_access[id as usize] = t as u32;
            t += 1;
            if prev != u32::MAX {
                dead.add(prev as usize);
            }
        }
    }
    tables.keep_words(last_access);

    let n = rows_with_ids.max(1) as f64;
    let mut acc = 0.0;
    let mut points = Vec::with_capacity(caps.len() + 1);
    for (j, w) in bucket.iter().enumerate() {
        acc += w;
        points.push(CachePoint {
            capacity_blocks: caps.get(j).copied(),
            hit_rate: if rows_with_ids == 0 { 0.0 } else { acc / n },
        });
    }
    points
}

/// Words of marks per counted group: a group's count lives in the Fenwick tree, a word's is its
/// popcount.
const GROUP_WORDS: usize = 16;

/// A set of marked access times with prefix counts: one bit per time, plus a Fenwick (binary
/// indexed) tree of counts per group of [`GROUP_WORDS`] words (1,024 times). The tree is small
/// enough to stay in the cache (94 KB for 24 M accesses), so marking is cheap; a count walks the
/// tree and adds the popcounts of at most a group's words.
struct Marks {
    bits: Vec<u64>,
    /// Marks made.
    total: usize,
    /// Fenwick tree over the groups' counts (1-based).
    groups: Vec<u32>,
}

impl Marks {
    fn new(n: usize) -> Self {
        let words = n.div_ceil(64);
        Marks { bits: vec![0; words], total: 0, groups: vec![0; words.div_ceil(GROUP_WORDS) + 1] }
    }

    /// Marks time `i` (not yet marked).
    fn add(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
        self.total += 1;
        let mut g = i / 64 / GROUP_WORDS + 1;
        while g < self.groups.len() {
            self.groups[g] += 1;
            g += g & g.wrapping_neg();
        }
    }

    /// Marks at times `a..`: one walk of the tree.
    fn count_from(&self, a: usize) -> usize {
        self.total - self.prefix(a)
    }

    /// Marks among times `a..b` (`a <= b`).
    #[cfg(test)]
    fn count(&self, a: usize, b: usize) -> usize {
        // Within one word (recent reuse) no tree walk is needed.
        if a / 64 == b / 64 {
            return self.below(b) - self.below(a);
        }
        self.prefix(b) - self.prefix(a)
    }

    /// Marks among the times of `i`'s word below `i`.
    fn below(&self, i: usize) -> usize {
        self.bits.get(i / 64).map_or(0, |w| (w & ((1u64 << (i % 64)) - 1)).count_ones() as usize)
    }

    /// Marks among times `0..i`.
    fn prefix(&self, i: usize) -> usize {
        let word = i / 64;
        let group = word / GROUP_WORDS;
        let mut s = 0usize;
        let mut g = group;
        while g > 0 {
            s += self.groups[g] as usize;
            g -= g & g.wrapping_neg();
        }
        let first = group * GROUP_WORDS;
        s += self.bits[first..word.min(self.bits.len())].iter().map(|w| w.count_ones() as usize).sum::<usize>();
        s + self.below(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Input, Row, Trace};
    use proptest::prelude::*;

    fn trace_of(rows: &[Vec<u64>]) -> Trace {
        rows.iter().map(|ids| (Row::new(Input::Length(ids.len() as i64 * 16)), ids.clone())).collect()
    }

    /// Straightforward LRU simulation with prefix semantics, for comparison: a row's leading
    /// hit is looked up when it starts, then its blocks are touched tail first.
    fn simulate(rows: &[Vec<u64>], cap: usize) -> f64 {
        let mut lru: Vec<u64> = Vec::new(); // most recent last
        let mut sum = 0.0;
        let mut n = 0;
        for ids in rows.iter().filter(|r| !r.is_empty()) {
            n += 1;
            let hits = ids.iter().take_while(|id| lru.contains(id)).count();
            for id in ids.iter().rev() {
                lru.retain(|x| x != id);
                lru.push(*id);
                if lru.len() > cap {
                    lru.remove(0);
                }
            }
            sum += hits as f64 / ids.len() as f64;
        }
        if n == 0 { 0.0 } else { sum / n as f64 }
    }

    proptest! {
        #[test]
        fn marks_count_like_a_plain_list(n in 0usize..4000, picks in proptest::collection::vec(any::<proptest::sample::Index>(), 0..300)) {
            let mut marks = Marks::new(n);
            let mut plain = vec![false; n];
            for p in picks.iter().filter(|_| n > 0) {
                let i = p.index(n);
                if !plain[i] {
                    plain[i] = true;
                    marks.add(i);
                }
            }
            // Marks before each time, so that a count is a difference (the test stays linear per query).
            let before: Vec<usize> = std::iter::once(0)
                .chain(plain.iter().scan(0, |acc, &m| {
                    *acc += usize::from(m);
                    Some(*acc)
                }))
                .collect();
            let count = |a: usize, b: usize| before[b] - before[a];
            for i in 0..=n {
                prop_assert_eq!(marks.prefix(i), count(0, i), "prefix {}", i);
                for a in (0..=i).step_by(37).chain([i.saturating_sub(1), i]) {
                    prop_assert_eq!(marks.count(a, i), count(a, i), "{}..{}", a, i);
                }
                prop_assert_eq!(marks.count_from(i), count(i, n), "{}..", i);
            }
        }
    }

    #[test]
    fn bucket_counts_the_capacities_up_to_a_distance() {
        for distinct in (1..300).chain([4096, 4097, 6143, 6144, 100_000]) {
            let caps = capacities(distinct);
            for rd in 0..distinct as u64 {
                assert_eq!(
                    bucket_of(rd).min(caps.len()),
                    caps.partition_point(|&c| c <= rd),
                    "distinct {distinct}, rd {rd}"
                );
            }
        }
    }

    #[test]
    fn capacities_are_increasing_and_end_at_the_distinct_count() {
        assert_eq!(capacities(13), [1, 2, 3, 4, 6, 8, 12, 13]);
        assert_eq!(capacities(0), Vec::<u64>::new());
    }

    proptest! {
        #[test]
        fn matches_a_direct_lru_simulation(rows in proptest::collection::vec(proptest::collection::vec(0u64..12, 0..6), 0..25)) {
            let t = trace_of(&rows);
            let distinct = rows.iter().flatten().collect::<std::collections::HashSet<_>>().len();
            let curve = lru_hit_rate_curve(&AnalysisInput::of(&t), distinct, &mut Tables::default());
            for p in &curve {
                let cap = p.capacity_blocks.map_or(usize::MAX, |c| c as usize);
                let expected = simulate(&rows, cap);
                prop_assert!((p.hit_rate - expected).abs() < 1e-12, "cap {:?}: {} vs {}", p.capacity_blocks, p.hit_rate, expected);
            }
            for w in curve.windows(2) {
                prop_assert!(w[0].hit_rate <= w[1].hit_rate + 1e-15);
            }
        }
    }
}
