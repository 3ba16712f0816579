//! Exports of a run behind one trait: the per-request JSONL (written and flushed as requests
//! finish), the AIPerf-style JSON and CSV summaries, and the console table.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use aiperf_core::metrics::{Metric, Report, RequestMetrics, RequestRecord};
use aiperf_core::stats::{Distribution, REPORT_PERCENTILES};
use anyhow::{Context, Result};
use serde_json::{Map, Value, json};

use crate::input::write_atomically;

/// Everything known at the end of a run.
pub struct RunSummary {
    pub report: Report,
    pub input_config: Value,
    pub was_cancelled: bool,
    pub start_unix_ns: u128,
    pub end_unix_ns: u128,
    pub tokenizer: String,
    pub warmup: Option<(u64, u64)>,
    /// Programmed vs measured TTFT against a mock server (ms).
    pub calibration: Option<(f64, f64)>,
    /// CPU seconds the client used while replaying (Linux only).
    pub client_cpu_s: Option<f64>,
    /// From process start to the replay being ready to send (ms).
    pub startup_ms: f64,
}

/// One output of a run.
pub trait Exporter {
    /// Called for each finished request, in completion order.
    fn record(&mut self, _rec: &RequestRecord, _metrics: Option<&RequestMetrics>) -> Result<()> {
        Ok(())
    }
    /// Called once at the end.
    fn finish(&mut self, summary: &RunSummary) -> Result<()>;
}

/// `profile_export.jsonl`: one line per request, flushed at once so nothing measured is lost.
pub struct JsonlExporter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl JsonlExporter {
    pub fn create(dir: &Path) -> Result<JsonlExporter> {
        let path = dir.join("profile_export.jsonl");
        let f = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(JsonlExporter { out: BufWriter::new(f), path })
    }
}

impl Exporter for JsonlExporter {
    fn record(&mut self, rec: &RequestRecord, metrics: Option<&RequestMetrics>) -> Result<()> {
        serde_json::to_writer(&mut self.out, &Line { metadata: rec, metrics: Metrics(metrics) })?;
        self.out.write_all(b"\n")?;
        self.out.flush().with_context(|| format!("cannot write {}", self.path.display()))
    }

    fn finish(&mut self, _summary: &RunSummary) -> Result<()> {
        self.out.flush().with_context(|| format!("cannot write {}", self.path.display()))
    }
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

/// `profile_export_aiperf.json`.
pub struct JsonExporter {
    pub path: PathBuf,
}

impl Exporter for JsonExporter {
    fn finish(&mut self, s: &RunSummary) -> Result<()> {
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
                s.report.error_summary.iter().map(|(k, n)| json!({"error_details": {"type": k}, "count": n})).collect(),
            ),
        );
        m.insert("start_time".into(), json!(iso8601(s.start_unix_ns)));
        m.insert("end_time".into(), json!(iso8601(s.end_unix_ns)));
        m.insert("tokenizer".into(), json!(s.tokenizer));
        let total = s.report.request_count + s.report.error_request_count;
        if let Some(cpu) = s.client_cpu_s {
            m.insert(
                "client_cpu".into(),
                json!({"seconds": cpu, "us_per_request": if total > 0 { cpu * 1e6 / total as f64 } else { 0.0 }}),
            );
        }
        m.insert("startup_ms".into(), json!(s.startup_ms));
        if let Some((prog, meas)) = s.calibration {
            m.insert("calibration".into(), json!({"programmed_ttft_ms": prog, "measured_ttft_p50_ms": meas}));
        }
        let text = serde_json::to_string_pretty(&Value::Object(m))?;
        write_atomically(&self.path, format!("{text}\n").as_bytes())
    }
}

/// `profile_export_aiperf.csv`.
pub struct CsvExporter {
    pub path: PathBuf,
}

impl Exporter for CsvExporter {
    fn finish(&mut self, s: &RunSummary) -> Result<()> {
        let mut out = String::from("Metric,avg,min,max");
        for p in REPORT_PERCENTILES {
            out.push_str(&format!(",p{p}"));
        }
        out.push_str(",std\n");
        for (metric, d) in &s.report.metrics {
            out.push_str(&format!("{} ({}),{},{},{}", metric.header(), metric.unit(), d.avg, d.min, d.max));
            for v in d.percentiles {
                out.push_str(&format!(",{v}"));
            }
            out.push_str(&format!(",{}\n", d.std));
        }
        out.push_str("\nMetric,Value\n");
        for (_, header, unit, v) in scalars(&s.report) {
            out.push_str(&format!("{header} ({unit}),{v}\n"));
        }
        write_atomically(&self.path, out.as_bytes())
    }
}

