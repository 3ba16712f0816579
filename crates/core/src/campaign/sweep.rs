//! Several runs seen together: a sweep over one load option (one point per value, AIPerf's
//! `profile_export_aiperf_sweep.*`) and repeated runs with confidence intervals (AIPerf's
//! `profile_export_aiperf_aggregate.*`).
//!
//! A run is reduced to its key [`Figure`]s (throughputs, goodput, and the avg/p50/p90/p99 of each
//! per-request metric); repeated runs are summarised per figure by mean, sample standard deviation,
//! min, max and the two-sided Student t confidence interval of the mean
//! ([`crate::stats::t_interval_half_width`]). Every serializer is a pure function.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::csv;
use crate::results::aggregate::Report;
use crate::stats::{mean, sample_std_dev, t_interval_half_width};

/// `profile_export_aiperf_sweep.json`.
pub const SWEEP_JSON: &str = "profile_export_aiperf_sweep.json";
/// `profile_export_aiperf_sweep.csv`.
pub const SWEEP_CSV: &str = "profile_export_aiperf_sweep.csv";
/// `profile_export_aiperf_aggregate.json`.
pub const AGGREGATE_JSON: &str = "profile_export_aiperf_aggregate.json";
/// `profile_export_aiperf_aggregate.csv`.
pub const AGGREGATE_CSV: &str = "profile_export_aiperf_aggregate.csv";

/// The load option a sweep or a capacity search varies: `--request-rate` (sessions per second),
/// `--concurrency` (session runs in flight) or `--synthesis-speedup-ratio` (the trace's timestamps
/// divided by it). As a value of `--search-max`: `request-rate`, `concurrency`, `speedup` (the
/// variants carry no doc comment, which clap would show as help of each value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Axis {
    RequestRate,
    Concurrency,
    #[cfg_attr(feature = "clap", value(name = "speedup"))]
    SpeedupRatio,
}

impl Axis {
    /// The option's name in `input_config` and in the summaries.
    pub fn tag(self) -> &'static str {
        match self {
            Axis::RequestRate => "request_rate",
            Axis::Concurrency => "concurrency",
            Axis::SpeedupRatio => "synthesis_speedup_ratio",
        }
    }

    /// The command-line flag.
    pub fn flag(self) -> &'static str {
        match self {
            Axis::RequestRate => "--request-rate",
            Axis::Concurrency => "--concurrency",
            Axis::SpeedupRatio => "--synthesis-speedup-ratio",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Axis::RequestRate => "requests/sec",
            Axis::Concurrency => "requests",
            Axis::SpeedupRatio => "ratio",
        }
    }

    /// Whether the option takes whole numbers.
    pub fn integer(self) -> bool {
        self == Axis::Concurrency
    }

    /// A value as written in folder names and tables (`10`, `2.5`).
    pub fn format(self, v: f64) -> String {
        if self.integer() || v.fract() == 0.0 { format!("{}", v.round() as i64) } else { format!("{v}") }
    }
}

/// One key number of a run: metric tag, statistic, unit, value.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub metric: String,
    pub stat: &'static str,
    pub unit: &'static str,
    pub value: f64,
}

/// The seed of one run of a sweep or of repeats, as AIPerf derives it: value `index` of a sweep
/// takes `root + index` (`same_seed`: `root`); with `vary_per_trial`, trial `trial` (0, 1, …) of
/// the value labelled `label` takes the first 8 bytes of SHA-256 over
/// `"{root}:variation:{label}:trial:{trial}"`, big-endian, masked to 63 bits.
pub fn run_seed(root: u64, index: usize, same_seed: bool, vary_per_trial: Option<(&str, u32)>) -> u64 {
    use sha2::{Digest, Sha256};
    if let Some((label, trial)) = vary_per_trial {
        let digest = Sha256::digest(format!("{root}:variation:{label}:trial:{trial}").as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        return u64::from_be_bytes(first) & (u64::MAX >> 1);
    }
    if same_seed { root } else { root.wrapping_add(index as u64) }
}

/// Share of a run's requests (failed ones included) that met every SLO; `None` without SLOs or
/// without requests.
pub fn good_fraction(r: &Report) -> Option<f64> {
    let total = r.request_count + r.error_request_count;
    r.good_request_count.filter(|_| total > 0).map(|g| g as f64 / total as f64)
}

/// The key figures of a run, in a fixed order.
pub fn figures(r: &Report) -> Vec<Figure> {
    let scalar = |metric: &str, unit, value| Figure { metric: metric.to_owned(), stat: "avg", unit, value };
    let mut v = vec![
        scalar("request_throughput", "requests/sec", r.request_throughput),
        scalar("output_token_throughput", "tokens/sec", r.output_token_throughput),
        scalar("request_count", "requests", r.request_count as f64),
        scalar("error_request_count", "requests", r.error_request_count as f64),
    ];
    if let Some(g) = r.goodput {
        v.push(scalar("goodput", "requests/sec", g));
    }
    if let Some(f) = good_fraction(r) {
        v.push(scalar("good_request_fraction", "ratio", f));
    }
    for (m, d) in &r.metrics {
        for (stat, value) in
            [("avg", d.avg), ("p50", d.percentiles[4]), ("p90", d.percentiles[6]), ("p99", d.percentiles[8])]
        {
            v.push(Figure { metric: m.tag().to_owned(), stat, unit: m.unit(), value });
        }
    }
    v
}

/// One figure over repeated runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    pub metric: String,
    pub stat: &'static str,
    pub unit: &'static str,
    /// Runs that had this figure.
    pub count: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one run.
    pub std: f64,
    pub min: f64,
    pub max: f64,
    /// The confidence interval of the mean (the mean itself for one run).
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Each figure over `runs` (in the order of first appearance) at `confidence` (e.g. 0.95).
pub fn spread(runs: &[Vec<Figure>], confidence: f64) -> Vec<Spread> {
    let mut keys: Vec<(&str, &'static str, &'static str)> = Vec::new();
    for f in runs.iter().flatten() {
        if !keys.iter().any(|(m, s, _)| *m == f.metric && *s == f.stat) {
            keys.push((&f.metric, f.stat, f.unit));
        }
    }
    keys.into_iter()
        .filter_map(|(metric, stat, unit)| {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|f| f.metric == metric && f.stat == stat).map(|f| f.value))
                .collect();
            let m = mean(&values)?;
            let half = t_interval_half_width(&values, confidence).unwrap_or(0.0);
            Some(Spread {
                metric: metric.to_owned(),
                stat,
                unit,
                count: values.len(),
                mean: m,
                std: sample_std_dev(&values).unwrap_or(0.0),
                min: values.iter().copied().fold(f64::INFINITY, f64::min),
                max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                ci_low: m - half,
                ci_high: m + half,
            })
        })
        .collect()
}

