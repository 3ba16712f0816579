//! The types of one replay's plan: where requests go, what is replayed, when sending stops,
//! what is written; [`ReplayPlan::from_args`](super::replay) makes them from the options.

use std::path::{Path, PathBuf};
use std::time::Duration;

use aiperf_core::formats::baseten::BasetenReplay;
use aiperf_core::replay::sampling::Sampling;
use aiperf_core::replay::schedule::Shard;
use aiperf_core::results::metrics::Slo;
use aiperf_core::synthesis::TransformParams;
use aiperf_core::trace::Trace;
use serde_json::Value;

use super::arrivals::Arrivals;
use super::server::ServerPlan;
use super::tls::TlsOptions;
use crate::io::trace_format::TraceFormatArgs;
use crate::profile::body::BodyTemplate;
use crate::profile::options::ConnectionReuse;

/// Where inline records come from, as errors name it.
pub const INLINE_RECORDS: &str = "benchmark.dataset.records";

/// AIPerf's dataset type of DAG conversations (sub-agents started and joined by turns).
pub(super) const DAG_JSONL: &str = "dag_jsonl";

/// Where requests go and what they look like.
#[derive(Clone, Debug)]
pub struct Target {
    /// The base URL as given (with `http://` added when it had no scheme); the first of `urls`.
    pub url: String,
    /// Every `--url`, normalized like `url`, in the order given (sessions go round robin).
    pub urls: Vec<String>,
    /// How `https://` servers are verified.
    pub tls: TlsOptions,
    /// The path called on it.
    pub path: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The header carrying the session's correlation id.
    pub session_header: String,
    pub timeout: Duration,
    /// Largest response body, SSE event or streamed text accepted.
    pub max_response_bytes: usize,
    pub body: BodyTemplate,
    /// Whether a connection is kept for later requests (`--connection-reuse-strategy never`
    /// opens one per request).
    pub reuse_connections: bool,
    /// A connection per session (`--connection-reuse-strategy sticky-user-sessions`).
    pub sticky: bool,
}

/// Where the replayed rows come from.
#[derive(Clone, Debug)]
pub enum Input {
    /// A trace file (`--input-file`).
    File(PathBuf),
    /// AIPerf's synthetic workload, generated with the run's seed.
    Synthetic(Box<aiperf_core::synthesis::synthetic::SyntheticWorkload>),
    /// A config file's inline single_turn records (`benchmark.dataset.records`), as rows.
    Records(Box<Trace>),
    /// One of AIPerf's own dataset files, read when the plan was made.
    Dataset(Box<DatasetFile>),
}

/// One of AIPerf's own dataset files (`--custom-dataset-type single_turn|multi_turn|random_pool`).
#[derive(Clone, Debug)]
pub struct DatasetFile {
    /// The file (a folder for random_pool's pools).
    pub path: PathBuf,
    pub kind: aiperf_core::trace::dataset_file::Kind,
    /// Its rows (a random_pool's drawn conversations).
    pub trace: Trace,
    /// Its conversations' system prompt (a multi_turn file's leading system turns).
    pub system: Option<String>,
}

impl Input {
    /// The trace file, if the rows come from one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Input::File(f) => Some(f),
            Input::Dataset(d) => Some(&d.path),
            Input::Synthetic(_) | Input::Records(_) => None,
        }
    }

    /// How errors name where a row came from.
    pub fn name(&self) -> String {
        match self {
            Input::File(f) => f.display().to_string(),
            Input::Dataset(d) => d.path.display().to_string(),
            Input::Synthetic(_) => "the synthetic workload".to_owned(),
            Input::Records(_) => INLINE_RECORDS.to_owned(),
        }
    }
}

/// What is replayed and how arrivals are timed.
#[derive(Clone, Debug)]
pub struct Source {
    pub input: Input,
    pub format: TraceFormatArgs,
    pub max_line_bytes: usize,
    pub block_size: u64,
    pub seed: u64,
    /// In-memory synthesis applied to the trace before replay, when an option asks for it.
    pub synthesis: Option<TransformParams>,
    pub tokenizer: Option<String>,
    /// `--tokenizer-revision`.
    pub tokenizer_revision: String,
    pub arrivals: Arrivals,
    /// Which session each generated session run takes (`--dataset-sampling-strategy`).
    pub sampling: Sampling,
    /// AIPerf's `weka_trace` replay options, when one is given.
    pub weka: Option<aiperf_core::formats::WekaTiming>,
    /// `--custom-dataset-type dag_jsonl`: the file holds AIPerf's DAG conversations.
    pub dag: bool,
    /// AIPerf's `baseten_trace` replay options.
    pub baseten: BasetenPlan,
    /// `--inter-turn-delay-cap-seconds`: every turn's delay at most this (seconds).
    pub delay_cap_s: Option<f64>,
    /// `--osl`/`--osl-stddev` on a trace file: the mean and standard deviation of AIPerf's draws
    /// for the rows without an output length.
    pub osl: Option<(u64, f64)>,
}

