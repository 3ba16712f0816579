//! Human-readable reports: the analysis header and the aligned statistics table.

use std::fmt::Write as _;

use super::lint::Lint;
use super::model::Analysis;
pub use super::text::{group_thousands, table};
use crate::stats::Summary;

fn stats_row(name: &str, s: Option<&Summary>, decimals: usize) -> Vec<String> {
    let mut row = vec![name.to_string()];
    match s {
        Some(s) => row.extend(
            [s.mean, s.std_dev, s.min, s.p25, s.median, s.p75, s.max].iter().map(|v| group_thousands(*v, decimals)),
        ),
        None => row.extend(std::iter::repeat_n("–".to_string(), 7)),
    }
    row
}

/// The console report of `analyze-trace`: totals, then the statistics table, then our extras.
pub fn analysis_report(a: &Analysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Trace Analysis Report (block size {})", a.block_size);
    kv(&mut out, "Total requests:", group_thousands(a.total_requests as f64, 0));
    kv(&mut out, "Unique prefixes:", group_thousands(a.unique_prefixes as f64, 0));
    kv(&mut out, "Prefix groups:", group_thousands(a.num_prefix_groups as f64, 0));
    if a.prefix_information {
        kv(&mut out, "Cache hit rate:", format!("{:.2}% (theoretical, infinite cache)", a.cache_hit_rate * 100.0));
    } else {
        kv(&mut out, "Cache hit rate:", "n/a: no prefix information (no row has hash_ids)".into());
    }
    kv(&mut out, "Prefix reuse ratio:", format!("{:.2}%", a.prefix_reuse_ratio * 100.0));
    out.push('\n');
    let header = ["Metric", "Mean", "Std Dev", "Min", "P25", "Median", "P75", "Max"];
    let rows = vec![
        stats_row("Input Length", a.isl_stats.as_ref(), 2),
        stats_row("Context Length", a.context_length_stats.as_ref(), 2),
        stats_row("Unique Prompt Length", a.unique_prompt_length_stats.as_ref(), 2),
        stats_row("Output Length", a.osl_stats.as_ref(), 2),
        stats_row("Theoretical Hit Rates", a.hit_rate_stats.as_ref(), 2),
    ];
    out.push_str(&table(&header, &rows));
    if let Some(arr) = &a.arrivals {
        out.push('\n');
        let _ = writeln!(out, "Arrivals");
        kv(&mut out, "Duration:", format!("{} s", group_thousands(arr.duration_s, 1)));
        kv(&mut out, "Mean rate:", format!("{} req/s", group_thousands(arr.mean_rate_per_s, 2)));
        kv(
            &mut out,
            "Peak rate:",
            format!(
                "{} req in 1 s, {} req/s over 10 s",
                arr.peak_requests_1s,
                group_thousands(arr.peak_rate_10s_per_s, 1)
            ),
        );
        if let Some(g) = &arr.inter_arrival_ms {
            kv(
                &mut out,
                "Inter-arrival (ms):",
                format!(
                    "median {}, p75 {}, max {}",
                    group_thousands(g.median, 1),
                    group_thousands(g.p75, 1),
                    group_thousands(g.max, 1)
                ),
            );
        }
        kv(
            &mut out,
            "Same-ms bursts:",
            format!("{} requests, largest {}", group_thousands(arr.same_ms_requests as f64, 0), arr.largest_burst),
        );
        if arr.sessions > 0 {
            let turns = arr.turns_per_session.map_or(0.0, |t| t.mean);
            kv(
                &mut out,
                "Sessions:",
                format!("{} ({:.2} turns each on average)", group_thousands(arr.sessions as f64, 0), turns),
            );
        }
    }
    if a.lru_hit_rate_curve.len() > 1 {
        out.push('\n');
        let _ = writeln!(out, "LRU prefix cache what-if (hit rate by capacity)");
        let n = a.lru_hit_rate_curve.len();
        // A handful of points spread over the curve, always including the unbounded cache.
        let picks: Vec<usize> = (0..6).map(|k| k * (n - 1) / 6).chain([n - 2, n - 1]).collect();
        let mut rows = Vec::new();
        let mut last = usize::MAX;
        for i in picks {
            if i == last {
                continue;
            }
            last = i;
            let p = &a.lru_hit_rate_curve[i];
            let (blocks, tokens) = match p.capacity_blocks {
                Some(c) => (group_thousands(c as f64, 0), group_thousands(c as f64 * f64::from(a.block_size), 0)),
                None => ("unbounded".into(), "–".into()),
            };
            rows.push(vec![blocks, tokens, format!("{:.2}%", p.hit_rate * 100.0)]);
        }
        out.push_str(&table(&["Blocks", "Tokens", "Hit rate"], &rows));
    }
    out.push('\n');
    out.push_str(&lint_report(&a.lint));
    out
}

/// One `  key   value` line of the report.
fn kv(out: &mut String, k: &str, v: String) {
    let _ = writeln!(out, "  {k:<22}{v}");
}

/// The lint findings as the report's last section (`Lint: no problems found` when there are none).
pub fn lint_report(l: &Lint) -> String {
    let mut out = String::new();
    if l.total() == 0 {
        let _ = writeln!(out, "Lint: no problems found");
    } else {
        let _ = writeln!(out, "Lint");
        let mut finding = |name: &str, f: &crate::analysis::LintFinding| {
            if f.count > 0 {
                let lines = f.first_lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ");
                kv(
                    &mut out,
                    name,
                    format!(
                        "{} rows (lines {}{})",
                        f.count,
                        lines,
                        if f.count > f.first_lines.len() as u64 { ", …" } else { "" }
                    ),
                );
            }
        };
        finding("Block/length mismatch:", &l.block_length_mismatch);
        finding("Input length < 1:", &l.non_positive_input_length);
        finding("Out-of-order times:", &l.non_monotonic_timestamps);
        finding("Repeated session turn:", &l.duplicate_session_turns);
        if l.ids_at_several_positions > 0 {
            kv(&mut out, "Ids at 2+ positions:", group_thousands(l.ids_at_several_positions as f64, 0));
        }
        if let Some(s) = &l.timestamps_look_like_seconds {
            kv(&mut out, "Seconds, not ms?", s.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(group_thousands(12813.1, 2), "12,813.10");
        assert_eq!(group_thousands(-1234567.0, 0), "-1,234,567");
        assert_eq!(group_thousands(999.999, 2), "1,000.00");
        assert_eq!(group_thousands(-0.001, 2), "0.00");
        assert_eq!(group_thousands(0.26, 2), "0.26");
    }

    #[test]
    fn table_aligns_columns() {
        let t =
            table(&["Metric", "Mean"], &[vec!["A".into(), "1.00".into()], vec!["Longer".into(), "12,345.00".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Metric       Mean");
        assert_eq!(lines[2], "A            1.00");
        assert_eq!(lines[3], "Longer  12,345.00");
    }
}
