//! The sweep's table of every combination: CSV, console text and JSON.

use super::args::Args;
use super::calibration::{calibration_json, step_calibration_json};
use aiperf_core::simulate::calibrate::Calibration;
use aiperf_core::simulate::calibrate::steps::StepCalibration;
use aiperf_core::simulate::{Cluster, Simulation};
use serde_json::json;

/// The sweep's tables in --output-dir.
pub(super) const SUMMARY_CSV: &str = "simulate_summary.csv";
pub(super) const SUMMARY_JSON: &str = "simulate_summary.json";

/// One combination's numbers, for the sweep table.
pub(super) struct Row {
    pub(super) name: String,
    pub(super) cluster: Cluster,
    pub(super) calibration: Option<Calibration>,
    pub(super) step_calibration: Option<StepCalibration>,
    pub(super) sim: Simulation,
    pub(super) ttft_ms: [f64; 2],
    pub(super) latency_ms: [f64; 2],
}

/// The sweep's table: CSV, console text and JSON.
pub(super) fn sweep_summary(rows: &[Row], args: &Args) -> (String, String, String) {
    let header = [
        "run",
        "replicas",
        "kv_blocks",
        "router",
        "policy",
        "requests",
        "token_hit_rate",
        "row_hit_rate",
        "ttft_p50_ms",
        "ttft_p99_ms",
        "latency_p50_ms",
        "latency_p99_ms",
        "imbalance",
        "evictions",
    ];
    let mut csv = header.join(",") + "\n";
    let mut table = format!(
        "{:<36} {:>8} {:>8} {:>8} {:>11} {:>11} {:>9} {:>10}\n",
        "run", "requests", "tok hit", "row hit", "TTFT p50ms", "TTFT p99ms", "imbalance", "evictions"
    );
    let mut json = Vec::new();
    for r in rows {
        let t = r.sim.total();
        let c = &r.cluster;
        let kv = c.kv_blocks.map_or("unbounded".to_owned(), |b| b.to_string());
        csv += &format!(
            "{},{},{},{},{},{},{:.6},{:.6},{:.3},{:.3},{:.3},{:.3},{:.4},{}\n",
            r.name,
            c.replicas,
            kv,
            c.router.name(),
            c.policy.name(),
            t.requests,
            t.token_hit_rate(),
            t.row_hit_rate(),
            r.ttft_ms[0],
            r.ttft_ms[1],
            r.latency_ms[0],
            r.latency_ms[1],
            r.sim.imbalance(),
            t.evictions
        );
        table += &format!(
            "{:<36} {:>8} {:>7.2}% {:>7.2}% {:>11.1} {:>11.1} {:>9.3} {:>10}\n",
            r.name,
            t.requests,
            t.token_hit_rate() * 100.0,
            t.row_hit_rate() * 100.0,
            r.ttft_ms[0],
            r.ttft_ms[1],
            r.sim.imbalance(),
            t.evictions
        );
        let mut row = json!({
            "run": r.name,
            "replicas": c.replicas,
            "kv_blocks": c.kv_blocks,
            "router": c.router.name(),
            "policy": c.policy.name(),
            "requests": t.requests,
            "token_hit_rate": t.token_hit_rate(),
            "row_hit_rate": t.row_hit_rate(),
            "ttft_p50_ms": r.ttft_ms[0],
            "ttft_p99_ms": r.ttft_ms[1],
            "latency_p50_ms": r.latency_ms[0],
            "latency_p99_ms": r.latency_ms[1],
            "imbalance": r.sim.imbalance(),
            "evictions": t.evictions,
        });
        if let Some(c) = &r.calibration {
            row["calibration"] = calibration_json(c, args);
        }
        if let Some(c) = &r.step_calibration {
            row["step_calibration"] = step_calibration_json(c, args);
        }
        if c.steps.is_some() {
            row["preemptions"] = json!(t.preemptions);
        }
        json.push(row);
    }
    let json = serde_json::to_string_pretty(&json).unwrap_or_default();
    (csv, table.trim_end().to_owned(), json)
}
