//! The capacity search as a sans-IO state machine: given the results so far, which load to
//! measure next, until the highest load meeting a goodput target is known.
//!
//! A point passes when the share of its requests meeting every SLO (its *good fraction*) reaches
//! the target. The search first **brackets**: from the start value, multiply by the growth factor
//! until a point fails (or the limit passes); then it **bisects** between the highest passing and
//! the lowest failing value until they are within the resolution (relative, or 1 for whole
//! numbers). A point is measured up to `repeats` times; it is decided as soon as the Student t
//! confidence interval of its good fraction lies wholly above or below the target, and at once when
//! one run is **clearly saturated** (good fraction under half the target), so no time is spent
//! repeating hopeless loads. The caller only runs what [`Search::next`] asks for and reports each
//! run's good fraction to [`Search::record`].

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::stats::{mean, t_interval_half_width};

/// `profile_export_aiperf_search.json`.
pub const SEARCH_JSON: &str = "profile_export_aiperf_search.json";
/// `profile_export_aiperf_search.csv`.
pub const SEARCH_CSV: &str = "profile_export_aiperf_search.csv";

/// The settings of a search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchParams {
    /// First value measured (also the lowest).
    pub start: f64,
    /// Highest value measured.
    pub limit: f64,
    /// Bracketing multiplies the value by this (> 1).
    pub growth: f64,
    /// Bisection stops when the failing value is within this fraction above the passing one.
    pub resolution: f64,
    /// Good fraction a point must reach, in (0, 1].
    pub target: f64,
    /// Values are whole numbers (concurrency).
    pub integer: bool,
    /// Most runs per point (≥ 1).
    pub repeats: u32,
    /// Confidence level of the interval on each point, in (0, 1).
    pub confidence: f64,
}

/// Settings that cannot make a search.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    #[error("search: the start {start} must be > 0 and at most the limit {limit}")]
    Bounds { start: f64, limit: f64 },
    #[error("search: the growth factor {0} must be more than 1")]
    Growth(f64),
    #[error("search: the resolution {0} must be more than 0")]
    Resolution(f64),
    #[error("search: the target good fraction {0} must be more than 0 and at most 1")]
    Target(f64),
    #[error("search: the repeats per point must be at least 1")]
    Repeats,
    #[error("search: the confidence level {0} must be between 0 and 1 (excluded)")]
    Confidence(f64),
}

/// A measured point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub value: f64,
    /// The good fraction of each run.
    pub fractions: Vec<f64>,
    pub mean: f64,
    /// Confidence interval of the mean good fraction (the mean itself for one run).
    pub ci: (f64, f64),
    pub passed: bool,
    /// Decided after one run because it was far below the target.
    pub saturated: bool,
}

/// Why a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The passing and failing values are within the resolution.
    Resolved,
    /// Even the limit passed.
    LimitPassed,
    /// Even the start failed.
    StartFailed,
}

/// The answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answer {
    /// The highest value that passed.
    pub capacity: Option<f64>,
    /// The lowest value that failed.
    pub failed_at: Option<f64>,
    pub stop: Stop,
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// Run one sub-run at this value and [`Search::record`] its good fraction.
    Measure(f64),
    Done(Answer),
}

/// The search's state: the points decided and the one being measured.
#[derive(Clone, Debug)]
pub struct Search {
    p: SearchParams,
    points: Vec<Point>,
    /// The point being measured and its runs so far.
    current: Option<(f64, Vec<f64>)>,
    passed: Option<f64>,
    failed: Option<f64>,
}

impl Search {
    pub fn new(p: SearchParams) -> Result<Search, SearchError> {
        if !(p.start > 0.0 && p.start.is_finite() && p.limit.is_finite() && p.start <= p.limit) {
            return Err(SearchError::Bounds { start: p.start, limit: p.limit });
        }
        if !(p.growth > 1.0 && p.growth.is_finite()) {
            return Err(SearchError::Growth(p.growth));
        }
        if !(p.resolution > 0.0 && p.resolution.is_finite()) {
            return Err(SearchError::Resolution(p.resolution));
        }
        if !(p.target > 0.0 && p.target <= 1.0) {
            return Err(SearchError::Target(p.target));
        }
        if p.repeats == 0 {
            return Err(SearchError::Repeats);
        }
        if !(p.confidence > 0.0 && p.confidence < 1.0) {
            return Err(SearchError::Confidence(p.confidence));
        }
        Ok(Search { p, points: Vec::new(), current: None, passed: None, failed: None })
    }

