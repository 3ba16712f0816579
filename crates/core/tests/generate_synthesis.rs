//! Generative synthesis on the real conversation trace: reproducible bytes, faithful
//! distributions, and bounded failure when the ISL filter rejects everything.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed test

use std::path::PathBuf;

use aiperf_core::synthesis::{GenerateParams, PrefixModel, SynthesisError, fidelity_report, generate};
use aiperf_core::trace::{ParseOptions, Trace, parse_str, write_trace};

fn conversation() -> Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/conversation_trace.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    parse_str(&text, ParseOptions::new("conversation_trace.jsonl")).unwrap().trace
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let input = conversation();
    let p = GenerateParams { num_requests: 5000, seed: 11, ..GenerateParams::default() };
    let a = write_trace(&generate(&input, &p).unwrap());
    let b = write_trace(&generate(&input, &p).unwrap());
    assert_eq!(a, b);
    // A model learned once samples the same as learning again.
    let model = PrefixModel::learn(&input, p.block_size).unwrap();
    assert_eq!(write_trace(&model.sample(&p).unwrap()), a);
    let c = write_trace(&generate(&input, &GenerateParams { seed: 12, ..p }).unwrap());
    assert_ne!(a, c);
}

#[test]
fn synthesized_distributions_follow_the_original() {
    let input = conversation();
    let p = GenerateParams { num_requests: input.len(), seed: 1, ..GenerateParams::default() };
    let out = generate(&input, &p).unwrap();
    let report = fidelity_report(&input, &out, p.block_size);
    for (metric, max_ks, max_mean_err) in
        [("isl", 0.03, 0.03), ("osl", 0.03, 0.03), ("context_length", 0.08, 0.10), ("requests_per_second", 0.05, 0.05)]
    {
        let m = report.metric(metric).unwrap();
        let (o, s) = (m.original.as_ref().unwrap(), m.synthesized.as_ref().unwrap());
        let ks = m.ks_distance.unwrap();
        assert!(ks <= max_ks, "{metric}: KS {ks}");
        assert!((s.avg - o.avg).abs() <= max_mean_err * o.avg, "{metric}: mean {} vs {}", s.avg, o.avg);
    }
    // Dynamo's ISL std is 10% off on this trace (17,379 vs 15,800); ours stays within 3%.
    let isl = report.metric("isl").unwrap();
    let (o, s) = (isl.original.as_ref().unwrap().std, isl.synthesized.as_ref().unwrap().std);
    assert!((s - o).abs() <= 0.03 * o, "ISL std {s} vs {o}");
}

#[test]
fn every_row_keeps_the_block_invariant_under_multipliers() {
    let input = conversation();
    let p = GenerateParams {
        num_requests: 20_000,
        prefix_len_multiplier: 1.5,
        prompt_len_multiplier: 0.7,
        prefix_root_multiplier: 4,
        speedup_ratio: 3.0,
        max_isl: Some(32_768),
        min_isl: Some(1000),
        max_osl: Some(400),
        seed: 9,
        ..GenerateParams::default()
    };
    let out = generate(&input, &p).unwrap();
    assert_eq!(out.len(), 20_000);
    let mut last = f64::MIN;
    for (row, ids) in out.iter() {
        let (isl, n) = (row.input_length().unwrap(), ids.len() as i64);
        assert!((n - 1) * 512 < isl && isl <= n * 512);
        assert!((1000..=32_768).contains(&isl));
        assert!(row.output_length.unwrap() <= 400);
        let t = row.timestamp.unwrap().as_f64();
        assert!(t >= last);
        last = t;
    }
}

#[test]
fn a_filter_that_rejects_everything_is_an_error() {
    let input = conversation();
    let p = GenerateParams { num_requests: 1000, min_isl: Some(10_000_000), ..GenerateParams::default() };
    let err = generate(&input, &p).unwrap_err();
    assert!(matches!(err, SynthesisError::FilterRejectsEverything { accepted: 0, .. }), "{err}");
    assert!(err.to_string().contains("passed only 0 of 10000"), "{err}");
}

#[test]
fn the_fidelity_report_judges_arrivals_over_time() {
    use aiperf_core::synthesis::arrival_checks;
    let input = conversation();
    let itself = arrival_checks(&input, &input);
    assert!(itself.iter().all(|c| c.pass == Some(true)), "{itself:?}");
    let names: Vec<&str> = itself.iter().map(|c| c.statistic.as_str()).collect();
    assert_eq!(
        names,
        [
            "dispersion_10s",
            "lag1_autocorrelation_10s",
            "dispersion_60s",
            "lag1_autocorrelation_60s",
            "dispersion_117s",
            "lag1_autocorrelation_117s",
            "inter_arrival_cv",
            "peak_1s",
            "peak_rate_10s_per_s",
            "mean_burst_size",
            "largest_burst"
        ]
    );
    // Over several seeds, the minute-scale shape of the source comes back.
    let seeds = 4;
    let (mut d, mut a) = (0.0, 0.0);
    let value = |checks: &[aiperf_core::synthesis::ArrivalCheck], name: &str| {
        let c = checks.iter().find(|c| c.statistic == name).unwrap();
        (c.original.unwrap(), c.synthesized.unwrap())
    };
    let (mut d0, mut a0) = (0.0, 0.0);
    for seed in 0..seeds {
        let p = GenerateParams { num_requests: input.len(), seed, ..GenerateParams::default() };
        let checks = arrival_checks(&input, &generate(&input, &p).unwrap());
        (d0, a0) = (value(&checks, "dispersion_60s").0, value(&checks, "lag1_autocorrelation_60s").0);
        d += value(&checks, "dispersion_60s").1 / seeds as f64;
        a += value(&checks, "lag1_autocorrelation_60s").1 / seeds as f64;
        for name in ["inter_arrival_cv", "mean_burst_size", "peak_rate_10s_per_s"] {
            let c = checks.iter().find(|c| c.statistic == name).unwrap();
            assert_eq!(c.pass, Some(true), "seed {seed}: {c:?}");
        }
    }
    assert!((d / d0 - 1.0).abs() <= 0.25, "dispersion at 1 min: {d} vs {d0}");
    assert!((a - a0).abs() <= 0.15, "lag-1 autocorrelation at 1 min: {a} vs {a0}");
}

