//! The results of a replay run and their serializations: the per-request JSONL line, AIPerf's
//! `profile_export_aiperf.json` and `.csv`, and the console table.
//!
//! Every exporter is a pure function of a [`RunSummary`] (or of one record), so the CLI only
//! writes bytes and each format is pinned by a snapshot test.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::metrics::{Metric, Report, RequestMetrics, RequestRecord, UrlReport};
use crate::server_metrics::ServerView;
use crate::sharding::Sharding;
use crate::stats::{Distribution, REPORT_PERCENTILES};

/// Everything known at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub report: Report,
    /// The run's options as written to the exports (secrets already redacted).
    pub input_config: Value,
    pub was_cancelled: bool,
    pub start_unix_ns: u128,
    pub end_unix_ns: u128,
    /// Where the tokenizer came from.
    pub tokenizer: String,
    /// Warmup requests sent and how many failed.
    pub warmup: Option<(u64, u64)>,
    /// Programmed vs measured TTFT against a mock server (ms).
    pub calibration: Option<(f64, f64)>,
    /// CPU seconds the client used while replaying.
    pub client_cpu_s: Option<f64>,
    /// From process start to the replay being ready to send (ms).
    pub startup_ms: f64,
    /// The `--url`s as they may be shown (credentials redacted), in the order given; the
    /// report's per-URL entries index into it.
    pub urls: Vec<String>,
    /// The shard this run was, or the shards it merges (`None` for an unsharded run).
    pub sharding: Option<crate::sharding::Sharding>,
    /// The server's numbers from its metrics, when they were scraped.
    pub server: Option<ServerView>,
}

/// A summary file of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormat {
    /// `profile_export_aiperf.json`.
    Json,
    /// `profile_export_aiperf.csv`.
    Csv,
}

impl SummaryFormat {
    /// Every summary file, in the order they are written.
    pub const ALL: [SummaryFormat; 2] = [SummaryFormat::Json, SummaryFormat::Csv];

    /// The file's name in the artifact folder (AIPerf's).
    pub fn file_name(self) -> &'static str {
        match self {
            SummaryFormat::Json => "profile_export_aiperf.json",
            SummaryFormat::Csv => "profile_export_aiperf.csv",
        }
    }

    /// The file's contents.
    pub fn serialize(self, s: &RunSummary) -> String {
        match self {
            SummaryFormat::Json => summary_json(s),
            SummaryFormat::Csv => summary_csv(s),
        }
    }
}

/// The name of the per-request export.
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// One line of `profile_export.jsonl` (with its newline): the raw record and its metrics.
pub fn record_line(rec: &RequestRecord, metrics: Option<&RequestMetrics>) -> Vec<u8> {
    let mut out = serde_json::to_vec(&Line { metadata: rec, metrics: Metrics(metrics) }).unwrap_or_default();
    out.push(b'\n');
    out
}

/// One line of the JSONL, serialized without building a JSON tree.
#[derive(serde::Serialize)]
struct Line<'a> {
    metadata: &'a RequestRecord,
    metrics: Metrics<'a>,
}

struct Metrics<'a>(Option<&'a RequestMetrics>);

impl serde::Serialize for Metrics<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if let Some(m) = self.0 {
            for &(k, v) in m.values() {
                map.serialize_entry(k.tag(), &v)?;
            }
            if !m.inter_chunk_ms.is_empty() {
                map.serialize_entry(Metric::InterChunkLatency.tag(), &m.inter_chunk_ms)?;
            }
        }
        map.end()
    }
}

fn dist_json(unit: &str, d: &Distribution) -> Value {
    let mut m = Map::new();
    m.insert("unit".into(), json!(unit));
    m.insert("avg".into(), json!(d.avg));
    m.insert("min".into(), json!(d.min));
    m.insert("max".into(), json!(d.max));
    for (p, v) in REPORT_PERCENTILES.iter().zip(d.percentiles) {
        m.insert(format!("p{p}"), json!(v));
    }
    m.insert("std".into(), json!(d.std));
    m.insert("count".into(), json!(d.count));
    Value::Object(m)
}

/// Run-level scalars: (tag, header, unit, value).
fn scalars(r: &Report) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let mut v = vec![
        ("request_throughput", "Request Throughput", "requests/sec", r.request_throughput),
        ("output_token_throughput", "Output Token Throughput", "tokens/sec", r.output_token_throughput),
        ("request_count", "Request Count", "requests", r.request_count as f64),
        ("error_request_count", "Error Request Count", "requests", r.error_request_count as f64),
        ("benchmark_duration", "Benchmark Duration", "sec", r.benchmark_duration_s),
    ];
    if let Some(g) = r.goodput {
        v.push(("goodput", "Goodput", "requests/sec", g));
    }
    if let Some(c) = r.cache_hit_rate {
        v.push(("cache_hit_rate", "Cache Hit Rate (server)", "ratio", c));
    }
    if let Some(c) = r.expected_cache_hit_rate {
        v.push(("expected_cache_hit_rate", "Cache Hit Rate (trace, theoretical)", "ratio", c));
    }
    v
}