    pub fn params(&self) -> &SearchParams {
        &self.p
    }

    /// The points decided so far, in the order measured.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The value to measure next, or the answer.
    pub fn next(&self) -> Next {
        if let Some((v, _)) = &self.current {
            return Next::Measure(*v);
        }
        let p = &self.p;
        match (self.passed, self.failed) {
            (None, None) => Next::Measure(self.round(p.start)),
            (None, Some(f)) => Next::Done(Answer { capacity: None, failed_at: Some(f), stop: Stop::StartFailed }),
            (Some(lo), None) if lo >= p.limit => {
                Next::Done(Answer { capacity: Some(lo), failed_at: None, stop: Stop::LimitPassed })
            }
            (Some(lo), None) => {
                let mut v = self.round((lo * p.growth).min(p.limit));
                if p.integer && v <= lo {
                    v = lo + 1.0;
                }
                Next::Measure(v.min(p.limit))
            }
            (Some(lo), Some(hi)) => {
                let done = if p.integer { hi - lo <= 1.0 } else { hi <= lo * (1.0 + p.resolution) };
                if done || hi <= lo {
                    return Next::Done(Answer { capacity: Some(lo), failed_at: Some(hi), stop: Stop::Resolved });
                }
                let mid = if p.integer { ((lo + hi) / 2.0).floor() } else { (lo + hi) / 2.0 };
                Next::Measure(mid)
            }
        }
    }

    fn round(&self, v: f64) -> f64 {
        if self.p.integer { v.round().max(1.0) } else { v }
    }

    /// Records the good fraction of one run at `value` (the value [`Search::next`] asked for).
    pub fn record(&mut self, value: f64, good_fraction: f64) {
        let fractions = match self.current.take() {
            Some((v, mut f)) if v == value => {
                f.push(good_fraction);
                f
            }
            _ => vec![good_fraction],
        };
        let p = self.p;
        let m = mean(&fractions).unwrap_or(0.0);
        let half = t_interval_half_width(&fractions, p.confidence);
        let ci = half.map_or((m, m), |h| (m - h, m + h));
        let saturated = fractions.len() == 1 && m < p.target / 2.0;
        let decided = saturated
            || fractions.len() >= p.repeats as usize
            || half.is_some_and(|_| ci.0 >= p.target || ci.1 < p.target);
        if !decided {
            self.current = Some((value, fractions));
            return;
        }
        let passed = m >= p.target;
        if passed {
            self.passed = Some(self.passed.map_or(value, |lo| lo.max(value)));
        } else {
            self.failed = Some(self.failed.map_or(value, |hi| hi.min(value)));
        }
        self.points.push(Point { value, fractions, mean: m, ci, passed, saturated });
    }
}

