//! `server_metrics_export.json` and `.csv`: the window's summary as AIPerf writes it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::csv;
use crate::datetime::iso8601;
use crate::server::prometheus::{Kind, Labels};
use crate::server::window::{MetricSummary, SeriesStats, SeriesSummary, ServerMetrics};
use crate::stats::REPORT_PERCENTILES;

/// The name of the JSON export.
pub const JSON_FILE: &str = "server_metrics_export.json";
/// The name of the CSV export.
pub const CSV_FILE: &str = "server_metrics_export.csv";

fn labels_json(l: &Labels) -> Value {
    Value::Object(l.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

fn finite(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}

fn stat_pairs(s: &SeriesStats) -> Vec<(String, f64)> {
    let pct = |prefix: &str, suffix: &str, values: &[f64; 9]| -> Vec<(String, f64)> {
        REPORT_PERCENTILES.iter().zip(values).map(|(p, v)| (format!("{prefix}p{p}{suffix}"), *v)).collect()
    };
    match s {
        SeriesStats::Gauge(d) => {
            let mut v =
                vec![("avg".into(), d.avg), ("min".into(), d.min), ("max".into(), d.max), ("std".into(), d.std)];
            v.extend(pct("", "", &d.percentiles));
            v
        }
        SeriesStats::Counter { total, rate } => vec![("total".into(), *total), ("rate".into(), *rate)],
        SeriesStats::Histogram { count, sum, percentiles, duration_s, .. } => {
            let per_s = |x: f64| if *duration_s > 0.0 { x / duration_s } else { 0.0 };
            let mut v = vec![
                ("count".into(), *count),
                ("sum".into(), *sum),
                ("avg".into(), if *count > 0.0 { sum / count } else { 0.0 }),
                ("count_rate".into(), per_s(*count)),
                ("sum_rate".into(), per_s(*sum)),
            ];
            if let Some(p) = percentiles {
                v.extend(pct("", "_estimate", p));
            }
            v
        }
    }
}

/// `server_metrics_export.json`: AIPerf's layout (`summary`, `metrics[name].series[]` with
/// `endpoint_url`, `labels`, `stats`, `buckets`), plus each series' `timeline` over the scrapes
/// whose times are `summary.endpoint_info[url].scrape_offsets_s`.
pub fn export_json(m: &ServerMetrics, input_config: &Value) -> String {
    let mut info = Map::new();
    for e in &m.endpoints {
        info.insert(
            e.url.clone(),
            json!({
                "total_fetches": e.fetches + e.failures,
                "successful_fetches": e.fetches,
                "failed_fetches": e.failures,
                "avg_fetch_latency_ms": e.avg_fetch_latency_ms,
                "dropped_values": e.dropped_values,
                "error": e.first_error,
                "first_fetch_ns": e.first_fetch_ns,
                "last_fetch_ns": e.last_fetch_ns,
                "unique_updates": e.update_ns.len(),
                "first_update_ns": e.update_ns.first(),
                "last_update_ns": e.update_ns.last(),
                "duration_seconds": match (e.update_ns.first(), e.update_ns.last()) {
                    (Some(a), Some(b)) => b.saturating_sub(*a) as f64 / 1e9,
                    _ => 0.0,
                },
                "avg_update_interval_ms": crate::stats::mean(&e.update_intervals_ms()),
                "median_update_interval_ms": crate::stats::percentile_sorted(&crate::stats::sorted(&e.update_intervals_ms()), 50.0),
                "scrape_offsets_s": e.scrape_offsets_s,
            }),
        );
    }
    let mut metrics = Map::new();
    for metric in &m.metrics {
        let series: Vec<Value> = metric
            .series
            .iter()
            .map(|s| {
                let stats: Map<String, Value> = stat_pairs(&s.stats).into_iter().map(|(k, v)| (k, finite(v))).collect();
                let mut o = json!({
                    "endpoint_url": s.endpoint_url,
                    "labels": labels_json(&s.labels),
                    "stats": stats,
                    "timeline": s.timeline.iter().map(|v| finite(*v)).collect::<Vec<_>>(),
                });
                if let SeriesStats::Histogram { buckets, .. } = &s.stats {
                    o["buckets"] = Value::Object(buckets.iter().map(|(le, c)| (le.clone(), finite(*c))).collect());
                }
                o
            })
            .collect();
        metrics.insert(
            metric.name.clone(),
            json!({"type": metric.kind.name(), "description": metric.help, "series": series}),
        );
    }
    let doc = json!({
        "schema_version": "1.1",
        "summary": {
            "endpoints_configured": m.endpoints.iter().map(|e| e.url.as_str()).collect::<Vec<_>>(),
            "endpoints_successful": m.endpoints.iter().filter(|e| e.fetches > 0).map(|e| e.url.as_str()).collect::<Vec<_>>(),
            "start_time": iso8601(u128::from(m.window_start_ns)),
            "end_time": iso8601(u128::from(m.window_end_ns)),
            "endpoint_info": info,
        },
        "metrics_phase": "profiling",
        "metrics": metrics,
        "input_config": input_config,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `server_metrics_export.csv`: `#` comment lines, then one section per type (gauge, counter,
/// histogram, unknown), each with the header `Endpoint,Type,Metric,Unit,<stats>,<labels>,Description`.
/// Histogram rows end with `buckets` as `le=count;…`.
pub fn export_csv(m: &ServerMetrics) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# aiperf-cli server metrics over the profiling window");
    let _ = writeln!(
        out,
        "# window: {} to {}",
        iso8601(u128::from(m.window_start_ns)),
        iso8601(u128::from(m.window_end_ns))
    );
    for e in &m.endpoints {
        let _ = writeln!(out, "# endpoint {}: {} scrape(s), {} failed", e.url, e.fetches, e.failures);
    }
    for kind in [Kind::Gauge, Kind::Counter, Kind::Histogram, Kind::Untyped] {
        let rows: Vec<(&MetricSummary, &SeriesSummary)> =
            m.metrics.iter().filter(|x| x.kind == kind).flat_map(|x| x.series.iter().map(move |s| (x, s))).collect();
        let Some((_, first)) = rows.first() else { continue };
        let stat_keys: Vec<String> = stat_pairs(&first.stats).into_iter().map(|(k, _)| k).collect();
        let mut label_keys: Vec<&str> =
            rows.iter().flat_map(|(_, s)| s.labels.iter().map(|(k, _)| k.as_str())).collect();
        label_keys.sort_unstable();
        label_keys.dedup();
        out.push('\n');
        let mut header = vec!["Endpoint".to_owned(), "Type".into(), "Metric".into(), "Unit".into()];
        header.extend(stat_keys.iter().cloned());
        header.extend(label_keys.iter().map(|k| csv::field(k)));
        if kind == Kind::Histogram {
            header.push("buckets".into());
        }
        header.push("Description".into());
        let _ = writeln!(out, "{}", header.join(","));
        for (metric, s) in rows {
            let stats: BTreeMap<String, f64> = stat_pairs(&s.stats).into_iter().collect();
            let mut row =
                vec![csv::field(&s.endpoint_url), kind.name().into(), csv::field(&metric.name), unit_of(&metric.name)];
            row.extend(stat_keys.iter().map(|k| stats.get(k).map_or_else(String::new, |v| v.to_string())));
            row.extend(
                label_keys
                    .iter()
                    .map(|k| s.labels.iter().find(|(n, _)| n == k).map_or_else(String::new, |(_, v)| csv::field(v))),
            );
            if let SeriesStats::Histogram { buckets, .. } = &s.stats {
                let b: Vec<String> = buckets.iter().map(|(le, c)| format!("{le}={c}")).collect();
                row.push(csv::field(&b.join(";")));
            }
            row.push(csv::field(&metric.help));
            let _ = writeln!(out, "{}", row.join(","));
        }
    }
    out
}

/// The unit a metric's name ends with, AIPerf-style (`_seconds` → seconds, `_tokens` → tokens).
fn unit_of(name: &str) -> String {
    for (suffix, unit) in [
        ("_seconds", "seconds"),
        ("_tokens", "tokens"),
        ("_bytes", "bytes"),
        ("_perc", "ratio"),
        ("_ratio", "ratio"),
        ("_percent", "percent"),
        ("_requests", "requests"),
    ] {
        if name.ends_with(suffix) {
            return unit.to_owned();
        }
    }
    String::new()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::tests::run;

    #[test]
    fn json_export_snapshot() {
        insta::assert_snapshot!(export_json(&run(), &json!({"model": "m"})));
    }

    #[test]
    fn csv_export_snapshot() {
        insta::assert_snapshot!(export_csv(&run()));
    }
}
