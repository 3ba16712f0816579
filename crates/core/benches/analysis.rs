//! Parse and analysis speed on the real conversation trace and on a 1,000,000-row trace made by
//! repeating it with shifted ids (see `examples/repeat_trace.rs`), and the doubling check (N and
//! 2N rows). Results: BENCHMARKS.md.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::hint::black_box;
use std::path::PathBuf;

use aiperf_core::analysis::analyze;
use aiperf_core::trace::{ParseOptions, Trace, parse_str, write_trace};
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../examples/repeat_trace.rs"]
#[allow(dead_code)]
mod repeat_trace;

fn conversation_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/conversation_trace.jsonl");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Trace {
    parse_str(text, ParseOptions::new("bench")).map(|o| o.trace).unwrap_or_else(|e| panic!("{e}"))
}

fn conversation(c: &mut Criterion) {
    let text = conversation_text();
    let trace = parse(&text);
    let mut g = c.benchmark_group("conversation_trace (12,031 rows)");
    g.bench_function("parse", |b| b.iter(|| parse(black_box(&text))));
    g.bench_function("analyze", |b| b.iter(|| analyze(black_box(&trace), 512)));
    g.bench_function("parse + analyze", |b| b.iter(|| analyze(&parse(black_box(&text)), 512)));
    g.finish();
}

fn million(c: &mut Criterion) {
    let big_text = write_trace(&repeat_trace::repeat(&parse(&conversation_text()), 1_000_000));
    let big = parse(&big_text);
    let mut g = c.benchmark_group("1M rows");
    g.sample_size(10);
    g.bench_function("parse", |b| b.iter(|| parse(black_box(&big_text))));
    g.bench_function("analyze", |b| b.iter(|| analyze(black_box(&big), 512)));
    g.finish();
}

/// The analysis of N and 2N rows (the conversation trace repeated with sparse, disjoint ids, as
/// in BENCHMARKS.md's "Analysis at scale"): linear work shows as twice the time.
fn doubling(c: &mut Criterion) {
    let base = parse(&conversation_text());
    let mut g = c.benchmark_group("doubling (sparse ids)");
    g.sample_size(10);
    for rows in [250_000, 500_000] {
        let trace = repeat_trace::repeat_with_stride(&base, rows, 100_000_000);
        g.bench_function(format!("analyze {rows} rows"), |b| b.iter(|| analyze(black_box(&trace), 512)));
    }
    g.finish();
}

criterion_group!(benches, conversation, million, doubling);
criterion_main!(benches);
