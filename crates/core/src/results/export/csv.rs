//! `profile_export_aiperf.csv`.

use std::fmt::Write as _;

use super::{scalars, url_name};
use crate::csv;
use crate::results::summary::RunSummary;
use crate::stats::REPORT_PERCENTILES;

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
            let _ = write!(out, "{},{},{}", csv::field(&url_name(s, u)), u.request_count, u.error_request_count);
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
