//! `aiperf-cli profile` options under AIPerf's names (clap), with their defaults;
//! [`super::plan`] validates them.

use std::path::PathBuf;

use aiperf_core::campaign::sweep::Axis;
use aiperf_core::replay::sampling::Sampling;
use aiperf_core::replay::schedule::ArrivalPattern;
use aiperf_core::server::kinds::ServerKind;
use anyhow::{Result, bail};

use super::body::EndpointType;
use crate::synthesis_flags::SynthesisFlags;

pub use super::client::DEFAULT_MAX_RESPONSE_BYTES;
/// Default prompt size limit in tokens (`--max-prompt-tokens`): past any model's context, and a
/// generated prompt of this size is about 30 MB.
pub const DEFAULT_MAX_PROMPT_TOKENS: u64 = 1 << 22;

/// Replay a Mooncake trace against an OpenAI-compatible server and measure it (AIPerf option names).
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Model name sent in every request.
    #[arg(help_heading = "Endpoint", short = 'm', long = "model", alias = "model-names")]
    pub model: String,
    /// Server base URL; repeat it (or give several) for replicas without a router: sessions are
    /// spread round robin across the URLs and each session stays on its URL.
    #[arg(help_heading = "Endpoint", short = 'u', long, num_args = 1.., action = clap::ArgAction::Append, default_value = "http://localhost:8000")]
    pub url: Vec<String>,
    /// How sessions are spread over several `--url`s (round_robin, the only one, as in AIPerf).
    #[arg(help_heading = "Endpoint", long, value_enum, default_value = "round-robin")]
    pub url_strategy: UrlStrategy,
    /// PEM file of certificate authorities trusted for `https://` URLs, in addition to the
    /// system's and the bundled roots (for internal endpoints with a private CA).
    #[arg(help_heading = "Endpoint", long, alias = "cacert", value_name = "PATH")]
    pub ssl_ca_cert: Option<PathBuf>,
    /// Do not verify `https://` servers' certificates (labs only: anyone on the path can read
    /// and change the traffic); warned on every run.
    #[arg(help_heading = "Endpoint", long)]
    pub insecure_skip_tls_verify: bool,
    /// OpenAI API to call.
    #[arg(help_heading = "Endpoint", long, value_enum, default_value = "chat")]
    pub endpoint_type: EndpointType,
    /// Path to call instead of the endpoint type's default (e.g. /v1/chat/completions).
    #[arg(help_heading = "Endpoint", long, alias = "endpoint")]
    pub custom_endpoint: Option<String>,
    /// Ask for streamed responses (server-sent events).
    #[arg(help_heading = "Endpoint", long, alias = "stream")]
    pub streaming: bool,
    /// API key sent as a bearer token (never written to any output).
    #[arg(help_heading = "Endpoint", long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra HTTP header `Name:Value` (repeatable).
    #[arg(help_heading = "Endpoint", short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Header carrying each session's correlation id (also sent as X-Session-Affinity).
    #[arg(help_heading = "Endpoint", long, default_value = "X-Correlation-ID")]
    pub session_header: String,
    /// Extra body field `key:value` (JSON values allowed, e.g. ignore_eos:true) (repeatable).
    #[arg(help_heading = "Endpoint", long = "extra-inputs")]
    pub extra_inputs: Vec<String>,
    /// Time limit of one request (AIPerf's default: 6 hours).
    #[arg(help_heading = "Endpoint", long, default_value_t = 21_600.0)]
    pub request_timeout_seconds: f64,
    /// Send `max_tokens` instead of `max_completion_tokens`.
    #[arg(help_heading = "Endpoint", long)]
    pub use_legacy_max_tokens: bool,
    /// Later turns of a session of generated prompts (`input_length` or `text_input` rows):
    /// `live` sends the earlier prompts and the server's replies before the new prompt, as AIPerf
    /// does (`input_length` counts the new tokens); `none` sends each prompt alone (for traces
    /// whose `input_length` already counts the history). `messages` rows are sent as written.
    #[arg(help_heading = "Input", long, value_enum, default_value = "live")]
    pub turn_history: super::body::TurnHistory,
    /// Largest prompt built for a request, in tokens (a later turn's conversation included).
    ///
    /// A longer one is not built and gets an `invalid_request` record.
    #[arg(help_heading = "Input", long, default_value_t = DEFAULT_MAX_PROMPT_TOKENS)]
    pub max_prompt_tokens: u64,
    /// A system message ahead of every turn of every conversation, verbatim (AIPerf's): merged
    /// into a row's own leading system message (this text, a blank line, then the row's). Chat
    /// only; its tokens add to each request's input tokens.
    #[arg(help_heading = "Input", long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// --system-prompt's text read from a UTF-8 file, once, before the run.
    #[arg(help_heading = "Input", long, value_name = "PATH")]
    pub system_prompt_file: Option<std::path::PathBuf>,
    /// The system prompt once read (by the plan of a campaign, so that its sub-runs share it).
    #[arg(skip)]
    pub system_prompt_text: Option<std::sync::Arc<str>>,
    /// AIPerf's per-session marker that keeps a server's prefix cache from carrying work from one
    /// conversation to another: `[rid:DIGEST]` (each session run its own, the same in all its
    /// turns, warm-up and run alike) before (`system_prefix`, `first_turn_prefix`) or after
    /// (`system_suffix`, `first_turn_suffix`) the system message (`--system-prompt`, or a row's
    /// own; else the first user message) or the conversation's first user message; or `[warmup]`
    /// on warm-up requests only (`warmup_isolation_system`, `warmup_isolation_first_turn`).
    /// `none` (the default) sends prompts unmarked. Chat only.
    #[arg(help_heading = "Input", long, value_name = "TARGET", default_value = "none", value_parser = cache_bust_target)]
    pub cache_bust: aiperf_core::replay::cache_bust::Target,
    /// Take token counts (ISL, OSL) from the server's `usage`, and count on the client only when
    /// the server reports none (the default counts on the client, as AIPerf does, with the
    /// server's `usage` beside it).
    #[arg(help_heading = "Tokenizer", long, conflicts_with = "client_token_count")]
    pub use_server_token_count: bool,
    /// Count output tokens by re-tokenizing the answer text (the default, as in AIPerf; the
    /// server's `usage` is still recorded beside it).
    #[arg(help_heading = "Tokenizer", long)]
    pub client_token_count: bool,

    /// The Mooncake trace (JSONL, optionally gzip-compressed); without it, AIPerf's synthetic
    /// workload of the options below (`--isl`, `--num-dataset-entries`, …) is generated and replayed.
    #[arg(help_heading = "Input", long)]
    pub input_file: Option<PathBuf>,
    /// AIPerf's single_turn records as a JSON list, replayed instead of a trace: a config file's
    /// inline `benchmark.dataset.records` (the config reader gives it).
    #[arg(help_heading = "Input", long, hide = true, value_name = "JSON", conflicts_with = "input_file")]
    pub inline_records: Option<String>,
    #[command(flatten, next_help_heading = "Synthetic workload (without --input-file)")]
    pub synthetic: crate::synthetic_flags::SyntheticFlags,
    #[command(flatten, next_help_heading = "Input")]
    pub trace_format: crate::io::trace_format::TraceFormatArgs,
    /// Longest trace line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(help_heading = "Input", long, default_value_t = aiperf_core::trace::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// Largest response accepted (bytes of body, or of one SSE line or event, or of the text of a stream).
    ///
    /// A larger one ends that request with a `response_too_large` error.
    #[arg(help_heading = "Endpoint", long, default_value_t = DEFAULT_MAX_RESPONSE_BYTES)]
    pub max_response_bytes: usize,
    /// Dataset type, by AIPerf's names of the trace formats read here: mooncake_trace (the
    /// format as --trace-format says), bailian_trace, burst_gpt_trace, weka_trace or
    /// baseten_trace; or AIPerf's own files: single_turn (a record per line), multi_turn (a
    /// conversation per line), random_pool (a file or folder of prompt pools, drawn with
    /// --random-seed); or dag_jsonl, AIPerf's conversations whose turns start and join sub-agent
    /// conversations.
    #[arg(help_heading = "Input", long, default_value = "mooncake_trace")]
    pub custom_dataset_type: String,
    /// WEKA traces: replay each conversation's turns back to back, without their recorded
    /// times or delays (as AIPerf's weka_trace loader; needs --concurrency or --request-rate).
    #[arg(help_heading = "Input", long)]
    pub ignore_trace_delays: bool,
    /// WEKA traces: a later turn waits its recorded think_time after the previous turn
    /// completed, instead of the idle time between them (t - previous t - previous api_time).
    #[arg(help_heading = "Input", long)]
    pub use_think_time_only: bool,
    /// WEKA traces: drop a whole trace whose peak prompt + output (tokens) exceeds this.
    #[arg(help_heading = "Input", long)]
    pub max_context_length: Option<u64>,
    /// WEKA traces: cut every gap between two request starts of a trace (parent and
    /// sub-agents) to at most these seconds, and time the turns on that compressed timeline.
    #[arg(help_heading = "Input", long)]
    pub trace_idle_gap_cap_seconds: Option<f64>,
    /// Wait at most these seconds before a later turn of a session (AIPerf's): every turn's
    /// delay after the previous turn completed is capped at load, in traces (`delay`),
    /// single_turn/multi_turn and dag_jsonl files, WEKA conversations (not with
    /// --trace-idle-gap-cap-seconds) and closed-loop Baseten sessions; timestamps are untouched.
    #[arg(help_heading = "Input", long)]
    pub inter_turn_delay_cap_seconds: Option<f64>,
    /// Keep the replay idle at most these seconds at a time (AIPerf's): when no request is in
    /// flight, every pending time moves earlier by the same amount so that the next request
    /// leaves within the cap. Replays of the trace's own times only (ignored with --request-rate).
    #[arg(help_heading = "Input", long)]
    pub system_idle_gap_cap_seconds: Option<f64>,
    /// Divide the trace's timestamps and delays by this (10 = ten times faster than recorded);
    /// prompts and hash ids untouched. AIPerf's baseten_trace option, applied to any timed trace.
    #[arg(help_heading = "Input", long)]
    pub replay_speedup: Option<f64>,
    /// Shorten every gap between consecutive requests of the trace (all sessions, after
    /// --replay-speedup) to at most these seconds. AIPerf's baseten_trace option, applied to any
    /// timed trace.
    #[arg(help_heading = "Input", long)]
    pub max_idle_gap_cap_seconds: Option<f64>,
    /// Baseten traces: keep this fraction of the sessions (0 < r ≤ 1), each whole, drawn from
    /// --random-seed as AIPerf draws them.
    #[arg(help_heading = "Input", long)]
    pub trace_session_sample_ratio: Option<f64>,
    /// Baseten traces (the default): every row at its recorded time; a session's later turn at
    /// the later of its time and the previous turn's completion.
    #[arg(help_heading = "Input", long, overrides_with = "no_open_loop_replay")]
    pub open_loop_replay: bool,
    /// Baseten traces: a session's later turn waits its recorded think time (the start-to-start
    /// gap less the previous turn's recorded duration) after the previous turn completes.
    #[arg(help_heading = "Input", long, overrides_with = "open_loop_replay")]
    pub no_open_loop_replay: bool,
    /// Baseten traces: every row a session of its own, at its recorded time.
    #[arg(help_heading = "Input", long)]
    pub open_loop_strict: bool,
    /// Baseten traces: do not send the recorded KV hints (hash_ids, block_size) in the body.
    #[arg(help_heading = "Input", long)]
    pub omit_kv_hints: bool,
    /// Baseten traces (the default): send min_tokens = the recorded output length.
    #[arg(help_heading = "Input", long, overrides_with = "no_force_min_tokens")]
    pub force_min_tokens: bool,
    /// Baseten traces: send no min_tokens (generations end at EOS or max_tokens).
    #[arg(help_heading = "Input", long, overrides_with = "force_min_tokens")]
    pub no_force_min_tokens: bool,
    /// Seed of prompt text and Poisson arrivals.
    #[arg(help_heading = "Input", long, default_value_t = 0)]
    pub random_seed: u64,
    /// Which session each new session run takes, as AIPerf's samplers (seeded from
    /// --random-seed): sequential (trace order, again after the last; the default), random (with
    /// replacement) or shuffle (each session once per pass, in a new order every pass).
    ///
    /// Not with a fixed schedule, which sends sessions at their timestamps.
    #[arg(help_heading = "Input", long, value_enum)]
    pub dataset_sampling_strategy: Option<Sampling>,
    /// Accepted as AIPerf's: it allows only AIPerf's agentic replay (--scenario) to reuse
    /// traces; sessions here are reused past the trace's end with or without it.
    #[arg(help_heading = "Input", long, overrides_with = "no_allow_dataset_wrap")]
    pub allow_dataset_wrap: bool,
    /// AIPerf's default (see --allow-dataset-wrap).
    #[arg(help_heading = "Input", long, overrides_with = "allow_dataset_wrap")]
    pub no_allow_dataset_wrap: bool,
    /// Tokens per hash id block.
    #[arg(
        help_heading = "Input",
        long,
        aliases = ["prompt-input-tokens-block-size", "synthetic-input-tokens-block-size"],
        default_value_t = 512
    )]
    pub isl_block_size: u64,
    #[command(flatten, next_help_heading = "Synthesis (applied to the trace before the replay)")]
    pub synthesis: SynthesisFlags,

    /// Replay on the trace's timestamps (the default when the first row has one).
    #[arg(help_heading = "Load", long, overrides_with = "no_fixed_schedule")]
    pub fixed_schedule: bool,
    /// Do not use the trace's timestamps.
    #[arg(help_heading = "Load", long, overrides_with = "fixed_schedule")]
    pub no_fixed_schedule: bool,
    /// Only rows with timestamp ≥ this (ms); also time zero unless auto-offset.
    #[arg(help_heading = "Load", long)]
    pub fixed_schedule_start_offset: Option<f64>,
    /// Only rows with timestamp ≤ this (ms).
    #[arg(help_heading = "Load", long)]
    pub fixed_schedule_end_offset: Option<f64>,
    /// Time zero = the first kept timestamp.
    #[arg(help_heading = "Load", long)]
    pub fixed_schedule_auto_offset: bool,
    /// Sessions per second (instead of the trace's timestamps).
    ///
    /// A comma-separated list runs one sub-run per value (a sweep).
    #[arg(help_heading = "Load", long, value_delimiter = ',')]
    pub request_rate: Vec<f64>,
    /// Gaps between request-rate arrivals.
    #[arg(help_heading = "Load", long, alias = "request-rate-mode", value_enum, default_value = "poisson")]
    pub arrival_pattern: ArrivalPattern,
    /// At most this many requests in flight.
    ///
    /// A comma-separated list runs one sub-run per value (a sweep).
    #[arg(help_heading = "Load", long, value_delimiter = ',')]
    pub concurrency: Vec<usize>,
    /// Number of requests to send (sessions are reused in order past the trace's end).
    #[arg(help_heading = "Load", long, alias = "num-requests")]
    pub request_count: Option<u64>,
    /// Requests (turns) sent before the benchmark, not measured: whole conversations, the one in
    /// progress when it is reached ending there.
    #[arg(help_heading = "Load", long, alias = "num-warmup-requests", default_value_t = 0)]
    pub warmup_request_count: u64,
    /// Stop sending after this many seconds.
    #[arg(help_heading = "Load", long)]
    pub benchmark_duration: Option<f64>,
    /// Seconds in-flight requests get to finish after the duration or Ctrl-C.
    #[arg(help_heading = "Load", long, default_value_t = 30.0)]
    pub benchmark_grace_period: f64,
    #[command(flatten)]
    pub shape: LoadShape,
    /// Replay shard K of N (K from 0 to N-1, as Kubernetes numbers Indexed Job pods): whole
    /// sessions, at the times of the whole run; `--concurrency` and `--warmup-request-count`
    /// are totals divided across the shards, `--request-count` is the whole run's.
    #[arg(help_heading = "Sharding (one run over several processes or machines)", long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Common time zero of the shards: an RFC 3339 time (2026-11-23T22:00:00Z) or Unix epoch
    /// milliseconds; connections are opened and first bodies built before it.
    #[arg(help_heading = "Sharding (one run over several processes or machines)", long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Warn when the target's clock (HTTP Date header) differs from this machine's by more than
    /// this many milliseconds beyond the estimate's uncertainty (estimated when --shard or
    /// --start-at is given).
    #[arg(help_heading = "Sharding (one run over several processes or machines)", long, default_value_t = 100.0)]
    pub clock_offset_warn_ms: f64,

    /// Tokenizer: a tokenizer.json, a folder holding one, or a Hugging Face model name.
    #[arg(help_heading = "Tokenizer", long)]
    pub tokenizer: Option<String>,
    /// Hugging Face revision (branch, tag or commit) of a tokenizer given by model name (AIPerf's);
    /// a file or folder is read as it is.
    #[arg(help_heading = "Tokenizer", long, default_value = crate::io::tokenizer::MAIN)]
    pub tokenizer_revision: String,

    /// More Prometheus endpoints to scrape, besides `<--url>/metrics` (`/metrics` is appended
    /// unless the URL ends with it).
    #[arg(help_heading = "Server", long, num_args = 1.., conflicts_with = "no_server_metrics")]
    pub server_metrics: Vec<String>,
    /// Do not scrape the servers' Prometheus metrics.
    #[arg(help_heading = "Server", long)]
    pub no_server_metrics: bool,
    /// Seconds between two scrapes of the server metrics during the run.
    #[arg(help_heading = "Server", long, env = "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", default_value_t = 0.333)]
    pub server_metrics_interval: f64,
    /// Wait up to this many seconds for the server to answer GET /v1/models or /health before
    /// starting (time zero comes after it answers and connections are warm).
    #[arg(help_heading = "Server", long)]
    pub wait_for_server: Option<f64>,
    /// Replay even when no connection to any URL could be opened before time zero (by default the
    /// run then ends with exit status 1 before sending anything).
    #[arg(help_heading = "Server", long)]
    pub go_on_unreachable: bool,
    /// Empty the server's prefix cache before warm-up (vLLM, SGLang, llama.cpp), so that runs start cold.
    ///
    /// The server kind comes from its metric names or --server-kind.
    #[arg(help_heading = "Server", long, alias = "reset-kv-cache")]
    pub reset_prefix_cache: bool,
    /// The server's kind, for --reset-prefix-cache when its metrics do not tell.
    #[arg(help_heading = "Server", long, value_enum)]
    pub server_kind: Option<ServerKind>,

    /// Folder of the exports [default: artifacts/<model>-openai-<endpoint>-<load>, as AIPerf
    /// names it, with a -2, -3… suffix when a run is already there]. A folder that already holds
    /// a run is refused unless --overwrite is given.
    #[arg(help_heading = "Output", long, alias = "output-artifact-dir")]
    pub artifact_dir: Option<PathBuf>,
    /// Replace the files of a run already in the artifact folder.
    #[arg(help_heading = "Output", long)]
    pub overwrite: bool,
    /// Service-level objectives, e.g. "time_to_first_token:200 inter_token_latency:20" (ms).
    #[arg(help_heading = "Output", long)]
    pub goodput: Option<String>,
    /// Also write the metrics per slice of this many seconds
    /// (profile_export_aiperf_timeslices.csv and .json).
    #[arg(help_heading = "Output", long)]
    pub slice_duration: Option<f64>,
    /// Which files a run writes (AIPerf's): `records` (the default) the summaries and the
    /// per-request profile_export.jsonl, `summary` the summaries only, `raw` also
    /// profile_export_raw.jsonl: each request's body, headers (credentials masked) and every
    /// response chunk with its time. Raw lines are written as requests complete, so memory holds
    /// only the requests in flight (each up to --max-response-bytes); the file grows by about
    /// the request and response bodies of every request.
    #[arg(help_heading = "Output", long, alias = "profile-export-level", value_enum, default_value = "records")]
    pub export_level: ExportLevel,
    /// Base name of every export file (AIPerf's): with `run1` the run writes run1.json, run1.csv,
    /// run1_console.txt, run1.jsonl, run1_timeslices.json/.csv, run1_server_metrics.json/.csv and
    /// run1_gpu_telemetry.jsonl; a known suffix such as `.json` or `_raw.jsonl` is stripped.
    #[arg(help_heading = "Output", long, alias = "profile-export-file", value_name = "PREFIX")]
    pub profile_export_prefix: Option<String>,
    /// Also write each request's HTTP exchange into its records line (AIPerf's `trace_data`:
    /// send start and end, response body start and end, bytes and reads, connection reuse,
    /// connect and DNS times, k6's sending/waiting/receiving/duration).
    #[arg(help_heading = "Output", long)]
    pub export_http_trace: bool,
    /// Also show the HTTP timing table (AIPerf's: the http_req_* metrics, k6's breakdown) after
    /// the metrics.
    #[arg(help_heading = "Output", long)]
    pub show_trace_timing: bool,
    /// Repeat the run (or each sweep value) this many times and write the aggregate with
    /// confidence intervals (profile_export_aiperf_aggregate.csv and .json); 1 to 10.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, default_value_t = 1)]
    pub num_profile_runs: u32,
    /// Confidence level of the intervals over repeated runs.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, default_value_t = 0.95)]
    pub confidence_level: f64,
    /// Warm up before the first run of each value only, not before its repeats 2..N (AIPerf's
    /// default: the repeats measure the steady state).
    #[arg(
        help_heading = "Sweeps, repeats and capacity search",
        long,
        overrides_with = "no_profile_run_disable_warmup_after_first"
    )]
    pub profile_run_disable_warmup_after_first: bool,
    /// Warm up before every repeat.
    #[arg(
        help_heading = "Sweeps, repeats and capacity search",
        long,
        overrides_with = "profile_run_disable_warmup_after_first"
    )]
    pub no_profile_run_disable_warmup_after_first: bool,
    /// Every run has a seed (--random-seed, default 0), so repeats and sweep values replay the
    /// same workload: AIPerf's `--set-consistent-seed` (its default) holds always.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long)]
    pub set_consistent_seed: bool,
    /// Give each repeat its own seed, derived from --random-seed, the value and the repeat as
    /// AIPerf derives it (SHA-256 of `SEED:variation:LABEL:trial:K`) [default: the value's seed].
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, overrides_with = "no_vary_seed_per_trial")]
    pub vary_seed_per_trial: bool,
    /// Every repeat of a value uses the value's seed.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, overrides_with = "vary_seed_per_trial")]
    pub no_vary_seed_per_trial: bool,
    /// Every value of a sweep uses --random-seed [default: value K (0, 1, …) uses --random-seed + K,
    /// as AIPerf's sweeps].
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, overrides_with = "no_parameter_sweep_same_seed")]
    pub parameter_sweep_same_seed: bool,
    /// Value K of a sweep uses --random-seed + K.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, overrides_with = "parameter_sweep_same_seed")]
    pub no_parameter_sweep_same_seed: bool,
    /// Pause between the sub-runs of a sweep, repeats or search (seconds).
    #[arg(
        help_heading = "Sweeps, repeats and capacity search",
        long,
        alias = "profile-run-cooldown-seconds",
        default_value_t = 0.0
    )]
    pub parameter_sweep_cooldown_seconds: f64,
    /// Capacity search: find the highest value of this option whose runs meet the --goodput SLOs
    /// for --search-goodput-fraction of their requests (bracket, then bisect). AIPerf's
    /// --ttft-sla-ms, --itl-sla-ms, --e2e-sla-ms and --error-rate-sla give targets too.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, value_enum)]
    pub search_max: Option<Axis>,
    /// First (and lowest) value the search measures [default: 1].
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, requires = "search_max")]
    pub search_start: Option<f64>,
    /// Highest value the search measures [default: 1000; concurrency 1024].
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, requires = "search_max")]
    pub search_limit: Option<f64>,
    /// Bracketing multiplies the value by this until a point fails.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, default_value_t = 2.0, requires = "search_max")]
    pub search_growth: f64,
    /// Bisection stops when the lowest failing value is within this fraction above the highest
    /// passing one (whole numbers: within 1).
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, default_value_t = 0.05, requires = "search_max")]
    pub search_resolution: f64,
    /// Share of a run's requests (failed ones count as missing) that must meet every SLO.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, default_value_t = 0.95, requires = "search_max")]
    pub search_goodput_fraction: f64,
    /// AIPerf's time-to-first-token SLA (ms): under --search-max, the --goodput SLO
    /// time_to_first_token:MS (ignored without it, as AIPerf ignores it outside its search recipes).
    #[arg(help_heading = "Sweeps, repeats and capacity search", long)]
    pub ttft_sla_ms: Option<f64>,
    /// AIPerf's inter-token-latency SLA (ms): under --search-max, the --goodput SLO
    /// inter_token_latency:MS (ignored without it).
    #[arg(help_heading = "Sweeps, repeats and capacity search", long)]
    pub itl_sla_ms: Option<f64>,
    /// AIPerf's time-per-output-token SLA (ms), the same target as --itl-sla-ms.
    #[arg(help_heading = "Sweeps, repeats and capacity search", long)]
    pub tpot_sla_ms: Option<f64>,
    /// AIPerf's end-to-end latency SLA (ms): under --search-max, the --goodput SLO
    /// request_latency:MS (ignored without it).
    #[arg(help_heading = "Sweeps, repeats and capacity search", long)]
    pub e2e_sla_ms: Option<f64>,
    /// AIPerf's error-rate SLA, a fraction in (0, 1): under --search-max, a run whose share of
    /// failed requests reaches it fails (ignored without it).
    #[arg(help_heading = "Sweeps, repeats and capacity search", long)]
    pub error_rate_sla: Option<f64>,
    /// AIPerf's name for --search-goodput-fraction [AIPerf's default: 0.95] (ignored without
    /// --search-max).
    #[arg(help_heading = "Sweeps, repeats and capacity search", long, conflicts_with = "search_goodput_fraction")]
    pub slo_attainment_fraction: Option<f64>,
    /// Console UI: simple (a progress bar on a terminal, a progress line on stderr every
    /// --progress-interval seconds otherwise), dashboard (a full-screen view of the run on a
    /// terminal, simple otherwise) or none.
    #[arg(help_heading = "Output", long, alias = "ui", value_enum, default_value = "simple")]
    pub ui_type: UiType,
    /// Seconds between two progress lines when stderr is not a terminal (logs, CI, pipes).
    #[arg(help_heading = "Output", long, default_value_t = 5.0)]
    pub progress_interval: f64,
    /// Accepted for AIPerf compatibility; aiperf-cli has a single log level.
    #[arg(help_heading = "Output", long, hide = true)]
    pub log_level: Option<String>,
    /// Accepted for AIPerf compatibility; aiperf-cli has a single log level (`-vv` is
    /// AIPerf's `--extra-verbose`).
    #[arg(help_heading = "Output", short = 'v', long, hide = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Accepted for AIPerf compatibility; aiperf-cli has a single log level.
    #[arg(help_heading = "Output", long, hide = true)]
    pub extra_verbose: bool,
    /// AIPerf's readiness probe: wait up to this many seconds for the server before starting,
    /// as --wait-for-server does; 0 (AIPerf's default) does not wait.
    #[arg(help_heading = "Server", long, hide = true, conflicts_with = "wait_for_server")]
    pub wait_for_model_timeout: Option<f64>,
    /// How the readiness probe asks (AIPerf's): models (GET /v1/models lists --model; a 404 falls
    /// back to GET of the base URL), inference (POST a one-token request to the endpoint: any
    /// status below 500 is ready), both (models, then inference) [default: GET /v1/models or /health].
    #[arg(help_heading = "Server", long, value_enum, value_name = "MODE")]
    pub wait_for_model_mode: Option<WaitMode>,
    /// Seconds between two readiness probes [default: 0.25].
    #[arg(help_heading = "Server", long, value_name = "SECONDS")]
    pub wait_for_model_interval: Option<f64>,
    /// Path POSTed by --reset-kv-cache instead of the server kind's own (e.g. /reset_prefix_cache).
    #[arg(help_heading = "Server", long, value_name = "PATH", requires = "reset_prefix_cache")]
    pub reset_kv_cache_path: Option<String>,
    /// Time limit of each --reset-kv-cache call [default: 10].
    #[arg(help_heading = "Server", long, value_name = "SECONDS", requires = "reset_prefix_cache")]
    pub reset_kv_cache_timeout_seconds: Option<f64>,
    /// Server-metrics files written: json (server_metrics_export.json), csv
    /// (server_metrics_export.csv), parquet (server_metrics_export.parquet: every scrape in the
    /// window, AIPerf's raw rows) [default: json csv].
    #[arg(help_heading = "Server", long, num_args = 1.., value_delimiter = ',', value_name = "FORMAT")]
    pub server_metrics_formats: Vec<String>,
    /// AIPerf's transport: HTTP, the only one (AIPerf 0.13 offers only http too).
    #[arg(help_heading = "Endpoint", long, alias = "transport-type", hide = true, value_enum)]
    pub transport: Option<Transport>,
    /// How connections are reused, as AIPerf's: pooled (kept alive and shared by every request;
    /// the default), never (a new connection for each request, closed after its response, so
    /// every latency includes opening it) or sticky-user-sessions (a connection per session, kept
    /// for all its turns and closed after its last, for sticky load balancing).
    #[arg(help_heading = "Endpoint", long, value_enum, value_name = "STRATEGY")]
    pub connection_reuse_strategy: Option<ConnectionReuse>,
    /// Ask a streaming chat server for usage on every chunk (stream_options.continuous_usage_stats,
    /// e.g. vLLM, TensorRT-LLM): inter-token latency then leaves out the tokens of the first
    /// content chunk as the server counted them, not one. Needs --use-server-token-count,
    /// --streaming and --endpoint-type chat.
    #[arg(help_heading = "Endpoint", long)]
    pub per_chunk_usage: bool,
    /// Accepted for AIPerf compatibility: no plot is drawn after a run (AIPerf's default).
    #[arg(help_heading = "Output", long, hide = true)]
    pub no_auto_plot: bool,
    /// Scrape NVIDIA DCGM exporters for GPU telemetry (gpu_telemetry_export.jsonl and a console
    /// line per GPU): AIPerf's default endpoints localhost:9400 and localhost:9401, and the URLs
    /// given (`/metrics` appended unless the URL ends with it).
    #[arg(help_heading = "Server", long, num_args = 0.., value_name = "URL", conflicts_with = "no_gpu_telemetry")]
    pub gpu_telemetry: Option<Vec<String>>,
    /// Do not collect GPU telemetry (the default without --gpu-telemetry).
    #[arg(help_heading = "Server", long, hide = true)]
    pub no_gpu_telemetry: bool,
    /// Measure the network round trip to each --url's host and port while the run measures (a
    /// fresh TCP connection timed to its handshake, every --network-latency-ping-interval
    /// seconds; profile_export_network_latency.jsonl) and subtract its mean from the latencies
    /// from the request's start: network_adjusted_request_latency, _time_to_first_token and
    /// _time_to_first_output_token, beside the raw ones, and network_rtt.
    #[arg(help_heading = "Network latency", long)]
    pub network_latency_automatic: bool,
    /// The mean network round trip to subtract, in milliseconds, instead of probing it (the
    /// network_adjusted_* metrics without probes).
    #[arg(help_heading = "Network latency", long, value_name = "MS")]
    pub network_latency_mean: Option<f64>,
    /// Seconds between two round-trip probes of --network-latency-automatic [default: 1].
    #[arg(help_heading = "Network latency", long, value_name = "SECONDS")]
    pub network_latency_ping_interval: Option<f64>,
}

