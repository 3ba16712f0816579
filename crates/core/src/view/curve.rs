//! A sweep or a capacity search read back from its summary (`profile_export_aiperf_sweep.json`,
//! `profile_export_aiperf_search.json`): one point per load value, drawn as latency, throughput and
//! goodput against load ([`super::html::curve_section`]).

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::RunError;
use crate::campaign::search::SEARCH_JSON;
use crate::campaign::sweep::SWEEP_JSON;

/// Which campaign wrote the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurveKind {
    /// A list of values for `--request-rate`, `--concurrency` or `--synthesis-speedup-ratio`.
    Sweep,
    /// `--search-max`: bracket then bisect to the highest load meeting the goodput target.
    Search,
}

/// The good fraction of a search point: mean over its repeats and its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoodFraction {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    pub passed: bool,
    pub saturated: bool,
}

/// One load value of a campaign.
#[derive(Clone, Debug, PartialEq)]
pub struct CurvePoint {
    pub value: f64,
    /// The sub-run's folder, relative to the campaign's.
    pub artifact_dir: String,
    pub runs: u64,
    pub was_cancelled: bool,
    /// Figures by (metric tag, statistic): from the sweep summary, or added from the sub-run's
    /// own summary ([`Curve::add_run_summary`]).
    pub figures: BTreeMap<(String, String), f64>,
    /// Search points only.
    pub good: Option<GoodFraction>,
}

impl CurvePoint {
    pub fn get(&self, metric: &str, stat: &str) -> Option<f64> {
        self.figures.get(&(metric.to_owned(), stat.to_owned())).copied()
    }
}

/// A sweep or search: its parameter and points in order of load.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub kind: CurveKind,
    /// `request_rate`, `concurrency` or `synthesis_speedup_ratio`.
    pub parameter: String,
    pub unit: String,
    pub points: Vec<CurvePoint>,
    /// Search: the answer and the good fraction it had to reach.
    pub capacity: Option<f64>,
    pub target: Option<f64>,
    pub stop: Option<String>,
}

/// Whether a file name is a campaign summary this module reads.
pub fn is_curve_file(name: &str) -> bool {
    name.ends_with(SWEEP_JSON) || name.ends_with(SEARCH_JSON)
}

fn figures_of(metrics: Option<&Value>) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    if let Some(Value::Object(m)) = metrics {
        for (metric, stats) in m {
            if let Value::Object(stats) = stats {
                for (stat, v) in stats {
                    if let Some(x) = v.as_f64() {
                        out.insert((metric.clone(), stat.clone()), x);
                    }
                }
            }
        }
    }
    out
}

impl Curve {
    /// Reads a sweep or search summary (`file` names it in errors).
    pub fn from_json(file: &str, text: &str) -> Result<Curve, RunError> {
        let err = |reason: String| RunError::Config { file: file.into(), reason };
        let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
        let (kind, parameter) = match (v.get("sweep_parameter"), v.get("search_parameter")) {
            (Some(Value::String(p)), _) => (CurveKind::Sweep, p.clone()),
            (_, Some(Value::String(p))) => (CurveKind::Search, p.clone()),
            _ => return Err(err("neither sweep_parameter nor search_parameter: not a sweep or search summary".into())),
        };
        let Some(points) = v.get("points").and_then(Value::as_array) else {
            return Err(err("no points array".into()));
        };
        let mut out = Vec::with_capacity(points.len());
        for (i, p) in points.iter().enumerate() {
            let value = p
                .get("value")
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
                .ok_or_else(|| err(format!("points[{i}].value: expected a number")))?;
            let good = match kind {
                CurveKind::Sweep => None,
                CurveKind::Search => {
                    let ci = p.get("good_fraction_ci").and_then(Value::as_array);
                    let at = |k: usize| ci.and_then(|c| c.get(k)).and_then(Value::as_f64);
                    let mean = p.get("good_fraction_mean").and_then(Value::as_f64).unwrap_or(f64::NAN);
                    Some(GoodFraction {
                        mean,
                        low: at(0).unwrap_or(mean),
                        high: at(1).unwrap_or(mean),
                        passed: p.get("passed").and_then(Value::as_bool).unwrap_or(false),
                        saturated: p.get("saturated").and_then(Value::as_bool).unwrap_or(false),
                    })
                }
            };
            out.push(CurvePoint {
                value,
                artifact_dir: p.get("artifact_dir").and_then(Value::as_str).unwrap_or_default().to_owned(),
                runs: p.get("runs").and_then(Value::as_u64).unwrap_or(1),
                was_cancelled: p.get("was_cancelled").and_then(Value::as_bool).unwrap_or(false),
                figures: figures_of(p.get("metrics")),
                good,
            });
        }
        // A search measures in the order it decides; the curve is drawn in order of load.
        out.sort_by(|a, b| a.value.total_cmp(&b.value));
        Ok(Curve {
            kind,
            parameter,
            unit: v.get("unit").and_then(Value::as_str).unwrap_or_default().to_owned(),
            points: out,
            capacity: v.get("capacity").and_then(Value::as_f64),
            target: v.pointer("/settings/target_good_fraction").and_then(Value::as_f64),
            stop: v.get("stop").and_then(Value::as_str).map(str::to_owned),
        })
    }

