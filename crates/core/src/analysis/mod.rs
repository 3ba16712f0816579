//! Trace analysis: the reference's statistics (AIPerf `analyze-trace`, exact), then our own.
//!
//! The reference counts prefixes with a dictionary of tuples, quadratic in row length. Here the
//! prefix trie is built in two passes over the ids, its nodes numbered by the ids themselves
//! (see `prefix`'s `TrieNodes`), so work and memory are linear in the number of hash ids. Per-id
//! state (pair counts, the `seen` set, trie nodes) lives in flat vectors over a dense id space.
//!
//! `mod.rs` runs the stages ([`analyze`]); `prefix` counts the shared prefixes, `cache` the LRU
//! curve, `arrivals` the arrival statistics, `lint` the findings, `headline` the one-line summary.

mod arrivals;
mod cache;
mod headline;
mod ids;
mod input;
mod lint;
mod model;
mod prefix;
pub mod report;
mod text;

pub use arrivals::{ArrivalStats, requests_per_second};
pub use cache::CachePoint;
pub use headline::{Headline, headline};
pub use ids::Interner;
pub use input::{AnalysisInput, InputBuilder, RowFacts};
pub use lint::{Lint, LintFinding, SecondsLike};
pub use model::Analysis;
pub use prefix::PrefixGroup;

use crate::stats::Summary;
use crate::trace::Trace;
use ids::{Tables, leading_hits};
use prefix::{PairCounts, PrefixTrie};

/// Block size of the Mooncake traces (tokens per hash id).
pub const DEFAULT_BLOCK_SIZE: u32 = 512;

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
    analyze_input(&AnalysisInput::of(trace), block_size)
}

/// Analysis plus the per-row values behind it.
pub fn analyze_with_rows(trace: &Trace, block_size: u32) -> (Analysis, RowMetrics) {
    analyze_input_with_rows(&AnalysisInput::of(trace), block_size)
}

/// Analyses a trace read into an [`AnalysisInput`] (e.g. while reading the file).
pub fn analyze_input(input: &AnalysisInput, block_size: u32) -> Analysis {
    analyze_input_with_rows(input, block_size).0
}

/// [`analyze_input`] plus the per-row values behind it.
pub fn analyze_input_with_rows(input: &AnalysisInput, block_size: u32) -> (Analysis, RowMetrics) {
    analyze_parts(input, block_size, true)
}

/// [`analyze_with_rows`] without the LRU curve (`lru_hit_rate_curve` is empty), the costliest
/// part of an analysis: what comparing two traces needs (the synthesis fidelity report).
pub fn analyze_for_comparison(trace: &Trace, block_size: u32) -> (Analysis, RowMetrics) {
    analyze_parts(&AnalysisInput::of(trace), block_size, false)
}

