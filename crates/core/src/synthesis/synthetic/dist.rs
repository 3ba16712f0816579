//! AIPerf 0.13.0's sampling distributions of its config file (`config/distributions.py`), for the
//! synthetic ISL and OSL: `512` (fixed), `{mean, stddev}` (normal, truncated at 0),
//! `{mean, median}` (log-normal: `mu = ln(median)`, `sigma = sqrt(2 ln(mean/median))`),
//! `{peaks: [{…, weight}, …]}` (a mixture of two or more of these, the weights relative: each peak
//! is drawn with probability `weight / sum(weights)`) and `{points: [{value, weight}, …]}`
//! (weighted values), each with optional `min`/`max` clamps. The shape is told by its keys, in
//! AIPerf's order (or by an explicit `type`).
//!
//! A draw is AIPerf's `Distribution.sample_int`: the sample clamped into `[min, max]`, rounded up,
//! at least 1, with the same calls on CPython's generator (`random()`, `gauss`), so the same
//! generator state gives AIPerf's numbers. AIPerf 0.13.0's synthetic composer itself reads only a
//! distribution's mean (and a normal's stddev); here the lengths follow the distribution the file
//! describes.

use serde_json::{Map, Value};

use super::normal::Normal;

/// A length distribution of AIPerf's config file.
#[derive(Clone, Debug, PartialEq)]
pub struct LengthDist {
    shape: Shape,
    min: Option<f64>,
    max: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Fixed(f64),
    Normal {
        mean: f64,
        stddev: f64,
    },
    LogNormal {
        mean: f64,
        median: f64,
    },
    /// `(weight, peak)`, two or more.
    Mixture(Vec<(f64, LengthDist)>),
    /// `(value, weight)`, one or more.
    Empirical(Vec<(f64, f64)>),
}

/// A distribution that cannot be read: where in the value, what is accepted, what was given.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}{expected}, got {value}", if .at.is_empty() { String::new() } else { format!("`{}`: ", .at) })]
pub struct DistError {
    /// The key path inside the value (`peaks[1].median`), or the caller's prefix and it.
    pub at: String,
    pub expected: String,
    pub value: String,
}

const SHAPES: &str =
    "a number, {mean, stddev}, {mean, median}, {peaks: [{…, weight}, …]} or {points: [{value, weight}, …]}";

fn err(at: &str, expected: impl Into<String>, value: impl std::fmt::Display) -> DistError {
    DistError { at: at.to_string(), expected: expected.into(), value: value.to_string() }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() { key.to_string() } else { format!("{at}.{key}") }
}

