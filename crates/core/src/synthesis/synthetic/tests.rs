#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;
use crate::analysis::analyze;
use crate::trace::Number;

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt())
}

fn lengths(t: &Trace) -> Vec<f64> {
    t.rows().iter().map(|r| r.input_length().unwrap() as f64).collect()
}

#[test]
fn defaults_are_aiperfs() {
    let t = SyntheticWorkload::default().generate(0).unwrap();
    assert_eq!(t.len(), 100);
    assert!(t.rows().iter().all(|r| r.input_length() == Some(550) && r.output_length.is_none()));
    assert!(t.rows().iter().all(|r| r.hash_id_count() == 2 && r.delay.is_none()));
    assert_eq!(t.rows()[7].session_id.as_deref(), Some("session_000007"));
    assert_eq!(analyze(&t, 512).cache_hit_rate, 0.0);
}

#[test]
fn means_and_stddevs_follow_the_options() {
    let w = SyntheticWorkload {
        entries: 4000,
        isl_mean: Some(200),
        isl_stddev: 20.0,
        osl_mean: Some(50),
        osl_stddev: 5.0,
        turn_mean: 3.0,
        turn_stddev: 1.0,
        delay_mean: 500.0,
        delay_stddev: 50.0,
        delay_ratio: 2.0,
        ..SyntheticWorkload::default()
    };
    let t = w.generate(1).unwrap();
    let (m, sd) = mean_sd(&lengths(&t));
    assert!((m - 200.5).abs() < 1.0 && (sd - 20.0).abs() < 1.0, "ISL {m} ± {sd}");
    let osl: Vec<f64> = t.rows().iter().map(|r| r.output_length.unwrap() as f64).collect();
    let (m, sd) = mean_sd(&osl);
    assert!((m - 50.5).abs() < 0.3 && (sd - 5.0).abs() < 0.3, "OSL {m} ± {sd}");
    let turns = t.len() as f64 / 4000.0;
    assert!((turns - 3.5).abs() < 0.1, "turns {turns}");
    let delays: Vec<f64> = t.rows().iter().filter_map(|r| r.delay.map(Number::as_f64)).collect();
    assert_eq!(delays.len(), t.len() - 4000, "every later turn has a delay");
    let (m, sd) = mean_sd(&delays);
    assert!((m - 1001.0).abs() < 6.0 && (sd - 100.0).abs() < 5.0, "delay {m} ± {sd}");
}

#[test]
fn the_prefix_pool_shares_blocks_and_nothing_else_does() {
    let w = SyntheticWorkload {
        entries: 200,
        isl_mean: Some(100),
        prefix_pool_size: Some(4),
        prefix_length: Some(128),
        block_size: 64,
        ..SyntheticWorkload::default()
    };
    let t = w.generate(3).unwrap();
    assert!(t.rows().iter().all(|r| r.input_length() == Some(228) && r.hash_id_count() == 4));
    let firsts: std::collections::HashSet<&[u64]> = t.iter().map(|(_, ids)| &ids[..2]).collect();
    assert_eq!(firsts.len(), 4, "each conversation starts with one of the 4 prefixes");
    assert!(analyze(&t, 64).cache_hit_rate > 0.4);
    // At 512 tokens a block, a 128-token prefix is in no whole block.
    let t = SyntheticWorkload { block_size: 512, ..w }.generate(3).unwrap();
    assert_eq!(analyze(&t, 512).cache_hit_rate, 0.0);
}

#[test]
fn the_shared_system_prompt_is_on_every_first_turn() {
    let w = SyntheticWorkload {
        entries: 50,
        isl_mean: Some(64),
        turn_mean: 2.0,
        shared_system_length: Some(200),
        user_context_length: Some(30),
        block_size: 64,
        ..SyntheticWorkload::default()
    };
    let t = w.generate(0).unwrap();
    for (i, (r, ids)) in t.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!((r.input_length(), &ids[..3]), (Some(294), &[0, 1, 2][..]));
            assert_eq!(ids.len(), 5);
        } else {
            assert_eq!((r.input_length(), ids.len()), (Some(64), 1));
            assert!(ids[0] > 2);
        }
    }
    assert!(analyze(&t, 64).cache_hit_rate > 0.2);
}