/// The numbers the sampler gathers equal an analysis of the trace it wrote, bit for bit.
fn assert_facts_are_the_analysis(input: &Trace, p: &GenerateParams) {
    use aiperf_core::analysis::analyze_for_comparison;
    use aiperf_core::synthesis::{ArrivalSeries, Compared};
    let model = PrefixModel::learn(input, p.block_size).unwrap();
    let (trace, facts) = model.sample_with_facts(p).unwrap();
    assert_eq!(write_trace(&trace), write_trace(&model.sample(p).unwrap()), "{p:?}");
    let (a, m) = analyze_for_comparison(&trace, p.block_size);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (want, got) = (Compared::of_analysis(&a, &m), facts.compared());
    assert_eq!(
        (want.block_size, want.requests, want.cache_hit_rate.to_bits(), want.unique_prefixes),
        (got.block_size, got.requests, got.cache_hit_rate.to_bits(), got.unique_prefixes),
        "{p:?}"
    );
    for (name, w, g) in [
        ("isl", &m.isl, &facts.rows.isl),
        ("osl", &m.osl, &facts.rows.osl),
        ("context_length", &m.context_length, &facts.rows.context_length),
        ("hit_rate", &m.hit_rate, &facts.rows.hit_rate),
        ("requests_per_second", &want.requests_per_second, &facts.requests_per_second),
    ] {
        assert_eq!(bits(w), bits(g), "{name} {p:?}");
    }
    let series = ArrivalSeries::of(&trace);
    assert_eq!(bits(&series.timestamps), bits(&facts.arrivals.timestamps), "{p:?}");
    let sorted_bits = |v: &[f64]| {
        let mut b = bits(v);
        b.sort_unstable();
        b
    };
    assert_eq!(sorted_bits(&series.turns), sorted_bits(&facts.arrivals.turns), "{p:?}");
    assert_eq!(sorted_bits(&series.delays), sorted_bits(&facts.arrivals.delays), "{p:?}");
}

#[test]
fn the_sampled_facts_are_the_analysis_of_the_sampled_trace() {
    let input = conversation();
    let base = GenerateParams { num_requests: 5000, seed: 5, ..GenerateParams::default() };
    for p in [
        base.clone(),
        GenerateParams { seed: 9, block_size: 64, ..base.clone() },
        GenerateParams { prefix_root_multiplier: 3, prefix_len_multiplier: 1.5, ..base.clone() },
        GenerateParams { prompt_len_multiplier: 0.3, output_len_multiplier: 2.0, max_osl: Some(300), ..base.clone() },
        GenerateParams { min_isl: Some(2000), max_isl: Some(40_000), speedup_ratio: 3.0, ..base.clone() },
        GenerateParams { duration_s: Some(600), intensity: 2.0, ..base.clone() },
    ] {
        assert_facts_are_the_analysis(&input, &p);
    }
    // Sessions: Mooncake `session_id` with timestamps, with delays, and conversations.
    let mut rows = String::new();
    for i in 0..400u64 {
        let (s, turn) = (i / 4, i % 4);
        let ids: Vec<u64> = (0..=turn).map(|k| s % 7 * 100 + k).chain([10_000 + i]).collect();
        let isl = ids.len() as u64 * 16 - (i % 5);
        let time =
            if turn == 0 { format!("\"timestamp\":{}", s * 900 + i % 3) } else { format!("\"delay\":{}", 50 + i % 13) };
        rows += &format!(
            "{{{time},\"session_id\":\"u{s}\",\"input_length\":{isl},\"output_length\":{},\"hash_ids\":{ids:?}}}\n",
            5 + i % 9
        );
    }
    let delays = parse_str(&rows, ParseOptions::default()).unwrap().trace;
    let timestamps = parse_str(
        &rows
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let t = format!("\"timestamp\":{}", i * 250);
                let l = l.split_once(',').map_or(l.to_string(), |(_, rest)| format!("{{{t},{rest}"));
                format!("{l}\n")
            })
            .collect::<String>(),
        ParseOptions::default(),
    )
    .unwrap()
    .trace;
    let p = GenerateParams { num_requests: 3000, block_size: 16, seed: 2, ..GenerateParams::default() };
    for t in [&delays, &timestamps] {
        assert_facts_are_the_analysis(t, &p);
        assert_facts_are_the_analysis(t, &GenerateParams { prefix_root_multiplier: 2, ..p.clone() });
    }
}