impl LengthDist {
    /// Reads AIPerf's forms from `v` (JSON); `at` prefixes the key paths of errors.
    pub fn parse(v: &Value, at: &str) -> Result<LengthDist, DistError> {
        match v {
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                Ok(LengthDist { shape: Shape::Fixed(finite(x, at)?), min: None, max: None })
            }
            Value::Object(m) => Self::parse_map(m, at),
            other => Err(err(at, format!("a distribution: {SHAPES}"), other)),
        }
    }

    fn parse_map(m: &Map<String, Value>, at: &str) -> Result<LengthDist, DistError> {
        let kind = match m.get("type") {
            Some(Value::String(t)) => match t.as_str() {
                "fixed" | "normal" | "lognormal" | "multimodal" | "empirical" => t.as_str(),
                _ => {
                    let expected = "one of fixed, normal, lognormal, multimodal, empirical";
                    return Err(err(&join(at, "type"), expected, t));
                }
            },
            Some(other) => return Err(err(&join(at, "type"), "a string", other)),
            None if m.contains_key("peaks") => "multimodal",
            None if m.contains_key("points") => "empirical",
            None if m.contains_key("median") => "lognormal",
            None if m.contains_key("stddev") => "normal",
            None if m.contains_key("value") => "fixed",
            None if m.contains_key("mean") => "normal",
            None => return Err(err(at, format!("a distribution: {SHAPES}"), Value::Object(m.clone()))),
        };
        let keys: &[&str] = match kind {
            "fixed" => &["value"],
            "normal" => &["mean", "stddev"],
            "lognormal" => &["mean", "median"],
            "multimodal" => &["peaks"],
            _ => &["points"],
        };
        for k in m.keys() {
            if !(keys.contains(&k.as_str()) || matches!(k.as_str(), "min" | "max" | "type")) {
                let expected = format!("a key of a {kind} distribution ({}, min, max)", keys.join(", "));
                return Err(err(&join(at, k), expected, k));
            }
        }
        let num = |k: &str| -> Result<Option<f64>, DistError> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => finite(n.as_f64().unwrap_or(f64::NAN), &join(at, k)).map(Some),
                Some(other) => Err(err(&join(at, k), "a finite number", other)),
            }
        };
        let need = |k: &str| num(k)?.ok_or_else(|| err(&join(at, k), "a number (required)", "nothing"));
        let shape = match kind {
            "fixed" => Shape::Fixed(need("value")?),
            "normal" => {
                let mean = need("mean")?;
                let stddev = num("stddev")?.unwrap_or(0.0);
                if mean < 0.0 {
                    return Err(err(&join(at, "mean"), "≥ 0", mean));
                }
                if stddev < 0.0 {
                    return Err(err(&join(at, "stddev"), "≥ 0", stddev));
                }
                Shape::Normal { mean, stddev }
            }
            "lognormal" => {
                let (mean, median) = (need("mean")?, need("median")?);
                for (k, x) in [("mean", mean), ("median", median)] {
                    if x <= 0.0 {
                        return Err(err(&join(at, k), "> 0", x));
                    }
                }
                if median > mean {
                    return Err(err(&join(at, "median"), format!("at most the mean ({mean})"), median));
                }
                Shape::LogNormal { mean, median }
            }
            "multimodal" => {
                let key = join(at, "peaks");
                let Some(Value::Array(items)) = m.get("peaks") else {
                    return Err(err(&key, "a list of two or more peaks", show(m.get("peaks"))));
                };
                if items.len() < 2 {
                    return Err(err(&key, "two or more peaks", format!("{} peak(s)", items.len())));
                }
                let mut peaks = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    peaks.push(peak(item, &format!("{key}[{i}]"))?);
                }
                Shape::Mixture(peaks)
            }
            _ => {
                let key = join(at, "points");
                let Some(Value::Array(items)) = m.get("points") else {
                    return Err(err(&key, "a list of {value, weight}", show(m.get("points"))));
                };
                if items.is_empty() {
                    return Err(err(&key, "at least one point", "none"));
                }
                let mut points = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    points.push(point(item, &format!("{key}[{i}]"))?);
                }
                Shape::Empirical(points)
            }
        };
        let (min, max) = (num("min")?, num("max")?);
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            return Err(err(&join(at, "min"), format!("at most max ({hi})"), lo));
        }
        Ok(LengthDist { shape, min, max })
    }

    /// The unclamped mean (AIPerf's `expected_value`).
    pub fn mean(&self) -> f64 {
        match &self.shape {
            Shape::Fixed(v) => *v,
            Shape::Normal { mean, .. } | Shape::LogNormal { mean, .. } => *mean,
            Shape::Mixture(peaks) => {
                let total: f64 = peaks.iter().map(|p| p.0).sum();
                peaks.iter().map(|(w, d)| w / total * d.mean()).sum()
            }
            Shape::Empirical(points) => {
                let total: f64 = points.iter().map(|p| p.1).sum();
                points.iter().map(|(v, w)| w / total * v).sum()
            }
        }
    }

    /// One draw, clamped (AIPerf's `sample`).
    pub(super) fn sample(&self, rng: &mut Normal) -> f64 {
        let mut v = match &self.shape {
            Shape::Fixed(v) => *v,
            Shape::Normal { mean, stddev } => {
                if *stddev <= 0.0 {
                    *mean
                } else {
                    rng.positive(*mean, *stddev)
                }
            }
            Shape::LogNormal { mean, median } => {
                let sigma = if median >= mean { 0.0 } else { (2.0 * (mean / median).ln()).sqrt() };
                if sigma <= 0.0 { *mean } else { rng.gauss(median.ln(), sigma).exp() }
            }
            Shape::Mixture(peaks) => {
                let total: f64 = peaks.iter().map(|p| p.0).sum();
                let r = rng.rng.random() * total;
                let mut cumulative = 0.0;
                let chosen = peaks.iter().find(|(w, _)| {
                    cumulative += w;
                    r < cumulative
                });
                match chosen.or(peaks.last()) {
                    Some((_, d)) => d.sample(rng),
                    None => 0.0,
                }
            }
            Shape::Empirical(points) => {
                let total: f64 = points.iter().map(|p| p.1).sum();
                let r = rng.rng.random() * total;
                let mut cumulative = 0.0;
                let chosen = points.iter().find(|(_, w)| {
                    cumulative += w;
                    r < cumulative
                });
                chosen.or(points.last()).map_or(0.0, |p| p.0)
            }
        };
        if let Some(lo) = self.min
            && v < lo
        {
            v = lo;
        }
        if let Some(hi) = self.max
            && v > hi
        {
            v = hi;
        }
        v
    }

    /// One length: the draw rounded up, at least 1 (AIPerf's `sample_int`).
    pub(super) fn sample_int(&self, rng: &mut Normal) -> u64 {
        let v = self.sample(rng).ceil();
        // A draw is finite (every parameter is); the cast saturates.
        (v as u64).max(1)
    }
}

