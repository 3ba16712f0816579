//! Fidelity of a synthesized trace: its distributions next to the original's.
//!
//! For input length, output length, context (cached prefix) length, per-request hit rate and
//! requests per second, the report gives both distributions (mean, std, percentiles) and their
//! two-sample Kolmogorov–Smirnov distance. For arrivals over time ([`ArrivalCheck`]): dispersion
//! and lag-1 autocorrelation of requests per window (10 s, 1 min and the widest width giving the
//! original at least 30 windows), the inter-arrival CV, peak 1 s and 10 s rates, burst sizes and,
//! where there are sessions, turns per session and delays between turns, each with a tolerance
//! and a verdict. Fidelity is measured, not assumed.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::arrivals::{dispersion, lag1_autocorrelation, window_counts};
use crate::analysis::report::{group_thousands, table};
use crate::analysis::{Analysis, RowMetrics, analyze_for_comparison};
use crate::stats::{Distribution, ks_distance_sorted, sorted};
use crate::trace::{Number, Trace};

/// One metric, original against synthesized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricFidelity {
    /// `isl`, `osl`, `context_length`, `hit_rate` or `requests_per_second`.
    pub metric: String,
    pub original: Option<Distribution>,
    pub synthesized: Option<Distribution>,
    /// Largest gap between the two empirical CDFs (0 = identical).
    pub ks_distance: Option<f64>,
}

/// Original vs synthesized distributions of the metrics that matter for replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FidelityReport {
    pub block_size: u32,
    pub original_requests: u64,
    pub synthesized_requests: u64,
    /// Theoretical (infinite cache) hit rate of each trace.
    pub original_cache_hit_rate: f64,
    pub synthesized_cache_hit_rate: f64,
    pub original_unique_prefixes: u64,
    pub synthesized_unique_prefixes: u64,
    pub metrics: Vec<MetricFidelity>,
    /// Arrivals over time, original against synthesized (empty when not compared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<ArrivalCheck>,
}

/// How close a synthesized statistic must be to the original's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    /// The ratio synthesized / original within `1/f ..= f`.
    Factor(f64),
    /// The difference within `±d`.
    Difference(f64),
}

impl Tolerance {
    fn holds(self, original: f64, synthesized: f64) -> bool {
        match self {
            Tolerance::Factor(f) if original > 0.0 && synthesized > 0.0 => {
                let r = synthesized / original;
                r <= f && r >= 1.0 / f
            }
            Tolerance::Factor(_) => original == synthesized,
            Tolerance::Difference(d) => (synthesized - original).abs() <= d,
        }
    }
}

impl std::fmt::Display for Tolerance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tolerance::Factor(x) => write!(f, "×/÷ {x}"),
            Tolerance::Difference(d) => write!(f, "± {d}"),
        }
    }
}

/// One statistic of arrivals over time, original against synthesized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrivalCheck {
    /// `dispersion_60s`, `lag1_autocorrelation_60s`, `inter_arrival_cv`, `peak_1s`, …
    pub statistic: String,
    pub original: Option<f64>,
    pub synthesized: Option<f64>,
    pub tolerance: Tolerance,
    /// Whether the synthesized value is within the tolerance (`None` when either is missing).
    pub pass: Option<bool>,
}

/// What the arrival checks read of one trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArrivalSeries {
    /// Timestamps (ms) of the rows that have one, sorted by `f64::total_cmp`.
    pub timestamps: Vec<f64>,
    /// Turns of each session (`session_id`, else `conversation_id`), in any order.
    pub turns: Vec<f64>,
    /// Gaps between a session's consecutive turns (ms), in any order: the later turn's `delay`
    /// where it has one, otherwise the difference of the two turns' timestamps.
    pub delays: Vec<f64>,
}

impl ArrivalSeries {
    /// The series of a trace.
    pub fn of(trace: &Trace) -> Self {
        let mut timestamps: Vec<f64> = trace.rows().iter().filter_map(|r| r.timestamp.map(Number::as_f64)).collect();
        timestamps.sort_by(f64::total_cmp);
        let (turns, delays) = sessions(trace);
        ArrivalSeries { timestamps, turns, delays }
    }
}

/// Most requests in one window of `width_ms` (windows from the first timestamp).
fn peak(ts: &[f64], width_ms: f64) -> Option<f64> {
    let first = *ts.first()?;
    let (mut best, mut run, mut at) = (0u64, 0u64, u64::MAX);
    for &t in ts {
        let w = ((t - first) / width_ms) as u64;
        if w == at {
            run += 1;
        } else {
            (at, run) = (w, 1);
        }
        best = best.max(run);
    }
    Some(best as f64)
}

