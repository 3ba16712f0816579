//! Arrival statistics: how requests are spread over time, bursts, sessions.
//!
//! Total over any finite timestamps (0 and 1e308, ±1e308, all equal, negative): spans that
//! overflow an f64 are computed from scaled ends, gaps saturate at `f64::MAX`, and peaks come from
//! runs over the sorted timestamps rather than a table with one slot per window.

use serde::{Deserialize, Serialize};

use super::input::AnalysisInput;
use crate::stats::Summary;

/// When requests arrive (rows with a `timestamp`) and how sessions are shaped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrivalStats {
    /// Rows with a timestamp.
    pub timed_requests: u64,
    pub first_timestamp_ms: f64,
    pub last_timestamp_ms: f64,
    pub duration_s: f64,
    /// Timed requests per second over the whole duration (0 when it is 0).
    pub mean_rate_per_s: f64,
    /// Most requests in one 1-second window (windows aligned at the first timestamp).
    pub peak_requests_1s: u64,
    /// Most requests in one 10-second window, divided by 10.
    pub peak_rate_10s_per_s: f64,
    /// Gaps between consecutive arrivals in time order, in ms.
    pub inter_arrival_ms: Option<Summary>,
    /// Rows that share their exact timestamp with at least one other row.
    pub same_ms_requests: u64,
    /// Largest number of rows with one timestamp.
    pub largest_burst: u64,
    /// Requests per 1-second window, from the first timestamp (for the arrivals chart).
    pub requests_per_second: Vec<u32>,
    pub sessions: u64,
    /// Turns per session (rows with a `session_id`).
    pub turns_per_session: Option<Summary>,
}

/// A trace longer than this is charted with coarser windows to keep the series small.
const MAX_SERIES: usize = 100_000;

impl ArrivalStats {
    /// `None` when no row has a timestamp and no row has a session.
    pub fn of(input: &AnalysisInput) -> Option<ArrivalStats> {
        let mut ts: Vec<f64> = input.rows().iter().filter_map(|r| r.timestamp()).collect();
        // Turns of each session, by session number.
        let mut sessions = vec![0u64; input.sessions()];
        for s in input.rows().iter().filter_map(|r| r.session()) {
            sessions[s as usize] += 1;
        }
        if ts.is_empty() && sessions.is_empty() {
            return None;
        }
        ts.sort_by(f64::total_cmp);
        let (first, last) = (ts.first().copied().unwrap_or(0.0), ts.last().copied().unwrap_or(0.0));
        let since_first = Offset::new(first, last);
        let duration_s = since_first.scaled(last, 1000.0);
        // A gap too wide for an f64 (only between timestamps of ±1e308) saturates.
        let gaps: Vec<f64> = ts.windows(2).map(|w| (w[1] - w[0]).min(f64::MAX)).collect();
        let (mut same_ms, mut largest) = (0u64, 0u64);
        let mut i = 0;
        while i < ts.len() {
            let j = ts[i..].iter().position(|&t| t != ts[i]).map_or(ts.len(), |k| i + k);
            let run = (j - i) as u64;
            if run >= 2 {
                same_ms += run;
            }
            largest = largest.max(run);
            i = j;
        }
        // Window numbers are non-decreasing over the sorted timestamps, so the busiest window is
        // the longest run of equal numbers: no per-window table, whatever the span.
        let window = |t: f64, width_ms: f64| since_first.window(t, width_ms);
        let busiest = |width_ms: f64| longest_run(ts.iter().map(|&t| window(t, width_ms)));
        let peak_1s = busiest(1000.0);
        let peak_10s = busiest(10_000.0);
        let series = requests_per_second(&ts);
        let turns: Vec<f64> = sessions.iter().map(|&n| n as f64).collect();
        Some(ArrivalStats {
            timed_requests: ts.len() as u64,
            first_timestamp_ms: first,
            last_timestamp_ms: last,
            duration_s,
            mean_rate_per_s: if duration_s > 0.0 { ts.len() as f64 / duration_s } else { 0.0 },
            peak_requests_1s: peak_1s,
            peak_rate_10s_per_s: peak_10s as f64 / 10.0,
            inter_arrival_ms: Summary::of(&gaps),
            same_ms_requests: same_ms,
            largest_burst: largest,
            requests_per_second: series,
            sessions: sessions.len() as u64,
            turns_per_session: Summary::of(&turns),
        })
    }
}

