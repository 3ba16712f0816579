//! Property tests of the analysis: on random traces it equals a naive transcription of the
//! reference's definitions (quadratic prefix counter and all), and its invariants hold.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::collections::{HashMap, HashSet};

use aiperf_core::analysis::analyze_with_rows;
use aiperf_core::trace::{Input, Row, Trace};
use proptest::prelude::*;

struct Naive {
    unique_prefixes: u64,
    num_prefix_groups: u64,
    prefix_reuse_ratio: f64,
    context: Vec<f64>,
    hit: Vec<f64>,
}

/// The reference's definitions, written as plainly as possible.
fn naive(rows: &[(i64, Vec<u64>)], bs: u32) -> Naive {
    let mut pairs: HashMap<(usize, u64), u32> = HashMap::new();
    let mut prefixes: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut firsts: HashMap<u64, u32> = HashMap::new();
    for (_, h) in rows {
        for (p, id) in h.iter().enumerate() {
            *pairs.entry((p, *id)).or_default() += 1;
        }
        for i in 1..=h.len() {
            *prefixes.entry(h[..i].to_vec()).or_default() += 1;
        }
        if let Some(f) = h.first() {
            *firsts.entry(*f).or_default() += 1;
        }
    }
    let total: u32 = prefixes.values().sum();
    let shared: u32 = prefixes.values().filter(|&&c| c >= 2).sum();
    let mut seen: HashSet<u64> = HashSet::new();
    let (mut context, mut hit) = (Vec::new(), Vec::new());
    for (i, h) in rows {
        let rep = h.iter().enumerate().filter(|(p, id)| pairs[&(*p, **id)] >= 2).count();
        context.push(if h.is_empty() {
            0.0
        } else if rep == h.len() {
            *i as f64
        } else {
            (rep as u64 * u64::from(bs)) as f64
        });
        if !h.is_empty() {
            let k = h.iter().position(|id| !seen.contains(id)).unwrap_or(h.len());
            hit.push(k as f64 / h.len() as f64);
            seen.extend(h.iter().copied());
        }
    }
    Naive {
        unique_prefixes: prefixes.len() as u64,
        num_prefix_groups: firsts.values().filter(|&&c| c >= 2).count() as u64,
        prefix_reuse_ratio: if total == 0 { 0.0 } else { f64::from(shared) / f64::from(total) },
        context,
        hit,
    }
}

fn rows() -> impl Strategy<Value = Vec<(i64, Vec<u64>)>> {
    // Few distinct ids so rows share prefixes; sometimes huge ids to exercise interning.
    let id = prop_oneof![8 => 0u64..10, 1 => Just(u64::MAX - 3), 1 => (1u64 << 40)..(1u64 << 40) + 3];
    prop::collection::vec((-5i64..3000, prop::collection::vec(id, 0..7)), 0..30)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn analysis_equals_the_naive_reference(rows in rows(), bs in prop::sample::select(vec![1u32, 16, 512])) {
        let trace: Trace = rows.iter().map(|(i, h)| (Row::new(Input::Length(*i)), h.clone())).collect();
        let (a, m) = analyze_with_rows(&trace, bs);
        let n = naive(&rows, bs);
        prop_assert_eq!(a.unique_prefixes, n.unique_prefixes);
        prop_assert_eq!(a.num_prefix_groups, n.num_prefix_groups);
        prop_assert!((a.prefix_reuse_ratio - n.prefix_reuse_ratio).abs() < 1e-12);
        prop_assert_eq!(&m.context_length, &n.context);
        prop_assert_eq!(&m.hit_rate, &n.hit);

        // Invariants.
        prop_assert!(m.hit_rate.iter().all(|h| (0.0..=1.0).contains(h)));
        prop_assert!((0.0..=1.0).contains(&a.cache_hit_rate));
        prop_assert!((0.0..=1.0).contains(&a.prefix_reuse_ratio));
        prop_assert!(a.unique_prefixes <= a.total_hash_ids);
        prop_assert!(a.distinct_hash_ids <= a.unique_prefixes);
        for (u, (i, c)) in m.unique_prompt_length.iter().zip(m.isl.iter().zip(&m.context_length)) {
            prop_assert_eq!(*u, i - c);
        }
        // The cache curve rises with capacity and ends at the infinite-cache hit rate.
        let curve = &a.lru_hit_rate_curve;
        prop_assert!(curve.windows(2).all(|w| w[0].hit_rate <= w[1].hit_rate + 1e-12));
        let last = curve.last().unwrap();
        prop_assert!(last.capacity_blocks.is_none());
        prop_assert!((last.hit_rate - a.cache_hit_rate).abs() < 1e-9);
    }
}

