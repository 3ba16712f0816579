//! The bounds of `profile`'s options and the checks that read one option: each error names the
//! option, the value and what is accepted.

use std::time::Duration;

use aiperf_core::duration;
use anyhow::{Context, Result, anyhow, ensure};

/// Accepted `--request-rate` range (sessions per second).
pub const RATE_RANGE: (f64, f64) = (1e-3, 1e6);
/// Accepted `--arrival-smoothness` range (the shape of gamma gaps).
pub const SMOOTHNESS_RANGE: (f64, f64) = (1e-3, 1e3);
/// Most concurrent session runs.
pub const MAX_CONCURRENCY: usize = 1_000_000;
/// Most requests of one run (`--request-count`, `--warmup-request-count`).
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// Shortest `--slice-duration`.
pub const MIN_SLICE: Duration = Duration::from_millis(1);
/// Most runs of one value (`--num-profile-runs`, AIPerf's limit).
pub const MAX_PROFILE_RUNS: u32 = 10;
/// Most values of one sweep.
pub const MAX_SWEEP_VALUES: usize = 1000;
/// Most `--url`s of one run.
pub const MAX_URLS: usize = 1024;
/// Accepted `--server-metrics-interval` range (s).
pub const SCRAPE_INTERVAL_RANGE: (f64, f64) = (0.01, 3600.0);

/// Splits `key:value` at the first colon.
pub fn key_value(s: &str, what: &str) -> Result<(String, String)> {
    let (k, v) = s.split_once(':').with_context(|| format!("{what} '{s}' is not of the form key:value"))?;
    ensure!(!k.trim().is_empty(), "{what} '{s}' has an empty key");
    Ok((k.trim().to_owned(), v.to_owned()))
}

/// Option `name`'s number of seconds as a time span ([`duration::seconds`]).
pub fn seconds(v: f64, name: &str, zero_ok: bool) -> Result<Duration> {
    duration::seconds(v, zero_ok).map_err(|e| anyhow!("{name} {v:?}: {e}"))
}

/// `v` when it lies in `[lo, hi]`, else an error naming the option, the value and the range.
pub fn in_range<T: PartialOrd + std::fmt::Display + Copy>(v: T, name: &str, lo: T, hi: T) -> Result<T> {
    ensure!(v >= lo && v <= hi, "{name} {v}: accepted is {lo} to {hi}");
    Ok(v)
}

/// Parses `--start-at`: Unix epoch milliseconds, or an RFC 3339 time with its offset.
pub fn parse_start_at(s: &str) -> Result<u64> {
    let t = s.trim();
    let ns = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = t.parse().with_context(|| format!("--start-at {t}: too large a number of milliseconds"))?;
        i128::from(ms) * 1_000_000
    } else {
        let ts: jiff::Timestamp = t.parse().map_err(|e| {
            anyhow!(
                "--start-at '{t}': accepted is an RFC 3339 time such as 2026-11-23T22:00:00Z or \
                 2026-11-23T23:00:00+01:00, or Unix epoch milliseconds ({e})"
            )
        })?;
        ts.as_nanosecond()
    };
    u64::try_from(ns).map_err(|_| anyhow!("--start-at '{t}': accepted are times from 1970 to 2554"))
}