/// Requests per 1-second window from the first timestamp, at most [`MAX_SERIES`] points (coarser
/// windows past it), of timestamps (ms) sorted by `f64::total_cmp`: [`ArrivalStats::requests_per_second`].
pub fn requests_per_second(ts: &[f64]) -> Vec<u32> {
    let (Some(&first), Some(&last)) = (ts.first(), ts.last()) else { return Vec::new() };
    let since_first = Offset::new(first, last);
    // Seconds from the first to the last timestamp, then at most MAX_SERIES points of `step`
    // seconds each.
    let seconds = since_first.window(last, 1000.0).saturating_add(1);
    let step = seconds.div_ceil(MAX_SERIES as u64);
    let points = usize::try_from(seconds.div_ceil(step)).unwrap_or(MAX_SERIES).min(MAX_SERIES);
    let mut series = vec![0u32; points];
    for &t in ts {
        let k = usize::try_from(since_first.window(t, 1000.0) / step).unwrap_or(usize::MAX).min(points - 1);
        series[k] = series[k].saturating_add(1);
    }
    series
}

/// Time since the first timestamp, computed so that it stays finite for any finite timestamps.
#[derive(Clone, Copy)]
struct Offset {
    first: f64,
    /// `last − first` overflows (timestamps near ±1e308): scale each side before subtracting.
    scale_first: bool,
}

impl Offset {
    fn new(first: f64, last: f64) -> Self {
        Offset { first, scale_first: !(last - first).is_finite() }
    }

    /// `(t − first) / unit`, finite for finite inputs.
    fn scaled(self, t: f64, unit: f64) -> f64 {
        if self.scale_first { t / unit - self.first / unit } else { (t - self.first) / unit }
    }

    /// Number of the `width_ms` window holding `t`, windows aligned at the first timestamp
    /// (saturating at `u64::MAX` for absurd spans).
    fn window(self, t: f64, width_ms: f64) -> u64 {
        // A float-to-integer `as` saturates, and is 0 for NaN.
        self.scaled(t, width_ms).floor() as u64
    }
}

