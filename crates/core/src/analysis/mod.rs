//! Trace analysis: the reference's statistics (AIPerf `analyze-trace`, exact), then our own.
//!
//! The reference counts prefixes with a dictionary of tuples, quadratic in row length. Here the
//! prefix trie is walked in its linear form: rows sorted by their id sequences, where the trie
//! nodes a row adds are the ids past its longest common prefix with its sorted neighbour.
//! Per-id state (pair counts, the `seen` set) lives in flat vectors over a dense id space.

mod arrivals;
mod cache;
mod ids;
mod lint;

pub use arrivals::ArrivalStats;
pub use cache::CachePoint;
pub use ids::IdSpace;
pub use lint::{Lint, LintFinding, SecondsLike};

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;
use crate::trace::Trace;

/// Block size of the Mooncake traces (tokens per hash id).
pub const DEFAULT_BLOCK_SIZE: u32 = 512;

/// The full analysis of a trace. Serializes with the reference's keys first, in its order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub total_requests: u64,
    pub unique_prefixes: u64,
    pub num_prefix_groups: u64,
    pub cache_hit_rate: f64,
    pub min_isl: i64,
    pub max_isl: i64,
    pub avg_isl: f64,
    pub min_osl: u64,
    pub max_osl: u64,
    pub avg_osl: f64,
    pub prefix_reuse_ratio: f64,
    pub isl_stats: Option<Summary>,
    pub osl_stats: Option<Summary>,
    pub context_length_stats: Option<Summary>,
    pub unique_prompt_length_stats: Option<Summary>,
    pub hit_rate_stats: Option<Summary>,
    // Beyond the reference.
    pub block_size: u32,
    pub total_hash_ids: u64,
    pub distinct_hash_ids: u64,
    pub arrivals: Option<ArrivalStats>,
    /// Hit rate of a finite LRU prefix cache by capacity; the last point is the infinite cache.
    pub lru_hit_rate_curve: Vec<CachePoint>,
    /// The largest prefix groups: rows sharing a first block.
    pub top_prefix_groups: Vec<PrefixGroup>,
    pub lint: Lint,
    /// False when no row has hash ids (e.g. converted from a source without prefix hashes): the
    /// hit rates and prefix counts above are then not measurements but absent information.
    #[serde(default = "prefix_information_default")]
    pub prefix_information: bool,
}

fn prefix_information_default() -> bool {
    true
}

/// Rows that start with the same block, and how deep they share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixGroup {
    pub root_id: u64,
    pub requests: u64,
    /// Mean over the group's rows of the blocks shared with at least one other row of the trace.
    pub mean_shared_blocks: f64,
    pub max_shared_blocks: u64,
}

/// Per-row values the statistics are made of (kept for charts: histograms and CDFs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowMetrics {
    pub isl: Vec<f64>,
    pub osl: Vec<f64>,
    pub context_length: Vec<f64>,
    pub unique_prompt_length: Vec<f64>,
    /// Only rows with hash ids.
    pub hit_rate: Vec<f64>,
}

/// Analyses a trace with the given block size (tokens per hash id).
pub fn analyze(trace: &Trace, block_size: u32) -> Analysis {
    analyze_with_rows(trace, block_size).0
}

