//! The numbers of a run while it goes on (what the terminal dashboard shows): the records
//! aggregated since the last look arrive as [`Aggregate`] deltas stamped with the time since
//! time zero; [`Live::view`] gives request and token throughput and the p50/p99 of TTFT, ITL,
//! request latency and send lateness over the last window and over the whole run.
//!
//! The whole run's values are kept sorted: each delta is sorted (it is small) and merged in, so
//! a look costs a linear merge and percentile lookups with [`crate::stats::percentile_sorted`],
//! never a sort of the whole run.

use std::collections::VecDeque;

use crate::results::aggregate::Aggregate;
use crate::results::metrics::Metric;
use crate::stats::percentile_sorted;

/// The metrics whose p50 and p99 the live view shows, in order.
pub const LIVE_METRICS: [Metric; 4] =
    [Metric::TimeToFirstToken, Metric::InterTokenLatency, Metric::RequestLatency, Metric::SendLateness];

/// The p50 and p99 of a metric (ms), `None` without values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantiles {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

impl Quantiles {
    fn of_sorted(sorted: &[f64]) -> Quantiles {
        Quantiles { p50: percentile_sorted(sorted, 50.0), p99: percentile_sorted(sorted, 99.0) }
    }
}

/// The numbers of a span of the run (the last window, or the whole run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// The span's length (ns).
    pub span_ns: u64,
    /// Requests that ended in the span, and those of them that failed.
    pub done: u64,
    pub failed: u64,
    /// Requests and output tokens per second over the span.
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    /// [`LIVE_METRICS`]' quantiles, in order.
    pub quantiles: [Quantiles; 4],
}

impl Panel {
    /// The quantiles of `metric`, if it is one of [`LIVE_METRICS`].
    pub fn get(&self, metric: Metric) -> Option<Quantiles> {
        LIVE_METRICS.iter().position(|&m| m == metric).map(|i| self.quantiles[i])
    }
}

/// What the live view shows at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveView {
    pub window: Panel,
    pub total: Panel,
}

/// The running state of the live view.
#[derive(Clone, Debug)]
pub struct Live {
    window_ns: u64,
    /// Deltas of the last window, by the time they were taken (ns since time zero).
    recent: VecDeque<(u64, Aggregate)>,
    /// The whole run's values of [`LIVE_METRICS`], sorted.
    sorted: [Vec<f64>; 4],
    done: u64,
    failed: u64,
    output_tokens: u64,
}

impl Live {
    /// A live view whose window is the last `window_ns` nanoseconds.
    pub fn new(window_ns: u64) -> Live {
        Live {
            window_ns: window_ns.max(1),
            recent: VecDeque::new(),
            sorted: Default::default(),
            done: 0,
            failed: 0,
            output_tokens: 0,
        }
    }

    /// Takes the records aggregated up to `at_ns` (since time zero) since the previous delta.
    pub fn add(&mut self, at_ns: u64, delta: Aggregate) {
        for (sorted, m) in self.sorted.iter_mut().zip(LIVE_METRICS) {
            let mut new = delta.values(m).to_vec();
            new.sort_by(f64::total_cmp);
            merge_sorted(sorted, &new);
        }
        self.done += delta.ok + delta.error_count();
        self.failed += delta.error_count();
        self.output_tokens += delta.total_output_tokens;
        self.recent.push_back((at_ns, delta));
        while self.recent.front().is_some_and(|(t, _)| t.saturating_add(self.window_ns) <= at_ns) {
            self.recent.pop_front();
        }
    }

    /// The view at `now_ns` (since time zero).
    pub fn view(&self, now_ns: u64) -> LiveView {
        let total = Panel {
            span_ns: now_ns,
            done: self.done,
            failed: self.failed,
            requests_per_s: per_second(self.done as f64, now_ns),
            output_tokens_per_s: per_second(self.output_tokens as f64, now_ns),
            quantiles: std::array::from_fn(|i| Quantiles::of_sorted(&self.sorted[i])),
        };
        let since = now_ns.saturating_sub(self.window_ns);
        let mut window = Aggregate::default();
        for (_, d) in self.recent.iter().filter(|(t, _)| *t > since) {
            window.merge(d);
        }
        let span_ns = now_ns.min(self.window_ns);
        let done = window.ok + window.error_count();
        let window = Panel {
            span_ns,
            done,
            failed: window.error_count(),
            requests_per_s: per_second(done as f64, span_ns),
            output_tokens_per_s: per_second(window.total_output_tokens as f64, span_ns),
            quantiles: std::array::from_fn(|i| {
                let mut v = window.values(LIVE_METRICS[i]).to_vec();
                v.sort_by(f64::total_cmp);
                Quantiles::of_sorted(&v)
            }),
        };
        LiveView { window, total }
    }
}

