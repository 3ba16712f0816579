//! Fidelity of a synthesized trace: its distributions next to the original's.
//!
//! For input length, output length, context (cached prefix) length, per-request hit rate and
//! requests per second, the report gives both distributions (mean, std, percentiles) and their
//! two-sample Kolmogorov–Smirnov distance. Fidelity is measured, not assumed.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::analysis::report::{group_thousands, table};
use crate::analysis::{Analysis, RowMetrics, analyze_with_rows};
use crate::stats::{Distribution, ks_distance_sorted, sorted};
use crate::trace::Trace;

/// One metric, original against synthesized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricFidelity {
    /// `isl`, `osl`, `context_length`, `hit_rate` or `requests_per_second`.
    pub metric: String,
    pub original: Option<Distribution>,
    pub synthesized: Option<Distribution>,
    /// Largest gap between the two empirical CDFs (0 = identical).
    pub ks_distance: Option<f64>,
}

/// Original vs synthesized distributions of the metrics that matter for replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FidelityReport {
    pub block_size: u32,
    pub original_requests: u64,
    pub synthesized_requests: u64,
    /// Theoretical (infinite cache) hit rate of each trace.
    pub original_cache_hit_rate: f64,
    pub synthesized_cache_hit_rate: f64,
    pub original_unique_prefixes: u64,
    pub synthesized_unique_prefixes: u64,
    pub metrics: Vec<MetricFidelity>,
}

/// Compares two traces (analysed with the same block size).
pub fn fidelity_report(original: &Trace, synthesized: &Trace, block_size: u32) -> FidelityReport {
    let (a, ma) = analyze_with_rows(original, block_size);
    let (b, mb) = analyze_with_rows(synthesized, block_size);
    fidelity_from_analyses((&a, &ma), (&b, &mb))
}

/// The report from analyses already computed (with their per-row values).
pub fn fidelity_from_analyses(
    original: (&Analysis, &RowMetrics),
    synthesized: (&Analysis, &RowMetrics),
) -> FidelityReport {
    let ((a, ma), (b, mb)) = (original, synthesized);
    let rate = |an: &Analysis| -> Vec<f64> {
        an.arrivals.as_ref().map_or_else(Vec::new, |r| r.requests_per_second.iter().map(|&c| f64::from(c)).collect())
    };
    let metrics = [
        ("isl", ma.isl.clone(), mb.isl.clone()),
        ("osl", ma.osl.clone(), mb.osl.clone()),
        ("context_length", ma.context_length.clone(), mb.context_length.clone()),
        ("hit_rate", ma.hit_rate.clone(), mb.hit_rate.clone()),
        ("requests_per_second", rate(a), rate(b)),
    ]
    .into_iter()
    .map(|(metric, x, y)| {
        let (sx, sy) = (sorted(&x), sorted(&y));
        MetricFidelity {
            metric: metric.to_string(),
            original: Distribution::of(&x),
            synthesized: Distribution::of(&y),
            ks_distance: ks_distance_sorted(&sx, &sy),
        }
    })
    .collect();
    FidelityReport {
        block_size: a.block_size,
        original_requests: a.total_requests,
        synthesized_requests: b.total_requests,
        original_cache_hit_rate: a.cache_hit_rate,
        synthesized_cache_hit_rate: b.cache_hit_rate,
        original_unique_prefixes: a.unique_prefixes,
        synthesized_unique_prefixes: b.unique_prefixes,
        metrics,
    }
}

impl FidelityReport {
    /// The metric named `name`, if present.
    pub fn metric(&self, name: &str) -> Option<&MetricFidelity> {
        self.metrics.iter().find(|m| m.metric == name)
    }

    /// A console table: one line per metric and trace, with the KS distance.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Original vs synthesized (block size {})", self.block_size);
        let _ = writeln!(
            out,
            "  Requests:        {} -> {}",
            group_thousands(self.original_requests as f64, 0),
            group_thousands(self.synthesized_requests as f64, 0)
        );
        let _ = writeln!(
            out,
            "  Cache hit rate:  {:.2}% -> {:.2}%",
            self.original_cache_hit_rate * 100.0,
            self.synthesized_cache_hit_rate * 100.0
        );
        let _ = writeln!(
            out,
            "  Unique prefixes: {} -> {}\n",
            group_thousands(self.original_unique_prefixes as f64, 0),
            group_thousands(self.synthesized_unique_prefixes as f64, 0)
        );
        let header = ["Metric", "Trace", "Mean", "Std Dev", "P5", "P25", "P50", "P75", "P95", "P99", "KS"];
        let mut rows = Vec::new();
        for m in &self.metrics {
            let decimals = if m.metric == "hit_rate" { 3 } else { 1 };
            for (label, d) in [("original", &m.original), ("synthesized", &m.synthesized)] {
                let mut row =
                    vec![if label == "original" { m.metric.clone() } else { String::new() }, label.to_string()];
                match d {
                    Some(d) => {
                        row.push(group_thousands(d.avg, decimals));
                        row.push(group_thousands(d.std, decimals));
                        for p in [5.0, 25.0, 50.0, 75.0, 95.0, 99.0] {
                            row.push(d.percentile(p).map_or("–".into(), |v| group_thousands(v, decimals)));
                        }
                    }
                    None => row.extend(std::iter::repeat_n("–".to_string(), 8)),
                }
                row.push(match (label, m.ks_distance) {
                    ("original", Some(ks)) => format!("{ks:.3}"),
                    ("original", None) => "–".into(),
                    _ => String::new(),
                });
                rows.push(row);
            }
        }
        out.push_str(&table(&header, &rows));
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, parse_str};

    #[test]
    fn a_trace_is_perfectly_faithful_to_itself_and_not_to_a_shifted_one() {
        let text = "{\"timestamp\":0,\"input_length\":10,\"output_length\":5,\"hash_ids\":[1,2,3]}\n\
                    {\"timestamp\":1500,\"input_length\":7,\"output_length\":9,\"hash_ids\":[1,2]}\n";
        let t = parse_str(text, ParseOptions::default()).unwrap().trace;
        let same = fidelity_report(&t, &t, 4);
        assert!(same.metrics.iter().all(|m| m.ks_distance == Some(0.0)));
        let longer = parse_str(&text.replace("\"output_length\":", "\"output_length\":100"), ParseOptions::default())
            .unwrap()
            .trace;
        let r = fidelity_report(&t, &longer, 4);
        assert_eq!(r.metric("osl").unwrap().ks_distance, Some(1.0));
        assert_eq!(r.metric("isl").unwrap().ks_distance, Some(0.0));
        assert!(r.to_table().contains("requests_per_second"));
    }
}
