//! The run read back: [`Run`], one compact [`Point`] a request, and the limits of reading one.

use super::server::ServerTimeline;
use super::summary::RunSettings;
use crate::results::aggregate::Report;
use crate::server::gpu::{EnergyMetric, TelemetryExport};

/// Longest line accepted in `profile_export.jsonl`.
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// Most runs shown or compared at once.
pub const MAX_RUNS: usize = 8;
/// The summary file read beside the records.
pub const CONFIG_FILE: &str = "profile_export_aiperf.json";

/// No value (for the optional numbers of a [`Point`]).
pub const NONE: u32 = u32::MAX;

/// One request, compact: what the charts and the record-on-click need.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    pub trace_line: u32,
    pub session_num: u32,
    pub turn: u32,
    /// Index in [`Run::sessions`] or [`NONE`].
    pub session: u32,
    /// The session run (instance of a session) the request belongs to, numbered in order of
    /// first appearance: one per distinct correlation id (else session id), or [`NONE`].
    pub instance: u32,
    pub scheduled_ns: u64,
    pub sent_ns: u64,
    pub end_ns: u64,
    /// NaN when the request has no such metric.
    pub ttft_ms: f32,
    pub latency_ms: f32,
    pub itl_ms: f32,
    /// Token counts as the summary counted them, or [`NONE`].
    pub isl: u32,
    pub osl: u32,
    pub cached: u32,
    pub expected_cached: u32,
    /// Index in [`Run::failures`] or [`NONE`] when the request succeeded.
    pub error: u32,
}

impl Point {
    pub fn ok(&self) -> bool {
        self.error == NONE
    }

    /// Milliseconds from the scheduled time to the send.
    pub fn lateness_ms(&self) -> f64 {
        self.sent_ns.saturating_sub(self.scheduled_ns) as f64 / 1e6
    }
}

pub(crate) fn opt(v: Option<u64>) -> u32 {
    v.map_or(NONE, |n| n.min(u64::from(NONE - 1)) as u32)
}

pub(crate) fn opt_ms(v: Option<f64>) -> f32 {
    v.map_or(f32::NAN, |x| x as f32)
}

/// A loaded run.
#[derive(Clone, Debug)]
pub struct Run {
    /// Shown name (folder or file name by default).
    pub label: String,
    pub settings: RunSettings,
    pub report: Report,
    pub points: Vec<Point>,
    /// Distinct session ids.
    pub sessions: Vec<String>,
    /// (kind, message) of every failed request.
    pub failures: Vec<(String, String)>,
    /// The server's own metrics over the run, when its `server_metrics_export.json` was read.
    pub server: Option<ServerTimeline>,
    /// The GPUs of the DCGM exporters scraped during the run: its summary's `telemetry_data`
    /// ([`gpu_telemetry_of_summary`]).
    pub gpus: Option<TelemetryExport>,
    /// AIPerf's GPU energy-efficiency metrics of its summary ([`gpu_energy_of_summary`]).
    pub gpu_energy: Vec<EnergyMetric>,
}

impl Run {
    /// The request's record as shown on click: `key: value` lines.
    pub fn describe(&self, i: usize) -> Option<String> {
        self.describe_from(i, self.t0_ns())
    }

    /// [`describe`](Self::describe) with times from `t0` (ns; [`Run::t0_ns`], computed once by
    /// callers describing many requests).
    pub fn describe_from(&self, i: usize, t0: u64) -> Option<String> {
        let p = self.points.get(i)?;
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut out = format!("request #{} of {}\ntrace line: {}\n", i + 1, self.label, p.trace_line);
        if let Some(s) = self.sessions.get(p.session as usize) {
            out.push_str(&format!("session: {s}\n"));
        }
        out.push_str(&format!("session run: {}, turn: {}\n", p.session_num, p.turn));
        out.push_str(&format!(
            "scheduled: {:.3} ms, sent: {:.3} ms (lateness {:.3} ms), end: {:.3} ms (from the first send)\n",
            ms(p.scheduled_ns) - ms(t0),
            ms(p.sent_ns) - ms(t0),
            p.lateness_ms(),
            ms(p.end_ns) - ms(t0)
        ));
        for (name, v) in [("TTFT", p.ttft_ms), ("request latency", p.latency_ms), ("ITL", p.itl_ms)] {
            if !v.is_nan() {
                out.push_str(&format!("{name}: {v:.3} ms\n"));
            }
        }
        for (name, v) in [
            ("ISL", p.isl),
            ("OSL", p.osl),
            ("cached tokens (server)", p.cached),
            ("expected cached", p.expected_cached),
        ] {
            if v != NONE {
                out.push_str(&format!("{name}: {v}\n"));
            }
        }
        match self.failures.get(p.error as usize) {
            Some((kind, message)) => out.push_str(&format!("error: {kind}: {message}\n")),
            None => out.push_str("outcome: completed\n"),
        }
        Some(out)
    }

    /// The benchmark start: the earliest send (ns from the run's clock origin).
    pub fn t0_ns(&self) -> u64 {
        self.points.iter().map(|p| p.sent_ns).min().unwrap_or(0)
    }
}

/// A run's default label: the folder holding `profile_export.jsonl`, else the file name.
pub fn default_label(path: &str) -> String {
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [.., dir, file] if file.ends_with(".jsonl") => (*dir).to_string(),
        [.., last] => (*last).to_string(),
        [] => "run".into(),
    }
}
