//! The length distributions' options: `--seq-dist` buckets and the `--random-range-ratio` window.

use serde_json::Value;

use super::error::{SyntheticError, invalid};
use super::normal::Normal;
use super::option;

/// AIPerf's `--random-corpus-style`: which window `--random-range-ratio` draws from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CorpusStyle {
    /// `[floor(mean*(1-r)), ceil(mean*(1+r))]`, `r` in [0, 1) (vLLM's `bench serve`).
    #[default]
    Vllm,
    /// `[max(1, int(mean*r)), mean]`, `r` in [0, 1] (SGLang's `random-ids`).
    Sglang,
}

/// `--random-range-ratio`: the ISL and OSL ratios of the uniform window around the means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeRatio {
    pub input: f64,
    pub output: f64,
    pub style: CorpusStyle,
}

impl RangeRatio {
    /// Reads AIPerf's forms: one float for both, or (vLLM style only) `{"input": a, "output": b}`.
    pub fn parse(text: &str, style: CorpusStyle) -> Result<RangeRatio, SyntheticError> {
        const OPT: &str = option::RANGE_RATIO;
        let t = text.trim();
        let (input, output) = if let Some(r) = parse_python_float(t) {
            (r, r)
        } else if style == CorpusStyle::Sglang {
            return Err(invalid(OPT, "a plain float under --random-corpus-style sglang", format!("{text:?}")));
        } else {
            let expected = "a float or a JSON object {\"input\": r, \"output\": r}";
            let Ok(Value::Object(map)) = serde_json::from_str::<Value>(t) else {
                return Err(invalid(OPT, expected, format!("{text:?}")));
            };
            let keys_ok = map.len() == 2 && map.contains_key("input") && map.contains_key("output");
            let (Some(i), Some(o), true) =
                (map.get("input").and_then(Value::as_f64), map.get("output").and_then(Value::as_f64), keys_ok)
            else {
                return Err(invalid(OPT, expected, format!("{text:?}")));
            };
            (i, o)
        };
        let r = RangeRatio { input, output, style };
        r.validate()?;
        Ok(r)
    }

    pub(super) fn validate(&self) -> Result<(), SyntheticError> {
        const OPT: &str = option::RANGE_RATIO;
        for r in [self.input, self.output] {
            let ok = match self.style {
                CorpusStyle::Vllm => r.is_finite() && (0.0..1.0).contains(&r),
                CorpusStyle::Sglang => r.is_finite() && (0.0..=1.0).contains(&r),
            };
            if !ok {
                let expected = match self.style {
                    CorpusStyle::Vllm => "in [0.0, 1.0) under --random-corpus-style vllm",
                    CorpusStyle::Sglang => "in [0.0, 1.0] under --random-corpus-style sglang",
                };
                return Err(invalid(OPT, expected, r));
            }
        }
        if self.style == CorpusStyle::Sglang && self.input != self.output {
            let value = format!("input {} and output {}", self.input, self.output);
            return Err(invalid(OPT, "one ratio for both ISL and OSL under --random-corpus-style sglang", value));
        }
        Ok(())
    }

    /// The inclusive input window around `mean`.
    pub(super) fn input_bounds(&self, mean: u64) -> (u64, u64) {
        let m = mean as f64;
        match self.style {
            CorpusStyle::Vllm => ((m * (1.0 - self.input)).floor() as u64, (m * (1.0 + self.input)).ceil() as u64),
            CorpusStyle::Sglang => (((m * self.input) as u64).max(1), mean),
        }
    }

    /// The inclusive output window around `mean`.
    pub(super) fn output_bounds(&self, mean: u64) -> (u64, u64) {
        let m = mean as f64;
        match self.style {
            CorpusStyle::Vllm => {
                (((m * (1.0 - self.output)).floor() as u64).max(1), ((m * (1.0 + self.output)).ceil() as u64).max(1))
            }
            CorpusStyle::Sglang => (((m * self.output) as u64).max(1), mean),
        }
    }
}

/// Python's `float(text)` for the decimal forms (no `inf`/`nan`, which no option accepts).
fn parse_python_float(t: &str) -> Option<f64> {
    let ok = !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
        && t.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    t.replace('_', "").parse::<f64>().ok()
}

