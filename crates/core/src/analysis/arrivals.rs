//! Arrival statistics: how requests are spread over time, bursts, sessions.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;
use crate::trace::Trace;

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
    pub fn of(trace: &Trace) -> Option<ArrivalStats> {
        let mut ts: Vec<f64> = trace.rows().iter().filter_map(|r| r.timestamp.map(|t| t.as_f64())).collect();
        let mut sessions: HashMap<&str, u64> = HashMap::new();
        for r in trace.rows() {
            if let Some(s) = &r.session_id {
                *sessions.entry(s).or_insert(0) += 1;
            }
        }
        if ts.is_empty() && sessions.is_empty() {
            return None;
        }
        ts.sort_by(f64::total_cmp);
        let (first, last) = (ts.first().copied().unwrap_or(0.0), ts.last().copied().unwrap_or(0.0));
        let duration_s = (last - first) / 1000.0;
        let gaps: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
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
        let windows = |width_ms: f64| -> Vec<u32> {
            if ts.is_empty() {
                return Vec::new();
            }
            let n = (((last - first) / width_ms).floor() as usize + 1).min(MAX_SERIES * 10);
            let mut counts = vec![0u32; n];
            for &t in &ts {
                let k = (((t - first) / width_ms).floor() as usize).min(n - 1);
                counts[k] += 1;
            }
            counts
        };
        let per_second = windows(1000.0);
        let peak_10s = windows(10_000.0).into_iter().max().unwrap_or(0);
        let mut series = per_second.clone();
        if series.len() > MAX_SERIES {
            let step = series.len().div_ceil(MAX_SERIES);
            series = series.chunks(step).map(|c| c.iter().sum()).collect();
        }
        let turns: Vec<f64> = sessions.values().map(|&n| n as f64).collect();
        Some(ArrivalStats {
            timed_requests: ts.len() as u64,
            first_timestamp_ms: first,
            last_timestamp_ms: last,
            duration_s,
            mean_rate_per_s: if duration_s > 0.0 { ts.len() as f64 / duration_s } else { 0.0 },
            peak_requests_1s: per_second.iter().copied().max().unwrap_or(0).into(),
            peak_rate_10s_per_s: f64::from(peak_10s) / 10.0,
            inter_arrival_ms: Summary::of(&gaps),
            same_ms_requests: same_ms,
            largest_burst: largest,
            requests_per_second: series,
            sessions: sessions.len() as u64,
            turns_per_session: Summary::of(&turns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, parse_str};

    #[test]
    fn rates_bursts_and_sessions() {
        let text = "{\"timestamp\":0,\"input_length\":1}\n{\"timestamp\":0,\"input_length\":1}\n\
                    {\"timestamp\":500,\"input_length\":1,\"session_id\":\"a\"}\n{\"timestamp\":2000,\"input_length\":1,\"session_id\":\"a\"}\n\
                    {\"timestamp\":1500,\"input_length\":1,\"session_id\":\"b\"}\n";
        let t = parse_str(text, ParseOptions::default()).unwrap().trace;
        let a = ArrivalStats::of(&t).unwrap();
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

    #[test]
    fn untimed_trace_has_no_arrivals() {
        let t = parse_str("{\"input_length\":1}", ParseOptions::default()).unwrap().trace;
        assert!(ArrivalStats::of(&t).is_none());
    }
}