/// AIPerf's options that shape the load beyond its rate or concurrency: request cancellation,
/// the warm-up phase, ramps ([`super::plan::shaping`] checks them).
#[derive(Clone, Debug, clap::Args)]
pub struct LoadShape {
    /// Percent of requests (above 0, up to 100) the client cancels: each is sent whole, then
    /// abandoned --request-cancellation-delay seconds later and recorded as cancelled; which
    /// ones follows --random-seed (warm-up requests are never cancelled).
    #[arg(help_heading = "Load", long)]
    pub request_cancellation_rate: Option<f64>,
    /// Seconds after a request is sent before it is cancelled [default: 0]; needs
    /// --request-cancellation-rate.
    #[arg(help_heading = "Load", long)]
    pub request_cancellation_delay: Option<f64>,
    /// Longest warm-up, in seconds (a warm-up ends at the first of its bounds: this,
    /// --warmup-request-count, --num-warmup-sessions).
    #[arg(help_heading = "Load", long)]
    pub warmup_duration: Option<f64>,
    /// Most sessions the warm-up starts (each sends all its turns).
    #[arg(help_heading = "Load", long)]
    pub num_warmup_sessions: Option<u64>,
    /// Warm-up sessions in progress at most [default: --concurrency; 1 without a rate].
    #[arg(help_heading = "Load", long)]
    pub warmup_concurrency: Option<usize>,
    /// Warm-up sessions per second [default: --request-rate].
    #[arg(help_heading = "Load", long)]
    pub warmup_request_rate: Option<f64>,
    /// Gaps between warm-up arrivals [default: --arrival-pattern].
    #[arg(help_heading = "Load", long, value_enum)]
    pub warmup_arrival_pattern: Option<ArrivalPattern>,
    /// Seconds the warm-up's requests in flight get to finish after --warmup-duration (they are
    /// abandoned then) [default: they are waited for]; needs --warmup-duration.
    #[arg(help_heading = "Load", long)]
    pub warmup_grace_period: Option<f64>,
    /// Seconds over which the request rate rises to --request-rate: it starts at the rate ×
    /// 0.1 s / this and is raised every 0.1 s along the line to the rate (AIPerf's ramp).
    #[arg(help_heading = "Load", long)]
    pub request_rate_ramp_duration: Option<f64>,
    /// Seconds over which the concurrency ceiling rises from 1 to --concurrency, one step at a
    /// time at even intervals (AIPerf's ramp).
    #[arg(help_heading = "Load", long)]
    pub concurrency_ramp_duration: Option<f64>,
    /// Most requests in prefill at once: sent, their first token not yet back (every turn
    /// takes a slot until its first token, or its end); needs --streaming, at most
    /// --concurrency (AIPerf's).
    #[arg(help_heading = "Load", long)]
    pub prefill_concurrency: Option<usize>,
    /// Seconds over which the --prefill-concurrency limit rises from 1, one step at a time at
    /// even intervals (AIPerf's ramp; without --prefill-concurrency it ramps nothing, as in
    /// AIPerf).
    #[arg(help_heading = "Load", long)]
    pub prefill_concurrency_ramp_duration: Option<f64>,
    /// AIPerf's user-centric rate (requests per second, with --num-users): the users share it,
    /// each sending a turn every --num-users / rate seconds (later when its answer is late),
    /// starting in a steady state of users part-way through their sessions; a user whose
    /// session ends is replaced by a new one on a fixed schedule (instead of --request-rate).
    #[arg(help_heading = "Load", long)]
    pub user_centric_rate: Option<f64>,
    /// How many users share --user-centric-rate.
    #[arg(help_heading = "Load", long)]
    pub num_users: Option<u32>,
    /// A user-centric warm-up (an AIPerf config file's `type: user_centric` warm-up phase; AIPerf's
    /// command line has no such option): --warmup-num-users users share this rate (QPS), each
    /// sending whole sessions, as --user-centric-rate does for the run.
    #[arg(help_heading = "Load", long)]
    pub warmup_user_centric_rate: Option<f64>,
    /// How many users share --warmup-user-centric-rate.
    #[arg(help_heading = "Load", long)]
    pub warmup_num_users: Option<u32>,
    /// The warm-up's --prefill-concurrency [default: the run's].
    #[arg(help_heading = "Load", long)]
    pub warmup_prefill_concurrency: Option<usize>,
    /// The warm-up's --prefill-concurrency-ramp-duration [default: the run's].
    #[arg(help_heading = "Load", long)]
    pub warmup_prefill_concurrency_ramp_duration: Option<f64>,
    /// The warm-up's --request-rate-ramp-duration [default: the run's].
    #[arg(help_heading = "Load", long)]
    pub warmup_request_rate_ramp_duration: Option<f64>,
    /// The warm-up's --concurrency-ramp-duration [default: the run's].
    #[arg(help_heading = "Load", long)]
    pub warmup_concurrency_ramp_duration: Option<f64>,
    /// Shape of --arrival-pattern gamma gaps (vLLM's burstiness): 1 is Poisson, below 1
    /// burstier, above 1 more regular [default: 1].
    #[arg(help_heading = "Load", long, alias = "vllm-burstiness")]
    pub arrival_smoothness: Option<f64>,
    /// JSON file of request-rate points (`[{"time_s": 0, "qps": 5}, …]` or `{"points": […]}`,
    /// at least two, times increasing): the rate starts at the first point's and follows the
    /// straight lines between them, updated every 0.1 s, after any rate ramp (instead of
    /// --request-rate).
    #[arg(help_heading = "Load", long, value_name = "PATH")]
    pub request_rate_series: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    Http,
}

