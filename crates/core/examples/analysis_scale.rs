//! How analysis time grows with the trace: parse and analysis timed apart on a file, and the
//! analysis of the conversation trace repeated to N and to 2N rows (ids disjoint between copies),
//! whose time ratio should be about 2 when the work is linear.
//!
//! ```text
//! cargo run --release -p aiperf-core --example analysis_scale -- doubling ROWS [ID_STRIDE]
//! cargo run --release -p aiperf-core --example analysis_scale -- file TRACE.jsonl
//! ```
//!
//! `ID_STRIDE` spaces the copies' ids (copy k's ids + k·stride); the default, 100,000,000, makes
//! them sparse (up to 8.4·10^9 for 84 copies), as in the issue's 1.01M-row trace. Results are in
//! BENCHMARKS.md.

use std::time::Instant;

use aiperf_core::analysis::analyze;
use aiperf_core::trace::{ParseOptions, Trace, parse_str, read};

#[path = "repeat_trace.rs"]
#[allow(dead_code)]
mod repeat_trace;

/// CPU time of this thread so far, in seconds (Linux; 0 elsewhere). On a shared, loaded machine
/// wall time mostly measures waiting for a core.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).map_or(0.0, |ns| ns / 1e9)
}

/// Best of `runs` analysis times (wall, CPU), in seconds.
fn best_analysis_time(trace: &Trace, runs: usize) -> (f64, f64) {
    (0..runs)
        .map(|_| {
            let (start, cpu) = (Instant::now(), cpu_s());
            std::hint::black_box(analyze(trace, 512));
            (start.elapsed().as_secs_f64(), cpu_s() - cpu)
        })
        .fold((f64::INFINITY, f64::INFINITY), |(w, c), (w2, c2)| (w.min(w2), c.min(c2)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["file", path] => {
            let (start, cpu) = (Instant::now(), cpu_s());
            let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
            let trace = read(file, ParseOptions::new(*path))?.trace;
            let (parse_wall, parse_cpu) = (start.elapsed().as_secs_f64(), cpu_s() - cpu);
            let (start, cpu) = (Instant::now(), cpu_s());
            let a = analyze(&trace, 512);
            let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_s() - cpu);
            println!(
                "{path}: {} rows, {} hash ids: parse {parse_wall:.3} s wall, {parse_cpu:.3} s CPU; \
                 analysis {wall:.3} s wall, {cpu:.3} s CPU",
                trace.len(),
                a.total_hash_ids
            );
        }
        ["doubling", rows, rest @ ..] => {
            let rows: usize = rows.parse()?;
            let stride: u64 = rest.first().map_or(Ok(100_000_000), |s| s.parse())?;
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/traces/conversation_trace.jsonl");
            let base = parse_str(&std::fs::read_to_string(path)?, ParseOptions::new(path))?.trace;
            let mut last = None;
            for n in [rows, 2 * rows] {
                let trace = repeat_trace::repeat_with_stride(&base, n, stride);
                let (wall, cpu) = best_analysis_time(&trace, 3);
                let ratio = last.map_or(String::new(), |(w, c): (f64, f64)| {
                    format!("; ratio to half as many rows: {:.2} wall, {:.2} CPU", wall / w, cpu / c)
                });
                println!(
                    "{n} rows, {} hash ids: analysis {wall:.3} s wall, {cpu:.3} s CPU (best of 3){ratio}",
                    trace.total_hash_ids()
                );
                last = Some((wall, cpu));
            }
        }
        _ => return Err("usage: analysis_scale doubling ROWS [ID_STRIDE] | analysis_scale file TRACE.jsonl".into()),
    }
    Ok(())
}
