//! Runs side by side: the key numbers of 2–8 runs, each with its change against a baseline run
//! (absolute and %), and the `input_config` entries that differ between them. Formats: a console
//! table, JSON and CSV.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::csv;
use crate::results::aggregate::Report;
use crate::results::metrics::Metric;
use crate::server::gpu::{DcgmField, EnergyMetric, TelemetryExport};

use super::run::Run;

/// One row: a number of every run.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    pub unit: &'static str,
    pub values: Vec<Option<f64>>,
}

impl Row {
    /// Change of run `i` against the baseline: (absolute, % when the baseline is not 0).
    pub fn change(&self, i: usize, baseline: usize) -> Option<(f64, Option<f64>)> {
        let (v, b) = (self.values.get(i).copied().flatten()?, self.values.get(baseline).copied().flatten()?);
        Some((v - b, (b != 0.0).then(|| (v - b) / b * 100.0)))
    }
}

/// The comparison of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub labels: Vec<String>,
    pub baseline: usize,
    pub rows: Vec<Row>,
    /// `input_config` keys whose values differ, with each run's value (JSON text, `-` if absent).
    pub config_diff: Vec<(String, Vec<String>)>,
}

const KEY_METRICS: [Metric; 5] = [
    Metric::TimeToFirstToken,
    Metric::InterTokenLatency,
    Metric::RequestLatency,
    Metric::OutputTokenThroughputPerUser,
    Metric::SendLateness,
];

/// The rows of one report, in comparison order; `overflows`: with the context overflow count
/// (shown when a run compared has failed requests, as AIPerf shows it).
fn rows_of(r: &Report, overflows: bool) -> Vec<(String, &'static str, Option<f64>)> {
    let mut out = vec![
        ("Request count".to_string(), "requests", Some(r.request_count as f64)),
        ("Error request count".to_string(), "requests", Some(r.error_request_count as f64)),
    ];
    if overflows {
        out.push(("Context overflow count".to_string(), "requests", Some(r.context_overflow_count as f64)));
    }
    out.extend([
        ("Benchmark duration".to_string(), "sec", Some(r.benchmark_duration_s)),
        ("Request throughput".to_string(), "requests/sec", Some(r.request_throughput)),
        ("Output token throughput".to_string(), "tokens/sec", Some(r.output_token_throughput)),
        ("Goodput".to_string(), "requests/sec", r.goodput),
    ]);
    for m in KEY_METRICS {
        let d = r.get(m);
        for (p, name) in [(50.0, "p50"), (90.0, "p90"), (99.0, "p99")] {
            out.push((format!("{} {name}", m.header()), m.unit(), d.and_then(|d| d.percentile(p))));
        }
        out.push((format!("{} avg", m.header()), m.unit(), d.map(|d| d.avg)));
    }
    out.push(("Cache hit rate (server)".to_string(), "ratio", r.cache_hit_rate));
    out
}

/// The GPU rows of a run's telemetry: each GPU's DCGM gauges (avg) and counters (their rise),
/// named by GPU index (and endpoint when the run scraped several).
fn gpu_rows(t: &TelemetryExport) -> Vec<(String, &'static str, Option<f64>)> {
    let several = t.endpoints.len() > 1;
    let mut out = Vec::new();
    for (endpoint, gpus) in &t.endpoints {
        for g in gpus {
            let who = if several { format!("{endpoint} GPU {}", g.index) } else { format!("GPU {}", g.index) };
            for (field, s) in &g.metrics {
                let Some(d) = DcgmField::of_field(field) else {
                    continue;
                };
                let what = if d.is_counter() { "rise" } else { "avg" };
                out.push((format!("{who} {} {what}", d.short()), d.unit, s.avg));
            }
        }
    }
    out
}

/// The network-adjusted rows of a run (`--network-latency-*`): the round trip subtracted and the
/// adjusted latencies at p50, p90, p99 and avg, as the key metrics; none without them.
fn network_rows(r: &Report) -> Vec<(String, &'static str, Option<f64>)> {
    let mut out = Vec::new();
    if let Some(d) = r.get(Metric::NetworkRtt) {
        out.push((format!("{} avg", Metric::NetworkRtt.header()), Metric::NetworkRtt.unit(), Some(d.avg)));
    }
    for m in [Metric::NetworkAdjustedTimeToFirstToken, Metric::NetworkAdjustedRequestLatency] {
        if let Some(d) = r.get(m) {
            for (p, name) in [(50.0, "p50"), (90.0, "p90"), (99.0, "p99")] {
                out.push((format!("{} {name}", m.header()), m.unit(), d.percentile(p)));
            }
            out.push((format!("{} avg", m.header()), m.unit(), Some(d.avg)));
        }
    }
    out
}

