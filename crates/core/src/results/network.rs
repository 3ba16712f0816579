//! AIPerf's network latency calibration: the TCP-handshake probes of a run
//! (`profile_export_network_latency.jsonl`, one [`ProbeSample`] a line) and the
//! `network_adjusted_*` metrics made with their mean RTT (or the mean given by hand).
//!
//! AIPerf's definitions: the run's RTT is the mean over every successful probe of every target;
//! each request's latency from its start (request latency, TTFT, time to first output token)
//! less that RTT, clamped at 0, makes the adjusted metric's value; `network_rtt` is the RTT
//! itself, one value. Chunk gaps carry no RTT and are left alone. An RTT of 0 (or none) adds
//! nothing, since the adjusted metrics would equal the raw ones.

use serde::Serialize;

use crate::results::aggregate::Aggregate;
use crate::results::metrics::Metric;
use crate::stats::{Distribution, mean};

/// The file of the probes, without `--profile-export-prefix`.
pub const JSONL_FILE: &str = "profile_export_network_latency.jsonl";

/// What makes a failed probe failed, as AIPerf's `ErrorDetails` of the exception it caught.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeError {
    /// The exception's class in AIPerf (`ConnectionRefusedError`, `TimeoutError`, `OSError`…).
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// The chain of causes (here only the error itself).
    pub cause_chain: Vec<String>,
}

/// One probe: a fresh TCP connection to one target, timed to the end of its handshake. A line
/// of the probes' file, in AIPerf's `NetworkLatencySample` shape (absent fields left out, as
/// AIPerf writes them).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeSample {
    /// When the probe was issued (Unix ns).
    pub timestamp_ns: u64,
    /// The endpoint URL the target comes from, credentials redacted.
    pub target_url: String,
    pub target_host: String,
    pub target_port: u16,
    /// Always `tcp_connect`.
    pub probe_type: &'static str,
    /// The handshake's round trip (ns); absent when the probe failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<u64>,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ProbeError>,
}

/// The probe type of every sample.
pub const TCP_CONNECT: &str = "tcp_connect";

/// One line of the probes' file (compact JSON, no newline).
pub fn sample_line(s: &ProbeSample) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The probes' file: one line per probe, in the order given.
pub fn samples_jsonl(samples: &[ProbeSample]) -> String {
    let mut out = String::new();
    for s in samples {
        out.push_str(&sample_line(s));
        out.push('\n');
    }
    out
}

/// The mean RTT (ns) over the successful probes, `None` without any.
pub fn mean_rtt_ns(samples: &[ProbeSample]) -> Option<f64> {
    let rtts: Vec<f64> = samples.iter().filter(|s| s.success).filter_map(|s| s.rtt_ns).map(|r| r as f64).collect();
    mean(&rtts)
}

/// The successful probes.
pub fn successes(samples: &[ProbeSample]) -> usize {
    samples.iter().filter(|s| s.success && s.rtt_ns.is_some()).count()
}

/// Each adjusted metric and the latency it is made from.
pub const ADJUSTED_SOURCES: [(Metric, Metric); 3] = [
    (Metric::NetworkAdjustedRequestLatency, Metric::RequestLatency),
    (Metric::NetworkAdjustedTimeToFirstToken, Metric::TimeToFirstToken),
    (Metric::NetworkAdjustedTimeToFirstOutputToken, Metric::TimeToFirstOutputToken),
];

/// `network_rtt` and the `network_adjusted_*` distributions of `aggregate`'s requests, the RTT
/// being `rtt_ns`; nothing when the RTT is 0 or not finite. An adjusted metric whose source has
/// no values is left out.
pub fn adjusted_metrics(aggregate: &Aggregate, rtt_ns: f64) -> Vec<(Metric, Distribution)> {
    if !(rtt_ns.is_finite() && rtt_ns > 0.0) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let rtt_ms = rtt_ns / 1e6;
    if let Some(d) = Distribution::of(&[rtt_ms]) {
        out.push((Metric::NetworkRtt, d));
    }
    for (adjusted, source) in ADJUSTED_SOURCES {
        let values: Vec<f64> = aggregate.metric_values(source).iter().map(|&ms| adjust_ms(ms, rtt_ns)).collect();
        if let Some(d) = Distribution::of(&values) {
            out.push((adjusted, d));
        }
    }
    out
}