/// AIPerf's `--connection-reuse-strategy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ConnectionReuse {
    Pooled,
    Never,
    StickyUserSessions,
}

/// AIPerf's `--wait-for-model-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitMode {
    Models,
    Inference,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UrlStrategy {
    #[value(alias = "round_robin")]
    RoundRobin,
}

/// AIPerf's `--export-level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportLevel {
    Summary,
    Records,
    Raw,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UiType {
    Simple,
    Dashboard,
    None,
}

/// Refuses, before clap parses them, AIPerf options that `profile` does not honour (one line:
/// the option, why, and what to use instead; see [`super::aiperf_options`]).
pub fn reject_unsupported(args: &[String]) -> Result<()> {
    if let Some(line) = super::aiperf_options::refusal(args) {
        bail!("{line}");
    }
    for a in args {
        let name = a.split('=').next().unwrap_or(a);
        if name.starts_with("--image-") || name.starts_with("--audio-") || name.starts_with("--video-") {
            bail!("the AIPerf option {name} is not supported by `aiperf-cli profile`: only text is supported");
        }
    }
    Ok(())
}

/// `profile`'s options parsed from `argv` (its first word stands for the program), as clap does.
#[cfg(test)]
pub fn parse<I, T>(argv: I) -> std::result::Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }
    <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.args)
}

/// A `--cache-bust` target by AIPerf's name, any case.
fn cache_bust_target(name: &str) -> Result<aiperf_core::replay::cache_bust::Target, String> {
    use aiperf_core::replay::cache_bust::Target;
    Target::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
        format!("accepted: {}", names.join(", "))
    })
}
