//! The typed model of an AIPerf 0.13 config file (schema "2.0"), after `${VAR}` and Jinja2
//! expansion: every section and key AIPerf reads, in its camelCase spelling with the snake_case
//! one as an alias. A key outside the model is an error naming its path and the accepted keys.
//! Values stay scalars ([`Scalar`]): they become option values that clap and the plan check, as
//! on a command line.

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

pub use super::scalar::{OneOrMany, Scalar, ScalarOr, Scalars};

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigFile {
    #[serde(alias = "schema_version")]
    pub schema_version: Option<Scalar>,
    pub benchmark: Option<Benchmark>,
    pub sweep: Option<Value>,
    #[serde(alias = "multi_run")]
    pub multi_run: Option<MultiRun>,
    pub plot: Option<Value>,
    /// Read by [`super::expand`] (Jinja2's variables), before the model.
    #[allow(dead_code)]
    pub variables: Option<Value>,
    #[serde(alias = "random_seed")]
    pub random_seed: Option<Scalar>,
    #[serde(alias = "no_sweep_table")]
    pub no_sweep_table: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MultiRun {
    #[serde(alias = "num_runs")]
    pub num_runs: Option<Scalar>,
    #[serde(alias = "cooldown_seconds")]
    pub cooldown_seconds: Option<Scalar>,
    #[serde(alias = "confidence_level")]
    pub confidence_level: Option<Scalar>,
    #[serde(alias = "set_consistent_seed")]
    pub set_consistent_seed: Option<Scalar>,
    #[serde(alias = "vary_seed_per_trial")]
    pub vary_seed_per_trial: Option<Scalar>,
    #[serde(alias = "disable_warmup_after_first")]
    pub disable_warmup_after_first: Option<Scalar>,
    pub convergence: Option<Value>,
}

/// `benchmark`: what one run measures.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Benchmark {
    pub model: Option<Value>,
    pub models: Option<Value>,
    pub endpoint: Option<Endpoint>,
    pub dataset: Option<Dataset>,
    pub datasets: Option<Vec<Dataset>>,
    pub phases: Option<OneOrMany<Phase>>,
    pub warmup: Option<Phase>,
    pub profiling: Option<Phase>,
    pub artifacts: Option<Artifacts>,
    pub slos: Option<Mapping>,
    pub tokenizer: Option<ScalarOr<Tokenizer>>,
    #[serde(alias = "gpu_telemetry")]
    pub gpu_telemetry: Option<ScalarOr<Telemetry>>,
    #[serde(alias = "server_metrics")]
    pub server_metrics: Option<ScalarOr<Telemetry>>,
    #[serde(alias = "network_latency")]
    pub network_latency: Option<NetworkLatency>,
    pub otel: Option<Value>,
    pub mlflow: Option<Value>,
    pub wandb: Option<Value>,
    pub runtime: Option<Runtime>,
    pub logging: Option<Logging>,
    pub metrics: Option<Value>,
    pub accuracy: Option<Value>,
    pub scenario: Option<Value>,
    #[serde(alias = "unsafe_override")]
    pub unsafe_override: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Endpoint {
    pub url: Option<Scalar>,
    pub urls: Option<Scalars>,
    #[serde(alias = "url_strategy")]
    pub url_strategy: Option<Scalar>,
    #[serde(rename = "type")]
    pub kind: Option<Scalar>,
    pub path: Option<Scalar>,
    #[serde(alias = "api_key")]
    pub api_key: Option<Scalar>,
    pub timeout: Option<Scalar>,
    pub streaming: Option<Scalar>,
    pub transport: Option<Scalar>,
    #[serde(alias = "connection_reuse")]
    pub connection_reuse: Option<Scalar>,
    #[serde(alias = "use_legacy_max_tokens")]
    pub use_legacy_max_tokens: Option<Scalar>,
    #[serde(alias = "use_server_token_count")]
    pub use_server_token_count: Option<Scalar>,
    #[serde(alias = "per_chunk_usage")]
    pub per_chunk_usage: Option<Scalar>,
    pub template: Option<Value>,
    pub headers: Option<Mapping>,
    pub extra: Option<Mapping>,
    #[serde(alias = "download_video_content")]
    pub download_video_content: Option<Scalar>,
    #[serde(alias = "request_content_type")]
    pub request_content_type: Option<Scalar>,
    #[serde(alias = "session_header")]
    pub session_header: Option<Scalar>,
    #[serde(alias = "uuid_and_strip")]
    pub uuid_and_strip: Option<Value>,
    #[serde(alias = "wait_for_model_timeout")]
    pub wait_for_model_timeout: Option<Scalar>,
    #[serde(alias = "wait_for_model_interval")]
    pub wait_for_model_interval: Option<Scalar>,
    #[serde(alias = "wait_for_model_mode")]
    pub wait_for_model_mode: Option<Scalar>,
    #[serde(alias = "reset_kv_cache")]
    pub reset_kv_cache: Option<ScalarOr<ResetKvCache>>,
    #[serde(alias = "server_profiler")]
    pub server_profiler: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResetKvCache {
    #[serde(alias = "timeout_seconds")]
    pub timeout_seconds: Option<Scalar>,
    #[serde(alias = "max_retry_seconds")]
    pub max_retry_seconds: Option<Scalar>,
    pub path: Option<Scalar>,
}

/// A dataset: synthetic, a file (or inline records), or a public one.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Dataset {
    /// A dataset's label; one dataset a run needs none.
    #[allow(dead_code)]
    pub name: Option<Scalar>,
    #[serde(rename = "type")]
    pub kind: Option<Scalar>,
    #[serde(alias = "system_prompt")]
    pub system_prompt: Option<Scalar>,
    #[serde(alias = "system_prompt_file")]
    pub system_prompt_file: Option<Scalar>,
    pub entries: Option<Scalar>,
    #[serde(alias = "random_seed")]
    pub random_seed: Option<Scalar>,
    pub sampling: Option<Scalar>,
    pub prompts: Option<Prompts>,
    pub isl: Option<ScalarOr<Dist>>,
    pub osl: Option<ScalarOr<Dist>>,
    // Synthetic.
    #[serde(alias = "prefix_prompts")]
    pub prefix_prompts: Option<PrefixPrompts>,
    pub turns: Option<ScalarOr<Dist>>,
    #[serde(alias = "turn_delay")]
    pub turn_delay: Option<ScalarOr<Dist>>,
    #[serde(alias = "turn_delay_ratio")]
    pub turn_delay_ratio: Option<Scalar>,
    pub images: Option<Value>,
    pub audio: Option<Value>,
    pub video: Option<Value>,
    pub rankings: Option<Value>,
    // File.
    pub path: Option<Scalar>,
    pub records: Option<Vec<Value>>,
    pub format: Option<Scalar>,
    pub synthesis: Option<Synthesis>,
    #[serde(alias = "trace_session_sample_ratio")]
    pub trace_session_sample_ratio: Option<Scalar>,
    #[serde(alias = "inter_turn_delay_cap_seconds")]
    pub inter_turn_delay_cap_seconds: Option<Scalar>,
    #[serde(alias = "max_idle_gap_cap_seconds")]
    pub max_idle_gap_cap_seconds: Option<Scalar>,
    #[serde(alias = "replay_speedup")]
    pub replay_speedup: Option<Scalar>,
    #[serde(alias = "open_loop_replay")]
    pub open_loop_replay: Option<Scalar>,
    #[serde(alias = "open_loop_strict")]
    pub open_loop_strict: Option<Scalar>,
    #[serde(alias = "omit_kv_hints")]
    pub omit_kv_hints: Option<Scalar>,
    #[serde(alias = "force_min_tokens")]
    pub force_min_tokens: Option<Scalar>,
    #[serde(alias = "prompt_batch_size")]
    pub prompt_batch_size: Option<Scalar>,
    #[serde(alias = "image_batch_size")]
    pub image_batch_size: Option<Scalar>,
    #[serde(alias = "audio_batch_size")]
    pub audio_batch_size: Option<Scalar>,
    #[serde(alias = "video_batch_size")]
    pub video_batch_size: Option<Scalar>,
    #[serde(alias = "block_size")]
    pub block_size: Option<Scalar>,
    #[serde(alias = "trace_idle_gap_cap_seconds")]
    pub trace_idle_gap_cap_seconds: Option<Scalar>,
    #[serde(alias = "ignore_trace_delays")]
    pub ignore_trace_delays: Option<Scalar>,
    #[serde(alias = "use_think_time_only")]
    pub use_think_time_only: Option<Scalar>,
    #[serde(alias = "max_context_length")]
    pub max_context_length: Option<Scalar>,
    #[serde(alias = "cache_bust")]
    pub cache_bust: Option<Value>,
    // Public.
    pub dataset: Option<Scalar>,
    #[serde(alias = "hf_subset")]
    pub hf_subset: Option<Scalar>,
    pub filters: Option<Value>,
    #[serde(alias = "hf_weka_dataset")]
    pub hf_weka_dataset: Option<Scalar>,
}

/// A length distribution: `512`, `{mean, stddev}`, or AIPerf's other shapes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    pub mean: Option<Scalar>,
    pub stddev: Option<Scalar>,
    pub median: Option<Scalar>,
    pub peaks: Option<Value>,
    pub points: Option<Value>,
    pub min: Option<Scalar>,
    pub max: Option<Scalar>,
    #[serde(rename = "type")]
    pub kind: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Prompts {
    pub isl: Option<ScalarOr<Dist>>,
    pub osl: Option<ScalarOr<Dist>>,
    #[serde(alias = "block_size")]
    pub block_size: Option<Scalar>,
    #[serde(alias = "batch_size")]
    pub batch_size: Option<Scalar>,
    #[serde(alias = "cache_bust")]
    pub cache_bust: Option<Value>,
    pub corpus: Option<Value>,
    #[serde(alias = "sequence_distribution")]
    pub sequence_distribution: Option<Value>,
    #[serde(alias = "random_range_ratio")]
    pub random_range_ratio: Option<Scalar>,
    #[serde(alias = "random_corpus_style")]
    pub random_corpus_style: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PrefixPrompts {
    #[serde(alias = "pool_size")]
    pub pool_size: Option<Scalar>,
    pub length: Option<Scalar>,
    #[serde(alias = "shared_system_length")]
    pub shared_system_length: Option<Scalar>,
    #[serde(alias = "user_context_length")]
    pub user_context_length: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Synthesis {
    #[serde(alias = "speedup_ratio")]
    pub speedup_ratio: Option<Scalar>,
    #[serde(alias = "prefix_len_multiplier")]
    pub prefix_len_multiplier: Option<Scalar>,
    #[serde(alias = "prefix_root_multiplier")]
    pub prefix_root_multiplier: Option<Scalar>,
    #[serde(alias = "prompt_len_multiplier")]
    pub prompt_len_multiplier: Option<Scalar>,
    #[serde(alias = "output_len_multiplier")]
    pub output_len_multiplier: Option<Scalar>,
    #[serde(alias = "max_isl")]
    pub max_isl: Option<Scalar>,
    #[serde(alias = "max_osl")]
    pub max_osl: Option<Scalar>,
    #[serde(alias = "allow_dataset_wrap")]
    pub allow_dataset_wrap: Option<Scalar>,
}

/// One load phase (warm-up or profiling).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Phase {
    pub name: Option<Scalar>,
    pub kind: Option<Scalar>,
    #[serde(rename = "type")]
    pub kind_of_load: Option<Scalar>,
    #[serde(alias = "exclude_from_results")]
    pub exclude_from_results: Option<Scalar>,
    pub requests: Option<Scalar>,
    pub duration: Option<Scalar>,
    pub sessions: Option<Scalar>,
    pub concurrency: Option<Scalar>,
    #[serde(alias = "concurrency_ramp")]
    pub concurrency_ramp: Option<ScalarOr<Ramp>>,
    #[serde(alias = "prefill_concurrency")]
    pub prefill_concurrency: Option<Scalar>,
    #[serde(alias = "prefill_ramp")]
    pub prefill_ramp: Option<ScalarOr<Ramp>>,
    #[serde(alias = "grace_period")]
    pub grace_period: Option<Scalar>,
    pub cancellation: Option<Cancellation>,
    pub rate: Option<Scalar>,
    #[serde(alias = "rate_ramp")]
    pub rate_ramp: Option<ScalarOr<Ramp>>,
    #[serde(alias = "rate_series")]
    pub rate_series: Option<Value>,
    pub smoothness: Option<Scalar>,
    pub users: Option<Scalar>,
    #[serde(alias = "auto_offset")]
    pub auto_offset: Option<Scalar>,
    #[serde(alias = "start_offset")]
    pub start_offset: Option<Scalar>,
    #[serde(alias = "end_offset")]
    pub end_offset: Option<Scalar>,
    #[serde(alias = "failed_request_threshold")]
    pub failed_request_threshold: Option<Scalar>,
    #[serde(alias = "trajectory_start_min_ratio")]
    pub trajectory_start_min_ratio: Option<Scalar>,
    #[serde(alias = "trajectory_start_max_ratio")]
    pub trajectory_start_max_ratio: Option<Scalar>,
    #[serde(alias = "burst_phase_starts")]
    pub burst_phase_starts: Option<Value>,
    #[serde(alias = "system_idle_gap_cap_seconds")]
    pub system_idle_gap_cap_seconds: Option<Scalar>,
    #[serde(alias = "agentic_cache_warmup_duration")]
    pub agentic_cache_warmup_duration: Option<Scalar>,
    #[serde(alias = "agentic_warmup_grace_period")]
    pub agentic_warmup_grace_period: Option<Scalar>,
    pub sla: Option<Value>,
    pub seamless: Option<Value>,
    #[serde(alias = "timing_mode")]
    pub timing_mode: Option<Value>,
    // AIPerf's adaptive scaling, as a block or as its flat keys.
    #[serde(alias = "adaptive_scale")]
    pub adaptive_scale: Option<Value>,
    #[serde(alias = "adaptive_sustain_duration")]
    pub adaptive_sustain_duration: Option<Value>,
    #[serde(alias = "adaptive_assessment_period")]
    pub adaptive_assessment_period: Option<Value>,
    #[serde(alias = "adaptive_min_completed_requests")]
    pub adaptive_min_completed_requests: Option<Value>,
    #[serde(alias = "adaptive_control_variable")]
    pub adaptive_control_variable: Option<Value>,
    #[serde(alias = "adaptive_control_min")]
    pub adaptive_control_min: Option<Value>,
    #[serde(alias = "adaptive_control_max")]
    pub adaptive_control_max: Option<Value>,
    #[serde(alias = "adaptive_scale_strategy_type")]
    pub adaptive_scale_strategy_type: Option<Value>,
    #[serde(alias = "adaptive_scale_step_policy")]
    pub adaptive_scale_step_policy: Option<Value>,
    #[serde(alias = "adaptive_scale_base_step")]
    pub adaptive_scale_base_step: Option<Value>,
    #[serde(alias = "adaptive_scale_max_step_multiplier")]
    pub adaptive_scale_max_step_multiplier: Option<Value>,
    #[serde(alias = "adaptive_scale_step_percent")]
    pub adaptive_scale_step_percent: Option<Value>,
}

impl Phase {
    /// The first key set of AIPerf's adaptive scaling, phase SLAs, seamless phases and timing
    /// modes, by its camelCase name.
    pub fn unsupported_key(&self) -> Option<&'static str> {
        [
            ("adaptiveScale", &self.adaptive_scale),
            ("sla", &self.sla),
            ("seamless", &self.seamless),
            ("timingMode", &self.timing_mode),
            ("adaptiveSustainDuration", &self.adaptive_sustain_duration),
            ("adaptiveAssessmentPeriod", &self.adaptive_assessment_period),
            ("adaptiveMinCompletedRequests", &self.adaptive_min_completed_requests),
            ("adaptiveControlVariable", &self.adaptive_control_variable),
            ("adaptiveControlMin", &self.adaptive_control_min),
            ("adaptiveControlMax", &self.adaptive_control_max),
            ("adaptiveScaleStrategyType", &self.adaptive_scale_strategy_type),
            ("adaptiveScaleStepPolicy", &self.adaptive_scale_step_policy),
            ("adaptiveScaleBaseStep", &self.adaptive_scale_base_step),
            ("adaptiveScaleMaxStepMultiplier", &self.adaptive_scale_max_step_multiplier),
            ("adaptiveScaleStepPercent", &self.adaptive_scale_step_percent),
        ]
        .into_iter()
        .find(|(_, v)| v.is_some())
        .map(|(k, _)| k)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ramp {
    pub duration: Option<Scalar>,
    pub strategy: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cancellation {
    pub rate: Option<Scalar>,
    pub delay: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Artifacts {
    pub dir: Option<Scalar>,
    pub prefix: Option<Scalar>,
    pub summary: Option<Value>,
    pub records: Option<Value>,
    pub raw: Option<Value>,
    pub trace: Option<Scalar>,
    #[serde(alias = "slice_duration")]
    pub slice_duration: Option<Scalar>,
    #[serde(alias = "show_trace_timing")]
    pub show_trace_timing: Option<Scalar>,
    #[serde(alias = "user_files")]
    pub user_files: Option<Value>,
    #[serde(alias = "auto_plot")]
    pub auto_plot: Option<Scalar>,
    #[serde(alias = "plot_required")]
    pub plot_required: Option<Scalar>,
    #[serde(alias = "export_outputs_json")]
    pub export_outputs_json: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tokenizer {
    pub name: Option<Scalar>,
    pub revision: Option<Scalar>,
    #[serde(alias = "trust_remote_code")]
    pub trust_remote_code: Option<Scalar>,
    #[serde(alias = "apply_chat_template")]
    pub apply_chat_template: Option<Scalar>,
}

/// `serverMetrics` and `gpuTelemetry`: Prometheus endpoints to scrape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Telemetry {
    pub enabled: Option<Scalar>,
    pub url: Option<Scalar>,
    pub urls: Option<Scalars>,
    pub formats: Option<Scalars>,
    pub discovery: Option<Value>,
    pub collector: Option<Scalar>,
    pub mode: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkLatency {
    pub enabled: Option<Scalar>,
    #[serde(alias = "ping_interval")]
    pub ping_interval: Option<Scalar>,
    #[serde(alias = "mean_ms")]
    pub mean_ms: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Runtime {
    pub ui: Option<Scalar>,
    pub workers: Option<Value>,
    #[serde(alias = "record_processors")]
    pub record_processors: Option<Value>,
    #[serde(alias = "service_run_type")]
    pub service_run_type: Option<Value>,
    pub communication: Option<Value>,
    #[serde(alias = "api_port")]
    pub api_port: Option<Value>,
    #[serde(alias = "api_host")]
    pub api_host: Option<Value>,
    #[serde(alias = "dataset_api_base_url")]
    pub dataset_api_base_url: Option<Value>,
    #[serde(alias = "workers_per_pod")]
    pub workers_per_pod: Option<Value>,
    #[serde(alias = "record_processors_per_pod")]
    pub record_processors_per_pod: Option<Value>,
    #[serde(alias = "workers_min")]
    pub workers_min: Option<Value>,
    #[serde(alias = "stats_interval")]
    pub stats_interval: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Logging {
    pub level: Option<Scalar>,
}
