//! `aiperf-cli profile` options under AIPerf's names, and their validation into a [`Config`].

use std::path::PathBuf;
use std::time::Duration;

use aiperf_core::metrics::{Slo, parse_goodput};
use aiperf_core::schedule::{ArrivalPattern, Timing};
use aiperf_core::synthesis::TransformParams;

use crate::synthesis_flags::SynthesisFlags;
use anyhow::{Context, Result, bail, ensure};
use serde_json::{Map, Value};

use super::request::EndpointType;

/// Replay a Mooncake trace against an OpenAI-compatible server and measure it (AIPerf option names).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Model name sent in every request.
    #[arg(short = 'm', long = "model", alias = "model-names")]
    pub model: String,
    /// Server base URL.
    #[arg(short = 'u', long, default_value = "http://localhost:8000")]
    pub url: String,
    /// OpenAI API to call.
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint_type: EndpointType,
    /// Path to call instead of the endpoint type's default (e.g. /v1/chat/completions).
    #[arg(long, alias = "endpoint")]
    pub custom_endpoint: Option<String>,
    /// Ask for streamed responses (server-sent events).
    #[arg(long, alias = "stream")]
    pub streaming: bool,
    /// API key sent as a bearer token (never written to any output).
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra HTTP header `Name:Value` (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Extra body field `key:value` (JSON values allowed, e.g. ignore_eos:true) (repeatable).
    #[arg(long = "extra-inputs")]
    pub extra_inputs: Vec<String>,
    /// Time limit of one request.
    #[arg(long, default_value_t = 600.0)]
    pub request_timeout_seconds: f64,
    /// Send `max_tokens` instead of `max_completion_tokens`.
    #[arg(long)]
    pub use_legacy_max_tokens: bool,
    /// Take output (and input) token counts from the server's `usage`.
    #[arg(long)]
    pub use_server_token_count: bool,

    /// The Mooncake trace (JSONL, optionally gzip-compressed).
    #[arg(long)]
    pub input_file: PathBuf,
    /// Dataset type; only mooncake_trace is supported.
    #[arg(long, default_value = "mooncake_trace")]
    pub custom_dataset_type: String,
    /// Seed of prompt text and Poisson arrivals.
    #[arg(long, default_value_t = 0)]
    pub random_seed: u64,
    /// Tokens per hash id block.
    #[arg(long, default_value_t = 512)]
    pub isl_block_size: u64,
    #[command(flatten)]
    pub synthesis: SynthesisFlags,

    /// Replay on the trace's timestamps (the default when the first row has one).
    #[arg(long, overrides_with = "no_fixed_schedule")]
    pub fixed_schedule: bool,
    /// Do not use the trace's timestamps.
    #[arg(long, overrides_with = "fixed_schedule")]
    pub no_fixed_schedule: bool,
    /// Only rows with timestamp ≥ this (ms); also time zero unless auto-offset.
    #[arg(long)]
    pub fixed_schedule_start_offset: Option<f64>,
    /// Only rows with timestamp ≤ this (ms).
    #[arg(long)]
    pub fixed_schedule_end_offset: Option<f64>,
    /// Time zero = the first kept timestamp.
    #[arg(long)]
    pub fixed_schedule_auto_offset: bool,
    /// Sessions per second (instead of the trace's timestamps).
    #[arg(long)]
    pub request_rate: Option<f64>,
    /// Gaps between request-rate arrivals.
    #[arg(long, value_enum, default_value = "poisson")]
    pub arrival_pattern: Pattern,
    /// At most this many requests in flight.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Number of requests to send (sessions are reused in order past the trace's end).
    #[arg(long, alias = "num-requests")]
    pub request_count: Option<u64>,
    /// Requests sent before the benchmark, not measured.
    #[arg(long, alias = "num-warmup-requests", default_value_t = 0)]
    pub warmup_request_count: u64,
    /// Stop sending after this many seconds.
    #[arg(long)]
    pub benchmark_duration: Option<f64>,
    /// Seconds in-flight requests get to finish after the duration or Ctrl-C.
    #[arg(long, default_value_t = 30.0)]
    pub benchmark_grace_period: f64,

    /// Tokenizer: a tokenizer.json, a folder holding one, or a Hugging Face model name.
    #[arg(long)]
    pub tokenizer: Option<String>,

    /// Folder of the exports.
    #[arg(long, default_value = "artifacts")]
    pub artifact_dir: PathBuf,
    /// Service-level objectives, e.g. "time_to_first_token:200 inter_token_latency:20" (ms).
    #[arg(long)]
    pub goodput: Option<String>,
    /// Console UI: simple (progress bar when on a terminal) or none.
    #[arg(long, alias = "ui", value_enum, default_value = "simple")]
    pub ui_type: UiType,
    /// Accepted for AIPerf compatibility; aiperf-cli has a single log level.
    #[arg(long, hide = true)]
    pub log_level: Option<String>,
    /// Accepted for AIPerf compatibility; aiperf-cli has a single log level.
    #[arg(short = 'v', long, hide = true)]
    pub verbose: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Pattern {
    Poisson,
    Constant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UiType {
    Simple,
    None,
    Dashboard,
}

/// AIPerf options this tool does not support, with the reason shown to the user.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("--synthetic-input-tokens-mean", "synthetic datasets are not supported; give a Mooncake --input-file"),
    ("--synthetic-input-tokens-stddev", "synthetic datasets are not supported; give a Mooncake --input-file"),
    ("--output-tokens-mean", "output lengths come from the trace's output_length"),
    ("--output-tokens-stddev", "output lengths come from the trace's output_length"),
    ("--num-dataset-entries", "the dataset is the trace"),
    ("--num-prompts", "the dataset is the trace"),
    ("--conversation-num", "sessions come from the trace"),
    ("--conversation-turn-mean", "sessions come from the trace"),
    ("--conversation-turn-delay-mean", "turn delays come from the trace's delay field"),
    ("--prompt-batch-size", "batched prompts are not supported"),
    ("--batch-size-text", "batched prompts are not supported"),
    ("--public-dataset", "only Mooncake trace files are supported"),
    ("--dataset-sampling-strategy", "rows are sent in trace order"),
    ("--shared-system-prompt-length", "prefixes come from the trace's hash_ids"),
    ("--prefix-prompt-length", "prefixes come from the trace's hash_ids"),
    ("--prefix-prompt-pool-size", "prefixes come from the trace's hash_ids"),
    ("--num-prefix-prompts", "prefixes come from the trace's hash_ids"),
    ("--request-cancellation-rate", "request cancellation is not supported"),
    ("--request-cancellation-delay", "request cancellation is not supported"),
    ("--workers-max", "the replay uses one dispatcher and an async runtime, no worker processes"),
    ("--record-processors", "there are no record-processor processes"),
    ("--gpu-telemetry", "GPU telemetry is not supported"),
    ("--server-metrics", "server metrics scraping is not supported"),
    ("--profile-export-file", "exports always go to --artifact-dir under fixed names"),
    ("--export-level", "all exports are always written"),
    ("--tokenizer-revision", "pass a tokenizer.json path or folder instead"),
    ("--tokenizer-trust-remote-code", "only tokenizer.json tokenizers are supported"),
    ("--image-width-mean", "images are not supported"),
    ("--image-height-mean", "images are not supported"),
    ("--image-batch-size", "images are not supported"),
    ("--audio-length-mean", "audio is not supported"),
    ("--audio-batch-size", "audio is not supported"),
    ("--transport", "HTTP is the only transport"),
    ("--connection-reuse-strategy", "connections are always pooled and reused"),
];

/// Rejects AIPerf options that `profile` does not support, with a clear reason.
pub fn reject_unsupported(args: &[String]) -> Result<()> {
    for a in args {
        let name = a.split('=').next().unwrap_or(a);
        if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == name) {
            bail!("the AIPerf option {name} is not supported by `aiperf-cli profile`: {why}");
        }
        if name.starts_with("--image-") || name.starts_with("--audio-") || name.starts_with("--video-") {
            bail!("the AIPerf option {name} is not supported by `aiperf-cli profile`: only text is supported");
        }
    }
    Ok(())
}

