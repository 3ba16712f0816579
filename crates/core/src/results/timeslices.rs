//! Time slices of a run (`--slice-duration`): the run's time cut into equal slices and the
//! metrics of each, as AIPerf writes them to `profile_export_aiperf_timeslices.csv` and `.json`.
//!
//! **Which slice a request belongs to**: the one containing its send time (`sent_ns`, from the
//! benchmark start), whatever its outcome. Slice `i` covers `[i·S, (i+1)·S)`. Every request is in
//! exactly one slice, so the slices' request counts add up to the run's. Slices without any request
//! between two others are kept (with zero counts), so the time axis has no holes. A slice is
//! complete when the run (its last response) lasted past its end; the last one usually is not
//! (`is_complete: false`), and its throughputs are per second of the part that elapsed.
//!
//! Memory: one [`Aggregate`] per slice, holding the same values as the run's aggregate, and at most
//! [`MAX_SLICES`] slices (records sent later are counted in [`Slicer::beyond`]).

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::results::aggregate::Aggregate;
use crate::results::metrics::{Metric, Slo};
use crate::results::record::RequestRecord;
use crate::stats::{Distribution, REPORT_PERCENTILES, sum};

/// `profile_export_aiperf_timeslices.json`.
pub const TIMESLICES_JSON: &str = "profile_export_aiperf_timeslices.json";
/// `profile_export_aiperf_timeslices.csv`.
pub const TIMESLICES_CSV: &str = "profile_export_aiperf_timeslices.csv";
/// Most slices of one run.
pub const MAX_SLICES: usize = 100_000;

/// A slice duration that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SliceError {
    #[error("a time slice must last at least 1 ns")]
    Zero,
}

/// Collects records into the slices of their send time.
#[derive(Clone, Debug)]
pub struct Slicer {
    slice_ns: u64,
    slices: Vec<Aggregate>,
    /// Records sent after [`MAX_SLICES`] slices (left out of the slices).
    pub beyond: u64,
}

impl Slicer {
    pub fn new(slice_ns: u64) -> Result<Slicer, SliceError> {
        if slice_ns == 0 {
            return Err(SliceError::Zero);
        }
        Ok(Slicer { slice_ns, slices: Vec::new(), beyond: 0 })
    }

    /// The index of the slice a request sent at `sent_ns` belongs to.
    pub fn index_of(&self, sent_ns: u64) -> usize {
        usize::try_from(sent_ns / self.slice_ns).unwrap_or(usize::MAX)
    }

    /// Adds one record to its slice (with the same token counting and SLOs as the run).
    pub fn add(&mut self, r: &RequestRecord, use_server_token_count: bool, slos: &[Slo]) {
        let i = self.index_of(r.sent_ns);
        if i >= MAX_SLICES {
            self.beyond += 1;
            return;
        }
        if self.slices.len() <= i {
            self.slices.resize_with(i + 1, Aggregate::default);
        }
        self.slices[i].add(r, use_server_token_count, slos);
    }

    /// The slices of a run whose last response came at `run_end_ns` (from the benchmark start).
    pub fn finish(&self, run_end_ns: u64, with_goodput: bool) -> TimeSlices {
        let slices = self
            .slices
            .iter()
            .enumerate()
            .map(|(i, agg)| {
                let start_ns = i as u64 * self.slice_ns;
                let end_ns = start_ns.saturating_add(self.slice_ns);
                let is_complete = run_end_ns >= end_ns;
                let elapsed_s = (end_ns.min(run_end_ns.max(start_ns)) - start_ns) as f64 / 1e9;
                let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
                Slice {
                    start_ns,
                    end_ns,
                    is_complete,
                    metrics: Metric::ALL
                        .into_iter()
                        .filter_map(|m| {
                            let v = agg.metric_values(m);
                            Distribution::of(&v).map(|d| (m, d, sum(&v)))
                        })
                        .collect(),
                    request_count: agg.ok,
                    error_request_count: agg.error_count(),
                    request_throughput: per_s(agg.ok as f64),
                    output_token_throughput: per_s(agg.total_output_tokens as f64),
                    good_request_count: with_goodput.then_some(agg.good),
                    goodput: with_goodput.then(|| per_s(agg.good as f64)),
                }
            })
            .collect();
        TimeSlices { slice_ns: self.slice_ns, slices, beyond: self.beyond }
    }
}