/// The prefix statistics of the analysis before the trie: rows sorted by their id sequences,
/// each row's trie nodes past its longest common prefix with its sorted neighbours. Kept here as
/// an oracle for the linear trie (it is n log n × prefix length, too slow for big traces).
struct SortedPrefixes {
    unique_prefixes: u64,
    prefix_reuse_ratio: f64,
    num_prefix_groups: u64,
    /// (root id, requests, mean shared blocks, max shared blocks) of groups with ≥ 2 rows, in
    /// the analysis' order: most requests first, then by root id; all of them, not only 10.
    groups: Vec<(u64, u64, f64, u64)>,
}

fn sorted_prefixes(rows: &[Vec<u64>]) -> SortedPrefixes {
    let mut sorted: Vec<&Vec<u64>> = rows.iter().filter(|r| !r.is_empty()).collect();
    sorted.sort();
    let lcp = |a: &[u64], b: &[u64]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let lcps: Vec<usize> = (0..sorted.len()).map(|k| if k == 0 { 0 } else { lcp(sorted[k - 1], sorted[k]) }).collect();
    let (mut unique, mut shared_sum, mut all) = (0u64, 0u64, 0u64);
    let mut groups: Vec<(u64, u64, f64, u64)> = Vec::new();
    for (k, r) in sorted.iter().enumerate() {
        let shared = lcps[k].max(lcps.get(k + 1).copied().unwrap_or(0));
        unique += (r.len() - lcps[k]) as u64;
        shared_sum += shared as u64;
        all += r.len() as u64;
        if lcps[k] == 0 {
            groups.push((r[0], 0, 0.0, 0));
        }
        let g = groups.last_mut().unwrap();
        g.1 += 1;
        g.2 += shared as f64;
        g.3 = g.3.max(shared as u64);
    }
    for g in &mut groups {
        g.2 /= g.1 as f64;
    }
    groups.retain(|g| g.1 >= 2);
    groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    SortedPrefixes {
        unique_prefixes: unique,
        prefix_reuse_ratio: if all == 0 { 0.0 } else { shared_sum as f64 / all as f64 },
        num_prefix_groups: groups.len() as u64,
        groups,
    }
}

/// Rows that share long prefixes: each extends (a prefix of) an earlier row, or starts anew;
/// ids come from a small alphabet so an id also turns up under other parents, and now and then
/// one is huge so the ids get interned.
fn shared_prefix_rows() -> impl Strategy<Value = Vec<Vec<u64>>> {
    let id = prop_oneof![6 => 0u64..6, 3 => 0u64..400, 1 => Just(u64::MAX - 1), 1 => (1u64 << 33)..(1u64 << 33) + 4];
    let step = (any::<prop::sample::Index>(), any::<prop::sample::Index>(), prop::collection::vec(id, 0..12), 0u8..4);
    prop::collection::vec(step, 0..60).prop_map(|steps| {
        let mut rows: Vec<Vec<u64>> = Vec::new();
        for (parent, cut, tail, kind) in steps {
            let mut row = if rows.is_empty() || kind == 0 {
                Vec::new()
            } else {
                let p = &rows[parent.index(rows.len())];
                p[..cut.index(p.len() + 1)].to_vec()
            };
            row.extend(tail);
            rows.push(row);
        }
        rows
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn prefix_statistics_equal_the_sort_based_method(rows in shared_prefix_rows()) {
        let trace: Trace = rows.iter().map(|h| (Row::new(Input::Length(h.len() as i64 * 512)), h.clone())).collect();
        let (a, _) = analyze_with_rows(&trace, 512);
        let old = sorted_prefixes(&rows);
        prop_assert_eq!(a.unique_prefixes, old.unique_prefixes);
        prop_assert_eq!(a.num_prefix_groups, old.num_prefix_groups);
        prop_assert_eq!(a.prefix_reuse_ratio.to_bits(), old.prefix_reuse_ratio.to_bits());
        let ours: Vec<(u64, u64, u64, u64)> = a.top_prefix_groups.iter()
            .map(|g| (g.root_id, g.requests, g.mean_shared_blocks.to_bits(), g.max_shared_blocks)).collect();
        let theirs: Vec<(u64, u64, u64, u64)> = old.groups.iter().take(10)
            .map(|g| (g.0, g.1, g.2.to_bits(), g.3)).collect();
        prop_assert_eq!(ours, theirs);
    }
}