/// Analysis plus the per-row values behind it.
pub fn analyze_with_rows(trace: &Trace, block_size: u32) -> (Analysis, RowMetrics) {
    let space = IdSpace::new(trace.all_hash_ids());
    let bs = f64::from(block_size);
    let pairs = PairCounts::build(trace, &space);
    let prefixes = PrefixTrie::build(trace, &space);

    let n = trace.len();
    let mut m = RowMetrics {
        isl: Vec::with_capacity(n),
        osl: Vec::with_capacity(n),
        context_length: Vec::with_capacity(n),
        unique_prompt_length: Vec::with_capacity(n),
        hit_rate: Vec::with_capacity(n),
    };
    let mut seen = BitSet::new(space.size());
    let (mut min_isl, mut max_isl, mut min_osl, mut max_osl) = (i64::MAX, i64::MIN, u64::MAX, 0u64);
    for (row, _) in trace.iter() {
        let range = trace.hash_ids_range(row);
        let isl = row.input_length().unwrap_or(0);
        let osl = row.output_length.unwrap_or(0);
        (min_isl, max_isl) = (min_isl.min(isl), max_isl.max(isl));
        (min_osl, max_osl) = (min_osl.min(osl), max_osl.max(osl));
        let len = range.len();
        let context = if len == 0 {
            0.0
        } else {
            let rep = range.clone().enumerate().filter(|&(pos, i)| pairs.is_repeated(pos, space.at(i))).count();
            if rep == len { isl as f64 } else { rep as f64 * bs }
        };
        m.isl.push(isl as f64);
        m.osl.push(osl as f64);
        m.context_length.push(context);
        m.unique_prompt_length.push(isl as f64 - context);
        if len > 0 {
            let k = range.clone().position(|i| !seen.contains(space.at(i))).unwrap_or(len);
            m.hit_rate.push(k as f64 / len as f64);
            for i in range {
                seen.insert(space.at(i));
            }
        }
    }
    if n == 0 {
        (min_isl, max_isl, min_osl, max_osl) = (0, 0, 0, 0);
    }
    let mean_or_zero = |v: &[f64]| crate::stats::mean(v).unwrap_or(0.0);
    let analysis = Analysis {
        total_requests: n as u64,
        unique_prefixes: prefixes.unique_prefixes,
        num_prefix_groups: prefixes.groups.iter().filter(|g| g.requests >= 2).count() as u64,
        cache_hit_rate: mean_or_zero(&m.hit_rate),
        min_isl,
        max_isl,
        avg_isl: mean_or_zero(&m.isl),
        min_osl,
        max_osl,
        avg_osl: mean_or_zero(&m.osl),
        prefix_reuse_ratio: prefixes.reuse_ratio(),
        isl_stats: Summary::of(&m.isl),
        osl_stats: Summary::of(&m.osl),
        context_length_stats: Summary::of(&m.context_length),
        unique_prompt_length_stats: Summary::of(&m.unique_prompt_length),
        hit_rate_stats: Summary::of(&m.hit_rate),
        block_size,
        total_hash_ids: trace.total_hash_ids() as u64,
        distinct_hash_ids: seen.count() as u64,
        arrivals: ArrivalStats::of(trace),
        lru_hit_rate_curve: cache::lru_hit_rate_curve(trace, &space),
        top_prefix_groups: prefixes.top_groups(10),
        lint: lint::lint(trace, block_size, pairs.ids_at_several_positions),
        prefix_information: trace.total_hash_ids() > 0,
    };
    (analysis, m)
}

/// How often each `(position, id)` pair occurs, saturated at 2 (all the reference asks is "≥ 2").
struct PairCounts {
    /// Position of an id's first occurrence (`u32::MAX`: never seen).
    first_pos: Vec<u32>,
    /// Occurrences at that first position, saturated at 2.
    count_at_first: Vec<u8>,
    /// The rare pairs of an id at a second position.
    other: HashMap<(u32, u32), u8>,
    ids_at_several_positions: u64,
}

impl PairCounts {
    fn build(trace: &Trace, space: &IdSpace) -> Self {
        let mut pc = PairCounts {
            first_pos: vec![u32::MAX; space.size()],
            count_at_first: vec![0; space.size()],
            other: HashMap::new(),
            ids_at_several_positions: 0,
        };
        let mut several = BitSet::new(0);
        for (row, _) in trace.iter() {
            for (pos, i) in trace.hash_ids_range(row).enumerate() {
                let id = space.at(i);
                let pos = pos as u32;
                if pc.first_pos[id] == u32::MAX {
                    pc.first_pos[id] = pos;
                }
                if pc.first_pos[id] == pos {
                    pc.count_at_first[id] = pc.count_at_first[id].saturating_add(1).min(2);
                } else {
                    let c = pc.other.entry((pos, id as u32)).or_insert(0);
                    *c = c.saturating_add(1).min(2);
                    if several.words.is_empty() {
                        several = BitSet::new(space.size());
                    }
                    if !several.contains(id) {
                        several.insert(id);
                        pc.ids_at_several_positions += 1;
                    }
                }
            }
        }
        pc
    }

