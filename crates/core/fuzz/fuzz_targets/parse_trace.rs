//! Fuzz the trace reader: any bytes either parse or give row errors, never a panic; whatever
//! parses writes back to text that parses to the same rows, and analysis of it never panics.
#![no_main]

use aiperf_core::analysis::analyze;
use aiperf_core::trace::{ParseOptions, read, write_trace, parse_str};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(outcome) = read(data, ParseOptions::new("fuzz").skip_invalid(true)) else { return };
    let trace = outcome.trace;
    let text = write_trace(&trace);
    let again = parse_str(&text, ParseOptions::new("fuzz-again")).expect("written rows parse");
    assert_eq!(again.trace.len(), trace.len());
    assert_eq!(write_trace(&again.trace), text, "writing is stable");
    let block_size = data.first().map_or(512, |b| u32::from(*b) + 1);
    let a = analyze(&trace, block_size);
    assert!((0.0..=1.0).contains(&a.cache_hit_rate));
});
