//! The records of the run-line benchmarks, as the CLI writes them: streamed requests 1 ms apart,
//! TTFT 20–36 ms, 4 chunks 2 ms apart, usage and expected cached tokens. Shared by
//! `benches/run_lines.rs` and the web crate's `examples/parse_bench.rs` (included by path).

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::line::record_line;
use aiperf_core::results::record::{RequestRecord, ServerUsage};

/// `n` record lines.
pub fn record_lines(n: u64) -> Vec<u8> {
    let mut agg = Aggregate::default();
    let mut out = Vec::new();
    for i in 0..n {
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