    #[inline]
    fn is_repeated(&self, pos: usize, id: usize) -> bool {
        if self.first_pos[id] == pos as u32 {
            self.count_at_first[id] >= 2
        } else {
            self.other.get(&(pos as u32, id as u32)).is_some_and(|&c| c >= 2)
        }
    }
}

/// The prefix trie of all rows' id sequences, in linear form (sorted rows + common prefixes).
struct PrefixTrie {
    unique_prefixes: u64,
    /// Σ over rows of the prefix positions another row shares (leading slices seen ≥ 2 times).
    shared_slices: u64,
    /// Σ over rows of their length (all leading slices).
    all_slices: u64,
    groups: Vec<PrefixGroup>,
}

impl PrefixTrie {
    fn build(trace: &Trace, space: &IdSpace) -> Self {
        let ranges: Vec<std::ops::Range<usize>> =
            trace.rows().iter().map(|r| trace.hash_ids_range(r)).filter(|r| !r.is_empty()).collect();
        let key = |r: &std::ops::Range<usize>| r.clone().map(|i| space.at(i));
        let mut order: Vec<u32> = (0..ranges.len() as u32).collect();
        match space {
            IdSpace::Direct { ids, .. } => {
                order.sort_unstable_by(|&a, &b| ids[ranges[a as usize].clone()].cmp(&ids[ranges[b as usize].clone()]))
            }
            IdSpace::Interned { ids, .. } => {
                order.sort_unstable_by(|&a, &b| ids[ranges[a as usize].clone()].cmp(&ids[ranges[b as usize].clone()]))
            }
        }
        // lcp[k] = common prefix of sorted rows k-1 and k (0 for k = 0).
        let lcp: Vec<usize> = (0..order.len())
            .map(|k| {
                if k == 0 {
                    0
                } else {
                    key(&ranges[order[k - 1] as usize])
                        .zip(key(&ranges[order[k] as usize]))
                        .take_while(|(a, b)| a == b)
                        .count()
                }
            })
            .collect();
        let mut t = PrefixTrie { unique_prefixes: 0, shared_slices: 0, all_slices: 0, groups: Vec::new() };
        let all = trace.all_hash_ids();
        for k in 0..order.len() {
            let r = &ranges[order[k] as usize];
            let next = lcp.get(k + 1).copied().unwrap_or(0);
            let shared = lcp[k].max(next);
            t.unique_prefixes += (r.len() - lcp[k]) as u64;
            t.shared_slices += shared as u64;
            t.all_slices += r.len() as u64;
            // Rows with the same first id are adjacent in sorted order.
            if k == 0 || lcp[k] == 0 {
                t.groups.push(PrefixGroup {
                    root_id: all[r.start],
                    requests: 0,
                    mean_shared_blocks: 0.0,
                    max_shared_blocks: 0,
                });
            }
            if let Some(g) = t.groups.last_mut() {
                g.requests += 1;
                g.mean_shared_blocks += shared as f64;
                g.max_shared_blocks = g.max_shared_blocks.max(shared as u64);
            }
        }
        for g in &mut t.groups {
            g.mean_shared_blocks /= g.requests as f64;
        }
        t
    }

    fn reuse_ratio(&self) -> f64 {
        if self.all_slices == 0 { 0.0 } else { self.shared_slices as f64 / self.all_slices as f64 }
    }

    fn top_groups(&self, n: usize) -> Vec<PrefixGroup> {
        let mut g: Vec<PrefixGroup> = self.groups.iter().filter(|g| g.requests >= 2).cloned().collect();
        g.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.root_id.cmp(&b.root_id)));
        g.truncate(n);
        g
    }
}

