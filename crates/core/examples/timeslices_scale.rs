//! Times the time slices of a big run: `timeslices_scale RECORDS.jsonl SLICE_S OUT_DIR` reads
//! a `profile_export.jsonl` (ours, AIPerf's or an earlier version's), slices it as `profile
//! --slice-duration SLICE_S` does (the client's token counts, no goodput) and writes
//! `profile_export_aiperf_timeslices.json` and `.csv` into OUT_DIR (times from 0, no
//! `input_config`), so two builds' files can be compared byte for byte. Prints the read time and
//! the slicing time (and, on Linux, its CPU time: on a loaded machine it is the steadier figure).

use std::path::Path;
use std::time::Instant;

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::timeslices::{Slicer, TIMESLICES_CSV, TIMESLICES_JSON, timeslices_csv, timeslices_json};

#[path = "support/records.rs"]
mod records;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, slice_s, out] = &args[..] else {
        return Err("usage: timeslices_scale RECORDS.jsonl SLICE_S OUT_DIR".into());
    };
    let slice_s: f64 = slice_s.parse()?;
    if !(slice_s.is_finite() && slice_s >= 1e-9) {
        return Err(format!("SLICE_S {slice_s}: accepted is a number of seconds of at least 1e-9").into());
    }
    let t = Instant::now();
    let mut agg = Aggregate::default();
    let mut slicer = Slicer::new((slice_s * 1e9).round() as u64)?;
    let n = records::each_record(input, |rec| {
        agg.add(rec, false, &[]);
        slicer.add(rec, false, &[]);
    })?;
    let read = t.elapsed();
    let t = Instant::now();
    let cpu = cpu_ns();
    let slices = slicer.finish(agg.last_end_ns.unwrap_or(0), false, &agg.timeline);
    let json = timeslices_json(&slices, 0, &serde_json::Value::Null);
    let csv = timeslices_csv(&slices, 0);
    let sliced = t.elapsed();
    let cpu = cpu_ns().zip(cpu).map(|(b, a)| (b - a) as f64 / 1e9);
    std::fs::create_dir_all(out)?;
    std::fs::write(Path::new(out).join(TIMESLICES_JSON), json)?;
    std::fs::write(Path::new(out).join(TIMESLICES_CSV), csv)?;
    println!(
        "{n} lines read in {:.3} s; {} slices of {slice_s} s (JSON and CSV made) in {:.3} s{}",
        read.as_secs_f64(),
        slices.slices.len(),
        sliced.as_secs_f64(),
        cpu.map_or(String::new(), |c| format!(", CPU {c:.3} s"))
    );
    Ok(())
}

/// This thread's CPU time in ns, where Linux tells it.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}
