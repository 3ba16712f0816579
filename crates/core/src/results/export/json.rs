//! `profile_export_aiperf.json`.

use serde_json::{Map, Value, json};

use super::fields::{cpu_per_request_us, replay_sched_lag, scalars, url_name};
use crate::datetime::iso8601;
use crate::results::aggregate::{Adjusted, Report, UrlReport};
use crate::results::metrics::Metric;
use crate::results::summary::RunSummary;
use crate::server::kinds::ServerView;
use crate::stats::{Distribution, REPORT_PERCENTILES};

/// A distribution as AIPerf's `JsonMetricResult`: unit, avg, p1…p99, min, max, std, count, sum.
pub(crate) fn dist_json(unit: &str, d: &Distribution) -> Value {
    let mut m = Map::new();
    m.insert("unit".into(), json!(unit));
    m.insert("avg".into(), json!(d.avg));
    for (p, v) in REPORT_PERCENTILES.iter().zip(d.percentiles) {
        m.insert(format!("p{p}"), json!(v));
    }
    m.insert("min".into(), json!(d.min));
    m.insert("max".into(), json!(d.max));
    m.insert("std".into(), json!(d.std));
    m.insert("count".into(), json!(d.count));
    m.insert("sum".into(), json!(d.sum));
    Value::Object(m)
}

/// An error-adjusted distribution: its finite statistics only, as AIPerf writes it.
fn adjusted_json(unit: &str, a: &Adjusted) -> Value {
    let mut m = Map::new();
    m.insert("unit".into(), json!(unit));
    for (p, v) in REPORT_PERCENTILES.iter().zip(a.percentiles) {
        if let Some(v) = v {
            m.insert(format!("p{p}"), json!(v));
        }
    }
    if let Some(min) = a.min {
        m.insert("min".into(), json!(min));
    }
    m.insert("count".into(), json!(a.count));
    Value::Object(m)
}

/// The version of AIPerf's summary format (`JsonExportData.SCHEMA_VERSION`) this file follows.
pub const SCHEMA_VERSION: &str = "1.4";
/// The AIPerf release whose summary format, metric keys and definitions this file follows.
pub const AIPERF_VERSION: &str = "0.13.0";

