//! A run's summary file, `profile_export_aiperf.json` (ours or AIPerf's), read back: the
//! [`RunSettings`] its options give, its GPUs' `telemetry_data` and energy-efficiency metrics.

use serde_json::Value;

use super::error::RunError;
use crate::results::metrics::{Metric, Slo, parse_goodput};
use crate::server::gpu::{EnergyMetric, TelemetryExport};

/// How the run counted and judged requests, from its options (`aiperf_cli_config`, or AIPerf's
/// `input_config`).
#[derive(Clone, Debug, PartialEq)]
pub struct RunSettings {
    /// Output/input lengths from the server's usage when it reported them (the CLI's default).
    pub server_token_count: bool,
    pub slos: Vec<Slo>,
    /// The options object: ours (`aiperf_cli_config`) or AIPerf's `input_config` (`Value::Null`
    /// without the summary file).
    pub input_config: Value,
    /// The summary's `start_time` and `end_time` (Unix ns, read as UTC): AIPerf's profiling
    /// phase, over which its time-weighted metrics are weighed. Used for a run whose records it
    /// holds (AIPerf's wall-clock records; not ours, timed from the run's start).
    pub phase_window_ns: Option<(u64, u64)>,
    /// The mean network round trip (ms) the run subtracted (`network_rtt` of the summary): the
    /// `network_adjusted_*` metrics are taken again from the records with it.
    pub network_rtt_ms: Option<f64>,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            server_token_count: true,
            slos: Vec::new(),
            input_config: Value::Null,
            phase_window_ns: None,
            network_rtt_ms: None,
        }
    }
}

impl RunSettings {
    /// Settings from the text of `profile_export_aiperf.json`.
    pub fn from_summary_json(file: &str, text: &str) -> Result<RunSettings, RunError> {
        let err = |reason: String| RunError::Config { file: file.into(), reason };
        let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
        // Ours keep their options under `aiperf_cli_config` (beside AIPerf's `input_config`);
        // AIPerf's runs and ours written before that have only `input_config`.
        let key = if v.get("aiperf_cli_config").is_some() { "aiperf_cli_config" } else { "input_config" };
        let config = v.get(key).cloned().ok_or_else(|| err("no input_config object".into()))?;
        if !config.is_object() {
            return Err(err(format!("{key} is not an object")));
        }
        let mut slos = match config.get("goodput") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => parse_goodput(s).map_err(|e| err(format!("{key}.goodput: {e}")))?,
            Some(other) => return Err(err(format!("{key}.goodput: expected a string, found {other}"))),
        };
        // AIPerf's: `slos` as {metric: threshold}; a metric this tool does not judge is left out.
        if let Some(Value::Object(m)) = config.get("slos") {
            slos.extend(m.iter().filter_map(|(tag, v)| {
                Some(Slo { metric: Metric::from_tag(tag)?, threshold: v.as_f64().filter(|t| *t >= 0.0)? })
            }));
        }
        let server_token_count = match (config.get("client_token_count"), config.get("endpoint")) {
            (Some(client), _) => client.as_bool() != Some(true),
            // AIPerf counts with the client's tokenizer unless --use-server-token-count.
            (None, Some(endpoint)) => endpoint.get("use_server_token_count").and_then(Value::as_bool) == Some(true),
            (None, None) => true,
        };
        let at = |k: &str| {
            let t = crate::datetime::parse_datetime(v.get(k)?.as_str()?)?;
            u64::try_from(t.unix_ns).ok()
        };
        let phase_window_ns = at("start_time").zip(at("end_time")).filter(|(a, b)| b > a);
        let network_rtt_ms = v
            .get("network_rtt")
            .and_then(|m| m.get("avg"))
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms > 0.0);
        Ok(RunSettings { server_token_count, slos, input_config: config, phase_window_ns, network_rtt_ms })
    }

    /// The run's `--slice-duration` (s), when it had one (AIPerf keeps it under `artifacts`).
    pub fn slice_duration_s(&self) -> Option<f64> {
        let c = &self.input_config;
        c.get("slice_duration")
            .or_else(|| c.get("artifacts").and_then(|a| a.get("slice_duration")))
            .and_then(Value::as_f64)
            .filter(|w| *w >= 0.001 && w.is_finite())
    }
}

/// The `telemetry_data` of a `profile_export_aiperf.json` text (ours or AIPerf's), when it has
/// one with at least one GPU.
pub fn gpu_telemetry_of_summary(file: &str, text: &str) -> Result<Option<TelemetryExport>, RunError> {
    let err = |reason: String| RunError::Config { file: file.into(), reason };
    let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
    match v.get("telemetry_data") {
        None | Some(Value::Null) => Ok(None),
        Some(t) => {
            let t = TelemetryExport::from_json(t).map_err(err)?;
            Ok(t.endpoints.iter().any(|(_, gpus)| !gpus.is_empty()).then_some(t))
        }
    }
}

/// AIPerf's GPU energy-efficiency metrics (`nvidia_*`, `amd_*`) of a `profile_export_aiperf.json`
/// text (ours or AIPerf's), in its order; none when it has none.
pub fn gpu_energy_of_summary(file: &str, text: &str) -> Result<Vec<EnergyMetric>, RunError> {
    let err = |reason: String| RunError::Config { file: file.into(), reason };
    let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
    EnergyMetric::of_summary(&v).map_err(err)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn our_options_are_read_from_aiperf_cli_config_beside_aiperfs_input_config() {
        let cfg = r#"{"input_config": {"endpoint": {"urls": ["http://h"]}, "artifacts": {"slice_duration": 9.0}},
            "aiperf_cli_config": {"goodput": "time_to_first_token:30", "client_token_count": true, "slice_duration": 0.5}}"#;
        let s = RunSettings::from_summary_json("x.json", cfg).unwrap();
        assert!(!s.server_token_count);
        assert_eq!(s.slos.len(), 1);
        assert_eq!(s.slice_duration_s(), Some(0.5));
        let e =
            RunSettings::from_summary_json("c.json", r#"{"input_config": {}, "aiperf_cli_config": 3}"#).unwrap_err();
        assert!(e.to_string().contains("c.json: aiperf_cli_config is not an object"), "{e}");
    }
}
