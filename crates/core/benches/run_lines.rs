//! Reading a run back: `profile_export.jsonl` lines through the fast line parser against serde, and
//! the whole `RunLoader` (parse + `Aggregate::add` + points), on 100,000 records as the CLI writes
//! them (4 chunks, usage, expected cached tokens, per-request metrics). Results: BENCHMARKS.md.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::hint::black_box;

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::line::{self, record_line};
use aiperf_core::results::record::{RequestRecord, ServerUsage};
use aiperf_core::view::{RunLoader, RunSettings};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const N: u64 = 100_000;

fn lines() -> Vec<u8> {
    let mut agg = Aggregate::default();
    let mut out = Vec::new();
    for i in 0..N {
        let sent = 1_000_000 + i * 1_000_000;
        let first = sent + 20_000_000 + (i % 17) * 1_000_000;
        let chunk_ns: Vec<u64> = (0..4).map(|k| first + k * 2_000_000).collect();
        let r = RequestRecord {
            session_id: Some(format!("session-{}", i % 1000)),
            session_num: i as u32,
            trace_line: i as u32 + 1,
            scheduled_ns: sent - (i % 5) * 10_000,
            sent_ns: sent,
            end_ns: chunk_ns[3] + 1000,
            chunk_ns,
            streaming: true,
            input_tokens: Some(200 + i % 300),
            output_tokens: Some(4),
            usage: ServerUsage {
                prompt_tokens: Some(200 + i % 300),
                completion_tokens: Some(4),
                cached_tokens: Some((i % 3) * 64),
                first_chunk_tokens: None,
            },
            expected_cached_tokens: Some((i % 4) * 64),
            ..Default::default()
        };
        let m = agg.add(&r, true, &[]);
        out.extend(record_line(&r, m.as_ref(), 1_795_627_514_000_000_000));
    }
    out
}

fn run_lines(c: &mut Criterion) {
    let text = lines();
    let mut g = c.benchmark_group("profile_export.jsonl (100,000 records)");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("lines: fast parser", |b| {
        b.iter(|| {
            let mut rec = RequestRecord::default();
            let mut n = 0;
            for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                n += usize::from(line::parse_fast(black_box(l), &mut rec) == Some(true));
            }
            assert_eq!(n as u64, N);
        })
    });
    g.bench_function("lines: serde", |b| {
        b.iter(|| {
            for l in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                black_box(line::parse_serde(black_box(l)).unwrap());
            }
        })
    });
    g.bench_function("RunLoader (parse + aggregate + points)", |b| {
        b.iter(|| {
            let mut l = RunLoader::new("bench", RunSettings::default());
            l.push(black_box(&text)).unwrap();
            l.finish("bench").unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, run_lines);
criterion_main!(benches);