/// Sessions: turns per session and the gaps between a session's turns (ms): `delay` where rows
/// carry one, otherwise the gap between consecutive timestamps of the session or conversation.
fn sessions(trace: &Trace) -> (Vec<f64>, Vec<f64>) {
    /// A turn's timestamp and delay.
    type Turn = (Option<f64>, Option<f64>);
    let mut by: crate::hashing::FastMap<&str, Vec<Turn>> = crate::hashing::FastMap::default();
    for r in trace.rows() {
        let key = r.session_id.as_deref().or(r.conversation.as_deref());
        if let Some(k) = key {
            by.entry(k).or_default().push((r.timestamp.map(Number::as_f64), r.delay.map(Number::as_f64)));
        }
    }
    let (mut turns, mut delays) = (Vec::new(), Vec::new());
    for rows in by.values() {
        turns.push(rows.len() as f64);
        for w in rows.windows(2) {
            match (w[1].1, w[0].0, w[1].0) {
                (Some(d), _, _) => delays.push(d),
                (None, Some(a), Some(b)) => delays.push(b - a),
                _ => {}
            }
        }
    }
    (turns, delays)
}

/// The arrival statistics of `original` and `synthesized`, with tolerances and verdicts.
pub fn arrival_checks(original: &Trace, synthesized: &Trace) -> Vec<ArrivalCheck> {
    arrival_checks_of(&ArrivalSeries::of(original), &ArrivalSeries::of(synthesized))
}

/// [`arrival_checks`] of the two traces' series.
pub fn arrival_checks_of(original: &ArrivalSeries, synthesized: &ArrivalSeries) -> Vec<ArrivalCheck> {
    let (a, b) = (&original.timestamps, &synthesized.timestamps);
    let mut checks = Vec::new();
    let mut add = |statistic: String, f: &dyn Fn(&[f64]) -> Option<f64>, tolerance: Tolerance| {
        let (o, s) = (f(a), f(b));
        let pass = o.zip(s).map(|(o, s)| tolerance.holds(o, s));
        checks.push(ArrivalCheck { statistic, original: o, synthesized: s, tolerance, pass });
    };
    let span_s = a.last().zip(a.first()).map_or(0.0, |(l, f)| (l - f) / 1000.0);
    let widest = (span_s / 30.0).floor();
    let mut widths = vec![10.0, 60.0];
    if widest > 60.0 {
        widths.push(widest);
    }
    for w in widths {
        let ms = w * 1000.0;
        add(format!("dispersion_{w}s"), &|ts| dispersion(&window_counts(ts, ms)), Tolerance::Factor(1.5));
        add(
            format!("lag1_autocorrelation_{w}s"),
            &|ts| lag1_autocorrelation(&window_counts(ts, ms)),
            Tolerance::Difference(0.2),
        );
    }
    add(
        "inter_arrival_cv".into(),
        &|ts| {
            // A distribution's mean and deviation, without its percentiles.
            let gaps: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
            let (avg, std) = (crate::stats::mean(&gaps)?, crate::stats::std_dev(&gaps)?);
            (avg > 0.0).then(|| std / avg)
        },
        Tolerance::Factor(1.25),
    );
    add("peak_1s".into(), &|ts| peak(ts, 1000.0), Tolerance::Factor(1.33));
    add("peak_rate_10s_per_s".into(), &|ts| peak(ts, 10_000.0).map(|p| p / 10.0), Tolerance::Factor(1.33));
    let bursts = |ts: &[f64]| -> Vec<f64> {
        let mut sizes = Vec::new();
        let mut i = 0;
        while i < ts.len() {
            let j = ts[i..].iter().position(|&t| t != ts[i]).map_or(ts.len(), |k| i + k);
            sizes.push((j - i) as f64);
            i = j;
        }
        sizes
    };
    add("mean_burst_size".into(), &|ts| crate::stats::mean(&bursts(ts)), Tolerance::Factor(1.1));
    add("largest_burst".into(), &|ts| bursts(ts).into_iter().max_by(f64::total_cmp), Tolerance::Factor(1.5));
    let (so, ss) = (original, synthesized);
    if !so.turns.is_empty() || !ss.turns.is_empty() {
        // Turn counts are whole numbers (exact sums) and the delays' median is order-free, so the
        // order of sessions in the series does not matter.
        let mean = |v: &[f64]| Distribution::of(v).map(|d| d.avg);
        let median = |v: &[f64]| Distribution::of(v).and_then(|d| d.percentile(50.0));
        for (statistic, o, s, tolerance) in [
            ("mean_turns_per_session", mean(&so.turns), mean(&ss.turns), Tolerance::Factor(1.25)),
            ("median_inter_turn_delay_ms", median(&so.delays), median(&ss.delays), Tolerance::Factor(1.33)),
        ] {
            let pass = o.zip(s).map(|(o, s)| tolerance.holds(o, s));
            checks.push(ArrivalCheck { statistic: statistic.into(), original: o, synthesized: s, tolerance, pass });
        }
    }
    checks
}