/// The validated configuration of a run.
#[derive(Debug)]
pub struct Config {
    pub args: Args,
    /// In-memory synthesis applied to the trace before replay, when any option asks for it.
    pub synthesis: Option<TransformParams>,
    pub headers: Vec<(String, String)>,
    pub extra_inputs: Map<String, Value>,
    pub slos: Vec<Slo>,
    pub timeout: Duration,
    pub grace: Duration,
    pub duration: Option<Duration>,
}

/// Splits `key:value` at the first colon.
fn key_value(s: &str, what: &str) -> Result<(String, String)> {
    let (k, v) = s.split_once(':').with_context(|| format!("{what} '{s}' is not of the form key:value"))?;
    ensure!(!k.trim().is_empty(), "{what} '{s}' has an empty key");
    Ok((k.trim().to_owned(), v.to_owned()))
}

fn seconds(v: f64, name: &str) -> Result<Duration> {
    ensure!(v.is_finite() && v > 0.0, "{name} must be a positive number of seconds, got {v}");
    Ok(Duration::from_secs_f64(v))
}

impl Config {
    pub fn from_args(mut args: Args) -> Result<Config> {
        // AIPerf accepts `localhost:8000`; so do we.
        if !args.url.contains("://") {
            args.url = format!("http://{}", args.url);
        }
        ensure!(
            args.custom_dataset_type == "mooncake_trace",
            "--custom-dataset-type {} is not supported: only mooncake_trace",
            args.custom_dataset_type
        );
        ensure!(args.isl_block_size >= 1, "--isl-block-size must be at least 1");
        ensure!(args.ui_type != UiType::Dashboard, "--ui-type dashboard is not supported: use simple or none");
        if let Some(c) = args.concurrency {
            ensure!(c >= 1, "--concurrency must be at least 1");
        }
        if let Some(r) = args.request_rate {
            ensure!(r.is_finite() && r > 0.0, "--request-rate must be positive, got {r}");
        }
        if args.request_count == Some(0) {
            bail!("--request-count must be at least 1");
        }
        let headers = args.headers.iter().map(|h| key_value(h, "--header")).collect::<Result<Vec<_>>>()?;
        let mut extra_inputs = Map::new();
        for e in &args.extra_inputs {
            let (k, v) = key_value(e, "--extra-inputs")?;
            let value = serde_json::from_str::<Value>(v.trim()).unwrap_or(Value::String(v.trim().to_owned()));
            extra_inputs.insert(k, value);
        }
        let slos = match &args.goodput {
            Some(g) => parse_goodput(g)?,
            None => Vec::new(),
        };
        let timeout = seconds(args.request_timeout_seconds, "--request-timeout-seconds")?;
        ensure!(
            args.benchmark_grace_period.is_finite() && args.benchmark_grace_period >= 0.0,
            "--benchmark-grace-period must be ≥ 0"
        );
        let grace = Duration::from_secs_f64(args.benchmark_grace_period);
        let duration = args.benchmark_duration.map(|d| seconds(d, "--benchmark-duration")).transpose()?;
        let block_size = u32::try_from(args.isl_block_size).context("--isl-block-size is too large")?;
        let params = args.synthesis.transform_params(block_size, args.random_seed);
        if let Err(e) = params.validate() {
            match e.param() {
                Some(p) => bail!("invalid {}: {e}", crate::synthesize::option_name(p)),
                None => return Err(e.into()),
            }
        }
        let synthesis =
            (params.synthesizes() || params.max_isl.is_some() || params.max_osl.is_some()).then_some(params);
        Ok(Config { args, synthesis, headers, extra_inputs, slos, timeout, grace, duration })
    }