/// One `--seq-dist` bucket: an (ISL, OSL) pair with optional stddevs and its probability (percent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeqBucket {
    pub isl: u64,
    pub isl_stddev: f64,
    pub osl: u64,
    pub osl_stddev: f64,
    pub probability: f64,
}

/// `--seq-dist`: (ISL, OSL) buckets drawn by probability.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqDist {
    buckets: Vec<SeqBucket>,
    cumulative: Vec<f64>,
}

impl SeqDist {
    /// Reads AIPerf's three forms: `ISL[|SD],OSL[|SD]:PROB;…`, `[(ISL,OSL):PROB,…]` and
    /// `{"pairs": [{"isl":…, "osl":…, "prob":…, "isl_stddev":…, "osl_stddev":…}, …]}`; the
    /// probabilities are percentages summing to 100.
    pub fn parse(text: &str) -> Result<SeqDist, SyntheticError> {
        let t = text.trim();
        let bad = |why: String| invalid(option::SEQ_DIST, &why, format!("{text:?}"));
        if t.is_empty() {
            return Err(bad("a distribution such as 256,128:40;512,256:60".into()));
        }
        let buckets = if t.starts_with('{') {
            parse_json_pairs(t).map_err(bad)?
        } else if t.starts_with('[') && t.ends_with(']') {
            parse_bracket_pairs(&t[1..t.len() - 1]).map_err(bad)?
        } else {
            let mut out = Vec::new();
            for part in t.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                out.push(parse_pair(part).ok_or_else(|| {
                    bad(format!("pairs ISL[|ISL_STDDEV],OSL[|OSL_STDDEV]:PROB separated by ';' ({part:?} is not one)"))
                })?);
            }
            out
        };
        SeqDist::new(buckets)
    }

    /// A distribution over `buckets`, checked as AIPerf checks them.
    pub fn new(buckets: Vec<SeqBucket>) -> Result<SeqDist, SyntheticError> {
        const OPT: &str = option::SEQ_DIST;
        if buckets.is_empty() {
            return Err(invalid(OPT, "at least one ISL,OSL:PROB pair", "none"));
        }
        for b in &buckets {
            if b.isl == 0 || b.osl == 0 {
                return Err(invalid(OPT, "pairs of positive lengths", format!("ISL {} and OSL {}", b.isl, b.osl)));
            }
            if !(0.0..=100.0).contains(&b.probability) {
                return Err(invalid(OPT, "probabilities in [0, 100] (percent)", b.probability));
            }
            if !(b.isl_stddev.is_finite() && b.isl_stddev >= 0.0 && b.osl_stddev.is_finite() && b.osl_stddev >= 0.0) {
                let value = format!("{} and {}", b.isl_stddev, b.osl_stddev);
                return Err(invalid(OPT, "non-negative stddevs", value));
            }
        }
        let mut total = 0.0;
        let cumulative = buckets
            .iter()
            .map(|b| {
                total += b.probability / 100.0;
                total
            })
            .collect();
        let sum: f64 = buckets.iter().map(|b| b.probability).sum();
        // numpy.isclose(sum, 100, rtol=1e-6, atol=1e-6).
        if (sum - 100.0).abs() > 1e-6 + 1e-6 * 100.0 {
            return Err(invalid(OPT, "probabilities (percent) that sum to 100", sum));
        }
        Ok(SeqDist { buckets, cumulative })
    }

    pub fn buckets(&self) -> &[SeqBucket] {
        &self.buckets
    }

    /// The expected ISL and OSL.
    pub fn means(&self) -> (f64, f64) {
        let isl = self.buckets.iter().map(|b| b.isl as f64 * b.probability / 100.0).sum();
        let osl = self.buckets.iter().map(|b| b.osl as f64 * b.probability / 100.0).sum();
        (isl, osl)
    }

    /// One (ISL, OSL) pair, drawn as AIPerf's `SequenceLengthDistribution.sample`.
    pub(super) fn sample(&self, rng: &mut Normal) -> (u64, u64) {
        let r = rng.rng.random();
        let idx = self.cumulative.iter().take_while(|&&c| c <= r).count().min(self.buckets.len() - 1);
        let b = self.buckets[idx];
        let isl = if b.isl_stddev > 0.0 { rng.positive_int(b.isl as f64, b.isl_stddev) } else { b.isl };
        let osl = if b.osl_stddev > 0.0 { rng.positive_int(b.osl as f64, b.osl_stddev) } else { b.osl };
        (isl, osl)
    }
}

