//! Synthesis benchmarks on the real FAST'25 conversation trace: transform (AIPerf's options),
//! generation of 100,000 rows, and prompts → hash_ids block hashing.
//!
//! Run: `cargo bench -p aiperf-core --bench synthesis`. Results are recorded in BENCHMARKS.md.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;

use aiperf_core::rng::PyRandom;
use aiperf_core::synthesis::{GenerateParams, PrefixModel, TransformParams, generate, transform};
use aiperf_core::trace::prompt_hash::BlockHasher;
use aiperf_core::trace::{ParseOptions, Trace, parse_str, write_trace};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn conversation() -> Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/conversation_trace.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match parse_str(&text, ParseOptions::new("conversation_trace.jsonl")) {
        Ok(outcome) => outcome.trace,
        Err(e) => panic!("{e}"),
    }
}

/// The conversation trace minus the rows AIPerf 0.13.0 aborts on (all ids shared, partial last
/// block): the 11,825-row input AIPerf's own timings were measured on.
fn safe_conversation(full: &Trace) -> Trace {
    let mut count: HashMap<u64, u32> = HashMap::new();
    for id in full.all_hash_ids() {
        *count.entry(*id).or_default() += 1;
    }
    let crashes =
        |isl: i64, ids: &[u64]| !ids.is_empty() && ids.iter().all(|id| count[id] >= 2) && isl < ids.len() as i64 * 512;
    let safe: Trace = full
        .iter()
        .filter(|(r, ids)| !crashes(r.input_length().unwrap_or(0), ids))
        .map(|(r, ids)| (r.clone(), ids.to_vec()))
        .collect();
    assert_eq!(safe.len(), 11_825);
    safe
}

fn bench_transform(c: &mut Criterion) {
    let safe = safe_conversation(&conversation());
    let mut group = c.benchmark_group("transform_conversation_11825");
    let runs = [
        ("speedup2", TransformParams { speedup_ratio: 2.0, ..TransformParams::default() }),
        ("plm2", TransformParams { prefix_len_multiplier: 2.0, ..TransformParams::default() }),
        (
            "combined_seed42",
            TransformParams {
                prefix_len_multiplier: 1.5,
                prefix_root_multiplier: 3,
                prompt_len_multiplier: 0.5,
                speedup_ratio: 2.0,
                max_isl: Some(8192),
                max_osl: Some(512),
                seed: 42,
                ..TransformParams::default()
            },
        ),
    ];
    for (name, params) in &runs {
        group.bench_function(*name, |b| b.iter(|| transform(black_box(&safe), params)));
    }
    let (_, combined) = &runs[2];
    group.bench_function("combined_seed42_and_write", |b| {
        b.iter(|| transform(black_box(&safe), combined).map(|t| write_trace(&t)))
    });
    group.finish();
}

fn bench_generate(c: &mut Criterion) {
    let full = conversation();
    let params = GenerateParams { num_requests: 100_000, seed: 1, ..GenerateParams::default() };
    let model = PrefixModel::learn(&full, params.block_size).unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("generate_conversation");
    group.sample_size(10);
    group.bench_function("learn", |b| b.iter(|| PrefixModel::learn(black_box(&full), 512)));
    group.bench_function("sample_100k", |b| b.iter(|| model.sample(black_box(&params))));
    group.bench_function("learn_sample_write_100k", |b| {
        b.iter(|| generate(black_box(&full), &params).map(|t| write_trace(&t).len()))
    });
    group.finish();
}

fn bench_prompt_hash(c: &mut Criterion) {
    // 200 prompts of 8,192 tokens; each shares a random-length prefix with a base prompt.
    let mut rng = PyRandom::new(3);
    let base: Vec<u32> = (0..8192).map(|_| rng.below(49_152) as u32).collect();
    let prompts: Vec<Vec<u32>> = (0..200)
        .map(|_| {
            let keep = rng.below(8192) as usize;
            base[..keep].iter().copied().chain((keep..8192).map(|_| rng.below(49_152) as u32)).collect()
        })
        .collect();
    let tokens: u64 = prompts.iter().map(|p| p.len() as u64).sum();
    let mut group = c.benchmark_group("prompt_hash");
    group.throughput(Throughput::Elements(tokens));
    group.bench_function("block512_1.6M_tokens", |b| {
        b.iter(|| {
            let mut h = BlockHasher::new(512);
            prompts.iter().map(|p| h.hash_ids(black_box(p)).len()).sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_transform, bench_generate, bench_prompt_hash);
criterion_main!(benches);
