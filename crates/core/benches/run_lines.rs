//! Reading a run back: `profile_export.jsonl` lines through the fast line parser against serde, and
//! the whole `RunLoader` (parse + `Aggregate::add` + points), on 100,000 records as the CLI writes
//! them (4 chunks, usage, expected cached tokens, per-request metrics). Results: BENCHMARKS.md.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::hint::black_box;

#[path = "support/record_lines.rs"]
mod record_lines;

use aiperf_core::results::line;
use aiperf_core::results::record::RequestRecord;
use aiperf_core::view::{RunLoader, RunSettings};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const N: u64 = 100_000;

fn lines() -> Vec<u8> {
    record_lines::record_lines(N)
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
