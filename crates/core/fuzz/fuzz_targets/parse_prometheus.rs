//! Fuzz the Prometheus text parser and the series built from it: any text parses or is an error,
//! never a panic, and what parses is summarized without panicking.
#![no_main]

use aiperf_core::server::prometheus::{DEFAULT_LIMITS, parse};
use aiperf_core::server::series::{DEFAULT_SERIES_LIMITS, EndpointSeries};
use aiperf_core::server::window::ServerMetrics;
use aiperf_core::server::kinds::ServerView;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = parse(text, DEFAULT_LIMITS);
    // The same text twice, a second apart, around a window start.
    let mut ep = EndpointSeries::new("u", DEFAULT_SERIES_LIMITS);
    let _ = ep.add(0, 0, text, true);
    let _ = ep.add(1_000_000_000, 0, text, true);
    let m = ServerMetrics::of(&[ep], 0);
    let _ = ServerView::of(&m, Some(100));
    let _ = aiperf_core::server::export::export_csv(&m);
});
