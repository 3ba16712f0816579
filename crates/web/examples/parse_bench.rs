//! The run's record parser in WebAssembly, apart from the rest of the worker: the browser
//! benchmark `tests/e2e/parse_bench.mjs` (`BENCH=1`-style, not a test) loads this example's wasm
//! into a Web Worker in Chromium and times `parse_fast_lines` and `run_loader_lines` on the
//! 100,000 records of `crates/core/benches/run_lines.rs` (the same lines, made by the same code,
//! `crates/core/benches/support/record_lines.rs`, and kept in the module's memory, so that no
//! copy from JavaScript is timed). Results: BENCHMARKS.md, beside the native `run_lines` numbers.

use std::cell::RefCell;

#[path = "../../core/benches/support/record_lines.rs"]
mod record_lines;

use aiperf_core::results::line;
use aiperf_core::results::record::RequestRecord;
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
    let out = record_lines::record_lines(u64::from(n));
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