fn per_second(n: f64, span_ns: u64) -> f64 {
    if span_ns == 0 { 0.0 } else { n / (span_ns as f64 / 1e9) }
}

/// Merges sorted `new` into sorted `into` (one pass from the back, no second buffer).
fn merge_sorted(into: &mut Vec<f64>, new: &[f64]) {
    if new.is_empty() {
        return;
    }
    let old = into.len();
    into.resize(old + new.len(), 0.0);
    let (mut i, mut j, mut k) = (old, new.len(), into.len());
    while j > 0 {
        k -= 1;
        if i > 0 && into[i - 1].total_cmp(&new[j - 1]).is_gt() {
            into[k] = into[i - 1];
            i -= 1;
        } else {
            into[k] = new[j - 1];
            j -= 1;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::record::{RecordError, RequestRecord};
    use crate::stats::Distribution;

    fn record(sent_ms: u64, latency_ms: u64, failed: bool) -> RequestRecord {
        let sent_ns = sent_ms * 1_000_000;
        RequestRecord {
            scheduled_ns: sent_ns,
            sent_ns,
            first_byte_ns: Some(sent_ns + latency_ms * 500_000),
            chunk_ns: vec![sent_ns + latency_ms * 500_000, sent_ns + latency_ms * 1_000_000],
            end_ns: sent_ns + latency_ms * 1_000_000,
            output_tokens: Some(2),
            streaming: true,
            error: failed.then(|| RecordError { kind: "http_500".into(), message: "boom".into() }),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn merging_keeps_the_order() {
        let mut v = vec![1.0, 4.0, 9.0];
        merge_sorted(&mut v, &[0.5, 4.0, 10.0]);
        assert_eq!(v, [0.5, 1.0, 4.0, 4.0, 9.0, 10.0]);
        merge_sorted(&mut v, &[]);
        assert_eq!(v.len(), 6);
    }

    #[test]
    fn the_whole_run_matches_the_aggregate_and_the_window_only_its_span() {
        let mut live = Live::new(1_000_000_000);
        let mut all = Aggregate::default();
        let mut t = 0;
        for batch in 0..10u64 {
            let mut delta = Aggregate::default();
            for i in 0..20u64 {
                let r = record(batch * 250 + i, 10 + (i * 7 + batch * 3) % 40, i == 3);
                delta.add(&r, false, &[]);
                all.add(&r, false, &[]);
            }
            t = (batch + 1) * 250_000_000;
            live.add(t, delta);
        }
        let view = live.view(t);
        assert_eq!((view.total.done, view.total.failed), (200, 10));
        assert!((view.total.requests_per_s - 200.0 / 2.5).abs() < 1e-9);
        for (m, q) in LIVE_METRICS.iter().zip(view.total.quantiles) {
            let d = Distribution::of(all.values(*m));
            assert_eq!(q.p50, d.as_ref().and_then(|d| d.percentile(50.0)), "{m:?}");
            assert_eq!(q.p99, d.as_ref().and_then(|d| d.percentile(99.0)), "{m:?}");
        }
        // The last second holds the last four deltas.
        assert_eq!((view.window.done, view.window.failed, view.window.span_ns), (80, 4, 1_000_000_000));
        assert!((view.window.requests_per_s - 80.0).abs() < 1e-9);
        assert!((view.window.output_tokens_per_s - 152.0).abs() < 1e-9, "{}", view.window.output_tokens_per_s);
        assert!(view.window.get(Metric::TimeToFirstToken).unwrap().p50.is_some());
        // Nothing new for two seconds: the window is empty, the whole run stays.
        let later = live.view(t + 2_000_000_000);
        assert_eq!(later.window.done, 0);
        assert_eq!(later.window.get(Metric::RequestLatency), Some(Quantiles::default()));
        assert_eq!(later.total.done, 200);
    }
}