/// The metrics of one slice; times are nanoseconds from the benchmark start.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub start_ns: u64,
    pub end_ns: u64,
    pub is_complete: bool,
    /// Distribution and sum of each metric some request of the slice has.
    pub metrics: Vec<(Metric, Distribution, f64)>,
    /// Successful requests sent in the slice.
    pub request_count: u64,
    pub error_request_count: u64,
    /// Successful requests per second of the slice.
    pub request_throughput: f64,
    pub output_token_throughput: f64,
    pub good_request_count: Option<u64>,
    pub goodput: Option<f64>,
}

impl Slice {
    /// Run-level scalars of the slice: (tag, unit, value).
    fn scalars(&self) -> Vec<(&'static str, &'static str, f64)> {
        let mut v = vec![
            ("request_count", "requests", self.request_count as f64),
            ("error_request_count", "requests", self.error_request_count as f64),
            ("request_throughput", "requests/sec", self.request_throughput),
            ("output_token_throughput", "tokens/sec", self.output_token_throughput),
        ];
        if let (Some(n), Some(g)) = (self.good_request_count, self.goodput) {
            v.push(("good_request_count", "requests", n as f64));
            v.push(("goodput", "requests/sec", g));
        }
        v
    }
}

/// Every slice of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSlices {
    pub slice_ns: u64,
    pub slices: Vec<Slice>,
    /// Records left out past [`MAX_SLICES`].
    pub beyond: u64,
}

/// The statistics of a distribution as (stat, value), in AIPerf's order.
fn stats(d: &Distribution, total: f64) -> Vec<(String, f64)> {
    let mut v = vec![("avg".to_owned(), d.avg)];
    v.extend(REPORT_PERCENTILES.iter().zip(d.percentiles).map(|(p, x)| (format!("p{p}"), x)));
    v.extend([
        ("min".to_owned(), d.min),
        ("max".to_owned(), d.max),
        ("std".to_owned(), d.std),
        ("count".to_owned(), d.count as f64),
        ("sum".to_owned(), total),
    ]);
    v
}