/// `profile_export_aiperf_search.json`: the settings, every point measured (in order) and the answer.
pub fn search_json(
    axis: crate::campaign::sweep::Axis,
    search: &Search,
    answer: Option<Answer>,
    input_config: &Value,
) -> String {
    let p = search.params();
    let points: Vec<Value> = search
        .points()
        .iter()
        .map(|pt| {
            json!({"value": pt.value, "artifact_dir": axis.format(pt.value), "runs": pt.fractions.len(),
                "good_fractions": pt.fractions, "good_fraction_mean": pt.mean,
                "good_fraction_ci": [pt.ci.0, pt.ci.1], "passed": pt.passed, "saturated": pt.saturated})
        })
        .collect();
    let doc = json!({
        "search_parameter": axis.tag(),
        "unit": axis.unit(),
        "settings": {"start": p.start, "limit": p.limit, "growth": p.growth, "resolution": p.resolution,
            "target_good_fraction": p.target, "repeats": p.repeats, "confidence_level": p.confidence},
        "points": points,
        "capacity": answer.and_then(|a| a.capacity),
        "failed_at": answer.and_then(|a| a.failed_at),
        "stop": answer.map(|a| match a.stop {
            Stop::Resolved => "resolved",
            Stop::LimitPassed => "limit_passed",
            Stop::StartFailed => "start_failed",
        }).unwrap_or("interrupted"),
        "input_config": input_config,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `profile_export_aiperf_search.csv`: one row per point, in the order measured.
pub fn search_csv(axis: crate::campaign::sweep::Axis, search: &Search) -> String {
    let mut out =
        format!("{},runs,good_fraction_mean,good_fraction_ci_low,good_fraction_ci_high,passed,saturated\n", axis.tag());
    for pt in search.points() {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            axis.format(pt.value),
            pt.fractions.len(),
            pt.mean,
            pt.ci.0,
            pt.ci.1,
            pt.passed,
            pt.saturated
        );
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params(start: f64, limit: f64, integer: bool) -> SearchParams {
        SearchParams {
            start,
            limit,
            growth: 2.0,
            resolution: 0.05,
            target: 0.95,
            integer,
            repeats: 1,
            confidence: 0.95,
        }
    }

    /// Runs a search against `fraction(value)`; returns the answer and the values measured.
    fn drive(p: SearchParams, mut fraction: impl FnMut(f64) -> f64) -> (Answer, Vec<f64>) {
        let mut s = Search::new(p).unwrap();
        let mut tried = Vec::new();
        for _ in 0..10_000 {
            match s.next() {
                Next::Measure(v) => {
                    tried.push(v);
                    s.record(v, fraction(v));
                }
                Next::Done(a) => return (a, tried),
            }
        }
        panic!("the search did not end: {tried:?}");
    }

    #[test]
    fn brackets_then_bisects_to_the_capacity() {
        // A server good up to 39 req/s.
        let (a, tried) = drive(params(5.0, 1000.0, false), |v| if v <= 39.0 { 1.0 } else { 0.2 });
        assert_eq!(&tried[..5], &[5.0, 10.0, 20.0, 40.0, 30.0]);
        assert_eq!(a.stop, Stop::Resolved);
        let (lo, hi) = (a.capacity.unwrap(), a.failed_at.unwrap());
        assert!(lo <= 39.0 && 39.0 < hi && hi <= lo * 1.05, "{lo} {hi}");
    }

    #[test]
    fn ends_at_the_bounds() {
        let (a, tried) = drive(params(5.0, 30.0, false), |_| 1.0);
        assert_eq!((a.capacity, a.stop), (Some(30.0), Stop::LimitPassed));
        assert_eq!(tried, vec![5.0, 10.0, 20.0, 30.0]);
        let (a, tried) = drive(params(5.0, 30.0, false), |_| 0.0);
        assert_eq!((a.capacity, a.failed_at, a.stop), (None, Some(5.0), Stop::StartFailed));
        assert_eq!(tried, vec![5.0]);
    }

    #[test]
    fn concurrency_is_searched_in_whole_numbers() {
        let (a, tried) = drive(params(1.0, 256.0, true), |v| if v <= 13.0 { 1.0 } else { 0.0 });
        assert!(tried.iter().all(|v| v.fract() == 0.0), "{tried:?}");
        assert_eq!((a.capacity, a.failed_at), (Some(13.0), Some(14.0)));
    }

    #[test]
    fn repeats_stop_early_when_the_interval_decides_or_the_server_is_saturated() {
        let mut p = params(10.0, 10.0, false);
        p.repeats = 5;
        // Clearly saturated: one run only.
        let (a, tried) = drive(p, |_| 0.1);
        assert_eq!((tried.len(), a.stop), (1, Stop::StartFailed));
        // Well above the target with little spread: decided after two runs.
        let mut n = 0;
        let (a, tried) = drive(p, |_| {
            n += 1;
            if n % 2 == 0 { 0.99 } else { 0.995 }
        });
        assert_eq!((tried.len(), a.capacity), (2, Some(10.0)));
        // Straddling the target: every repeat is used, the mean decides.
        let mut n = 0;
        let (a, tried) = drive(p, |_| {
            n += 1;
            if n % 2 == 0 { 0.9 } else { 1.0 }
        });
        assert_eq!(tried.len(), 5);
        assert_eq!(a.capacity, Some(10.0));
        let mut s = Search::new(p).unwrap();
        for f in [0.9, 1.0, 0.9, 1.0, 0.9] {
            s.record(10.0, f);
        }
        let pt = &s.points()[0];
        assert!(pt.ci.0 < 0.94 && pt.ci.1 > 0.94 && !pt.passed, "{pt:?}");
    }

    #[test]
    fn bad_settings_are_refused() {
        let p = params(5.0, 30.0, false);
        assert!(matches!(Search::new(SearchParams { start: 0.0, ..p }), Err(SearchError::Bounds { .. })));
        assert!(matches!(Search::new(SearchParams { limit: 1.0, ..p }), Err(SearchError::Bounds { .. })));
        assert!(matches!(Search::new(SearchParams { growth: 1.0, ..p }), Err(SearchError::Growth(_))));
        assert!(matches!(Search::new(SearchParams { target: 0.0, ..p }), Err(SearchError::Target(_))));
        assert!(matches!(Search::new(SearchParams { repeats: 0, ..p }), Err(SearchError::Repeats)));
        assert!(matches!(Search::new(SearchParams { resolution: 0.0, ..p }), Err(SearchError::Resolution(_))));
        assert!(matches!(Search::new(SearchParams { confidence: 1.0, ..p }), Err(SearchError::Confidence(_))));
    }

    #[test]
    fn search_summary_snapshots() {
        let mut s = Search::new(params(10.0, 100.0, false)).unwrap();
        for (v, f) in [(10.0, 1.0), (20.0, 0.97), (40.0, 0.1), (30.0, 0.5)] {
            s.record(v, f);
        }
        let a = match s.next() {
            Next::Measure(v) => {
                assert_eq!(v, 25.0);
                None
            }
            Next::Done(a) => Some(a),
        };
        insta::assert_snapshot!(search_csv(crate::campaign::sweep::Axis::RequestRate, &s));
        insta::assert_snapshot!(search_json(crate::campaign::sweep::Axis::RequestRate, &s, a, &json!({"model": "m"})));
    }

    proptest! {
        /// Against any monotone capacity, the answer brackets it within the resolution.
        #[test]
        fn finds_any_monotone_capacity(cap in 0.1f64..5000.0, start in 0.5f64..50.0, growth in 1.2f64..4.0, res in 0.01f64..0.3) {
            let p = SearchParams { growth, resolution: res, ..params(start, 1000.0, false) };
            let (a, tried) = drive(p, |v| if v <= cap { 1.0 } else { 0.0 });
            prop_assert!(tried.len() < 80);
            prop_assert!(tried.iter().all(|v| *v >= start && *v <= 1000.0));
            match a.stop {
                Stop::StartFailed => prop_assert!(cap < start),
                Stop::LimitPassed => prop_assert!(cap >= 1000.0),
                Stop::Resolved => {
                    let (lo, hi) = (a.capacity.unwrap(), a.failed_at.unwrap());
                    prop_assert!(lo <= cap && cap < hi && hi <= lo * (1.0 + res) + 1e-9);
                }
            }
        }

        #[test]
        fn finds_any_whole_capacity(cap in 0u32..600, start in 1u32..20) {
            let p = params(f64::from(start), 512.0, true);
            let cap = f64::from(cap);
            let (a, _) = drive(p, |v| if v <= cap { 1.0 } else { 0.0 });
            match a.stop {
                Stop::StartFailed => prop_assert!(cap < f64::from(start)),
                Stop::LimitPassed => prop_assert!(cap >= 512.0),
                Stop::Resolved => prop_assert_eq!((a.capacity, a.failed_at), (Some(cap), Some(cap + 1.0))),
            }
        }
    }
}