/// A latency (ms) less the RTT (ns), clamped at 0, in ms: AIPerf's `max(ns − rtt, 0) / 1e6` on
/// the latency's nanoseconds (a record's milliseconds are its whole nanoseconds / 1e6).
fn adjust_ms(ms: f64, rtt_ns: f64) -> f64 {
    let ns = (ms * 1e6).round();
    (ns - rtt_ns).max(0.0) / 1e6
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::metrics::tests::rec;

    fn sample(rtt_ns: Option<u64>) -> ProbeSample {
        ProbeSample {
            timestamp_ns: 1_700_000_000_000_000_000,
            target_url: "http://127.0.0.1:8000".into(),
            target_host: "127.0.0.1".into(),
            target_port: 8000,
            probe_type: TCP_CONNECT,
            rtt_ns,
            success: rtt_ns.is_some(),
            error: rtt_ns.is_none().then(|| ProbeError {
                kind: "ConnectionRefusedError".into(),
                message: "Connection refused (os error 111)".into(),
                cause_chain: vec!["ConnectionRefusedError".into()],
            }),
        }
    }

    #[test]
    fn a_line_has_aiperf_keys_in_order_and_leaves_out_what_is_absent() {
        assert_eq!(
            sample_line(&sample(Some(51_234))),
            r#"{"timestamp_ns":1700000000000000000,"target_url":"http://127.0.0.1:8000","target_host":"127.0.0.1","target_port":8000,"probe_type":"tcp_connect","rtt_ns":51234,"success":true}"#
        );
        assert_eq!(
            sample_line(&sample(None)),
            r#"{"timestamp_ns":1700000000000000000,"target_url":"http://127.0.0.1:8000","target_host":"127.0.0.1","target_port":8000,"probe_type":"tcp_connect","success":false,"error":{"type":"ConnectionRefusedError","message":"Connection refused (os error 111)","cause_chain":["ConnectionRefusedError"]}}"#
        );
        assert_eq!(samples_jsonl(&[sample(Some(1)), sample(None)]).lines().count(), 2);
    }

    #[test]
    fn the_mean_counts_successful_probes_only() {
        let s = [sample(Some(100)), sample(None), sample(Some(300))];
        assert_eq!(mean_rtt_ns(&s), Some(200.0));
        assert_eq!(successes(&s), 2);
        assert_eq!(mean_rtt_ns(&[sample(None)]), None);
    }

    #[test]
    fn latencies_are_shifted_by_the_rtt_and_clamped_at_zero() {
        let mut a = Aggregate::default();
        // Requests sent at 3 ms with chunks at 5 and 9 ms, then at 2 and 9 ms.
        a.add(&rec(&[5_000_000, 9_000_000], 2), false, &[]);
        a.add(&rec(&[2_000_000, 9_000_000], 2), false, &[]);
        let m = adjusted_metrics(&a, 3_000_000.0);
        let get = |metric| m.iter().find(|(x, _)| *x == metric).map(|(_, d)| d.clone()).unwrap();
        let rtt = get(Metric::NetworkRtt);
        assert_eq!((rtt.count, rtt.avg, rtt.min, rtt.max, rtt.std), (1, 3.0, 3.0, 3.0, 0.0));
        let raw_ttft = a.metric_values(Metric::TimeToFirstToken).to_vec();
        let ttft = get(Metric::NetworkAdjustedTimeToFirstToken);
        let want: Vec<f64> = raw_ttft.iter().map(|v| (v - 3.0).max(0.0)).collect();
        assert_eq!(ttft.min, want.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(ttft.max, want.iter().copied().fold(0.0, f64::max));
        assert_eq!(get(Metric::NetworkAdjustedTimeToFirstOutputToken), ttft);
        let lat = get(Metric::NetworkAdjustedRequestLatency);
        let raw_lat = a.metric_values(Metric::RequestLatency).to_vec();
        assert_eq!(lat.count, raw_lat.len());
        assert!((lat.avg - (raw_lat.iter().sum::<f64>() / raw_lat.len() as f64 - 3.0)).abs() < 1e-9);
        // A latency below the RTT is clamped at 0.
        let big = adjusted_metrics(&a, 1e12);
        assert!(big.iter().filter(|(m, _)| *m != Metric::NetworkRtt).all(|(_, d)| d.max == 0.0));
        assert!(adjusted_metrics(&a, 0.0).is_empty());
        assert!(adjusted_metrics(&a, f64::NAN).is_empty());
    }
}