    /// The timing mode: fixed schedule when asked or when the trace has timestamps and no rate
    /// or concurrency mode was chosen.
    pub fn timing(&self, trace_has_timestamps: bool) -> Result<Timing> {
        let a = &self.args;
        let fixed = if a.fixed_schedule {
            true
        } else if a.no_fixed_schedule {
            false
        } else {
            trace_has_timestamps && a.request_rate.is_none() && a.concurrency.is_none()
        };
        if fixed {
            ensure!(
                a.request_rate.is_none(),
                "--request-rate cannot be combined with a fixed schedule (add --no-fixed-schedule)"
            );
            return Ok(Timing::Fixed {
                start_offset_ms: a.fixed_schedule_start_offset,
                end_offset_ms: a.fixed_schedule_end_offset,
                auto_offset: a.fixed_schedule_auto_offset || a.fixed_schedule_start_offset.is_none(),
            });
        }
        ensure!(
            a.fixed_schedule_start_offset.is_none() && a.fixed_schedule_end_offset.is_none(),
            "--fixed-schedule-start/end-offset need a fixed schedule"
        );
        Ok(match a.request_rate {
            Some(r) => Timing::Rate {
                per_second: r,
                pattern: match a.arrival_pattern {
                    Pattern::Poisson => ArrivalPattern::Poisson,
                    Pattern::Constant => ArrivalPattern::Constant,
                },
                seed: a.random_seed,
            },
            None => {
                ensure!(
                    a.concurrency.is_some(),
                    "this trace has no timestamps: choose --request-rate or --concurrency"
                );
                Timing::AsFastAsAllowed
            }
        })
    }

    /// The options as written to the exports, with the API key and header values redacted.
    pub fn redacted_json(&self) -> Value {
        let a = &self.args;
        serde_json::json!({
            "model": a.model,
            "url": a.url,
            "endpoint_type": format!("{:?}", a.endpoint_type).to_lowercase(),
            "custom_endpoint": a.custom_endpoint,
            "streaming": a.streaming,
            "api_key": a.api_key.as_ref().map(|_| "<redacted>"),
            "headers": self.headers.iter().map(|(k, _)| format!("{k}:<redacted>")).collect::<Vec<_>>(),
            "extra_inputs": self.extra_inputs,
            "request_timeout_seconds": a.request_timeout_seconds,
            "use_legacy_max_tokens": a.use_legacy_max_tokens,
            "use_server_token_count": a.use_server_token_count,
            "input_file": a.input_file.display().to_string(),
            "random_seed": a.random_seed,
            "isl_block_size": a.isl_block_size,
            "synthesis": self.synthesis,
            "fixed_schedule": a.fixed_schedule,
            "fixed_schedule_start_offset": a.fixed_schedule_start_offset,
            "fixed_schedule_end_offset": a.fixed_schedule_end_offset,
            "fixed_schedule_auto_offset": a.fixed_schedule_auto_offset,
            "request_rate": a.request_rate,
            "arrival_pattern": format!("{:?}", a.arrival_pattern).to_lowercase(),
            "concurrency": a.concurrency,
            "request_count": a.request_count,
            "warmup_request_count": a.warmup_request_count,
            "benchmark_duration": a.benchmark_duration,
            "benchmark_grace_period": a.benchmark_grace_period,
            "tokenizer": a.tokenizer,
            "goodput": a.goodput,
        })
    }
}