fn cpu_per_request_us(s: &RunSummary, cpu: f64) -> f64 {
    let total = s.report.request_count + s.report.error_request_count;
    if total > 0 { cpu * 1e6 / total as f64 } else { 0.0 }
}

/// `profile_export_aiperf.json`.
pub fn summary_json(s: &RunSummary) -> String {
    let mut m = Map::new();
    for (metric, d) in &s.report.metrics {
        m.insert(metric.tag().into(), dist_json(metric.unit(), d));
    }
    for (tag, _, unit, v) in scalars(&s.report) {
        m.insert(tag.into(), json!({"unit": unit, "avg": v}));
    }
    m.insert("input_config".into(), s.input_config.clone());
    m.insert("was_cancelled".into(), json!(s.was_cancelled));
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
    m.insert("start_time".into(), json!(iso8601(s.start_unix_ns)));
    m.insert("end_time".into(), json!(iso8601(s.end_unix_ns)));
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

/// The URL of a per-URL entry (its index when the summary does not list it).
fn url_name(s: &RunSummary, u: &UrlReport) -> String {
    s.urls.get(u.index as usize).cloned().unwrap_or_else(|| format!("url #{}", u.index))
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

/// `profile_export_aiperf.csv`.
pub fn summary_csv(s: &RunSummary) -> String {
    let mut out = String::from("Metric,avg,min,max");
    for p in REPORT_PERCENTILES {
        let _ = write!(out, ",p{p}");
    }
    out.push_str(",std\n");
    for (metric, d) in &s.report.metrics {
        let _ = write!(out, "{} ({}),{},{},{}", metric.header(), metric.unit(), d.avg, d.min, d.max);
        for v in d.percentiles {
            let _ = write!(out, ",{v}");
        }
        let _ = writeln!(out, ",{}", d.std);
    }
    out.push_str("\nMetric,Value\n");
    for (_, header, unit, v) in scalars(&s.report) {
        let _ = writeln!(out, "{header} ({unit}),{v}");
    }
    if !s.report.per_url.is_empty() {
        out.push_str("\nURL,Request Count,Error Request Count,Request Latency avg (ms),Request Latency p50 (ms),Request Latency p99 (ms),Time to First Token avg (ms),Time to First Token p50 (ms),Time to First Token p99 (ms)\n");
        for u in &s.report.per_url {
            let _ = write!(out, "{},{},{}", csv_field(&url_name(s, u)), u.request_count, u.error_request_count);
            for d in [&u.request_latency, &u.time_to_first_token] {
                match d {
                    Some(d) => {
                        let p = |q| d.percentile(q).map_or(String::new(), |v| v.to_string());
                        let _ = write!(out, ",{},{},{}", d.avg, p(50.0), p(99.0));
                    }
                    None => out.push_str(",,,"),
                }
            }
            out.push('\n');
        }
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) { format!("\"{}\"", v.replace('"', "\"\"")) } else { v.to_owned() }
}

/// The console table.
pub fn console_table(s: &RunSummary) -> String {
    let mut out = String::new();
    let title =
        if s.was_cancelled { "aiperf-cli profile | Metrics (run cancelled)" } else { "aiperf-cli profile | Metrics" };
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(
        out,
        "{:<52} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "Metric", "avg", "min", "max", "p99", "p90", "p50", "std"
    );
    for (metric, d) in &s.report.metrics {
        let name = format!("{} ({})", metric.header(), metric.unit());
        let p = |q| d.percentile(q).unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "{:<52} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2}",
            name,
            d.avg,
            d.min,
            d.max,
            p(99.0),
            p(90.0),
            p(50.0),
            d.std
        );
    }
    for (_, header, unit, v) in scalars(&s.report) {
        let _ = writeln!(out, "{:<52} {:>11.2}", format!("{header} ({unit})"), v);
    }
    if !s.report.per_url.is_empty() {
        let _ = writeln!(out, "Per URL (sessions spread round robin, each on one URL):");
        let _ = writeln!(
            out,
            "  {:<4} {:<44} {:>8} {:>7} {:>13} {:>13} {:>13} {:>13}",
            "#", "URL", "requests", "errors", "latency p50", "latency p99", "TTFT p50", "TTFT p99"
        );
        for u in &s.report.per_url {
            let p = |d: &Option<crate::stats::Distribution>, q| {
                d.as_ref().and_then(|d| d.percentile(q)).map_or_else(|| "-".to_owned(), |v| format!("{v:.2} ms"))
            };
            let _ = writeln!(
                out,
                "  #{:<3} {:<44} {:>8} {:>7} {:>13} {:>13} {:>13} {:>13}",
                u.index,
                url_name(s, u),
                u.request_count,
                u.error_request_count,
                p(&u.request_latency, 50.0),
                p(&u.request_latency, 99.0),
                p(&u.time_to_first_token, 50.0),
                p(&u.time_to_first_token, 99.0)
            );
        }
    }
    let o = s.report.outcomes;
    let _ = writeln!(
        out,
        "Outcomes: {} completed, {} cancelled, {} timed out, {} failed (TTFT covers every request that received a token)",
        o.completed, o.cancelled, o.timed_out, o.failed
    );
    if let Some(t) = s.report.token_count_check {
        let _ = writeln!(
            out,
            "Output tokens: server (usage) {}, client re-tokenized {} ({:+.2}%) over {} request(s)",
            t.server_output_tokens,
            t.client_output_tokens,
            t.relative_difference() * 100.0,
            t.requests
        );
    }
    if !s.report.error_summary.is_empty() {
        let _ = writeln!(
            out,
            "Errors ({} failed request(s)), by kind, with the first message:",
            s.report.error_request_count
        );
        for (k, n) in &s.report.error_summary {
            match s.report.error_examples.get(k).filter(|m| !m.is_empty()) {
                Some(m) => {
                    let _ = writeln!(out, "  {k} × {n}: {m}");
                }
                None => {
                    let _ = writeln!(out, "  {k} × {n}");
                }
            }
        }
    }
    if let Some(v) = &s.server {
        console_server(&mut out, &s.report, v);
    }
    if let Some((w, e)) = s.warmup {
        let _ = writeln!(out, "Warmup: {w} request(s), {e} error(s), not measured");
    }
    if let Some((prog, meas)) = s.calibration {
        let _ = writeln!(
            out,
            "Calibration against the mock server: programmed TTFT {prog:.3} ms, measured TTFT p50 {meas:.3} ms → client + network overhead {:.3} ms",
            meas - prog
        );
    }
    if let Some(d) = s.report.get(Metric::SendLateness) {
        let p = |q| d.percentile(q).unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "Send lateness (actual − scheduled): p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            p(50.0),
            p(90.0),
            p(99.0),
            d.max
        );
    }
    if let Some(cpu) = s.client_cpu_s {
        let _ = writeln!(
            out,
            "Client CPU while replaying: {cpu:.2} s ({:.0} µs per request); ready to send {:.0} ms after start",
            cpu_per_request_us(s, cpu),
            s.startup_ms
        );
    }
    match &s.sharding {
        Some(Sharding::Shard(r)) => {
            let clock = r.clock.map_or_else(
                || "clock offset against the target unknown (no Date header)".to_owned(),
                |c| format!("target clock {:+.1} ms ± {:.1} ms from this one", c.offset_ms, c.uncertainty_ms),
            );
            let zero = if r.common_start { "common start" } else { "own start" };
            let _ = writeln!(
                out,
                "Shard {}/{} ({zero} {}); {clock}",
                r.index,
                r.count,
                iso8601(u128::from(r.start_unix_ns))
            );
        }
        Some(Sharding::Merged(m)) => {
            let kept: Vec<String> = m.shards.iter().map(|r| r.index.to_string()).collect();
            let _ = writeln!(
                out,
                "Merged {} of {} shard(s) (K = {}){}",
                m.shards.len(),
                m.count,
                kept.join(", "),
                if m.partial { "; PARTIAL: see sharding.problems in profile_export_aiperf.json" } else { "" }
            );
        }
        None => {}
    }
    let _ = writeln!(out, "Tokenizer: {}", s.tokenizer);
    out
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

fn console_server(out: &mut String, r: &Report, v: &ServerView) {
    let pct = |x: Option<f64>| x.map_or_else(|| "n/a".to_owned(), |x| format!("{:.2}%", x * 100.0));
    let _ = writeln!(
        out,
        "Prefix-cache hit rate: trace (theoretical) {} | server metrics {}{} | usage cached_tokens {}",
        pct(r.expected_cache_hit_rate),
        pct(v.prefix_cache_hit_rate.as_ref().map(|s| s.value)),
        v.prefix_cache_hit_rate.as_ref().map_or_else(String::new, |s| format!(" ({})", s.source)),
        pct(r.cache_hit_rate)
    );
    let mut parts = Vec::new();
    if let Some(s) = &v.kv_cache_usage {
        parts.push(format!(
            "KV-cache usage avg {:.1}%, max {:.1}% ({})",
            s.value.0 * 100.0,
            s.value.1 * 100.0,
            s.source
        ));
    }
    if let Some(s) = &v.queue_depth_max {
        parts.push(format!("queue depth max {} ({})", s.value, s.source));
    }
    if let Some(s) = &v.running_max {
        parts.push(format!("running max {} ({})", s.value, s.source));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "Server: {}", parts.join("; "));
    }
}