/// The Baseten replay options of a run: the values, and the spellings given that only a Baseten
/// trace honours.
#[derive(Clone, Debug, Default)]
pub struct BasetenPlan {
    pub replay: BasetenReplay,
    pub baseten_only: Vec<&'static str>,
    /// `--replay-speedup` or `--max-idle-gap-cap-seconds` given.
    pub retimes: bool,
}

/// When sending stops and how much may be in flight.
#[derive(Clone, Debug)]
pub struct Limits {
    pub request_count: Option<u64>,
    pub duration: Option<Duration>,
    /// How long in-flight requests may finish after sending stopped.
    pub grace: Duration,
    /// At most this many session runs at once.
    pub concurrency: Option<usize>,
    /// At most this many requests in prefill at once (`--prefill-concurrency`).
    pub prefill: Option<usize>,
    /// How many users share the rate (`--num-users` with `--user-centric-rate`).
    pub users: Option<u32>,
    /// Requests the client cancels on purpose (`--request-cancellation-rate`).
    pub cancellation: Option<aiperf_core::replay::cancel::Cancellation>,
    /// The warm-up phase, when one is asked for.
    pub warmup: Option<super::shaping::WarmupPlan>,
    /// How the concurrency ceiling and the rate ramp up.
    pub ramps: super::shaping::Ramps,
    /// The shape of gamma arrival gaps (`--arrival-smoothness`).
    pub smoothness: Option<f64>,
    /// The rate over time (`--request-rate-series`): (µs, rate) points.
    pub rate_series: Option<aiperf_core::replay::schedule::RateSeries>,
    /// `--system-idle-gap-cap-seconds` on a replay of the trace's times.
    pub system_idle_cap: Option<Duration>,
}

/// How this process takes part in a run split across processes.
#[derive(Clone, Copy, Debug)]
pub struct Coordination {
    /// The part of the run this process sends (the whole run by default).
    pub shard: Shard,
    /// The common time zero (Unix ns), `--start-at`.
    pub start_at_unix_ns: Option<u64>,
    /// Warn when the target's clock differs by more than this (ms).
    pub clock_warn_ms: f64,
}

impl Coordination {
    /// Whether the target's clock is probed: a shard or a common start.
    pub fn probe_clock(&self) -> bool {
        !self.shard.is_whole() || self.start_at_unix_ns.is_some()
    }
}

/// Where token counts come from: the client re-tokenizes, as AIPerf does, unless
/// `--use-server-token-count`. The server's `usage` is recorded beside the client's count either
/// way (`usage_*` metrics, the console's client/server line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenCounting {
    /// The server's `usage` when reported; the client counts only when it is not
    /// (`--use-server-token-count`: the least client CPU).
    ServerOnly,
    /// The client re-tokenizes the answer text (the default, AIPerf's).
    Client,
}

impl TokenCounting {
    /// Whether metrics take the server's count first.
    pub fn server_first(self) -> bool {
        self != TokenCounting::Client
    }
}

/// What is written and shown.
#[derive(Clone, Debug)]
pub struct Exports {
    pub artifact_dir: PathBuf,
    pub slos: Vec<Slo>,
    /// How the run shows its progress.
    pub progress: crate::profile::progress::Mode,
    /// `--slice-duration`: also write the metrics per slice of this length.
    pub slice: Option<Duration>,
    /// `--export-level records` or `raw`: write `profile_export.jsonl` (not with `summary`).
    pub records: bool,
    /// `--export-level raw`: also write `profile_export_raw.jsonl`.
    pub raw: bool,
    /// The export files' names (`--profile-export-prefix`).
    pub names: crate::io::exports::ExportNames,
    /// `--export-http-trace`: each record's line also has its HTTP exchange (`trace_data`).
    pub http_trace: bool,
    /// `--show-trace-timing`: the console also shows the `http_req_*` metrics.
    pub show_trace_timing: bool,
}

/// Everything a replay needs to know, validated.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    pub target: Target,
    pub source: Source,
    pub limits: Limits,
    pub counting: TokenCounting,
    pub exports: Exports,
    pub coordination: Coordination,
    pub server: ServerPlan,
    /// The options as written to the exports (`aiperf_cli_config`), secrets redacted.
    pub(super) cli_config: Value,
    /// The options in AIPerf's configuration shape (the exports' `input_config`).
    pub(super) aiperf_config: Value,
}

/// AIPerf's name of a connection reuse strategy.
pub fn connection_reuse_name(c: ConnectionReuse) -> &'static str {
    match c {
        ConnectionReuse::Pooled => "pooled",
        ConnectionReuse::Never => "never",
        ConnectionReuse::StickyUserSessions => "sticky-user-sessions",
    }
}
