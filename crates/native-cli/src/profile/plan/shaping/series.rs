//! `--request-rate-series`: the rate over time, read from AIPerf's JSON file.

use aiperf_core::replay::schedule::RateSeries;
use anyhow::{Result, bail, ensure};

use crate::profile::options::LoadShape;
use crate::profile::plan::limits::{RATE_RANGE, seconds};

/// A `--request-rate-series` file's points as (µs, rate): AIPerf's format (a JSON array of
/// `{"time_s", "qps"}` objects, or an object whose only key `points` holds it), at least two
/// points, times ≥ 0 strictly increasing, rates within the `--request-rate` bounds.
pub fn rate_series(a: &LoadShape, request_rate_given: bool) -> Result<Option<RateSeries>> {
    use anyhow::Context;
    let Some(path) = &a.request_rate_series else { return Ok(None) };
    let name = path.display();
    ensure!(
        !request_rate_given,
        "--request-rate-series {name} sets the rate over time: drop --request-rate (AIPerf refuses both too)"
    );
    let text = std::fs::read_to_string(path).with_context(|| format!("--request-rate-series: cannot read {name}"))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("--request-rate-series {name}: not JSON"))?;
    let points = match &doc {
        serde_json::Value::Array(p) => p,
        serde_json::Value::Object(o) if o.len() == 1 && o.contains_key("points") => match &o["points"] {
            serde_json::Value::Array(p) => p,
            _ => bail!("--request-rate-series {name}: points: accepted is an array of {{\"time_s\", \"qps\"}} objects"),
        },
        _ => bail!(
            "--request-rate-series {name}: accepted is an array of {{\"time_s\", \"qps\"}} objects or an object with the one key points"
        ),
    };
    ensure!(points.len() >= 2, "--request-rate-series {name}: {} point(s): accepted is at least two", points.len());
    let mut out = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        let field = |k: &str| p.get(k).and_then(serde_json::Value::as_f64);
        let extra = p.as_object().is_none_or(|o| o.keys().any(|k| k != "time_s" && k != "qps"));
        let (Some(t), Some(q), false) = (field("time_s"), field("qps"), extra) else {
            bail!("--request-rate-series {name}: point {i} is {p}: accepted is {{\"time_s\": SECONDS, \"qps\": RATE}}");
        };
        let t = seconds(t, &format!("--request-rate-series {name}: point {i}: time_s"), true)?;
        ensure!(
            q.is_finite() && q >= RATE_RANGE.0 && q <= RATE_RANGE.1,
            "--request-rate-series {name}: point {i}: qps {q:?}: accepted is {} to {} requests per second",
            RATE_RANGE.0,
            RATE_RANGE.1
        );
        let us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX);
        if let Some(&(prev, _)) = out.last() {
            ensure!(
                us > prev,
                "--request-rate-series {name}: point {i}: time_s must be greater than the point before's"
            );
        }
        out.push((us, q));
    }
    Ok(Some(out.into()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn a_rate_series_file_is_read_as_aiperf_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.json");
        let with = |text: &str, extra: &[&str]| {
            std::fs::write(&f, text).unwrap();
            plan(&[&["--request-rate-series", f.to_str().unwrap()], extra].concat())
        };
        let p = with(r#"{"points": [{"time_s": 0, "qps": 2}, {"time_s": 1.5, "qps": 4}]}"#, &[]).unwrap();
        assert_eq!(p.limits.rate_series.as_deref(), Some(&[(0, 2.0), (1_500_000, 4.0)][..]));
        assert_eq!(p.source.arrivals.rate.map(|r| r.0), Some(2.0));
        for (text, extra, says) in [
            (r#"[{"time_s": 0, "qps": 2}]"#, &[][..], "1 point(s): accepted is at least two"),
            (r#"[{"time_s": 1, "qps": 2}, {"time_s": 1, "qps": 3}]"#, &[], "point 1: time_s must be greater"),
            (r#"[{"time_s": 0, "qps": 0}, {"time_s": 1, "qps": 3}]"#, &[], "point 0: qps 0.0: accepted"),
            (r#"[{"time_s": 0, "rate": 1}, {"time_s": 1, "qps": 3}]"#, &[], "point 0 is"),
            (r#"{"pts": []}"#, &[], "accepted is an array"),
            (r#"[{"time_s": 0, "qps": 1}, {"time_s": 1, "qps": 3}]"#, &["--request-rate", "3"], "drop --request-rate"),
        ] {
            let e = format!("{:#}", with(text, extra).unwrap_err());
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
