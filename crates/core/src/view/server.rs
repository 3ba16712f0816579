//! The server's own metrics over a run, read back from `server_metrics_export.json` (each series'
//! `timeline` of values at the endpoint's `scrape_offsets_s`): KV-cache usage, requests running
//! and waiting, token throughput and the prefix-cache hit rate per scrape interval, for any of
//! the server kinds the scraper knows (the names of [`crate::server::kinds::NAMES`]).

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::RunError;
use crate::server::kinds::Measure;

/// The file beside the records.
pub const SERVER_METRICS_FILE: &str = crate::server::export::JSON_FILE;

/// One line over time: `(seconds since the run's time zero, value)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    /// What it shows: the metric's name (summed over its label sets), or a derived name.
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// The charts' data: each a title, a unit and its lines (empty charts are left out).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTimeline {
    /// The scraped endpoint (credentials redacted by the exporter).
    pub endpoint: String,
    pub charts: Vec<(String, String, Vec<Track>)>,
}

/// A metric's values summed over its label sets, at the endpoint's scrape times.
fn summed(metric: &Value, endpoint: &str, n: usize) -> Option<Vec<f64>> {
    let mut sum: Option<Vec<f64>> = None;
    for s in metric.get("series")?.as_array()? {
        if s.get("endpoint_url").and_then(Value::as_str) != Some(endpoint) {
            continue;
        }
        let t: Vec<f64> = s.get("timeline")?.as_array()?.iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect();
        if t.len() != n {
            continue;
        }
        sum = Some(match sum {
            None => t,
            Some(acc) => acc.iter().zip(&t).map(|(a, b)| a + b).collect(),
        });
    }
    sum
}

/// Per-interval rate of a counter: `(Δvalue / Δt)` at the end of each interval; a counter reset
/// (a decrease) leaves a gap.
fn rate(t: &[f64], v: &[f64]) -> Vec<(f64, f64)> {
    t.windows(2)
        .zip(v.windows(2))
        .map(|(tt, vv)| {
            let dt = tt[1] - tt[0];
            let dv = vv[1] - vv[0];
            (tt[1], if dt > 0.0 && dv >= 0.0 { dv / dt } else { f64::NAN })
        })
        .collect()
}

