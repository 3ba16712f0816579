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