/// A fixed-size set of small integers.
pub(crate) struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    pub(crate) fn new(size: usize) -> Self {
        BitSet { words: vec![0; size.div_ceil(64)] }
    }
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }
    #[inline]
    pub(crate) fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
    pub(crate) fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, parse_str};

    fn trace(text: &str) -> Trace {
        parse_str(text, ParseOptions::default()).unwrap().trace
    }

    #[test]
    fn empty_trace_has_zeros_and_no_stats() {
        let a = analyze(&Trace::new(), 512);
        assert_eq!((a.total_requests, a.unique_prefixes, a.min_isl, a.max_osl), (0, 0, 0, 0));
        assert_eq!((a.cache_hit_rate, a.prefix_reuse_ratio), (0.0, 0.0));
        assert!(a.isl_stats.is_none() && a.hit_rate_stats.is_none());
    }

    #[test]
    fn small_trace_by_hand() {
        // Rows: [1,2,3] (I=1200), [1,2,4] (I=1100), [9] (I=100, O=7), text row.
        let t = trace(
            "{\"input_length\":1200,\"output_length\":10,\"hash_ids\":[1,2,3]}\n\
             {\"input_length\":1100,\"output_length\":20,\"hash_ids\":[1,2,4]}\n\
             {\"input_length\":100,\"output_length\":7,\"hash_ids\":[9]}\n\
             {\"text_input\":\"hi\"}\n",
        );
        let (a, m) = analyze_with_rows(&t, 512);
        // Trie nodes: 1, 1-2, 1-2-3, 1-2-4, 9.
        assert_eq!(a.unique_prefixes, 5);
        assert_eq!(a.num_prefix_groups, 1);
        // Slices seen twice: [1], [1,2] in two rows each = 4 of 7.
        assert_eq!(a.prefix_reuse_ratio, 4.0 / 7.0);
        // Pairs (0,1), (1,2) repeat: rows 1 and 2 have rep=2 of 3 → 1024; row 3 rep=0 → 0.
        assert_eq!(m.context_length, [1024.0, 1024.0, 0.0, 0.0]);
        assert_eq!(m.unique_prompt_length, [176.0, 76.0, 100.0, 0.0]);
        // Hit rates: row 1 sees nothing, row 2 hits 1,2 (2/3), row 3 nothing.
        assert_eq!(m.hit_rate, [0.0, 2.0 / 3.0, 0.0]);
        assert_eq!((a.min_isl, a.max_isl, a.min_osl, a.max_osl), (0, 1200, 0, 20));
        assert_eq!(a.distinct_hash_ids, 5);
        assert_eq!(a.top_prefix_groups[0].root_id, 1);
        assert_eq!(a.top_prefix_groups[0].requests, 2);
    }

    #[test]
    fn fully_repeated_rows_use_the_whole_input_as_context() {
        let t = trace("{\"input_length\":700,\"hash_ids\":[1,2]}\n{\"input_length\":600,\"hash_ids\":[1,2]}\n");
        let (_, m) = analyze_with_rows(&t, 512);
        assert_eq!(m.context_length, [700.0, 600.0]);
    }

    #[test]
    fn sparse_ids_give_the_same_analysis_as_dense_ones() {
        let dense = trace(
            "{\"input_length\":1200,\"hash_ids\":[0,1,2]}\n{\"input_length\":900,\"hash_ids\":[0,1]}\n{\"input_length\":10,\"hash_ids\":[3]}\n",
        );
        let sparse = trace(&write_shifted(&dense, 1 << 50));
        let (a, b) = (analyze(&dense, 512), analyze(&sparse, 512));
        assert_eq!(
            (a.unique_prefixes, a.prefix_reuse_ratio, a.cache_hit_rate),
            (b.unique_prefixes, b.prefix_reuse_ratio, b.cache_hit_rate)
        );
        assert_eq!(a.context_length_stats, b.context_length_stats);
        assert_eq!(
            a.lru_hit_rate_curve.iter().map(|p| p.hit_rate).collect::<Vec<_>>(),
            b.lru_hit_rate_curve.iter().map(|p| p.hit_rate).collect::<Vec<_>>()
        );
    }

    fn write_shifted(t: &Trace, shift: u64) -> String {
        let mut out = Trace::new();
        for (row, ids) in t.iter() {
            out.push(row.clone(), ids.iter().map(|i| i * 7919 + shift));
        }
        crate::trace::write_trace(&out)
    }
}