impl ServerTimeline {
    /// Reads `server_metrics_export.json` (`file` names it in errors); the first endpoint with
    /// scrapes is shown. `None` when no endpoint was scraped more than once.
    pub fn from_json(file: &str, text: &str) -> Result<Option<ServerTimeline>, RunError> {
        let err = |reason: String| RunError::Config { file: file.into(), reason };
        let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
        let Some(Value::Object(endpoints)) = v.pointer("/summary/endpoint_info") else {
            return Err(err("no summary.endpoint_info object: not a server_metrics_export.json".into()));
        };
        let Some(Value::Object(metrics)) = v.get("metrics") else {
            return Err(err("no metrics object".into()));
        };
        let Some((endpoint, t)) = endpoints.iter().find_map(|(url, info)| {
            let t: Vec<f64> =
                info.get("scrape_offsets_s")?.as_array()?.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect();
            (t.len() >= 2).then(|| (url.clone(), t))
        }) else {
            return Ok(None);
        };
        let n = t.len();
        // Metric names by what they measure, whatever the server's prefix (vllm:, sglang:, …).
        let mut by_kind: BTreeMap<&str, Vec<(String, Vec<f64>)>> = BTreeMap::new();
        for (name, m) in metrics {
            let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
            let class = match Measure::of(kind, name) {
                Some(Measure::KvCacheUsage) => "kv",
                Some(Measure::Waiting | Measure::Running) => "queue",
                Some(Measure::OutputTokens) => "out",
                Some(Measure::PromptTokens) => "in",
                Some(Measure::PrefixCacheHits) => "hits",
                Some(Measure::PrefixCacheQueries) => "queries",
                _ => continue,
            };
            if let Some(values) = summed(m, &endpoint, n) {
                by_kind.entry(class).or_default().push((name.clone(), values));
            }
        }
        let at = |values: &[f64]| t.iter().copied().zip(values.iter().copied()).collect::<Vec<_>>();
        let mut charts = Vec::new();
        let tracks = |class: &str| -> Vec<Track> {
            by_kind
                .get(class)
                .map(|v| v.iter().map(|(name, values)| Track { name: name.clone(), points: at(values) }).collect())
                .unwrap_or_default()
        };
        for (class, title, unit) in [
            ("kv", "KV-cache usage (server)", "fraction"),
            ("queue", "Requests running and waiting (server)", "requests"),
        ] {
            let t = tracks(class);
            if !t.is_empty() {
                charts.push((title.to_owned(), unit.to_owned(), t));
            }
        }
        let mut tokens = Vec::new();
        for class in ["out", "in"] {
            for (name, values) in by_kind.get(class).into_iter().flatten() {
                tokens.push(Track { name: format!("{name} per s"), points: rate(&t, values) });
            }
        }
        if !tokens.is_empty() {
            charts.push(("Token throughput (server)".to_owned(), "tokens/s".to_owned(), tokens));
        }
        if let (Some(h), Some(q)) = (by_kind.get("hits"), by_kind.get("queries"))
            && let (Some((_, hits)), Some((_, queries))) = (h.first(), q.first())
        {
            let points = (1..n)
                .map(|i| {
                    let (dh, dq) = (hits[i] - hits[i - 1], queries[i] - queries[i - 1]);
                    (t[i], if dq > 0.0 && dh >= 0.0 { dh / dq } else { f64::NAN })
                })
                .collect();
            charts.push((
                "Prefix-cache hit rate per scrape interval (server)".to_owned(),
                "hits / queries".to_owned(),
                vec![Track { name: "hit rate".into(), points }],
            ));
        }
        Ok(Some(ServerTimeline { endpoint, charts }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn doc() -> String {
        serde_json::json!({
            "summary": {"endpoint_info": {"http://h/metrics": {"scrape_offsets_s": [0.0, 1.0, 2.0, 3.0]}}},
            "metrics": {
                "vllm:kv_cache_usage_perc": {"type": "gauge", "series": [
                    {"endpoint_url": "http://h/metrics", "timeline": [0.0, 0.25, 0.5, 0.25]}]},
                "vllm:num_requests_waiting": {"type": "gauge", "series": [
                    {"endpoint_url": "http://h/metrics", "labels": {"m": "a"}, "timeline": [0.0, 2.0, 1.0, 0.0]},
                    {"endpoint_url": "http://h/metrics", "labels": {"m": "b"}, "timeline": [0.0, 1.0, 1.0, 0.0]}]},
                "vllm:generation_tokens": {"type": "counter", "series": [
                    {"endpoint_url": "http://h/metrics", "timeline": [0.0, 100.0, 300.0, 250.0]}]},
                "vllm:prefix_cache_hits": {"type": "counter", "series": [
                    {"endpoint_url": "http://h/metrics", "timeline": [0.0, 10.0, 40.0, 40.0]}]},
                "vllm:prefix_cache_queries": {"type": "counter", "series": [
                    {"endpoint_url": "http://h/metrics", "timeline": [0.0, 100.0, 200.0, 200.0]}]},
                "vllm:e2e_request_latency_seconds": {"type": "histogram", "series": []}
            }
        })
        .to_string()
    }

    #[test]
    fn gauges_counters_and_the_hit_rate_over_time() {
        let t = ServerTimeline::from_json("s.json", &doc()).unwrap().unwrap();
        assert_eq!(t.endpoint, "http://h/metrics");
        let chart = |title: &str| t.charts.iter().find(|c| c.0.starts_with(title)).unwrap();
        assert_eq!(chart("KV-cache").2[0].points, vec![(0.0, 0.0), (1.0, 0.25), (2.0, 0.5), (3.0, 0.25)]);
        // Label sets summed.
        assert_eq!(chart("Requests").2[0].points.iter().map(|p| p.1).collect::<Vec<_>>(), vec![0.0, 3.0, 2.0, 0.0]);
        // Rates per interval; the counter reset leaves a gap.
        let rate = &chart("Token").2[0].points;
        assert_eq!(&rate[..2], &[(1.0, 100.0), (2.0, 200.0)]);
        assert!(rate[2].1.is_nan());
        let hit = &chart("Prefix-cache").2[0].points;
        assert_eq!(&hit[..2], &[(1.0, 0.1), (2.0, 0.3)]);
        assert!(hit[2].1.is_nan(), "no query in the interval: no rate");
    }

    #[test]
    fn files_that_are_not_server_metrics_are_refused() {
        assert!(ServerTimeline::from_json("f", "x").unwrap_err().to_string().contains("not JSON"));
        assert!(ServerTimeline::from_json("f", "{}").unwrap_err().to_string().contains("endpoint_info"));
        let one = r#"{"summary": {"endpoint_info": {"u": {"scrape_offsets_s": [1.0]}}}, "metrics": {}}"#;
        assert_eq!(ServerTimeline::from_json("f", one).unwrap(), None);
    }
}