/// `profile_export_aiperf_timeslices.json`: `{timeslices: [{start_ns, end_ns, is_complete,
/// <metric>: {unit, avg, p1…p99, min, max, std, count, sum}, <scalar>: {unit, avg}}],
/// input_config}`; `start_ns`/`end_ns` are Unix nanoseconds (the run started at `start_unix_ns`).
pub fn timeslices_json(t: &TimeSlices, start_unix_ns: u128, input_config: &Value) -> String {
    let slices: Vec<Value> = t
        .slices
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("start_ns".into(), json!(start_unix_ns + u128::from(s.start_ns)));
            m.insert("end_ns".into(), json!(start_unix_ns + u128::from(s.end_ns)));
            m.insert("is_complete".into(), json!(s.is_complete));
            for (metric, d, total) in &s.metrics {
                let mut o = Map::new();
                o.insert("unit".into(), json!(metric.unit()));
                for (k, v) in stats(d, *total) {
                    let value = if k == "count" { json!(d.count) } else { json!(v) };
                    o.insert(k, value);
                }
                m.insert(metric.tag().into(), Value::Object(o));
            }
            for (tag, unit, v) in s.scalars() {
                m.insert(tag.into(), json!({"unit": unit, "avg": v}));
            }
            Value::Object(m)
        })
        .collect();
    let doc = json!({
        "slice_duration_s": t.slice_ns as f64 / 1e9,
        "timeslices": slices,
        "records_beyond_last_slice": t.beyond,
        "input_config": input_config,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `profile_export_aiperf_timeslices.csv`, tidy: `Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value`,
/// one row per statistic (times in Unix nanoseconds, as in the JSON).
pub fn timeslices_csv(t: &TimeSlices, start_unix_ns: u128) -> String {
    let mut out = String::from("Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value\n");
    for (i, s) in t.slices.iter().enumerate() {
        let (start, end) = (start_unix_ns + u128::from(s.start_ns), start_unix_ns + u128::from(s.end_ns));
        for (metric, d, total) in &s.metrics {
            for (stat, v) in stats(d, *total) {
                let _ = writeln!(out, "{i},{start},{end},{},{},{stat},{v}", metric.tag(), metric.unit());
            }
        }
        for (tag, unit, v) in s.scalars() {
            let _ = writeln!(out, "{i},{start},{end},{tag},{unit},avg,{v}");
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::metrics::parse_goodput;
    use crate::results::record::RecordError;

    /// A streamed request sent at `sent_ms` with a TTFT of `ttft_ms` and 2 tokens 1 ms apart.
    fn rec(sent_ms: u64, ttft_ms: u64) -> RequestRecord {
        let ms = 1_000_000;
        let first = (sent_ms + ttft_ms) * ms;
        RequestRecord {
            scheduled_ns: sent_ms * ms,
            sent_ns: sent_ms * ms,
            chunk_ns: vec![first, first + ms],
            end_ns: first + ms,
            streaming: true,
            output_tokens: Some(2),
            input_tokens: Some(10),
            ..Default::default()
        }
    }

    fn sliced() -> TimeSlices {
        let slos = parse_goodput("time_to_first_token:15").unwrap();
        let mut s = Slicer::new(100_000_000).unwrap();
        for (sent, ttft) in [(0, 10), (50, 20), (99, 10), (100, 30), (310, 10)] {
            s.add(&rec(sent, ttft), false, &slos);
        }
        let mut failed = rec(120, 5);
        failed.error = Some(RecordError { kind: "http_status".into(), message: "500".into() });
        s.add(&failed, false, &slos);
        s.finish(350_000_000, true)
    }

    #[test]
    fn a_request_belongs_to_the_slice_of_its_send_time_and_counts_add_up() {
        let t = sliced();
        let counts: Vec<(u64, u64)> = t.slices.iter().map(|s| (s.request_count, s.error_request_count)).collect();
        assert_eq!(counts, vec![(3, 0), (1, 1), (0, 0), (1, 0)]);
        assert_eq!(counts.iter().map(|(ok, err)| ok + err).sum::<u64>(), 6);
        let complete: Vec<bool> = t.slices.iter().map(|s| s.is_complete).collect();
        assert_eq!(complete, vec![true, true, true, false]);
        // 3 requests in 0.1 s; the last slice elapsed 50 ms.
        assert!((t.slices[0].request_throughput - 30.0).abs() < 1e-9);
        assert!((t.slices[3].request_throughput - 20.0).abs() < 1e-9);
        assert_eq!(t.slices[0].good_request_count, Some(2));
        let ttft = t.slices[0].metrics.iter().find(|(m, ..)| *m == Metric::TimeToFirstToken).unwrap();
        assert_eq!((ttft.1.count, ttft.1.max, ttft.2), (3, 20.0, 40.0));
    }

    #[test]
    fn slices_are_bounded_and_zero_is_refused() {
        assert_eq!(Slicer::new(0).unwrap_err(), SliceError::Zero);
        let mut s = Slicer::new(1).unwrap();
        s.add(&rec(1, 1), false, &[]);
        assert_eq!((s.slices.len(), s.beyond), (0, 1));
    }

    #[test]
    fn timeslices_csv_snapshot() {
        insta::assert_snapshot!(timeslices_csv(&sliced(), 1_700_000_000_000_000_000));
    }

    #[test]
    fn timeslices_json_snapshot() {
        insta::assert_snapshot!(timeslices_json(&sliced(), 1_700_000_000_000_000_000, &json!({"slice_duration": 0.1})));
    }
}