/// The console table.
pub fn console_table(s: &RunSummary) -> String {
    let mut out = String::new();
    let title =
        if s.was_cancelled { "aiperf-cli profile | Metrics (run cancelled)" } else { "aiperf-cli profile | Metrics" };
    out.push_str(&format!("\n{title}\n"));
    out.push_str(&format!(
        "{:<52} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
        "Metric", "avg", "min", "max", "p99", "p90", "p50", "std"
    ));
    for (metric, d) in &s.report.metrics {
        let name = format!("{} ({})", metric.header(), metric.unit());
        let p = |q| d.percentile(q).unwrap_or(f64::NAN);
        out.push_str(&format!(
            "{:<52} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2}\n",
            name,
            d.avg,
            d.min,
            d.max,
            p(99.0),
            p(90.0),
            p(50.0),
            d.std
        ));
    }
    for (_, header, unit, v) in scalars(&s.report) {
        out.push_str(&format!("{:<52} {:>11.2}\n", format!("{header} ({unit})"), v));
    }
    if !s.report.error_summary.is_empty() {
        out.push_str("Errors:");
        for (k, n) in &s.report.error_summary {
            out.push_str(&format!(" {k}={n}"));
        }
        out.push('\n');
    }
    if let Some((w, e)) = s.warmup {
        out.push_str(&format!("Warmup: {w} request(s), {e} error(s), not measured\n"));
    }
    if let Some((prog, meas)) = s.calibration {
        out.push_str(&format!(
            "Calibration against the mock server: programmed TTFT {prog:.3} ms, measured TTFT p50 {meas:.3} ms → client + network overhead {:.3} ms\n",
            meas - prog
        ));
    }
    if let Some(d) = s.report.get(Metric::SendLateness) {
        out.push_str(&format!(
            "Send lateness (actual − scheduled): p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n",
            d.percentile(50.0).unwrap_or(f64::NAN),
            d.percentile(90.0).unwrap_or(f64::NAN),
            d.percentile(99.0).unwrap_or(f64::NAN),
            d.max
        ));
    }
    if let Some(cpu) = s.client_cpu_s {
        let total = s.report.request_count + s.report.error_request_count;
        out.push_str(&format!(
            "Client CPU while replaying: {cpu:.2} s ({:.0} µs per request); ready to send {:.0} ms after start\n",
            if total > 0 { cpu * 1e6 / total as f64 } else { 0.0 },
            s.startup_ms
        ));
    }
    out.push_str(&format!("Tokenizer: {}\n", s.tokenizer));
    out
}

/// UTC `YYYY-MM-DDTHH:MM:SS.ffffffZ` of nanoseconds since the Unix epoch.
fn iso8601(ns: u128) -> String {
    let secs = (ns / 1_000_000_000) as i64;
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

    fn sample() -> RunSummary {
        let mut agg = aiperf_core::metrics::Aggregate::default();
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
            error: Some(aiperf_core::metrics::RecordError { kind: "timeout".into(), message: "x".into() }),
            end_ns: 60_000_000,
            ..Default::default()
        };
        agg.add(&failed, false, &[]);
        RunSummary {
            report: agg.report(false),
            input_config: json!({}),
            was_cancelled: false,
            start_unix_ns: 0,
            end_unix_ns: 0,
            tokenizer: "test".into(),
            warmup: None,
            calibration: Some((10.0, 19.95)),
            client_cpu_s: Some(0.001),
            startup_ms: 12.0,
        }
    }

    #[test]
    fn console_table_snapshot() {
        let table = console_table(&sample());
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/profile/snapshots/console_table.txt");
            std::fs::write(path, &table).unwrap();
            return;
        }
        let expected = include_str!("snapshots/console_table.txt");
        assert_eq!(table, expected, "console table changed:\n{table}");
    }

    #[test]
    fn csv_has_the_aiperf_header_and_scalars() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        CsvExporter { path: path.clone() }.finish(&sample()).unwrap();
        let csv = std::fs::read_to_string(path).unwrap();
        assert!(csv.starts_with("Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n"));
        assert!(csv.contains("Time to First Token (ms),19.95,19.95,19.95,"));
        assert!(csv.contains("Error Request Count (requests),1\n"));
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso8601(1_700_000_000_123_456_000), "2023-11-14T22:13:20.123456Z");
    }
}
