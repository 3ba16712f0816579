//! Makes a big trace from a real one by repeating it with shifted ids and timestamps, so every
//! copy has its own prefix blocks and the copies follow one another in time.
//!
//! `cargo run --release -p aiperf-core --example repeat_trace -- IN.jsonl ROWS OUT.jsonl [ID_STRIDE]`
//!
//! With `ID_STRIDE`, copy k's ids are shifted by k·`ID_STRIDE` instead of k·(max id + 1); the
//! 1.01M-row trace of BENCHMARKS.md's "Analysis at scale" uses 100000000 (sparse ids).

use std::io::Write;

use aiperf_core::trace::{ParseOptions, Trace, parse_str, write_row};

/// `copies` of `trace` (cut to `rows` rows), copy k with ids + k·(max id + 1) and timestamps +
/// k·(span + 1 s).
pub fn repeat(trace: &Trace, rows: usize) -> Trace {
    let id_shift = trace.all_hash_ids().iter().max().map_or(1, |m| m + 1);
    repeat_with_stride(trace, rows, id_shift)
}

/// Like [`repeat`], copy k's ids shifted by k·`stride` (a stride above the largest id keeps the
/// copies' ids disjoint; a big one makes them sparse).
pub fn repeat_with_stride(trace: &Trace, rows: usize, stride: u64) -> Trace {
    let ts = trace.rows().iter().filter_map(|r| r.timestamp.map(|t| t.as_f64()));
    let span = ts.fold(0.0f64, f64::max) as i64 + 1000;
    let mut out = Trace::with_capacity(rows, trace.total_hash_ids() * rows.div_ceil(trace.len().max(1)));
    'outer: for copy in 0u64.. {
        for (row, ids) in trace.iter() {
            if out.len() == rows {
                break 'outer;
            }
            let mut r = row.clone();
            r.timestamp = r.timestamp.map(|t| aiperf_core::trace::Number::Int(t.as_f64() as i64 + copy as i64 * span));
            out.push(r, ids.iter().map(|id| id + copy * stride));
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (input, rows, output, stride) = match args.as_slice() {
        [input, rows, output] => (input, rows, output, None),
        [input, rows, output, stride] => (input, rows, output, Some(stride.parse()?)),
        _ => return Err("usage: repeat_trace IN.jsonl ROWS OUT.jsonl [ID_STRIDE]".into()),
    };
    let text = std::fs::read_to_string(input)?;
    let trace = parse_str(&text, ParseOptions::new(input.as_str()))?.trace;
    let big = match stride {
        Some(stride) => repeat_with_stride(&trace, rows.parse()?, stride),
        None => repeat(&trace, rows.parse()?),
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(output)?);
    let mut line = String::new();
    for (row, ids) in big.iter() {
        line.clear();
        write_row(&mut line, row, ids);
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    w.flush()?;
    Ok(())
}