/// `DIGITS[|NUM]`: a length with an optional stddev.
fn parse_length(s: &str) -> Option<(u64, f64)> {
    let (n, sd) = match s.split_once('|') {
        Some((n, sd)) => (n, Some(sd)),
        None => (s, None),
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sd = match sd {
        Some(sd) => parse_number(sd)?,
        None => 0.0,
    };
    Some((n.parse().ok()?, sd))
}

/// `123`, `123.45` or `.45`.
fn parse_number(s: &str) -> Option<f64> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s, None),
    };
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let ok = digits(int)
        && match frac {
            Some(f) => !f.is_empty() && digits(f),
            None => !int.is_empty(),
        };
    if ok { s.parse().ok() } else { None }
}

/// `ISL[|SD] , OSL[|SD] : PROB`.
fn parse_pair(s: &str) -> Option<SeqBucket> {
    let (lengths, prob) = s.split_once(':')?;
    let (isl, osl) = lengths.split_once(',')?;
    let (isl, isl_stddev) = parse_length(isl.trim())?;
    let (osl, osl_stddev) = parse_length(osl.trim())?;
    Some(SeqBucket { isl, isl_stddev, osl, osl_stddev, probability: parse_number(prob.trim())? })
}

/// `(ISL[|SD],OSL[|SD]):PROB, …` (the inside of the brackets).
fn parse_bracket_pairs(s: &str) -> Result<Vec<SeqBucket>, String> {
    let expected = || "pairs [(ISL[|SD],OSL[|SD]):PROB, …]".to_string();
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let inner = rest.strip_prefix('(').ok_or_else(expected)?;
        let (pair, after) = inner.split_once(')').ok_or_else(expected)?;
        let after = after.trim_start().strip_prefix(':').ok_or_else(expected)?.trim_start();
        let end = after.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(after.len());
        let bucket = parse_pair(&format!("{pair}:{}", &after[..end])).ok_or_else(expected)?;
        out.push(bucket);
        rest = after[end..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(out)
}

/// `{"pairs": [{"isl": …, "osl": …, "prob": …, "isl_stddev"?: …, "osl_stddev"?: …}, …]}`.
fn parse_json_pairs(s: &str) -> Result<Vec<SeqBucket>, String> {
    let v: Value = serde_json::from_str(s).map_err(|e| format!("valid JSON ({e})"))?;
    let pairs = v.get("pairs").and_then(Value::as_array).ok_or("a JSON object with a \"pairs\" list")?;
    pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let num = |k: &str| p.get(k).and_then(Value::as_f64);
            let (Some(isl), Some(osl), Some(prob)) = (num("isl"), num("osl"), num("prob")) else {
                return Err(format!("pairs with \"isl\", \"osl\" and \"prob\" (pair {i} lacks one)"));
            };
            let int = |x: f64| if x >= 1.0 && x.is_finite() { Some(x.trunc() as u64) } else { None };
            let (Some(isl), Some(osl)) = (int(isl), int(osl)) else {
                return Err(format!("positive lengths (pair {i})"));
            };
            Ok(SeqBucket {
                isl,
                isl_stddev: num("isl_stddev").unwrap_or(0.0),
                osl,
                osl_stddev: num("osl_stddev").unwrap_or(0.0),
                probability: prob,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_aiperfs_seq_dist_forms() {
        let a = SeqDist::parse("256|10,128|5:40;512|20,256|10:60").unwrap();
        let b = SeqDist::parse("[(256|10,128|5):40,(512|20,256|10):60]").unwrap();
        let c = SeqDist::parse(
            r#"{"pairs":[{"isl":256,"isl_stddev":10,"osl":128,"osl_stddev":5,"prob":40},{"isl":512,"isl_stddev":20,"osl":256,"osl_stddev":10,"prob":60}]}"#,
        )
        .unwrap();
        assert_eq!((&a, &a), (&b, &c));
        for bad in ["", "256,128:50", "256;128:100", "0,1:100", "1,1:101", "a,b:100", "[(1,2)]"] {
            let e = SeqDist::parse(bad).unwrap_err();
            assert_eq!(e.option(), Some("--seq-dist"), "{bad}: {e}");
        }
    }
}