/// UTC `YYYY-MM-DDTHH:MM:SS.ffffffZ` of nanoseconds since the Unix epoch.
pub fn iso8601(ns: u128) -> String {
    let secs = (ns / 1_000_000_000).min(i64::MAX as u128) as i64;
    let micros = (ns % 1_000_000_000) / 1000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::metrics::{Aggregate, RecordError};

    fn sample() -> RunSummary {
        let mut agg = Aggregate::default();
        for i in 0..4u64 {
            let rec = RequestRecord {
                scheduled_ns: i * 10_000_000,
                sent_ns: i * 10_000_000 + 50_000,
                chunk_ns: vec![i * 10_000_000 + 20_000_000, i * 10_000_000 + 30_000_000],
                end_ns: i * 10_000_000 + 31_000_000,
                streaming: true,
                input_tokens: Some(100),
                output_tokens: Some(2),
                ..Default::default()
            };
            agg.add(&rec, false, &[]);
        }
        let failed = RequestRecord {
            error: Some(RecordError { kind: "timeout".into(), message: "x".into() }),
            end_ns: 60_000_000,
            ..Default::default()
        };
        agg.add(&failed, false, &[]);
        RunSummary {
            report: agg.report(false),
            input_config: json!({"model": "m", "api_key": "<redacted>"}),
            was_cancelled: false,
            start_unix_ns: 1_700_000_000_123_456_000,
            end_unix_ns: 1_700_000_001_000_000_000,
            tokenizer: "test".into(),
            warmup: None,
            calibration: Some((10.0, 19.95)),
            client_cpu_s: Some(0.001),
            startup_ms: 12.0,
            urls: Vec::new(),
            sharding: None,
            server: None,
        }
    }

    /// Two URLs: three requests on the first, one success and one failure on the second.
    fn two_urls() -> RunSummary {
        let mut agg = Aggregate::default();
        for i in 0..5u64 {
            let rec = RequestRecord {
                scheduled_ns: i * 10_000_000,
                sent_ns: i * 10_000_000,
                chunk_ns: vec![i * 10_000_000 + (i + 1) * 1_000_000, i * 10_000_000 + 20_000_000],
                end_ns: i * 10_000_000 + 21_000_000,
                streaming: true,
                input_tokens: Some(10),
                output_tokens: Some(2),
                url_index: Some(if i % 2 == 0 { 0 } else { 1 }),
                error: (i == 3).then(|| RecordError { kind: "http_status".into(), message: "HTTP 500".into() }),
                ..Default::default()
            };
            agg.add(&rec, false, &[]);
        }
        RunSummary {
            urls: vec!["http://a.test:8000".into(), "https://<redacted>@b.test".into()],
            calibration: None,
            client_cpu_s: None,
            ..sample_with(agg)
        }
    }

    fn sample_with(agg: Aggregate) -> RunSummary {
        RunSummary { report: agg.report(false), ..sample() }
    }

    #[test]
    fn per_url_counts_and_latencies_in_every_export() {
        let s = two_urls();
        let table = console_table(&s);
        let json = summary_json(&s);
        let csv = summary_csv(&s);
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["per_url"][0]["request_count"], 3);
        assert_eq!(v["per_url"][1]["error_request_count"], 1);
        assert_eq!(v["per_url"][1]["url"], "https://<redacted>@b.test");
        insta::assert_snapshot!("per_url_console", table);
        insta::assert_snapshot!("per_url_json", v["per_url"].to_string());
        insta::assert_snapshot!("per_url_csv", csv.split("\nURL,").nth(1).unwrap());
        // One URL: no per-URL section anywhere.
        let one = sample();
        assert!(!console_table(&one).contains("Per URL") && !summary_json(&one).contains("per_url"));
        assert!(!summary_csv(&one).contains("\nURL,"));
    }

    #[test]
    fn a_shard_and_a_merge_say_so_in_the_json_and_the_table() {
        use crate::sharding::{ClockOffset, MergedRun, ShardRun};
        let shard = ShardRun {
            index: 1,
            count: 3,
            start_unix_ns: 1_700_000_000_000_000_000,
            common_start: true,
            clock: Some(ClockOffset { offset_ms: -12.5, uncertainty_ms: 50.0, probes: 10 }),
        };
        let mut s = sample();
        s.sharding = Some(Sharding::Shard(shard.clone()));
        let v: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        assert_eq!(v["sharding"]["shard"]["count"], 3);
        assert_eq!(v["sharding"]["shard"]["clock"]["offset_ms"], -12.5);
        assert!(
            console_table(&s)
                .contains("Shard 1/3 (common start 2023-11-14T22:13:20.000000Z); target clock -12.5 ms ± 50.0 ms")
        );
        s.sharding = Some(Sharding::Merged(MergedRun {
            count: 3,
            shards: vec![shard],
            records: vec![4],
            partial: true,
            problems: vec!["shard 0/3 is missing".into()],
        }));
        let v: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        assert_eq!(v["sharding"]["merged"]["problems"][0], "shard 0/3 is missing");
        assert!(console_table(&s).contains("Merged 1 of 3 shard(s) (K = 1); PARTIAL"));
    }

    #[test]
    fn console_table_snapshot() {
        insta::assert_snapshot!(console_table(&sample()));
    }

    #[test]
    fn summary_json_snapshot() {
        insta::assert_snapshot!(summary_json(&sample()));
    }

    #[test]
    fn summary_csv_snapshot() {
        insta::assert_snapshot!(summary_csv(&sample()));
    }

    #[test]
    fn record_line_snapshot() {
        let rec = RequestRecord {
            session_id: Some("s1".into()),
            turn: 1,
            trace_line: 7,
            scheduled_ns: 1_000,
            sent_ns: 2_000,
            chunk_ns: vec![5_000_000, 7_000_000],
            end_ns: 7_500_000,
            streaming: true,
            output_tokens: Some(2),
            ..Default::default()
        };
        let m = RequestMetrics::of(&rec, false);
        let line = String::from_utf8(record_line(&rec, Some(&m))).unwrap();
        assert!(line.ends_with("}\n"));
        insta::assert_snapshot!(line);
    }

    #[test]
    fn the_three_hit_rates_are_shown_side_by_side() {
        use crate::server_metrics::Sourced;
        let mut s = sample();
        s.report.expected_cache_hit_rate = Some(0.5);
        s.report.cache_hit_rate = Some(0.25);
        s.server = Some(ServerView {
            prefix_cache_hit_rate: Some(Sourced {
                value: 0.4,
                source: "vllm:prefix_cache_hits / vllm:prefix_cache_queries".into(),
            }),
            kv_cache_usage: Some(Sourced { value: (0.1, 0.3), source: "vllm:kv_cache_usage_perc".into() }),
            queue_depth_max: Some(Sourced { value: 3.0, source: "vllm:num_requests_waiting".into() }),
            running_max: None,
        });
        let table = console_table(&s);
        assert!(table.contains("Prefix-cache hit rate: trace (theoretical) 50.00% | server metrics 40.00% (vllm:prefix_cache_hits / vllm:prefix_cache_queries) | usage cached_tokens 25.00%"), "{table}");
        assert!(table.contains("Server: KV-cache usage avg 10.0%, max 30.0% (vllm:kv_cache_usage_perc); queue depth max 3 (vllm:num_requests_waiting)"), "{table}");
        let j: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        let c = &j["prefix_cache_comparison"];
        assert_eq!(
            (c["trace_theoretical"].as_f64(), c["server_metrics"].as_f64(), c["usage_cached_tokens"].as_f64()),
            (Some(0.5), Some(0.4), Some(0.25))
        );
        assert_eq!(c["server_kv_cache_usage"]["max"], 0.3);
        assert_eq!(c["server_queue_depth"]["max"], 3.0);
    }

    #[test]
    fn a_cancelled_run_says_so_and_formats_name_their_files() {
        let mut s = sample();
        s.was_cancelled = true;
        assert!(console_table(&s).contains("(run cancelled)"));
        assert!(summary_json(&s).contains("\"was_cancelled\": true"));
        let names: Vec<&str> = SummaryFormat::ALL.iter().map(|f| f.file_name()).collect();
        assert_eq!(names, ["profile_export_aiperf.json", "profile_export_aiperf.csv"]);
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso8601(1_700_000_000_123_456_000), "2023-11-14T22:13:20.123456Z");
        assert!(!iso8601(u128::MAX).is_empty());
    }
}