/// The GPU energy-efficiency rows of a run: each metric named by its header and vendor.
fn energy_rows(metrics: &[EnergyMetric]) -> Vec<(String, &'static str, Option<f64>)> {
    metrics
        .iter()
        .map(|e| (format!("{} ({})", e.metric.header, e.vendor.to_uppercase()), e.metric.unit, Some(e.value)))
        .collect()
}

/// Compares runs against `runs[baseline]` (clamped into range).
pub fn compare(runs: &[&Run], baseline: usize) -> Comparison {
    let baseline = baseline.min(runs.len().saturating_sub(1));
    let overflows = runs.iter().any(|r| r.report.error_request_count > 0);
    let per: Vec<_> = runs.iter().map(|r| rows_of(&r.report, overflows)).collect();
    let mut rows: Vec<Row> = per
        .first()
        .map(|first| first.iter().map(|(n, u, _)| Row { name: n.clone(), unit: u, values: Vec::new() }).collect())
        .unwrap_or_default();
    for run_rows in &per {
        for (row, (_, _, v)) in rows.iter_mut().zip(run_rows) {
            row.values.push(*v);
        }
    }
    // The network-adjusted latencies, the GPUs of each run and their energy efficiency, by name:
    // runs without them (or that scraped other GPUs) have no value there.
    for (i, run) in runs.iter().enumerate() {
        let gpus = run.gpus.as_ref().map(gpu_rows).unwrap_or_default();
        let extra = network_rows(&run.report).into_iter().chain(gpus).chain(energy_rows(&run.gpu_energy));
        for (name, unit, v) in extra {
            let row = match rows.iter().position(|r| r.name == name && r.unit == unit) {
                Some(at) => &mut rows[at],
                None => {
                    rows.push(Row { name, unit, values: vec![None; runs.len()] });
                    let last = rows.len() - 1;
                    &mut rows[last]
                }
            };
            row.values.resize(runs.len(), None);
            row.values[i] = v;
        }
    }
    rows.retain(|r| r.values.iter().any(Option::is_some));
    Comparison {
        labels: runs.iter().map(|r| r.label.clone()).collect(),
        baseline,
        rows,
        config_diff: config_diff(&runs.iter().map(|r| &r.settings.input_config).collect::<Vec<_>>()),
    }
}

fn config_diff(configs: &[&Value]) -> Vec<(String, Vec<String>)> {
    let keys: BTreeSet<&String> = configs.iter().filter_map(|c| c.as_object()).flat_map(|o| o.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let vals: Vec<String> =
                configs.iter().map(|c| c.get(k.as_str()).map_or_else(|| "-".to_string(), Value::to_string)).collect();
            vals.iter().any(|v| *v != vals[0]).then(|| (k.clone(), vals))
        })
        .collect()
}

/// A number for a table: 2 decimals, integers without.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v:.2}") }
}

fn change_text(c: Option<(f64, Option<f64>)>) -> String {
    match c {
        Some((d, Some(p))) => format!("{d:+.2} ({p:+.1}%)"),
        Some((d, None)) => format!("{d:+.2}"),
        None => "-".into(),
    }
}

