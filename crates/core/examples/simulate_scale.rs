//! Times the simulator on a big trace: `simulate_scale TRACE.jsonl [REPLICAS] [KV_BLOCKS]
//! [prompt-blocks-only]` (defaults 8 replicas, 20,000 blocks each, KV-aware router, LRU, output
//! tokens taking blocks). Prints the parse, schedule, block numbering and
//! simulation times (and, on Linux, the simulation's CPU time: on a loaded machine it is the
//! steadier figure) and the hit rates; `SIMULATE_SCALE_REPEAT=N` simulates N times, the least
//! time shown last.

use std::sync::Arc;
use std::time::Instant;

use aiperf_core::replay::schedule::{Timing, build};
use aiperf_core::simulate::{BlockIds, Cluster, Policy, Router, SimRequest, simulate_numbered};
use aiperf_core::trace::{ParseOptions, parse_str};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(input) = args.first() else {
        return Err("usage: simulate_scale TRACE.jsonl [REPLICAS] [KV_BLOCKS] [prompt-blocks-only]".into());
    };
    let replicas = args.get(1).map_or(Ok(8), |s| s.parse())?;
    let kv_blocks = args.get(2).map_or(Ok(20_000), |s| s.parse())?;
    let output_blocks = args.get(3).map(String::as_str) != Some("prompt-blocks-only");
    let t = Instant::now();
    let text = std::fs::read_to_string(input)?;
    let trace = parse_str(&text, ParseOptions::new(input.as_str()))?.trace;
    drop(text);
    let parsed = t.elapsed();
    let t = Instant::now();
    let timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let schedule = Arc::new(build(&trace, timing, None)?);
    let scheduled = t.elapsed();
    let cluster = Cluster {
        replicas,
        kv_blocks: Some(kv_blocks),
        router: Router::KvAware,
        policy: Policy::Lru,
        max_running: Some(256),
        output_blocks,
        ..Cluster::default()
    };
    let t = Instant::now();
    let mut ids = BlockIds::of(&trace)?;
    ids.mark_once(&schedule);
    let numbered = t.elapsed();
    // On a noisy machine the least of several simulations of the same input is the steadier
    // figure: `SIMULATE_SCALE_REPEAT=N` simulates N times.
    let repeat: usize = std::env::var("SIMULATE_SCALE_REPEAT").map_or(Ok(1), |s| s.parse())?;
    let mut simulated = std::time::Duration::MAX;
    let mut sim = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let cpu = cpu_ns();
        sim = Some(simulate_numbered(
            trace.rows(),
            Arc::clone(&schedule),
            &ids,
            &cluster,
            &mut |_: usize, _: &SimRequest| {},
        )?);
        simulated = simulated.min(t.elapsed());
        if let (Some(a), Some(b)) = (cpu, cpu_ns()) {
            println!("simulate {:.2} s, CPU {:.2} s", t.elapsed().as_secs_f64(), (b - a) as f64 / 1e9);
        }
    }
    let sim = sim.ok_or("no simulation")?;
    let total = sim.total();
    println!(
        "rows {} | parse {:.2} s | schedule {:.2} s | blocks numbered {:.2} s | simulate {:.2} s | token hit {:.2}% | row hit {:.2}% | imbalance {:.3} | evictions {}",
        trace.len(),
        parsed.as_secs_f64(),
        scheduled.as_secs_f64(),
        numbered.as_secs_f64(),
        simulated.as_secs_f64(),
        total.token_hit_rate() * 100.0,
        total.row_hit_rate() * 100.0,
        sim.imbalance(),
        total.evictions
    );
    Ok(())
}

/// This thread's time on a CPU (ns), where Linux tells it.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}
