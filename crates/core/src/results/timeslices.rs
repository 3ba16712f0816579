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
//! **Time-weighted metrics** (`effective_*`, `active_*`, `tokens_in_flight`): as AIPerf's, the
//! run's curves (every request, whichever slice it was sent in) weighed over the slice's window;
//! each curve is built once, in one sweep of the requests, for every slice
//! ([`Timeline::metrics_over`]).
//!
//! Memory: one [`Aggregate`] per slice, holding the same values as the run's aggregate, and at most
//! [`MAX_SLICES`] slices (records sent later are counted in [`Slicer::beyond`]).

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::fork::{Fork, InTurn};
use crate::results::aggregate::{Aggregate, Report};
use crate::results::export::{dist_json, scalars, stat_keys};
use crate::results::metrics::Slo;
use crate::results::record::RequestRecord;
use crate::results::timeline::{TimeWeighted, Timeline, TimelineMetric};

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

    /// Each slice's requests, in slice order (those of [`Slicer::finish`]'s slices).
    pub fn aggregates(&self) -> &[Aggregate] {
        &self.slices
    }

    /// The slices of a run whose last response came at `run_end_ns` (from the benchmark start);
    /// `run`: the whole run's requests, whose time-weighted metrics each slice's window takes.
    pub fn finish(&self, run_end_ns: u64, with_goodput: bool, run: &Timeline) -> TimeSlices {
        self.finish_on(run_end_ns, with_goodput, run, &InTurn)
    }

    /// [`finish`](Self::finish) with the run's groups of curves given to `fork` as parts.
    pub fn finish_on(&self, run_end_ns: u64, with_goodput: bool, run: &Timeline, fork: &impl Fork) -> TimeSlices {
        // (start, end, complete) of each slice.
        let bounds: Vec<(u64, u64, bool)> = (0..self.slices.len())
            .map(|i| {
                let start_ns = i as u64 * self.slice_ns;
                let full_end_ns = start_ns.saturating_add(self.slice_ns);
                (start_ns, full_end_ns.min(run_end_ns.max(start_ns)), run_end_ns >= full_end_ns)
            })
            .collect();
        // The run's curves, built once, weighed over the window of every slice that lasted.
        let windows: Vec<(u64, u64)> = bounds.iter().filter(|b| b.1 > b.0).map(|b| (b.0, b.1)).collect();
        let mut weighed = run.metrics_over_on(&windows, fork).into_iter();
        let slices = self
            .slices
            .iter()
            .zip(bounds)
            .map(|(agg, (start_ns, end_ns, is_complete))| {
                let elapsed_s = (end_ns - start_ns) as f64 / 1e9;
                let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
                let mut report = agg.report_of_lists(with_goodput);
                report.request_throughput = per_s(report.request_count as f64);
                report.output_token_throughput = per_s(report.total_output_tokens as f64);
                report.input_token_throughput = per_s(report.total_input_tokens as f64);
                report.total_token_throughput = per_s((report.total_input_tokens + report.total_output_tokens) as f64);
                report.goodput = report.good_request_count.map(|n| per_s(n as f64));
                report.timeline = if end_ns > start_ns { weighed.next().unwrap_or_default() } else { Vec::new() };
                Slice { start_ns, end_ns, is_complete, report }
            })
            .collect();
        TimeSlices { slice_ns: self.slice_ns, slices, beyond: self.beyond }
    }
}

/// The metrics of one slice; times are nanoseconds from the benchmark start.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub start_ns: u64,
    /// The slice's end, or the run's when the run ended inside it (as AIPerf writes it).
    pub end_ns: u64,
    /// Whether the run lasted past the slice's full width.
    pub is_complete: bool,
    /// The slice's requests summarized as the run's are (the same metrics and scalars); its
    /// throughputs and goodput are per second of the slice (`end_ns - start_ns`), as AIPerf's.
    pub report: Report,
}

/// Every slice of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSlices {
    pub slice_ns: u64,
    pub slices: Vec<Slice>,
    /// Records left out past [`MAX_SLICES`].
    pub beyond: u64,
}