impl Comparison {
    /// The console table: each run's value, and for the others the change against the baseline;
    /// every column as wide as its widest cell, so long metric names and labels keep it aligned.
    pub fn table(&self) -> String {
        let mut head = vec!["Metric".to_owned()];
        for (i, l) in self.labels.iter().enumerate() {
            head.push(if i == self.baseline { format!("{l} (baseline)") } else { l.clone() });
        }
        let mut grid = vec![head];
        for r in &self.rows {
            let mut line = vec![format!("{} ({})", r.name, r.unit)];
            for (i, v) in r.values.iter().enumerate() {
                line.push(match v {
                    Some(v) if i == self.baseline => num(*v),
                    Some(v) => format!("{} {}", num(*v), change_text(r.change(i, self.baseline))),
                    None => "-".into(),
                });
            }
            grid.push(line);
        }
        let columns = grid.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| grid.iter().filter_map(|l| l.get(c)).map(|t| t.chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for line in &grid {
            let mut text = String::new();
            for (c, cell) in line.iter().enumerate() {
                let pad = widths[c].saturating_sub(cell.chars().count());
                if c == 0 {
                    let _ = write!(text, "{cell}{}", " ".repeat(pad));
                } else {
                    let _ = write!(text, "  {}{cell}", " ".repeat(pad));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        if !self.config_diff.is_empty() {
            out.push_str("\nDiffering input_config entries:\n");
            for (k, vals) in &self.config_diff {
                let _ = writeln!(out, "  {k}: {}", vals.join(" | "));
            }
        }
        out
    }

    /// JSON: labels, baseline, rows with values and changes, config differences.
    pub fn json(&self) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let changes: Vec<Value> = (0..r.values.len())
                    .map(|i| match r.change(i, self.baseline) {
                        Some((d, p)) => json!({"absolute": d, "percent": p}),
                        None => Value::Null,
                    })
                    .collect();
                json!({"metric": r.name, "unit": r.unit, "values": r.values, "change_vs_baseline": changes})
            })
            .collect();
        let diff: Vec<Value> = self.config_diff.iter().map(|(k, v)| json!({"key": k, "values": v})).collect();
        let mut s = serde_json::to_string_pretty(&json!({
            "runs": self.labels,
            // 1-based, as `--baseline` counts the runs on the command line.
            "baseline": self.baseline + 1,
            "rows": rows,
            "differing_input_config": diff,
        }))
        .unwrap_or_default();
        s.push('\n');
        s
    }

    /// CSV: one row per metric, a value column per run and a change column per non-baseline run.
    pub fn csv(&self) -> String {
        let q = csv::quoted;
        let mut out = String::from("metric,unit");
        for l in &self.labels {
            let _ = write!(out, ",{}", q(l));
        }
        for (i, l) in self.labels.iter().enumerate() {
            if i != self.baseline {
                let _ = write!(out, ",{},{}", q(&format!("{l} change")), q(&format!("{l} change %")));
            }
        }
        out.push('\n');
        for r in &self.rows {
            let _ = write!(out, "{},{}", q(&r.name), r.unit);
            for v in &r.values {
                csv::push_cell(&mut out, *v);
            }
            for i in (0..r.values.len()).filter(|&i| i != self.baseline) {
                let (d, p) = r.change(i, self.baseline).map_or((None, None), |(d, p)| (Some(d), p));
                csv::push_cell(&mut out, d);
                csv::push_cell(&mut out, p);
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::tests::run_of;
    use super::*;

    #[test]
    fn changes_against_the_baseline() {
        let mut a = run_of(30, "a");
        let mut b = run_of(60, "b");
        a.settings.input_config = json!({"model": "m", "request_rate": 1.0, "api_key": null});
        b.settings.input_config = json!({"model": "m", "request_rate": 2.0});
        let c = compare(&[&a, &b], 0);
        assert_eq!(c.labels, vec!["a", "b"]);
        let count = c.rows.iter().find(|r| r.name == "Request count").unwrap();
        let (na, nb) = (a.report.request_count as f64, b.report.request_count as f64);
        assert_eq!(count.values, vec![Some(na), Some(nb)]);
        assert_eq!(count.change(1, 0), Some((nb - na, Some((nb - na) / na * 100.0))));
        assert_eq!(count.change(0, 0), Some((0.0, Some(0.0))));
        assert_eq!(
            c.config_diff,
            vec![
                ("api_key".to_string(), vec!["null".to_string(), "-".to_string()]),
                ("request_rate".to_string(), vec!["1.0".to_string(), "2.0".to_string()])
            ]
        );
        let t = c.table();
        assert!(t.contains("b (baseline)") || t.contains("a (baseline)"));
        assert!(t.contains("request_rate: 1.0 | 2.0"), "{t}");
        let j: Value = serde_json::from_str(&c.json()).unwrap();
        assert_eq!(j["rows"][0]["values"][1], json!(nb));
        let csv = c.csv();
        assert!(csv.starts_with("metric,unit,\"a\",\"b\",\"b change\",\"b change %\"\n"), "{csv}");
        assert_eq!(csv.lines().count(), c.rows.len() + 1);
        // Baseline out of range is clamped.
        assert_eq!(compare(&[&a, &b], 7).baseline, 1);
    }

    #[test]
    fn gpus_are_rows_by_name_and_a_run_without_one_has_none() {
        use crate::server::gpu::{GpuExport, GpuStats};
        let gpu = |index: u32, power: f64| GpuExport {
            index,
            name: "H100".into(),
            uuid: format!("GPU-{index}"),
            platform: "nvidia".into(),
            hostname: None,
            namespace: None,
            pod_name: None,
            metrics: vec![
                ("nvidia_power_usage".into(), GpuStats { unit: "W".into(), avg: Some(power), ..GpuStats::default() }),
                ("nvidia_xid_errors".into(), GpuStats { unit: "count".into(), avg: Some(0.0), ..GpuStats::default() }),
                ("amd_power".into(), GpuStats { unit: "W".into(), avg: Some(1.0), ..GpuStats::default() }),
            ],
        };
        let telemetry = |gpus: Vec<GpuExport>| TelemetryExport {
            endpoints_configured: Vec::new(),
            endpoints_successful: Vec::new(),
            start_time: String::new(),
            end_time: String::new(),
            endpoints: vec![("node:9400".into(), gpus)],
        };
        let mut a = run_of(10, "a");
        let mut b = run_of(10, "b");
        let c = run_of(10, "c");
        a.gpus = Some(telemetry(vec![gpu(0, 300.0)]));
        b.gpus = Some(telemetry(vec![gpu(1, 200.0), gpu(0, 250.0)]));
        let cmp = compare(&[&a, &b, &c], 0);
        let row = |n: &str| cmp.rows.iter().find(|r| r.name == n).unwrap();
        assert_eq!(row("GPU 0 Power Usage avg").values, vec![Some(300.0), Some(250.0), None]);
        assert_eq!(row("GPU 0 Power Usage avg").unit, "W");
        assert_eq!(row("GPU 1 Power Usage avg").values, vec![None, Some(200.0), None]);
        assert_eq!(row("GPU 0 XID Errors rise").values, vec![Some(0.0), Some(0.0), None]);
        assert!(cmp.rows.iter().all(|r| !r.name.contains("AMD") && r.values.len() == 3));
        // Without GPUs, no GPU row.
        assert!(compare(&[&c], 0).rows.iter().all(|r| !r.name.starts_with("GPU")));
        // The energy efficiency: a row per metric and vendor.
        let (vendor, metric) = EnergyMetric::of_tag("nvidia_energy_per_output_token").unwrap();
        b.gpu_energy = vec![EnergyMetric { vendor, metric, value: 12.5 }];
        let cmp = compare(&[&a, &b], 0);
        let row = cmp.rows.iter().find(|r| r.name == "Energy per Output Token (NVIDIA)").unwrap();
        assert_eq!((row.unit, row.values.clone()), ("mJ/token", vec![None, Some(12.5)]));
    }

    #[test]
    fn network_adjusted_rows_come_with_the_runs_that_have_them() {
        let a = run_of(10, "a");
        // The round trip read from a summary: the adjusted metrics taken again from the records.
        let text = {
            let records: Vec<_> = (0..10).map(|i| super::super::tests::record(i, i % 9 == 8)).collect();
            super::super::tests::jsonl(&records, true, &[]).0
        };
        let settings = crate::view::RunSettings::from_summary_json(
            "s.json",
            r#"{"input_config": {}, "network_rtt": {"unit": "ms", "avg": 2.5}}"#,
        )
        .unwrap();
        assert_eq!(settings.network_rtt_ms, Some(2.5));
        let b = Run::from_jsonl("b", "profile_export.jsonl", &text, settings).unwrap();
        let ttft = b.report.get(Metric::TimeToFirstToken).unwrap();
        let adjusted = b.report.get(Metric::NetworkAdjustedTimeToFirstToken).unwrap();
        assert!((ttft.min - 2.5 - adjusted.min).abs() < 1e-9, "{} {}", ttft.min, adjusted.min);
        let cmp = compare(&[&a, &b], 0);
        let row = |n: &str| cmp.rows.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("no row {n}"));
        assert_eq!(row("Network RTT avg").values, vec![None, Some(2.5)]);
        assert_eq!(row("Network-Adjusted Time to First Token p50").values[0], None);
        assert_eq!(
            row("Network-Adjusted Request Latency avg").values[1],
            Some(b.report.get(Metric::NetworkAdjustedRequestLatency).unwrap().avg)
        );
        // Without them, no such row.
        assert!(compare(&[&a], 0).rows.iter().all(|r| !r.name.starts_with("Network")));
    }
}