/// `profile_export_aiperf.json`: AIPerf's `JsonExportData` keys in its order, then ours.
pub fn summary_json(s: &RunSummary) -> String {
    let mut m = Map::new();
    m.insert("schema_version".into(), json!(SCHEMA_VERSION));
    m.insert("aiperf_version".into(), json!(AIPERF_VERSION));
    m.insert("benchmark_id".into(), json!(s.benchmark_id));
    for (metric, d) in &s.report.metrics {
        m.insert(metric.tag().into(), dist_json(metric.unit(), d));
    }
    for (metric, t) in &s.report.timeline {
        let mut o = Map::new();
        o.insert("unit".into(), json!(metric.unit()));
        for (k, v) in t.stats() {
            o.insert(k.into(), json!(v));
        }
        m.insert(metric.tag().into(), Value::Object(o));
    }
    for (tag, _, unit, v) in scalars(&s.report).into_iter().chain(replay_sched_lag(s)) {
        m.insert(tag.into(), json!({"unit": unit, "avg": v}));
    }
    for e in &s.gpu_energy {
        m.insert(e.tag(), json!({"unit": e.metric.unit, "avg": e.value}));
    }
    for (metric, a) in &s.report.adjusted {
        m.insert(format!("adj_{}", metric.tag()), adjusted_json(metric.unit(), a));
    }
    if let Some(t) = &s.gpu_telemetry {
        m.insert("telemetry_data".into(), t.to_json());
    }
    m.insert("input_config".into(), s.input_config.clone());
    let mut run_info = Map::new();
    run_info.insert("benchmark_id".into(), json!(s.benchmark_id));
    if let Some(seed) = s.cli_config.get("random_seed").filter(|v| v.is_u64()) {
        run_info.insert("random_seed".into(), seed.clone());
    }
    run_info.insert("cli_command".into(), json!(s.cli_command));
    m.insert("run_info".into(), Value::Object(run_info));
    m.insert("was_cancelled".into(), json!(s.was_cancelled));
    m.insert("is_complete".into(), json!(s.incomplete_reason.is_none()));
    if let Some(why) = &s.incomplete_reason {
        m.insert("incomplete_reason".into(), json!(why));
    }
    m.insert(
        "error_summary".into(),
        Value::Array(
            s.report
                .error_summary
                .iter()
                .map(|(k, n)| {
                    let mut details = json!({"type": k});
                    if let Some(m) = s.report.error_examples.get(k) {
                        details["message"] = json!(m);
                    }
                    json!({"error_details": details, "count": n})
                })
                .collect(),
        ),
    );
    m.insert("start_time".into(), json!(iso8601(s.start_unix_ns)));
    m.insert("end_time".into(), json!(iso8601(s.end_unix_ns)));
    m.insert("outcome_counts".into(), json!(s.report.outcomes));
    if !s.report.per_url.is_empty() {
        m.insert("per_url".into(), Value::Array(s.report.per_url.iter().map(|u| url_json(s, u)).collect()));
    }
    if let Some(t) = s.report.token_count_check {
        m.insert(
            "output_token_count_check".into(),
            json!({
                "requests": t.requests,
                "client_output_tokens": t.client_output_tokens,
                "server_output_tokens": t.server_output_tokens,
                "relative_difference": t.relative_difference(),
            }),
        );
    }
    if !s.cli_config.is_null() {
        m.insert("aiperf_cli_config".into(), s.cli_config.clone());
    }
    m.insert("tokenizer".into(), json!(s.tokenizer));
    if let Some(cpu) = s.client_cpu_s {
        m.insert("client_cpu".into(), json!({"seconds": cpu, "us_per_request": cpu_per_request_us(s, cpu)}));
    }
    m.insert("startup_ms".into(), json!(s.startup_ms));
    if let Some(v) = &s.server {
        m.insert("prefix_cache_comparison".into(), comparison_json(&s.report, v));
    }
    if let Some((prog, meas)) = s.calibration {
        m.insert("calibration".into(), json!({"programmed_ttft_ms": prog, "measured_ttft_p50_ms": meas}));
    }
    if let Some(sh) = &s.sharding {
        m.insert("sharding".into(), serde_json::to_value(sh).unwrap_or(Value::Null));
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_default();
    text.push('\n');
    text
}

fn url_json(s: &RunSummary, u: &UrlReport) -> Value {
    let mut m = Map::new();
    m.insert("index".into(), json!(u.index));
    m.insert("url".into(), json!(url_name(s, u)));
    m.insert("request_count".into(), json!(u.request_count));
    m.insert("error_request_count".into(), json!(u.error_request_count));
    for (metric, d) in
        [(Metric::RequestLatency, &u.request_latency), (Metric::TimeToFirstToken, &u.time_to_first_token)]
    {
        if let Some(d) = d {
            m.insert(metric.tag().into(), dist_json(metric.unit(), d));
        }
    }
    Value::Object(m)
}

/// The three prefix-cache hit rates side by side, and the server's KV-cache and queue numbers.
fn comparison_json(r: &Report, v: &ServerView) -> Value {
    json!({
        "trace_theoretical": r.expected_cache_hit_rate,
        "server_metrics": v.prefix_cache_hit_rate.as_ref().map(|s| s.value),
        "server_metrics_source": v.prefix_cache_hit_rate.as_ref().map(|s| &s.source),
        "usage_cached_tokens": r.cache_hit_rate,
        "server_kv_cache_usage": v.kv_cache_usage.as_ref().map(|s| json!({"avg": s.value.0, "max": s.value.1, "source": s.source})),
        "server_queue_depth": v.queue_depth_max.as_ref().map(|s| json!({"max": s.value, "source": s.source})),
        "server_running_requests": v.running_max.as_ref().map(|s| json!({"max": s.value, "source": s.source})),
    })
}
