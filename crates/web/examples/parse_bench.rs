//! The run's record parser in WebAssembly, apart from the rest of the worker: the browser
//! benchmark `tests/e2e/parse_bench.mjs` (`BENCH=1`-style, not a test) loads this example's wasm
//! into a Web Worker in Chromium and times `parse_fast_lines` and `run_loader_lines` on the
//! 100,000 records of `crates/core/benches/run_lines.rs` (the same lines, made here by the same
//! writer and kept in the module's memory, so that no copy from JavaScript is timed). Results:
//! BENCHMARKS.md, beside the native `run_lines` numbers.

use std::cell::RefCell;

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::line::{self, record_line};
use aiperf_core::results::record::{RequestRecord, ServerUsage};
use aiperf_core::view::{RunLoader, RunSettings};
use wasm_bindgen::prelude::wasm_bindgen;

thread_local! {
    /// The lines [`make_lines`] made.
    static LINES: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Makes `n` records as the CLI writes them (streamed requests 1 ms apart, TTFT 20–36 ms, 4 chunks
/// 2 ms apart, usage and expected cached tokens: the native bench's lines) and keeps them; returns
/// their bytes.
#[wasm_bindgen]
pub fn make_lines(n: u32) -> u32 {
    let mut agg = Aggregate::default();
    let mut out = Vec::new();
    for i in 0..u64::from(n) {
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
    let bytes = out.len() as u32;
    LINES.with(|l| *l.borrow_mut() = out);
    bytes
}

/// The records `results::line::parse_fast` reads from the lines (one per line).
#[wasm_bindgen]
pub fn parse_fast_lines() -> u32 {
    LINES.with(|text| {
        let mut rec = RequestRecord::default();
        let mut n = 0;
        for l in text.borrow().split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            n += u32::from(line::parse_fast(l, &mut rec) == Some(true));
        }
        n
    })
}

/// The records of the whole `RunLoader` (parse, aggregate, points) over the lines, fed in 1 MiB
/// pieces as the worker's stream feeds it; 0 when it fails.
#[wasm_bindgen]
pub fn run_loader_lines() -> u32 {
    LINES.with(|text| {
        let mut loader = RunLoader::new("profile_export.jsonl", RunSettings::default());
        for piece in text.borrow().chunks(1 << 20) {
            if loader.push(piece).is_err() {
                return 0;
            }
        }
        loader.finish("bench").map_or(0, |run| run.report.request_count as u32)
    })
}

fn main() {}