    /// Adds the figures of point `i` from its sub-run's `profile_export_aiperf.json` (a search
    /// summary has only good fractions): `<metric>: {avg, p50, p90, p99, …}` objects.
    pub fn add_run_summary(&mut self, i: usize, text: &str) {
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) else { return };
        let Some(p) = self.points.get_mut(i) else { return };
        for (metric, stats) in &m {
            let Value::Object(stats) = stats else { continue };
            if !stats.contains_key("unit") {
                continue;
            }
            for (stat, v) in stats {
                if let Some(x) = v.as_f64() {
                    p.figures.entry((metric.clone(), stat.clone())).or_insert(x);
                }
            }
        }
    }

    /// `(value, y)` of a figure over the points (NaN where a point lacks it).
    pub fn series(&self, metric: &str, stat: &str) -> Vec<(f64, f64)> {
        self.points.iter().map(|p| (p.value, p.get(metric, stat).unwrap_or(f64::NAN))).collect()
    }

    /// Whether any point has the figure.
    pub fn has(&self, metric: &str, stat: &str) -> bool {
        self.points.iter().any(|p| p.get(metric, stat).is_some())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::campaign::search::{Answer, Next, Search, SearchParams, search_json};
    use crate::campaign::sweep::{Axis, Figure, SweepPoint, sweep_json};

    /// A request-rate search from `start` to `limit` (target 0.9, one run per point) whose runs
    /// have the good fraction `good(value)`, run to its answer.
    pub(crate) fn searched(start: f64, limit: f64, resolution: f64, good: impl Fn(f64) -> f64) -> (Search, Answer) {
        let params = SearchParams {
            start,
            limit,
            growth: 2.0,
            resolution,
            target: 0.9,
            integer: false,
            repeats: 1,
            confidence: 0.95,
        };
        let mut s = Search::new(params).unwrap();
        let answer = loop {
            match s.next() {
                Next::Measure(v) => s.record(v, good(v)),
                Next::Done(a) => break a,
            }
        };
        (s, answer)
    }

    fn fig(metric: &str, stat: &'static str, value: f64) -> Figure {
        Figure { metric: metric.into(), stat, unit: "ms", value }
    }

    #[test]
    fn a_sweep_summary_reads_back_in_order_of_load() {
        let points = vec![
            SweepPoint::of(20.0, "20".into(), &[vec![fig("time_to_first_token", "p99", 90.0)]], false),
            SweepPoint::of(10.0, "10".into(), &[vec![fig("time_to_first_token", "p99", 50.0)]], true),
        ];
        let text = sweep_json(Axis::RequestRate, &points, &Value::Null);
        let c = Curve::from_json("s.json", &text).unwrap();
        assert_eq!((c.kind, c.parameter.as_str(), c.unit.as_str()), (CurveKind::Sweep, "request_rate", "requests/sec"));
        assert_eq!(c.series("time_to_first_token", "p99"), vec![(10.0, 50.0), (20.0, 90.0)]);
        assert!(c.points[0].was_cancelled);
        assert_eq!(c.points[1].artifact_dir, "20");
        assert!(c.has("time_to_first_token", "p99") && !c.has("request_latency", "p99"));
        let s = c.series("request_latency", "p50");
        assert!(s.iter().all(|(_, y)| y.is_nan()));
    }

    #[test]
    fn a_search_summary_reads_back_with_good_fractions_and_the_answer() {
        let (s, answer) = searched(10.0, 80.0, 0.1, |v| if v <= 35.0 { 1.0 } else { 0.5 });
        let answer = Some(answer);
        let text = search_json(Axis::RequestRate, &s, answer, &Value::Null);
        let mut c = Curve::from_json("s.json", &text).unwrap();
        assert_eq!(c.kind, CurveKind::Search);
        assert_eq!(c.target, Some(0.9));
        assert!(c.capacity.is_some_and(|x| (30.0..=35.0).contains(&x)), "{:?}", c.capacity);
        assert!(c.points.windows(2).all(|w| w[0].value <= w[1].value));
        assert!(c.points.iter().all(|p| p.good.is_some_and(|g| g.passed == (p.value <= 35.0))));
        c.add_run_summary(0, r#"{"time_to_first_token": {"unit": "ms", "p99": 12.5}, "input_config": {"x": 1}}"#);
        assert_eq!(c.points[0].get("time_to_first_token", "p99"), Some(12.5));
        assert_eq!(c.points[0].get("input_config", "x"), None);
    }

    #[test]
    fn odd_summaries_are_refused_with_the_reason() {
        for (text, want) in [
            ("nope", "not JSON"),
            ("{}", "neither sweep_parameter"),
            (r#"{"sweep_parameter": "concurrency"}"#, "no points"),
            (r#"{"sweep_parameter": "concurrency", "points": [{"value": "x"}]}"#, "points[0].value"),
        ] {
            let e = Curve::from_json("f.json", text).unwrap_err().to_string();
            assert!(e.starts_with("f.json: ") && e.contains(want), "{e}");
        }
        assert!(is_curve_file("dir/profile_export_aiperf_sweep.json"));
        assert!(is_curve_file("profile_export_aiperf_search.json"));
        assert!(!is_curve_file("profile_export_aiperf.json"));
    }
}