/// Compares two traces (analysed with the same block size).
pub fn fidelity_report(original: &Trace, synthesized: &Trace, block_size: u32) -> FidelityReport {
    let (a, ma) = analyze_for_comparison(original, block_size);
    let (b, mb) = analyze_for_comparison(synthesized, block_size);
    let mut report = fidelity_from_analyses((&a, &ma), (&b, &mb));
    report.arrivals = arrival_checks(original, synthesized);
    report
}

/// The report from analyses already computed (with their per-row values).
pub fn fidelity_from_analyses(
    original: (&Analysis, &RowMetrics),
    synthesized: (&Analysis, &RowMetrics),
) -> FidelityReport {
    fidelity_from_analyses_with(original, synthesized, |metrics| {
        metrics.iter().map(|&(metric, x, y)| compare_metric(metric, x, y)).collect()
    })
}

/// [`fidelity_from_analyses`] with the metrics compared by `compare`: it is given each metric's
/// name and values (original, synthesized) in the report's order and returns
/// [`compare_metric`]'s result for each, in that order (a caller may spread them over threads).
pub fn fidelity_from_analyses_with(
    original: (&Analysis, &RowMetrics),
    synthesized: (&Analysis, &RowMetrics),
    compare: impl FnOnce(&[(&str, &[f64], &[f64])]) -> Vec<MetricFidelity>,
) -> FidelityReport {
    let ((a, ma), (b, mb)) = (original, synthesized);
    fidelity_of_with(&Compared::of_analysis(a, ma), &Compared::of_analysis(b, mb), compare)
}

/// What the report compares of one trace besides its arrivals: counts and per-row values, as
/// [`analyze_for_comparison`] gives them (or as a generator knows them of the rows it made).
#[derive(Clone, Debug, PartialEq)]
pub struct Compared<'a> {
    /// The block size the values were computed with.
    pub block_size: u32,
    /// [`Analysis::total_requests`].
    pub requests: u64,
    /// [`Analysis::cache_hit_rate`].
    pub cache_hit_rate: f64,
    /// [`Analysis::unique_prefixes`].
    pub unique_prefixes: u64,
    /// Input length, output length, context length and hit rate per row (the unique prompt
    /// lengths are not read).
    pub rows: &'a RowMetrics,
    /// [`crate::analysis::ArrivalStats::requests_per_second`] (empty without timestamps).
    pub requests_per_second: Vec<f64>,
}

impl<'a> Compared<'a> {
    /// The numbers of an analysis and its per-row values.
    pub fn of_analysis(a: &Analysis, rows: &'a RowMetrics) -> Self {
        Compared {
            block_size: a.block_size,
            requests: a.total_requests,
            cache_hit_rate: a.cache_hit_rate,
            unique_prefixes: a.unique_prefixes,
            rows,
            requests_per_second: a
                .arrivals
                .as_ref()
                .map_or_else(Vec::new, |r| r.requests_per_second.iter().map(|&c| f64::from(c)).collect()),
        }
    }
}

/// The report of two traces' [`Compared`] numbers (the original's block size), the metrics
/// compared by `compare` as in [`fidelity_from_analyses_with`]; `arrivals` is left empty.
pub fn fidelity_of_with(
    original: &Compared<'_>,
    synthesized: &Compared<'_>,
    compare: impl FnOnce(&[(&str, &[f64], &[f64])]) -> Vec<MetricFidelity>,
) -> FidelityReport {
    let (a, b) = (original, synthesized);
    let (ma, mb) = (a.rows, b.rows);
    let metrics = compare(&[
        ("isl", &ma.isl, &mb.isl),
        ("osl", &ma.osl, &mb.osl),
        ("context_length", &ma.context_length, &mb.context_length),
        ("hit_rate", &ma.hit_rate, &mb.hit_rate),
        ("requests_per_second", &a.requests_per_second, &b.requests_per_second),
    ]);
    FidelityReport {
        block_size: a.block_size,
        original_requests: a.requests,
        synthesized_requests: b.requests,
        original_cache_hit_rate: a.cache_hit_rate,
        synthesized_cache_hit_rate: b.cache_hit_rate,
        original_unique_prefixes: a.unique_prefixes,
        synthesized_unique_prefixes: b.unique_prefixes,
        metrics,
        arrivals: Vec::new(),
    }
}

