//! `profile_export_aiperf.csv` in AIPerf's layout: the distributions (`Metric,avg,min,max,sum,
//! p1…p99,std`), a blank line, the scalars (`Metric,Value`), each sorted by tag, numbers with two
//! decimals, lines ending in CRLF (Python's `csv` module; the GPU energy-efficiency metrics among
//! the scalars), and AIPerf's GPU telemetry table when DCGM exporters were scraped; then ours:
//! the per-URL rows.

use std::fmt::Write as _;

use super::fields::{replay_sched_lag, scalars, stat_keys, url_name};
use crate::csv;
use crate::results::metrics::Metric;
use crate::results::summary::RunSummary;

/// A number as AIPerf's CSV writes a float.
fn num(v: f64) -> String {
    format!("{v:.2}")
}

/// A metric's name column: its header and unit (no unit for counts of requests).
fn name(header: &str, unit: &str) -> String {
    let n = if matches!(unit, "count" | "requests") { header.to_owned() } else { format!("{header} ({unit})") };
    csv::field(&n)
}

/// `profile_export_aiperf.csv`.
pub fn summary_csv(s: &RunSummary) -> String {
    let r = &s.report;
    let mut rows: Vec<(String, String)> = Vec::new();
    for (metric, d) in &r.metrics {
        let mut row = name(metric.header(), metric.unit());
        for (_, v) in stat_keys(d) {
            let _ = write!(row, ",{}", num(v));
        }
        rows.push((metric.tag().to_owned(), row));
    }
    for (metric, a) in &r.adjusted {
        let header = format!("{} (error-adjusted)", metric.header());
        let opt = |v: Option<f64>| v.map_or_else(String::new, num);
        let mut row = format!("{},,{},,", name(&header, metric.unit()), opt(a.min));
        for v in a.percentiles {
            let _ = write!(row, ",{}", opt(v));
        }
        row.push(',');
        rows.push((format!("adj_{}", metric.tag()), row));
    }
    // The time-weighted metrics have no sum, p1, p5, p10, p25 nor p75.
    for (metric, t) in &r.timeline {
        let [avg, p50, p90, p95, p99, min, max, std] = t.stats().map(|(_, v)| num(v));
        let row =
            format!("{},{avg},{min},{max},,,,,,{p50},,{p90},{p95},{p99},{std}", name(metric.header(), metric.unit()));
        rows.push((metric.tag().to_owned(), row));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::from("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n");
    for (_, row) in rows {
        out.push_str(&row);
        out.push_str("\r\n");
    }
    out.push_str("\r\nMetric,Value\r\n");
    let mut scalar_rows: Vec<(String, &str, &str, f64)> =
        scalars(r).into_iter().chain(replay_sched_lag(s)).map(|(t, h, u, v)| (t.to_owned(), h, u, v)).collect();
    scalar_rows.extend(s.gpu_energy.iter().map(|e| (e.tag(), e.metric.header, e.metric.unit, e.value)));
    scalar_rows.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, header, unit, v) in scalar_rows {
        let _ = write!(out, "{},{}\r\n", name(header, unit), num(v));
    }
    if let Some(t) = &s.gpu_telemetry {
        out.push_str(&t.csv_section());
    }
    if !r.per_url.is_empty() {
        let (lat, ttft) = (Metric::RequestLatency.header(), Metric::TimeToFirstToken.header());
        let _ = write!(
            out,
            "\r\nURL,Request Count,Error Request Count,{lat} avg (ms),{lat} p50 (ms),{lat} p99 (ms),{ttft} avg (ms),{ttft} p50 (ms),{ttft} p99 (ms)\r\n"
        );
        for u in &r.per_url {
            let _ = write!(out, "{},{},{}", csv::field(&url_name(s, u)), u.request_count, u.error_request_count);
            for d in [&u.request_latency, &u.time_to_first_token] {
                match d {
                    Some(d) => {
                        let p = |q| d.percentile(q).map_or(String::new(), num);
                        let _ = write!(out, ",{},{},{}", num(d.avg), p(50.0), p(99.0));
                    }
                    None => out.push_str(",,,"),
                }
            }
            out.push_str("\r\n");
        }
    }
    out
}