/// A peak: a distribution with a relative `weight` (default 1), inline (`{mean, median, weight}`)
/// or as `{distribution: {…}, weight}`.
fn peak(item: &Value, at: &str) -> Result<(f64, LengthDist), DistError> {
    let Value::Object(m) = item else {
        return Err(err(at, "a peak {mean, stddev|median, weight}", item));
    };
    let mut rest = m.clone();
    let weight = match rest.remove("weight") {
        None => 1.0,
        Some(Value::Number(n)) => {
            let w = finite(n.as_f64().unwrap_or(f64::NAN), &join(at, "weight"))?;
            if w < 0.0 {
                return Err(err(&join(at, "weight"), "≥ 0", w));
            }
            w
        }
        Some(other) => return Err(err(&join(at, "weight"), "a number ≥ 0", other)),
    };
    let d = match rest.remove("distribution") {
        Some(inner) if rest.is_empty() => LengthDist::parse(&inner, &join(at, "distribution"))?,
        Some(_) => {
            let k = rest.keys().next().cloned().unwrap_or_default();
            return Err(err(&join(at, &k), "only `distribution` and `weight` beside each other", k));
        }
        None => LengthDist::parse_map(&rest, at)?,
    };
    Ok((weight, d))
}

/// A point `{value, weight}` (weight > 0, default 1).
fn point(item: &Value, at: &str) -> Result<(f64, f64), DistError> {
    let Value::Object(m) = item else {
        return Err(err(at, "a point {value, weight}", item));
    };
    if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "value" | "weight")) {
        return Err(err(&join(at, k), "a key of a point (value, weight)", k));
    }
    let get = |k: &str| match m.get(k) {
        None => Ok(None),
        Some(Value::Number(n)) => finite(n.as_f64().unwrap_or(f64::NAN), &join(at, k)).map(Some),
        Some(other) => Err(err(&join(at, k), "a finite number", other)),
    };
    let value = get("value")?.ok_or_else(|| err(&join(at, "value"), "a number (required)", "nothing"))?;
    let weight = get("weight")?.unwrap_or(1.0);
    if weight <= 0.0 {
        return Err(err(&join(at, "weight"), "> 0", weight));
    }
    Ok((value, weight))
}