#[test]
fn seq_dist_buckets_and_range_windows() {
    let dist = SeqDist::parse("100,10:25;1000|10,20:75").unwrap();
    let w = SyntheticWorkload { entries: 4000, seq_dist: Some(dist), ..SyntheticWorkload::default() };
    let t = w.generate(5).unwrap();
    let small = t.rows().iter().filter(|r| r.input_length() == Some(100)).count() as f64 / 4000.0;
    assert!((small - 0.25).abs() < 0.03, "{small}");
    assert!(t.rows().iter().all(|r| matches!(r.output_length, Some(10 | 20))));
    let r = RangeRatio::parse("0.5", CorpusStyle::Vllm).unwrap();
    let w = SyntheticWorkload {
        entries: 4000,
        isl_mean: Some(100),
        osl_mean: Some(10),
        range_ratio: Some(r),
        ..SyntheticWorkload::default()
    };
    let t = w.generate(5).unwrap();
    let l = lengths(&t);
    assert!(l.iter().all(|&x| (50.0..=150.0).contains(&x)));
    let (m, _) = mean_sd(&l);
    assert!((m - 100.0).abs() < 2.0, "{m}");
    assert!(t.rows().iter().all(|r| (5..=15).contains(&r.output_length.unwrap())));
}

#[test]
fn refuses_what_aiperf_refuses_naming_the_option() {
    let base = SyntheticWorkload::default;
    let cases = [
        (SyntheticWorkload { entries: 0, ..base() }, "--num-dataset-entries must be at least 1, got 0"),
        (SyntheticWorkload { turn_mean: 0.5, ..base() }, "--conversation-turn-mean must be at least 1, got 0.5"),
        (SyntheticWorkload { isl_stddev: -1.0, ..base() }, "--isl-stddev must be a finite number ≥ 0, got -1"),
        (
            SyntheticWorkload { prefix_length: Some(10), shared_system_length: Some(5), ..base() },
            "--prompt-prefix-length and --shared-system-prompt-length are mutually exclusive",
        ),
        (SyntheticWorkload { prefix_length: Some(10), ..base() }, "--prompt-prefix-length needs"),
        (SyntheticWorkload { batch_size: 2, ..base() }, "--prompt-batch-size must be 1 here"),
        (
            SyntheticWorkload {
                range_ratio: Some(RangeRatio { input: 0.5, output: 0.5, style: CorpusStyle::Vllm }),
                ..base()
            },
            "--random-range-ratio needs --isl",
        ),
        (
            SyntheticWorkload {
                isl_mean: Some(2),
                osl_mean: Some(2),
                range_ratio: Some(RangeRatio { input: 0.9, output: 0.1, style: CorpusStyle::Vllm }),
                ..base()
            },
            "--random-range-ratio must be a window whose minimum is at least 1 token",
        ),
        (SyntheticWorkload { entries: 1 << 40, ..base() }, "more than 67108864 rows"),
    ];
    for (w, want) in cases {
        let e = w.generate(0).unwrap_err().to_string();
        assert!(e.contains(want), "{e:?} lacks {want:?}");
    }
    assert!(RangeRatio::parse("1.0", CorpusStyle::Vllm).is_err());
    assert!(RangeRatio::parse("1.0", CorpusStyle::Sglang).is_ok());
    assert!(RangeRatio::parse(r#"{"input":0.2,"output":0.4}"#, CorpusStyle::Sglang).is_err());
    let r = RangeRatio::parse(r#"{"input":0.2,"output":0.4}"#, CorpusStyle::Vllm).unwrap();
    assert_eq!((r.input, r.output), (0.2, 0.4));
}

/// A measurement, not a check: `cargo test --release -p aiperf-core --lib a_million_rows --
/// --ignored --nocapture` (BENCHMARKS.md).
#[test]
#[ignore = "a measurement (release build): generates and writes 1,000,000 rows"]
fn a_million_rows() {
    let w = SyntheticWorkload {
        entries: 250_000,
        isl_mean: Some(550),
        isl_stddev: 50.0,
        osl_mean: Some(128),
        osl_stddev: 10.0,
        turn_mean: 4.0,
        delay_mean: 500.0,
        delay_stddev: 100.0,
        prefix_pool_size: Some(16),
        prefix_length: Some(1024),
        ..SyntheticWorkload::default()
    };
    let t0 = std::time::Instant::now();
    let t = w.generate(1).unwrap();
    let generated = t0.elapsed();
    let text = crate::trace::write_trace(&t);
    let written = t0.elapsed();
    assert_eq!(t.len(), 1_000_000);
    println!(
        "1,000,000 rows: generated in {:.3} s, written ({} MB of JSONL) at {:.3} s",
        generated.as_secs_f64(),
        text.len() / 1_000_000,
        written.as_secs_f64()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn counts_and_seeds(
        entries in 1u64..60, isl in 1u64..3000, sd in 0.0f64..300.0, turns in 1.0f64..5.0,
        tsd in 0.0f64..3.0, pool in 0u64..5, prefix in 0u64..1200, block in 1u32..600, seed in 0u64..1000,
    ) {
        let w = SyntheticWorkload {
            entries, isl_mean: Some(isl), isl_stddev: sd, turn_mean: turns, turn_stddev: tsd,
            prefix_pool_size: (pool > 0).then_some(pool), prefix_length: (pool > 0).then_some(prefix),
            block_size: block, ..SyntheticWorkload::default()
        };
        let t = w.generate(seed).unwrap();
        prop_assert_eq!(&t, &w.generate(seed).unwrap());
        let sessions: std::collections::HashSet<_> = t.rows().iter().map(|r| r.session_id.clone()).collect();
        prop_assert_eq!(sessions.len() as u64, entries);
        prop_assert!(t.len() as u64 >= entries);
        for (r, ids) in t.iter() {
            let n = r.input_length().unwrap() as u64;
            prop_assert!(n >= 1);
            prop_assert_eq!(ids.len() as u64, n.div_ceil(u64::from(block)));
        }
        if pool == 0 || prefix < u64::from(block) {
            prop_assert_eq!(analyze(&t, block).cache_hit_rate, 0.0);
        }
    }
}

/// `--osl 100 --osl-stddev 20.9` on a dataset file: AIPerf's draws for seed 42, made by
/// `rng.init(42); r = rng.derive("composer.turn.max_tokens")` and
/// `[r.sample_positive_normal_integer(100, 20) for _ in range(4)]` in AIPerf 0.13.0's venv
/// (`[126, 66, 97, 128]`), go to the rows without an output length conversation by conversation.
#[test]
fn fill_output_lengths_draws_as_aiperf_in_conversation_order() {
    use crate::trace::{Input, Row};
    let row = |session: Option<&str>, output: Option<u64>| {
        let mut r = Row::new(Input::Length(10));
        r.session_id = session.map(Into::into);
        r.output_length = output;
        r
    };
    let mut t = Trace::new();
    for (s, o) in [(Some("a"), None), (Some("b"), Some(7)), (None, None), (Some("a"), None), (Some("b"), None)] {
        t.push(row(s, o), []);
    }
    super::fill_output_lengths(&mut t, 42, 100, 20.9);
    let got: Vec<_> = t.rows().iter().map(|r| r.output_length).collect();
    assert_eq!(got, [Some(126), Some(7), Some(128), Some(66), Some(97)]);
    let mut none = Trace::new();
    none.push(row(None, None), []);
    super::fill_output_lengths(&mut none, 42, 0, 5.0);
    assert_eq!(none.rows()[0].output_length, None);
}
