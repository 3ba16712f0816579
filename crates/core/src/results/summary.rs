//! [`RunSummary`]: everything known at the end of a run, which the exports serialize.

use serde_json::Value;

use crate::replay::sharding::Sharding;
use crate::results::aggregate::Report;
use crate::server::kinds::ServerView;

/// Everything known at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub report: Report,
    /// The run's options as written to the exports (secrets already redacted).
    pub input_config: Value,
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
}