fn analyze_parts(input: &AnalysisInput, block_size: u32, curve: bool) -> (Analysis, RowMetrics) {
    let bs = f64::from(block_size);
    let ids = input.ids();
    // Each per-id table (the cache simulation's, the trie's, the pair counts) is built and
    // dropped in turn, so that the peak memory holds one of them.
    let mut tables = Tables::default();
    let lru_hit_rate_curve =
        if curve { cache::lru_hit_rate_curve(input, input.id_space(), &mut tables) } else { Vec::new() };
    let prefixes = PrefixTrie::build(input, &mut tables);
    let pairs = PairCounts::build(input, &mut tables);

    let n = input.len();
    // While the pair counts are held (the peak of memory), only the context lengths are kept;
    // the other per-row values come after.
    let mut context_length = Vec::with_capacity(n);
    for (row, range) in input.iter() {
        let len = range.len();
        let context = if len == 0 {
            0.0
        } else {
            let rep = ids[range.clone()].iter().enumerate().filter(|&(pos, &id)| pairs.is_repeated(pos, id)).count();
            if rep == len { row.input_length().unwrap_or(0) as f64 } else { rep as f64 * bs }
        };
        context_length.push(context);
    }
    let ids_at_several_positions = pairs.ids_at_several_positions;
    tables.keep_words(pairs.first);
    drop((pairs.other, pairs.far_first));
    drop(tables);

    let mut m = RowMetrics {
        isl: input.rows().iter().map(|r| r.input_length().unwrap_or(0) as f64).collect(),
        osl: input.rows().iter().map(|r| r.osl as f64).collect(),
        unique_prompt_length: Vec::with_capacity(n),
        context_length,
        hit_rate: Vec::with_capacity(n),
    };
    // Ids are numbered in first-seen order, so the ids seen before a row are those below the
    // count seen so far.
    let mut seen = 0u32;
    let (mut min_isl, mut max_isl, mut min_osl, mut max_osl) = (i64::MAX, i64::MIN, u64::MAX, 0u64);
    for ((row, range), &context) in input.iter().zip(&m.context_length) {
        let isl = row.input_length().unwrap_or(0);
        let osl = row.osl;
        (min_isl, max_isl) = (min_isl.min(isl), max_isl.max(isl));
        (min_osl, max_osl) = (min_osl.min(osl), max_osl.max(osl));
        m.unique_prompt_length.push(isl as f64 - context);
        let row_ids = &ids[range];
        if !row_ids.is_empty() {
            m.hit_rate.push(leading_hits(row_ids, &mut seen) as f64 / row_ids.len() as f64);
        }
    }
    if n == 0 {
        (min_isl, max_isl, min_osl, max_osl) = (0, 0, 0, 0);
    }
    let lint = lint::lint(input, block_size, ids_at_several_positions);
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
        total_hash_ids: ids.len() as u64,
        distinct_hash_ids: u64::from(seen),
        arrivals: ArrivalStats::of(input),
        lru_hit_rate_curve,
        top_prefix_groups: prefixes.top_groups(10),
        lint,
        prefix_information: !ids.is_empty(),
    };
    (analysis, m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Input, Number, ParseOptions, Row, parse_str};
    use proptest::prelude::*;

    fn trace(text: &str) -> Trace {
        parse_str(text, ParseOptions::default()).unwrap().trace
    }

    proptest! {
        #[test]
        fn the_headline_is_the_analysis_numbers(
            rows in proptest::collection::vec(
                (proptest::option::of(0i64..5000), proptest::option::of(0u64..900),
                 proptest::collection::vec(0u64..40, 0..6)),
                0..40,
            ),
        ) {
            let text: String = rows
                .iter()
                .map(|(isl, osl, ids)| match isl {
                    Some(isl) => {
                        let osl = osl.map_or(String::new(), |o| format!(",\"output_length\":{o}"));
                        format!("{{\"input_length\":{isl}{osl},\"hash_ids\":{ids:?}}}\n")
                    }
                    None => "{\"text_input\":\"hi\"}\n".to_string(),
                })
                .collect();
            let t = trace(&text);
            let (a, h) = (analyze(&t, 512), headline(&t));
            prop_assert_eq!(h.rows, a.total_requests);
            prop_assert_eq!(h.avg_isl.to_bits(), a.avg_isl.to_bits());
            prop_assert_eq!(h.avg_osl.to_bits(), a.avg_osl.to_bits());
            prop_assert_eq!(h.cache_hit_rate.to_bits(), a.cache_hit_rate.to_bits());
            let ((mut c, cm), (_, m)) = (analyze_for_comparison(&t, 512), analyze_with_rows(&t, 512));
            prop_assert!(c.lru_hit_rate_curve.is_empty());
            c.lru_hit_rate_curve = a.lru_hit_rate_curve.clone();
            prop_assert_eq!(&c, &a);
            prop_assert_eq!((cm.isl, cm.osl, cm.hit_rate, cm.context_length), (m.isl, m.osl, m.hit_rate, m.context_length));
        }
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

    fn extreme_row() -> impl Strategy<Value = (Row, Vec<u64>)> {
        let number = prop_oneof![
            any::<i64>().prop_map(Number::Int),
            prop::sample::select(vec![0.0, 1e308, -1e308, f64::MAX, f64::MIN, 5e-324]).prop_map(Number::Float),
        ];
        let isl = prop_oneof![Just(i64::MAX), Just(i64::MIN), Just(0i64), any::<i64>()];
        let osl = prop_oneof![Just(None), Just(Some(u64::MAX)), any::<u64>().prop_map(Some)];
        let id = prop_oneof![Just(u64::MAX), Just(0u64), 0u64..4];
        let session = prop::option::of(prop::sample::select(vec!["a", "b"]));
        (isl, osl, prop::option::of(number), session, prop::collection::vec(id, 0..5)).prop_map(
            |(isl, osl, timestamp, session, ids)| {
                let mut row = Row::new(Input::Length(isl));
                row.output_length = osl;
                row.timestamp = timestamp;
                row.session_id = session.map(Into::into);
                (row, ids)
            },
        )
    }

    proptest! {
        #[test]
        fn extreme_values_neither_panic_nor_leave_the_finite_numbers(
            rows in prop::collection::vec(extreme_row(), 0..12),
            block_size in prop::sample::select(vec![1u32, 512, u32::MAX]),
        ) {
            let t: Trace = rows.into_iter().collect();
            let a = analyze(&t, block_size);
            // Infinities and NaN would be written as `null` and fail to read back.
            let json = serde_json::to_string(&a).unwrap();
            prop_assert_eq!(serde_json::from_str::<Analysis>(&json).unwrap(), a);
        }
    }

    fn write_shifted(t: &Trace, shift: u64) -> String {
        let mut out = Trace::new();
        for (row, ids) in t.iter() {
            out.push(row.clone(), ids.iter().map(|i| i * 7919 + shift));
        }
        crate::trace::write_trace(&out)
    }
}