/// Length of the longest run of equal values.
fn longest_run(values: impl Iterator<Item = u64>) -> u64 {
    let (mut best, mut run, mut prev) = (0u64, 0u64, None);
    for v in values {
        run = if prev == Some(v) { run + 1 } else { 1 };
        prev = Some(v);
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Input, Number, ParseOptions, Row, Trace, parse_str};
    use proptest::prelude::*;

    #[test]
    fn rates_bursts_and_sessions() {
        let text = "{\"timestamp\":0,\"input_length\":1}\n{\"timestamp\":0,\"input_length\":1}\n\
                    {\"timestamp\":500,\"input_length\":1,\"session_id\":\"a\"}\n{\"timestamp\":2000,\"input_length\":1,\"session_id\":\"a\"}\n\
                    {\"timestamp\":1500,\"input_length\":1,\"session_id\":\"b\"}\n";
        let t = parse_str(text, ParseOptions::default()).unwrap().trace;
        let a = ArrivalStats::of(&AnalysisInput::of(&t)).unwrap();
        assert_eq!(a.timed_requests, 5);
        assert_eq!(a.duration_s, 2.0);
        assert_eq!(a.mean_rate_per_s, 2.5);
        assert_eq!(a.requests_per_second, [3, 1, 1]);
        assert_eq!(a.peak_requests_1s, 3);
        assert_eq!(a.peak_rate_10s_per_s, 0.5);
        assert_eq!((a.same_ms_requests, a.largest_burst), (2, 2));
        assert_eq!(a.inter_arrival_ms.unwrap().max, 1000.0);
        assert_eq!(a.sessions, 2);
        assert_eq!(a.turns_per_session.unwrap().mean, 1.5);
    }

    fn timed(ts: &[Number]) -> AnalysisInput {
        let trace: Trace = ts
            .iter()
            .map(|&t| {
                let mut r = Row::new(Input::Length(1));
                r.timestamp = Some(t);
                (r, Vec::new())
            })
            .collect();
        AnalysisInput::of(&trace)
    }

    #[test]
    fn timestamps_0_and_1e308_give_finite_statistics() {
        let a = ArrivalStats::of(&timed(&[Number::Int(0), Number::Float(1e308)])).unwrap();
        assert_eq!(a.duration_s, 1e305);
        assert_eq!((a.peak_requests_1s, a.peak_rate_10s_per_s), (1, 0.1));
        assert_eq!(a.requests_per_second.len(), MAX_SERIES);
        assert_eq!((a.requests_per_second[0], a.requests_per_second[MAX_SERIES - 1]), (1, 1));
        assert_eq!(a.inter_arrival_ms.unwrap().max, 1e308);
    }

    #[test]
    fn a_span_past_f64_max_stays_finite() {
        let a = ArrivalStats::of(&timed(&[Number::Float(-1.5e308), Number::Float(1.5e308), Number::Float(1.5e308)]))
            .unwrap();
        assert!((a.duration_s - 3e305).abs() <= 3e305 * 1e-15, "{}", a.duration_s);
        assert_eq!((a.peak_requests_1s, a.largest_burst, a.same_ms_requests), (2, 2, 2));
        let gaps = a.inter_arrival_ms.unwrap();
        assert_eq!((gaps.min, gaps.max), (0.0, f64::MAX));
        assert!(gaps.mean.is_finite() && gaps.std_dev.is_finite());
        assert_eq!(a.requests_per_second.iter().map(|&c| u64::from(c)).sum::<u64>(), 3);
    }

    #[test]
    fn equal_timestamps_are_one_burst_in_one_window() {
        let a = ArrivalStats::of(&timed(&[Number::Int(i64::MIN); 5])).unwrap();
        assert_eq!((a.duration_s, a.mean_rate_per_s, a.peak_requests_1s, a.largest_burst), (0.0, 0.0, 5, 5));
        assert_eq!(a.requests_per_second, [5]);
    }

    proptest! {
        #[test]
        fn any_finite_timestamps_give_finite_consistent_statistics(
            ts in prop::collection::vec(prop_oneof![
                any::<i64>().prop_map(Number::Int),
                prop::num::f64::NORMAL.prop_map(Number::Float),
                prop::sample::select(vec![0.0, -0.0, 1e308, -1e308, f64::MAX, f64::MIN, 5e-324]).prop_map(Number::Float),
                (0i64..5000).prop_map(Number::Int),
            ], 1..40),
        ) {
            let a = ArrivalStats::of(&timed(&ts)).unwrap();
            prop_assert_eq!(a.timed_requests, ts.len() as u64);
            prop_assert!(a.duration_s.is_finite() && a.duration_s >= 0.0);
            prop_assert!(a.mean_rate_per_s.is_finite() && a.peak_rate_10s_per_s.is_finite());
            prop_assert!(a.requests_per_second.len() <= MAX_SERIES);
            prop_assert_eq!(a.requests_per_second.iter().map(|&c| u64::from(c)).sum::<u64>(), ts.len() as u64);
            prop_assert!(a.peak_requests_1s >= 1 && a.peak_requests_1s <= ts.len() as u64);
            prop_assert!(a.largest_burst <= a.peak_requests_1s);
            if let Some(g) = a.inter_arrival_ms {
                for v in [g.mean, g.std_dev, g.min, g.p25, g.median, g.p75, g.max] {
                    prop_assert!(v.is_finite() && v >= 0.0, "{:?}", g);
                }
            }
            // The JSON the web worker sends back must read back as the same statistics.
            let json = serde_json::to_string(&a).unwrap();
            prop_assert_eq!(serde_json::from_str::<ArrivalStats>(&json).unwrap(), a);
        }
    }

    #[test]
    fn untimed_trace_has_no_arrivals() {
        let t = parse_str("{\"input_length\":1}", ParseOptions::default()).unwrap().trace;
        assert!(ArrivalStats::of(&AnalysisInput::of(&t)).is_none());
    }
}