fn finite(x: f64, at: &str) -> Result<f64, DistError> {
    if x.is_finite() { Ok(x) } else { Err(err(at, "a finite number", x)) }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "nothing".to_string(), Value::to_string)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dist(v: Value) -> LengthDist {
        LengthDist::parse(&v, "isl").unwrap()
    }

    fn draws(d: &LengthDist, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Normal::new(seed, "dataset.prompt.length");
        (0..n).map(|_| d.sample_int(&mut rng) as f64).collect()
    }

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    #[test]
    fn shapes_are_told_by_their_keys() {
        assert_eq!(dist(json!(512)).shape, Shape::Fixed(512.0));
        assert_eq!(dist(json!({"mean": 5})).shape, Shape::Normal { mean: 5.0, stddev: 0.0 });
        assert_eq!(dist(json!({"mean": 5, "median": 4})).shape, Shape::LogNormal { mean: 5.0, median: 4.0 });
        assert_eq!(dist(json!({"value": 3, "max": 2})).shape, Shape::Fixed(3.0));
        let d = dist(json!({"type": "normal", "mean": 5, "stddev": 1}));
        assert_eq!(d.shape, Shape::Normal { mean: 5.0, stddev: 1.0 });
        let d = dist(json!({"peaks": [{"mean": 10, "stddev": 1}, {"distribution": {"value": 7}, "weight": 3}]}));
        assert_eq!(d.mean(), 0.25 * 10.0 + 0.75 * 7.0);
        assert_eq!(dist(json!({"points": [{"value": 1}, {"value": 3, "weight": 3}]})).mean(), 2.5);
    }

    #[test]
    fn bad_distributions_name_the_key() {
        let e = |v: Value| LengthDist::parse(&v, "benchmark.dataset.prompts.isl").unwrap_err().to_string();
        assert_eq!(
            e(json!({"mean": 5, "median": 6})),
            "`benchmark.dataset.prompts.isl.median`: at most the mean (5), got 6"
        );
        let got = e(json!({"peaks": [{"mean": 5, "median": 4, "weight": -1}, 3]}));
        assert_eq!(got, "`benchmark.dataset.prompts.isl.peaks[0].weight`: ≥ 0, got -1");
        let got = e(json!({"peaks": [{"mean": 5}]}));
        assert_eq!(got, "`benchmark.dataset.prompts.isl.peaks`: two or more peaks, got 1 peak(s)");
        let got = e(json!({"mean": 5, "median": 4, "stddev": 1}));
        assert!(got.starts_with("`benchmark.dataset.prompts.isl.stddev`: a key of a lognormal"), "{got}");
        assert!(e(json!({"mean": 5, "min": 9, "max": 2})).contains(".min`: at most max (2), got 9"));
        assert!(e(json!({"points": []})).contains(".points`: at least one point"));
        assert!(e(json!({"type": "gamma", "mean": 1})).contains(".type`: one of fixed"));
        assert!(e(json!({"foo": 1})).starts_with("`benchmark.dataset.prompts.isl`: a distribution: a number"));
        assert!(e(json!("x")).contains("a distribution"));
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn a_mixture_draws_each_peak_by_its_weight_with_its_mean_and_median() {
        // Two log-normal peaks far apart (under 1e-6 of either's mass crosses the split), weights
        // 70 and 30 (relative).
        let d = dist(
            json!({"peaks": [{"mean": 256, "median": 214, "weight": 70}, {"mean": 65536, "median": 60000, "weight": 30}]}),
        );
        let v = draws(&d, 200_000, 42);
        let (mut low, mut high): (Vec<f64>, Vec<f64>) = v.iter().partition(|&&x| x < 4096.0);
        let share = low.len() as f64 / v.len() as f64;
        // 4.4 standard errors of a binomial share over 200,000 draws.
        assert!((share - 0.7).abs() < 0.0045, "low peak share {share}");
        // Each draw is rounded up: +0.5 on average, and on the median.
        let (ml, mh) = (mean(&low), mean(&high));
        assert!((ml - 256.5).abs() < 256.0 * 0.01, "low mean {ml}");
        assert!((mh - 65536.5).abs() < 65536.0 * 0.01, "high mean {mh}");
        let (dl, dh) = (median(&mut low), median(&mut high));
        assert!((dl - 214.5).abs() < 214.0 * 0.01, "low median {dl}");
        assert!((dh - 60000.5).abs() < 60000.0 * 0.01, "high median {dh}");
        // env_var_production's ISL: the same weights, peaks that overlap; its mean is the mixture's.
        let d = dist(
            json!({"peaks": [{"mean": 256, "median": 214, "weight": 70}, {"mean": 2048, "median": 1891, "weight": 30}]}),
        );
        let m = mean(&draws(&d, 200_000, 42));
        assert!((m - 0.5 - d.mean()).abs() < d.mean() * 0.01, "mixture mean {m} vs {}", d.mean());
        // Equal weights when none are given.
        let d = dist(json!({"peaks": [{"value": 1}, {"value": 2}, {"value": 3}]}));
        let v = draws(&d, 30_000, 5);
        for k in [1.0, 2.0, 3.0] {
            let share = v.iter().filter(|&&x| x == k).count() as f64 / v.len() as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.012, "{k}: {share}");
        }
    }

    #[test]
    fn a_lognormal_has_its_mean_and_median_and_clamps_apply() {
        // env_var_production's OSL and its two ISL peaks.
        for (mu, med) in [(256.0, 226.0), (256.0, 214.0), (2048.0, 1891.0)] {
            let d = dist(json!({"mean": mu, "median": med}));
            let mut v = draws(&d, 100_000, 7);
            let m = mean(&v);
            assert!((m - 0.5 - mu).abs() < mu * 0.01, "mean {m} of {mu}");
            let md = median(&mut v);
            assert!((md - 0.5 - med).abs() < med * 0.01, "median {md} of {med}");
        }
        let d = dist(json!({"mean": 256, "median": 226, "min": 200, "max": 300}));
        assert!(draws(&d, 10_000, 7).iter().all(|&x| (200.0..=300.0).contains(&x)));
        // mean == median: deterministic.
        assert!(draws(&dist(json!({"mean": 9.2, "median": 9.2})), 10, 1).iter().all(|&x| x == 10.0));
        // Weighted points.
        let v = draws(&dist(json!({"points": [{"value": 1, "weight": 1}, {"value": 5, "weight": 3}]})), 40_000, 3);
        let ones = v.iter().filter(|&&x| x == 1.0).count() as f64 / v.len() as f64;
        assert!((ones - 0.25).abs() < 0.01, "{ones}");
        assert!(v.iter().all(|&x| x == 1.0 || x == 5.0));
    }

    /// Python (AIPerf 0.13.0's venv): `from aiperf.common import random_generator as rg;
    /// from aiperf.config.distributions import MultimodalDistribution as M; rg.init(42);
    /// r = rg.derive("dataset.prompt.length"); d = M.model_validate({"peaks": [{"mean": 256,
    /// "median": 214, "weight": 70}, {"mean": 2048, "median": 1891, "weight": 30}]});
    /// [d.sample_int(r) for _ in range(8)]`.
    #[test]
    fn draws_are_aiperfs_for_the_same_generator() {
        let d = dist(
            json!({"peaks": [{"mean": 256, "median": 214, "weight": 70}, {"mean": 2048, "median": 1891, "weight": 30}]}),
        );
        let got: Vec<u64> = {
            let mut rng = Normal::new(42, "dataset.prompt.length");
            (0..8).map(|_| d.sample_int(&mut rng)).collect()
        };
        assert_eq!(got, AIPERF_42);
    }

    const AIPERF_42: [u64; 8] = [147, 2256, 363, 174, 241, 542, 324, 444];
}
