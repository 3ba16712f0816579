//! [`RunSummary`]: everything known at the end of a run, which the exports serialize.

use serde_json::Value;

use crate::replay::sharding::Sharding;
use crate::results::aggregate::Report;
use crate::server::gpu::{EnergyMetric, TelemetryExport};
use crate::server::kinds::ServerView;

/// Everything known at the end of a run. What a command has no part of stays at its default
/// (`..RunSummary::default()`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    pub report: Report,
    /// The run's id (AIPerf's `benchmark_id`: 12 hex digits).
    pub benchmark_id: String,
    /// The command line that made the run, quoted as a shell reads it ([`shell_command`]).
    pub cli_command: String,
    /// Why the numbers do not cover the whole run (a partial merge); `None` when they do.
    pub incomplete_reason: Option<String>,
    /// The run's options in AIPerf's configuration shape (`BenchmarkConfig`), written as
    /// `input_config` (secrets already redacted).
    pub input_config: Value,
    /// The run's options under this tool's own names, written as `aiperf_cli_config` (secrets
    /// already redacted).
    pub cli_config: Value,
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
    pub sharding: Option<Sharding>,
    /// The server's numbers from its metrics, when they were scraped.
    pub server: Option<ServerView>,
    /// AIPerf's `telemetry_data`: the GPUs of the DCGM exporters scraped (`--gpu-telemetry`).
    pub gpu_telemetry: Option<TelemetryExport>,
    /// AIPerf's GPU energy-efficiency metrics (`nvidia_*`), from the telemetry and the report.
    pub gpu_energy: Vec<EnergyMetric>,
}

/// The words of a command line joined as a POSIX shell reads them back: a word with anything but
/// letters, digits and `-_./:=,+@%` is put in single quotes.
pub fn shell_command<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> String {
    let quote = |w: &str| {
        let plain = !w.is_empty()
            && w.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%')
            });
        if plain { w.to_owned() } else { format!("'{}'", w.replace('\'', "'\\''")) }
    };
    words.into_iter().map(|w| quote(w.as_ref())).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::shell_command;

    #[test]
    fn words_that_a_shell_would_split_are_quoted() {
        assert_eq!(
            shell_command([
                "aiperf-cli",
                "profile",
                "--goodput",
                "time_to_first_token:30 request_latency:80",
                "it's",
                ""
            ]),
            "aiperf-cli profile --goodput 'time_to_first_token:30 request_latency:80' 'it'\\''s' ''"
        );
    }
}
