//! Runs split across processes: what a shard records about itself (its part, its common time
//! zero, its clock against the target's) and what a merge of shards records.
//!
//! The clock offset is estimated from HTTP `Date` headers, which have a resolution of one second:
//! each probe bounds the offset to an interval (the server stamped its date somewhere between the
//! request leaving and the answer arriving, and the true server time lies within the second the
//! date names); probes spread over a second intersect to a narrow interval. Nothing here reads a
//! clock: the caller passes the local times of each probe.

use serde::{Deserialize, Serialize};

/// One `Date` probe: local Unix times (ns) around the request and the date the server sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateProbe {
    pub sent_unix_ns: u64,
    pub received_unix_ns: u64,
    /// The server's `Date` header, in whole seconds since the Unix epoch.
    pub date_unix_s: u64,
}

/// The target's clock minus this machine's clock, estimated from [`DateProbe`]s.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Positive when the target's clock is ahead of this machine's.
    pub offset_ms: f64,
    /// Half the width of the interval the offset is known to lie in.
    pub uncertainty_ms: f64,
    /// Probes used.
    pub probes: u32,
}

/// Estimates the offset: the midpoint of the intersection of every probe's interval
/// `[date − received, date + 1 s − sent]`. When the intervals do not intersect (a clock stepped
/// during probing), the midpoint of their union, with its half-width as the uncertainty.
pub fn estimate_offset(probes: &[DateProbe]) -> Option<ClockOffset> {
    let interval = |p: &DateProbe| {
        let date_ns = i128::from(p.date_unix_s) * 1_000_000_000;
        (date_ns - i128::from(p.received_unix_ns), date_ns + 1_000_000_000 - i128::from(p.sent_unix_ns))
    };
    let valid: Vec<(i128, i128)> =
        probes.iter().filter(|p| p.received_unix_ns >= p.sent_unix_ns).map(interval).collect();
    let first = *valid.first()?;
    let (mut lo, mut hi) = first;
    for &(a, b) in &valid[1..] {
        lo = lo.max(a);
        hi = hi.min(b);
    }
    if lo > hi {
        lo = valid.iter().map(|v| v.0).min().unwrap_or(first.0);
        hi = valid.iter().map(|v| v.1).max().unwrap_or(first.1);
    }
    Some(ClockOffset {
        offset_ms: (lo + hi) as f64 / 2.0 / 1e6,
        uncertainty_ms: (hi - lo) as f64 / 2.0 / 1e6,
        probes: u32::try_from(valid.len()).unwrap_or(u32::MAX),
    })
}

/// A shard's run: which part it sent and how it was timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// K of `--shard K/N`.
    pub index: u32,
    /// N of `--shard K/N`.
    pub count: u32,
    /// Time zero of the records (Unix ns): the common `--start-at` when given.
    pub start_unix_ns: u64,
    /// Whether time zero was the common `--start-at`.
    pub common_start: bool,
    /// The clock offset against the target, when it could be estimated.
    pub clock: Option<ClockOffset>,
}

/// Shards merged into one run (`aiperf-cli merge`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergedRun {
    /// N of the shards' `--shard K/N`.
    pub count: u32,
    /// The shards merged, in order of K.
    pub shards: Vec<ShardRun>,
    /// Records read from each shard, in the same order.
    pub records: Vec<u64>,
    /// Merged although shards were missing or incomplete (`merge --allow-partial`).
    pub partial: bool,
    /// What was missing or incomplete.
    pub problems: Vec<String>,
}

/// Where a run sits in a sharded replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharding {
    /// One shard of a run.
    Shard(ShardRun),
    /// Shards merged into one run.
    Merged(MergedRun),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    /// Probes every `step_ms` over `n` probes against a server `offset_ms` ahead, answering in
    /// `rtt_ms` (stamping its date halfway).
    fn probes(offset_ms: i64, n: u64, step_ms: u64, rtt_ms: u64) -> Vec<DateProbe> {
        let t0 = 1_700_000_000 * S + 123 * MS;
        (0..n)
            .map(|i| {
                let sent = t0 + i * step_ms * MS;
                let server = (sent + rtt_ms * MS / 2) as i64 + offset_ms * MS as i64;
                DateProbe { sent_unix_ns: sent, received_unix_ns: sent + rtt_ms * MS, date_unix_s: server as u64 / S }
            })
            .collect()
    }

    #[test]
    fn probes_spread_over_a_second_narrow_the_offset() {
        for offset in [-1500i64, -250, 0, 40, 730, 5000] {
            let e = estimate_offset(&probes(offset, 11, 100, 2)).unwrap();
            assert!((e.offset_ms - offset as f64).abs() <= e.uncertainty_ms + 1e-9, "{offset}: {e:?}");
            assert!(e.uncertainty_ms <= 52.0, "{offset}: {e:?}");
            assert_eq!(e.probes, 11);
        }
        // One probe knows the offset within about half a second.
        let one = estimate_offset(&probes(300, 1, 100, 2)).unwrap();
        assert!((one.offset_ms - 300.0).abs() <= one.uncertainty_ms);
        assert!(one.uncertainty_ms >= 499.0);
    }

    #[test]
    fn no_probes_no_estimate_and_a_stepped_clock_widens_it() {
        assert_eq!(estimate_offset(&[]), None);
        let backwards = DateProbe { sent_unix_ns: 10, received_unix_ns: 5, date_unix_s: 0 };
        assert_eq!(estimate_offset(&[backwards]), None);
        let mut p = probes(0, 2, 100, 2);
        p[1].date_unix_s += 10;
        let e = estimate_offset(&p).unwrap();
        assert!(e.uncertainty_ms > 5000.0, "{e:?}");
    }

    #[test]
    fn sharding_serializes_with_its_kind() {
        let s = Sharding::Shard(ShardRun { index: 1, count: 3, start_unix_ns: 5, common_start: true, clock: None });
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["shard"]["index"], 1);
        assert_eq!(serde_json::from_value::<Sharding>(v).unwrap(), s);
    }
}