/// One metric of the report: the original values `x` against the synthesized `y`.
pub fn compare_metric(metric: &str, x: &[f64], y: &[f64]) -> MetricFidelity {
    let (sx, sy) = (sorted(x), sorted(y));
    MetricFidelity {
        metric: metric.to_string(),
        original: Distribution::of_sorted(x, &sx),
        synthesized: Distribution::of_sorted(y, &sy),
        ks_distance: ks_distance_sorted(&sx, &sy),
    }
}

impl FidelityReport {
    /// The metric named `name`, if present.
    pub fn metric(&self, name: &str) -> Option<&MetricFidelity> {
        self.metrics.iter().find(|m| m.metric == name)
    }

    /// A console table: one line per metric and trace, with the KS distance.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Original vs synthesized (block size {})", self.block_size);
        let _ = writeln!(
            out,
            "  Requests:        {} -> {}",
            group_thousands(self.original_requests as f64, 0),
            group_thousands(self.synthesized_requests as f64, 0)
        );
        let _ = writeln!(
            out,
            "  Cache hit rate:  {:.2}% -> {:.2}%",
            self.original_cache_hit_rate * 100.0,
            self.synthesized_cache_hit_rate * 100.0
        );
        let _ = writeln!(
            out,
            "  Unique prefixes: {} -> {}\n",
            group_thousands(self.original_unique_prefixes as f64, 0),
            group_thousands(self.synthesized_unique_prefixes as f64, 0)
        );
        let header = ["Metric", "Trace", "Mean", "Std Dev", "P5", "P25", "P50", "P75", "P95", "P99", "KS"];
        let mut rows = Vec::new();
        for m in &self.metrics {
            let decimals = if m.metric == "hit_rate" { 3 } else { 1 };
            for (label, d) in [("original", &m.original), ("synthesized", &m.synthesized)] {
                let mut row =
                    vec![if label == "original" { m.metric.clone() } else { String::new() }, label.to_string()];
                match d {
                    Some(d) => {
                        row.push(group_thousands(d.avg, decimals));
                        row.push(group_thousands(d.std, decimals));
                        for p in [5.0, 25.0, 50.0, 75.0, 95.0, 99.0] {
                            row.push(d.percentile(p).map_or("–".into(), |v| group_thousands(v, decimals)));
                        }
                    }
                    None => row.extend(std::iter::repeat_n("–".to_string(), 8)),
                }
                row.push(match (label, m.ks_distance) {
                    ("original", Some(ks)) => format!("{ks:.3}"),
                    ("original", None) => "–".into(),
                    _ => String::new(),
                });
                rows.push(row);
            }
        }
        out.push_str(&table(&header, &rows));
        if !self.arrivals.is_empty() {
            out.push_str("\nArrivals over time (requests per window from the first timestamp)\n");
            let header = ["Statistic", "Original", "Synthesized", "Tolerance", "Verdict"];
            let value = |v: Option<f64>| v.map_or("–".into(), |v| group_thousands(v, 3));
            let rows: Vec<Vec<String>> = self
                .arrivals
                .iter()
                .map(|c| {
                    let verdict = match c.pass {
                        Some(true) => "pass",
                        Some(false) => "FAIL",
                        None => "–",
                    };
                    vec![
                        c.statistic.clone(),
                        value(c.original),
                        value(c.synthesized),
                        c.tolerance.to_string(),
                        verdict.into(),
                    ]
                })
                .collect();
            out.push_str(&table(&header, &rows));
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, parse_str};

    #[test]
    fn a_trace_is_perfectly_faithful_to_itself_and_not_to_a_shifted_one() {
        let text = "{\"timestamp\":0,\"input_length\":10,\"output_length\":5,\"hash_ids\":[1,2,3]}\n\
                    {\"timestamp\":1500,\"input_length\":7,\"output_length\":9,\"hash_ids\":[1,2]}\n";
        let t = parse_str(text, ParseOptions::default()).unwrap().trace;
        let same = fidelity_report(&t, &t, 4);
        assert!(same.metrics.iter().all(|m| m.ks_distance == Some(0.0)));
        let longer = parse_str(&text.replace("\"output_length\":", "\"output_length\":100"), ParseOptions::default())
            .unwrap()
            .trace;
        let r = fidelity_report(&t, &longer, 4);
        assert_eq!(r.metric("osl").unwrap().ks_distance, Some(1.0));
        assert_eq!(r.metric("isl").unwrap().ks_distance, Some(0.0));
        assert!(r.to_table().contains("requests_per_second"));
    }
}