/// `profile_export_aiperf_aggregate.json`: `{num_profile_runs, confidence_level, runs: [folders],
/// metrics: {<metric>: {<stat>: {unit, count, mean, std, min, max, ci_low, ci_high}}}}`.
pub fn aggregate_json(runs: &[String], confidence: f64, spreads: &[Spread]) -> String {
    let mut metrics = Map::new();
    for s in spreads {
        let entry = metrics.entry(s.metric.clone()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(o) = entry {
            o.insert(
                s.stat.into(),
                json!({"unit": s.unit, "count": s.count, "mean": s.mean, "std": s.std, "min": s.min,
                    "max": s.max, "ci_low": s.ci_low, "ci_high": s.ci_high}),
            );
        }
    }
    let doc = json!({
        "num_profile_runs": runs.len(),
        "confidence_level": confidence,
        "runs": runs,
        "metrics": metrics,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `profile_export_aiperf_aggregate.csv`: one row per figure.
pub fn aggregate_csv(spreads: &[Spread]) -> String {
    let mut out = String::from("Metric,Stat,Unit,Count,Mean,Std,Min,Max,CI_Low,CI_High\n");
    for s in spreads {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            s.metric, s.stat, s.unit, s.count, s.mean, s.std, s.min, s.max, s.ci_low, s.ci_high
        );
    }
    out
}

/// One value of a sweep: its folder, whether it was stopped, and its figures (the means over its
/// runs when repeated).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub value: f64,
    /// The sub-run's folder, relative to the sweep's.
    pub artifact_dir: String,
    pub runs: usize,
    pub was_cancelled: bool,
    pub figures: Vec<Figure>,
}

impl SweepPoint {
    /// A point from the figures of its runs.
    pub fn of(value: f64, artifact_dir: String, runs: &[Vec<Figure>], was_cancelled: bool) -> SweepPoint {
        let figures = if runs.len() == 1 {
            runs[0].clone()
        } else {
            spread(runs, 0.95)
                .into_iter()
                .map(|s| Figure { metric: s.metric, stat: s.stat, unit: s.unit, value: s.mean })
                .collect()
        };
        SweepPoint { value, artifact_dir, runs: runs.len(), was_cancelled, figures }
    }

    fn get(&self, metric: &str, stat: &str) -> Option<f64> {
        self.figures.iter().find(|f| f.metric == metric && f.stat == stat).map(|f| f.value)
    }
}

/// The columns of the sweep CSV after the swept value: (metric, stat).
const SWEEP_COLUMNS: [(&str, &str); 18] = [
    ("request_throughput", "avg"),
    ("output_token_throughput", "avg"),
    ("goodput", "avg"),
    ("good_request_fraction", "avg"),
    ("request_count", "avg"),
    ("error_request_count", "avg"),
    ("time_to_first_token", "avg"),
    ("time_to_first_token", "p50"),
    ("time_to_first_token", "p99"),
    ("inter_token_latency", "avg"),
    ("inter_token_latency", "p50"),
    ("inter_token_latency", "p99"),
    ("request_latency", "avg"),
    ("request_latency", "p50"),
    ("request_latency", "p99"),
    ("send_lateness", "avg"),
    ("send_lateness", "p50"),
    ("send_lateness", "p99"),
];

/// `profile_export_aiperf_sweep.json`: `{sweep_parameter, unit, points: [{value, artifact_dir,
/// runs, was_cancelled, metrics: {<metric>: {unit, <stat>: value}}}], input_config}`.
pub fn sweep_json(axis: Axis, points: &[SweepPoint], input_config: &Value) -> String {
    let points: Vec<Value> = points
        .iter()
        .map(|p| {
            let mut metrics = Map::new();
            for f in &p.figures {
                let entry = metrics.entry(f.metric.clone()).or_insert_with(|| json!({"unit": f.unit}));
                entry[f.stat] = json!(f.value);
            }
            json!({"value": p.value, "artifact_dir": p.artifact_dir, "runs": p.runs,
                "was_cancelled": p.was_cancelled, "metrics": metrics})
        })
        .collect();
    let doc = json!({
        "sweep_parameter": axis.tag(),
        "unit": axis.unit(),
        "points": points,
        "input_config": input_config,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `profile_export_aiperf_sweep.csv`: one row per value; an empty cell where a run lacks a figure.
pub fn sweep_csv(axis: Axis, points: &[SweepPoint]) -> String {
    let mut out = format!("{},artifact_dir,runs,was_cancelled", axis.tag());
    for (m, s) in SWEEP_COLUMNS {
        let _ = write!(out, ",{m}_{s}");
    }
    out.push('\n');
    for p in points {
        let _ = write!(out, "{},{},{},{}", axis.format(p.value), p.artifact_dir, p.runs, p.was_cancelled);
        for (m, s) in SWEEP_COLUMNS {
            csv::push_cell(&mut out, p.get(m, s));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn run_seeds_are_aiperfs() {
        assert_eq!([0, 1, 2].map(|i| run_seed(7, i, false, None)), [7, 8, 9]);
        assert_eq!(run_seed(7, 2, true, None), 7);
        // Python: int.from_bytes(sha256(b"0:variation:base:trial:0").digest()[:8], "big") & (2**63 - 1)
        assert_eq!(run_seed(0, 0, false, Some(("base", 0))), 4_033_660_807_978_276_765);
        assert_eq!(run_seed(0, 5, true, Some(("base", 1))), 4_968_583_874_053_865_279);
        assert_eq!(run_seed(42, 1, false, Some(("concurrency=4", 2))), 5_280_975_851_927_223_599);
    }

    fn run(ttft_p99: f64, throughput: f64) -> Vec<Figure> {
        vec![
            Figure { metric: "request_throughput".into(), stat: "avg", unit: "requests/sec", value: throughput },
            Figure { metric: "time_to_first_token".into(), stat: "p99", unit: "ms", value: ttft_p99 },
        ]
    }

    #[test]
    fn repeated_runs_have_a_student_t_interval() {
        let s = spread(&[run(10.0, 5.0), run(12.0, 5.0), run(14.0, 5.0)], 0.95);
        let ttft = s.iter().find(|s| s.metric == "time_to_first_token").unwrap();
        assert_eq!((ttft.count, ttft.mean, ttft.std, ttft.min, ttft.max), (3, 12.0, 2.0, 10.0, 14.0));
        // t(0.975, 2) · 2 / √3.
        let half = 4.302_652_730 * 2.0 / 3f64.sqrt();
        assert!((ttft.ci_high - 12.0 - half).abs() < 1e-6 && (12.0 - ttft.ci_low - half).abs() < 1e-6);
        let thr = s.iter().find(|s| s.metric == "request_throughput").unwrap();
        assert_eq!((thr.ci_low, thr.ci_high), (5.0, 5.0));
        let one = spread(&[run(10.0, 5.0)], 0.95);
        assert_eq!((one[1].std, one[1].ci_low, one[1].ci_high), (0.0, 10.0, 10.0));
    }

    #[test]
    fn axis_values_name_folders() {
        assert_eq!(Axis::RequestRate.format(10.0), "10");
        assert_eq!(Axis::RequestRate.format(2.5), "2.5");
        assert_eq!(Axis::Concurrency.format(8.0), "8");
    }

    fn points() -> Vec<SweepPoint> {
        vec![
            SweepPoint::of(10.0, "10".into(), &[run(60.0, 9.9)], false),
            SweepPoint::of(20.0, "20".into(), &[run(70.0, 19.8), run(80.0, 19.6)], true),
        ]
    }

    #[test]
    fn sweep_csv_snapshot() {
        insta::assert_snapshot!(sweep_csv(Axis::RequestRate, &points()));
    }

    #[test]
    fn sweep_json_snapshot() {
        insta::assert_snapshot!(sweep_json(Axis::RequestRate, &points(), &json!({"model": "m"})));
    }

    #[test]
    fn aggregate_snapshots() {
        let s = spread(&[run(10.0, 5.0), run(12.0, 5.5)], 0.9);
        insta::assert_snapshot!(aggregate_csv(&s));
        insta::assert_snapshot!(aggregate_json(&["run_1".into(), "run_2".into()], 0.9, &s));
    }
}