/// One metric of a slice in the CSV: its tag (the sort key), header, unit and statistics.
type CsvMetric = (&'static str, &'static str, &'static str, Vec<(String, f64)>);

/// A slice's statistics in AIPerf's `STAT_KEYS` order (avg, min, max, sum, p1…p99, std, each
/// that the metric has): the distributions, the time-weighted metrics, then the scalars (avg).
fn rows(r: &Report) -> Vec<CsvMetric> {
    let mut v: Vec<_> = r.metrics.iter().map(|(m, d)| (m.tag(), m.header(), m.unit(), stat_keys(d))).collect();
    v.extend(r.timeline.iter().map(|(m, t)| (m.tag(), m.header(), m.unit(), weighted_stats(t))));
    v.extend(scalars(r).into_iter().map(|(tag, header, unit, x)| (tag, header, unit, vec![("avg".to_owned(), x)])));
    v
}

fn weighted_stats(t: &TimeWeighted) -> Vec<(String, f64)> {
    let [avg, p50, p90, p95, p99, min, max, std] = t.stats();
    [avg, min, max, p50, p90, p95, p99, std].iter().map(|&(k, x)| (k.to_owned(), x)).collect()
}

/// A time-weighted metric as AIPerf writes it: `{unit, avg, p50, p90, p95, p99, min, max, std}`.
fn weighted_json(metric: TimelineMetric, t: &TimeWeighted) -> Value {
    let mut o = Map::new();
    o.insert("unit".into(), json!(metric.unit()));
    for (k, v) in t.stats() {
        o.insert(k.into(), json!(v));
    }
    Value::Object(o)
}

/// `profile_export_aiperf_timeslices.json`: `{timeslices: [{start_ns, end_ns, is_complete,
/// <metric>: {unit, avg, p1…p99, min, max, std, count, sum}, <time-weighted metric>: {unit, avg,
/// p50, p90, p95, p99, min, max, std}, <scalar>: {unit, avg}}],
/// input_config}` with the summary's metrics and scalars per slice; `start_ns`/`end_ns` are Unix
/// nanoseconds (the run started at `start_unix_ns`). Ours beside: `slice_duration_s`,
/// `records_beyond_last_slice`.
pub fn timeslices_json(t: &TimeSlices, start_unix_ns: u128, input_config: &Value) -> String {
    let slices: Vec<Value> = t
        .slices
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("start_ns".into(), json!(start_unix_ns + u128::from(s.start_ns)));
            m.insert("end_ns".into(), json!(start_unix_ns + u128::from(s.end_ns)));
            m.insert("is_complete".into(), json!(s.is_complete));
            for (metric, d) in &s.report.metrics {
                m.insert(metric.tag().into(), dist_json(metric.unit(), d));
            }
            for (metric, t) in &s.report.timeline {
                m.insert(metric.tag().into(), weighted_json(*metric, t));
            }
            for (tag, _, unit, v) in scalars(&s.report) {
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

/// `profile_export_aiperf_timeslices.csv` in AIPerf's tidy layout:
/// `Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value`, one row per statistic, the metrics of a
/// slice sorted by tag and named by their headers, values with two decimals, lines ending in CRLF
/// (Python's `csv` module); times in Unix nanoseconds, as in the JSON.
pub fn timeslices_csv(t: &TimeSlices, start_unix_ns: u128) -> String {
    let mut out = String::from("Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value\r\n");
    for (i, s) in t.slices.iter().enumerate() {
        let (start, end) = (start_unix_ns + u128::from(s.start_ns), start_unix_ns + u128::from(s.end_ns));
        let mut rows = rows(&s.report);
        rows.sort_by(|a, b| a.0.cmp(b.0));
        for (_, header, unit, stats) in rows {
            let name = crate::csv::field(header);
            for (stat, v) in stats {
                let _ = write!(out, "{i},{start},{end},{name},{unit},{stat},{v:.2}\r\n");
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::metrics::{Metric, parse_goodput};
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
        let mut run = Aggregate::default();
        let mut failed = rec(120, 5);
        failed.error = Some(RecordError { kind: "http_status".into(), message: "500".into() });
        let records = [(0, 10), (50, 20), (99, 10), (100, 30), (310, 10)].map(|(sent, ttft)| rec(sent, ttft));
        for r in records.iter().chain([&failed]) {
            s.add(r, false, &slos);
            run.add(r, false, &slos);
        }
        s.finish(350_000_000, true, &run.timeline)
    }

    #[test]
    fn a_request_belongs_to_the_slice_of_its_send_time_and_counts_add_up() {
        let t = sliced();
        let counts: Vec<(u64, u64)> =
            t.slices.iter().map(|s| (s.report.request_count, s.report.error_request_count)).collect();
        assert_eq!(counts, vec![(3, 0), (1, 1), (0, 0), (1, 0)]);
        assert_eq!(counts.iter().map(|(ok, err)| ok + err).sum::<u64>(), 6);
        let complete: Vec<bool> = t.slices.iter().map(|s| s.is_complete).collect();
        assert_eq!(complete, vec![true, true, true, false]);
        // 3 requests in 0.1 s; the last slice ends with the run, 50 ms after its start.
        assert!((t.slices[0].report.request_throughput - 30.0).abs() < 1e-9);
        assert_eq!((t.slices[3].start_ns, t.slices[3].end_ns), (300_000_000, 350_000_000));
        assert!((t.slices[3].report.request_throughput - 20.0).abs() < 1e-9);
        assert_eq!(t.slices[0].report.good_request_count, Some(2));
        assert!((t.slices[0].report.goodput.unwrap() - 20.0).abs() < 1e-9);
        let ttft = t.slices[0].report.metrics.iter().find(|(m, _)| *m == Metric::TimeToFirstToken).unwrap();
        assert_eq!((ttft.1.count, ttft.1.max, ttft.1.sum), (3, 20.0, 40.0));
    }

    #[test]
    fn a_slice_weighs_every_request_in_flight_in_its_window() {
        let t = sliced();
        let concurrency = |i: usize| {
            t.slices[i].report.timeline.iter().find(|(m, _)| *m == TimelineMetric::EffectiveConcurrency).unwrap().1.avg
        };
        // Slice 0: 11 + 21 + 1 ms in flight over 100 ms; slice 1 also holds the request sent at
        // 99 ms until it ends at 110 ms: 10 + 31 + 6 (the failed one) ms.
        assert!((concurrency(0) - 0.33).abs() < 1e-9, "{}", concurrency(0));
        assert!((concurrency(1) - 0.47).abs() < 1e-9, "{}", concurrency(1));
        // Nothing in flight in slice 2; the last slice's window ends with the run.
        assert_eq!(concurrency(2), 0.0);
        assert!((concurrency(3) - 11.0 / 50.0).abs() < 1e-9, "{}", concurrency(3));
        assert_eq!(t.slices[0].report.timeline.len(), 14);
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
