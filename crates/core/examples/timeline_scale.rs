//! Times the time-weighted metrics of a big run: `timeline_scale RECORDS.jsonl ROUNDS` reads a
//! `profile_export.jsonl` into an aggregate, then takes `Timeline::window_metrics` over the
//! run's window ROUNDS times, printing each round's CPU time (on Linux; wall time otherwise) and
//! a digest of the metrics' bits, so two builds' figures can be compared exactly.

use std::time::Instant;

use aiperf_core::results::aggregate::Aggregate;

#[path = "support/records.rs"]
mod records;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, rounds] = &args[..] else {
        return Err("usage: timeline_scale RECORDS.jsonl ROUNDS".into());
    };
    let rounds: u32 = rounds.parse().map_err(|e| format!("ROUNDS {rounds}: {e}; accepted is a whole number"))?;
    let mut agg = Aggregate::default();
    let n = records::each_record(input, |rec| {
        agg.add(rec, false, &[]);
    })?;
    for round in 1..=rounds {
        let (t, cpu) = (Instant::now(), cpu_ns());
        let metrics = agg.timeline.window_metrics(None);
        let cpu = cpu.zip(cpu_ns()).map(|(a, b)| b.saturating_sub(a));
        let wall = t.elapsed();
        // FNV-1a over every statistic's bits.
        let digest = metrics
            .iter()
            .flat_map(|(_, w)| w.stats().map(|(_, v)| v.to_bits()))
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b).wrapping_mul(0x100_0000_01b3));
        let cpu = cpu.map_or_else(|| "-".to_string(), |c| format!("{:.3}", c as f64 / 1e9));
        println!("round {round}: {n} lines, cpu {cpu} s, wall {:.3} s, digest {digest:016x}", wall.as_secs_f64());
    }
    Ok(())
}

/// This thread's CPU time (ns), where `/proc` tells it.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}
