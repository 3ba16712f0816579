//! Every option spelling of AIPerf 0.13.0's `aiperf profile` (long and short forms, `--no-*`
//! forms, aliases) and what `aiperf-cli profile` does with it: honoured (one of our flags or an
//! alias of one, with AIPerf's meaning) or refused, with the reason and what to use instead.
//!
//! [`refusal`] turns a refused spelling on the command line into one error line before clap
//! parses it, so that an AIPerf user never sees clap's bare "unexpected argument". The list
//! of spellings is checked against AIPerf's own help (tests/aiperf_options.rs), which reads this
//! file directly: it depends on nothing else.

/// What `aiperf-cli profile` does with one AIPerf spelling.
#[derive(Clone, Copy, Debug)]
pub enum Verdict {
    /// Parsed by `profile` with AIPerf's meaning: `ours` is our flag (the same spelling, or the
    /// flag it is an alias of). `example` is a value (and any option it requires) that the
    /// option test passes after the spelling; empty for a switch.
    Honoured {
        ours: &'static str,
        #[allow(dead_code)]
        example: &'static [&'static str],
    },
    /// Refused by name before anything runs.
    Refused(&'static Refusal),
}

/// Why a spelling is refused, and what to use instead.
#[derive(Debug)]
pub struct Refusal {
    pub why: &'static str,
    pub instead: &'static str,
}

/// One AIPerf spelling and its verdict.
#[derive(Clone, Copy, Debug)]
pub struct AiperfOption {
    pub spelling: &'static str,
    pub verdict: Verdict,
}

const fn ours(spelling: &'static str, ours: &'static str, example: &'static [&'static str]) -> AiperfOption {
    AiperfOption { spelling, verdict: Verdict::Honoured { ours, example } }
}

/// An AIPerf spelling that is also ours.
const fn same(spelling: &'static str, example: &'static [&'static str]) -> AiperfOption {
    ours(spelling, spelling, example)
}

const fn refused(spelling: &'static str, why: &'static Refusal) -> AiperfOption {
    AiperfOption { spelling, verdict: Verdict::Refused(why) }
}

const MEDIA: Refusal =
    Refusal { why: "only text prompts are sent (no audio, images or video)", instead: "replay a text trace" };
const RANKINGS: Refusal = Refusal {
    why: "rankings endpoints are not supported",
    instead: "use --endpoint-type chat, completions or embeddings",
};
const ACCURACY: Refusal = Refusal {
    why: "accuracy benchmarks are not supported (this tool measures performance only)",
    instead: "run AIPerf's accuracy benchmark separately",
};
const SERVICES: Refusal = Refusal {
    why: "the replay is one process with an async runtime: no worker, record-processor or ZMQ services to size or place",
    instead: "drop the option; --shard K/N spreads one run over several processes or machines",
};
const TRACKING: Refusal = Refusal {
    why: "MLflow, Weights & Biases and OpenTelemetry exports are not supported",
    instead: "read the run folder's profile_export_aiperf.json/.csv and records",
};
const BAYESIAN: Refusal = Refusal {
    why: "AIPerf's Bayesian and SLA-recipe search (Optuna/BoTorch over --search-space) is not supported",
    instead: "use --search-max concurrency|request-rate with --goodput SLOs (bracket and bisect)",
};
const SLA: Refusal = Refusal {
    why: "SLA targets belong to AIPerf's search recipes",
    instead: "give the targets as --goodput \"time_to_first_token:MS inter_token_latency:MS …\" with --search-max",
};
const GRID: Refusal = Refusal {
    why: "AIPerf's recipe grids are not supported",
    instead: "give a comma-separated list to --concurrency or --request-rate to sweep it",
};
const DOWNLOADS: Refusal = Refusal {
    why: "public datasets are downloaded, and aiperf-cli downloads no datasets",
    instead: "give a trace file with --input-file (Mooncake, Bailian, ServeGen, Azure, BurstGPT, WEKA, Baseten Parquet)",
};
const PROMPT_TEXT: Refusal = Refusal {
    why: "not yet supported: prompt text comes from the trace's hash_ids (shared blocks share text)",
    instead: "shape prefixes with --synthesis-prefix-len-multiplier or synthesize-trace",
};
const AGENTIC: Refusal = Refusal {
    why: "AIPerf's agentic trajectory replay is not supported",
    instead: "replay the trace's sessions as they are",
};
const SCENARIO: Refusal = Refusal {
    why: "AIPerf's locked benchmark scenarios are not supported",
    instead: "give the scenario's options explicitly",
};
const PLOTS: Refusal = Refusal {
    why: "plots are not drawn after a run",
    instead: "aiperf-cli report RUN_DIR writes an HTML report with the charts",
};
const PROFILER: Refusal = Refusal {
    why: "not yet supported: server profiler hooks",
    instead: "start the server's profiler around the run yourself",
};
const OUTPUT_FILES: Refusal = Refusal {
    why: "not yet supported: exports always go to --artifact-dir under fixed names, all of them",
    instead: "choose the folder with --artifact-dir",
};
const TOKENIZER: Refusal = Refusal {
    why: "not yet supported: only tokenizer.json tokenizers, without chat templates",
    instead: "pass a tokenizer.json path or folder with --tokenizer",
};
const SEEDS: Refusal = Refusal {
    why: "every run has a seed (--random-seed, default 0): unseeded runs are not supported",
    instead: "--vary-seed-per-trial gives each repeat its own seed",
};
const CONVERGENCE: Refusal = Refusal {
    why: "not yet supported: repeating until a metric converges",
    instead: "give --num-profile-runs N; the aggregate has confidence intervals",
};
const SWEEP_SHAPE: Refusal = Refusal {
    why: "not yet supported: this sweep option",
    instead: "a comma-separated --concurrency or --request-rate list runs one sub-run per value",
};
const MODELS: Refusal =
    Refusal { why: "not yet supported: several models in one run", instead: "run once per --model" };
const CONSOLE: Refusal = Refusal {
    why: "not yet supported: realtime stats publishing",
    instead: "--progress-interval sets the seconds between progress lines",
};
const CONTENT_TYPE: Refusal = Refusal { why: "bodies are always JSON", instead: "drop the option" };
const BATCH: Refusal =
    Refusal { why: "batched prompts are not supported", instead: "one prompt per request, as the trace gives" };

/// AIPerf 0.13.0's `profile` options, in the order of its help.
pub const OPTIONS: &[AiperfOption] = &[
    // Endpoint
    same("--model", &["m"]),
    ours("--model-names", "--model", &["m"]),
    ours("-m", "--model", &["m"]),
    refused("--model-selection-strategy", &MODELS),
    same("--custom-endpoint", &["/v1/chat/completions"]),
    ours("--endpoint", "--custom-endpoint", &["/v1/chat/completions"]),
    same("--endpoint-type", &["completions"]),
    same("--streaming", &[]),
    same("--url", &["http://127.0.0.1:9"]),
    ours("-u", "--url", &["http://127.0.0.1:9"]),
    same("--url-strategy", &["round_robin"]),
    same("--request-timeout-seconds", &["10"]),
    ours("--wait-for-model-timeout", "--wait-for-model-timeout", &["0"]),
    same("--wait-for-model-mode", &["models"]),
    same("--wait-for-model-interval", &["1"]),
    ours("--reset-kv-cache", "--reset-prefix-cache", &[]),
    same("--reset-kv-cache-timeout-seconds", &["5", "--reset-kv-cache"]),
    same("--reset-kv-cache-path", &["/reset_prefix_cache", "--reset-kv-cache"]),
    refused("--server-profiler", &PROFILER),
    refused("--server-profiler-timeout-seconds", &PROFILER),
    refused("--server-profiler-start-path", &PROFILER),
    refused("--server-profiler-stop-path", &PROFILER),
    same("--api-key", &["k"]),
    same("--transport", &["http"]),
    ours("--transport-type", "--transport", &["http"]),
    same("--use-legacy-max-tokens", &[]),
    same("--use-server-token-count", &[]),
    same("--per-chunk-usage", &["--use-server-token-count", "--streaming"]),
    same("--connection-reuse-strategy", &["never"]),
    refused("--download-video-content", &MEDIA),
    refused("--request-content-type", &CONTENT_TYPE),
    same("--session-header", &["X-Session"]),
    refused("--uuid-and-strip", &MEDIA),
    same("--extra-inputs", &["ignore_eos:true"]),
    same("--header", &["A:b"]),
    ours("-H", "--header", &["A:b"]),
    // Input
    same("--input-file", &["missing.jsonl"]),
    refused("--public-dataset", &DOWNLOADS),
    refused("--hf-subset", &DOWNLOADS),
    refused("--hf-weka-dataset", &DOWNLOADS),
    refused("--dataset-filter", &DOWNLOADS),
    same("--custom-dataset-type", &["mooncake_trace"]),
    same("--ignore-trace-delays", &[]),
    same("--use-think-time-only", &[]),
    same("--max-context-length", &["4096"]),
    same("--dataset-sampling-strategy", &["shuffle"]),
    same("--allow-dataset-wrap", &[]),
    same("--no-allow-dataset-wrap", &[]),
    same("--random-seed", &["3"]),
    same("--trace-session-sample-ratio", &["0.5", "--custom-dataset-type", "baseten_trace"]),
    // Read by `config_file` before clap: the file's options, then the command line's.
    same("--config", &["minimal.yaml"]),
    ours("-f", "--config", &["minimal.yaml"]),
    same("--fixed-schedule", &[]),
    same("--no-fixed-schedule", &[]),
    same("--fixed-schedule-auto-offset", &[]),
    same("--fixed-schedule-start-offset", &["0"]),
    same("--fixed-schedule-end-offset", &["1000"]),
    // Output
    same("--goodput", &["time_to_first_token:100"]),
    ours("--output-artifact-dir", "--artifact-dir", &["out"]),
    same("--artifact-dir", &["out"]),
    same("--profile-export-prefix", &["run1"]),
    ours("--profile-export-file", "--profile-export-prefix", &["run1"]),
    same("--export-level", &["summary"]),
    ours("--profile-export-level", "--export-level", &["records"]),
    same("--slice-duration", &["1"]),
    refused("--auto-plot", &PLOTS),
    ours("--no-auto-plot", "--no-auto-plot", &[]),
    refused("--plot-required", &PLOTS),
    refused("--export-outputs-json", &OUTPUT_FILES),
    refused("--otel-url", &TRACKING),
    // AIPerf's `--stream metrics|timing|default` is refused by `refusal`; alone it is ours.
    ours("--stream", "--streaming", &[]),
    refused("--otel-resource-attributes", &TRACKING),
    refused("--gen-ai-provider", &TRACKING),
    refused("--mlflow-tracking-uri", &TRACKING),
    refused("--mlflow-experiment", &TRACKING),
    refused("--mlflow-run-name", &TRACKING),
    refused("--mlflow-tag", &TRACKING),
    refused("--mlflow-parent-run-id", &TRACKING),
    refused("--mlflow-artifact-glob", &TRACKING),
    refused("--wandb-project", &TRACKING),
    refused("--wandb-entity", &TRACKING),
    refused("--wandb-run-name", &TRACKING),
    refused("--wandb-tag", &TRACKING),
    same("--export-http-trace", &[]),
    same("--show-trace-timing", &[]),
    // Tokenizer
    same("--tokenizer", &["missing-tokenizer.json"]),
    same("--tokenizer-revision", &["v1"]),
    refused("--tokenizer-trust-remote-code", &TOKENIZER),
    refused("--apply-chat-template", &TOKENIZER),
    // Load
    same("--benchmark-duration", &["10"]),
    same("--benchmark-grace-period", &["1"]),
    same("--concurrency", &["4"]),
    same("--prefill-concurrency", &["1", "--streaming"]),
    same("--request-rate", &["2"]),
    same("--arrival-pattern", &["constant"]),
    ours("--request-rate-mode", "--arrival-pattern", &["constant"]),
    same("--arrival-smoothness", &["2", "--arrival-pattern", "gamma", "--request-rate", "4"]),
    ours("--vllm-burstiness", "--arrival-smoothness", &["2", "--arrival-pattern", "gamma", "--request-rate", "4"]),
    same("--request-count", &["10"]),
    ours("--num-requests", "--request-count", &["10"]),
    same("--concurrency-ramp-duration", &["2", "--concurrency", "4"]),
    same("--prefill-concurrency-ramp-duration", &["2", "--prefill-concurrency", "2", "--streaming"]),
    same("--request-rate-ramp-duration", &["2", "--request-rate", "4"]),
    same("--request-rate-series", &["rate-series.json"]),
    refused(
        "--failed-request-threshold",
        &Refusal {
            why: "not yet supported: stopping after a number of failed requests",
            instead: "the run's exit status is 1 when no request succeeded; see the error counts in the exports",
        },
    ),
    refused("--trajectory-start-min-ratio", &AGENTIC),
    refused("--trajectory-start-max-ratio", &AGENTIC),
    refused("--burst-phase-starts", &AGENTIC),
    same("--trace-idle-gap-cap-seconds", &["60"]),
    same("--system-idle-gap-cap-seconds", &["10"]),
    refused("--scenario", &SCENARIO),
    refused("--unsafe-override", &SCENARIO),
    // Warm-up
    same("--warmup-request-count", &["2"]),
    ours("--num-warmup-requests", "--warmup-request-count", &["2"]),
    same("--warmup-duration", &["2"]),
    refused("--agentic-cache-warmup-duration", &AGENTIC),
    refused("--agentic-warmup-grace-period", &AGENTIC),
    same("--num-warmup-sessions", &["2"]),
    same("--warmup-concurrency", &["2", "--warmup-request-count", "2"]),
    same("--warmup-prefill-concurrency", &["1", "--warmup-request-count", "2", "--streaming"]),
    same("--warmup-request-rate", &["2", "--warmup-request-count", "2"]),
    same("--warmup-arrival-pattern", &["constant", "--warmup-request-count", "2"]),
    same("--warmup-grace-period", &["2", "--warmup-duration", "1"]),
    same("--warmup-concurrency-ramp-duration", &["2", "--warmup-request-count", "2"]),
    same(
        "--warmup-prefill-concurrency-ramp-duration",
        &["2", "--warmup-prefill-concurrency", "1", "--warmup-request-count", "2", "--streaming"],
    ),
    same("--warmup-request-rate-ramp-duration", &["2", "--warmup-request-count", "2", "--warmup-request-rate", "4"]),
    same("--user-centric-rate", &["2", "--num-users", "2"]),
    same("--num-users", &["2", "--user-centric-rate", "2"]),
    same("--request-cancellation-rate", &["10"]),
    same("--request-cancellation-delay", &["0.5", "--request-cancellation-rate", "10"]),
    // Conversations and prompts
    same("--conversation-num", &["3"]),
    ours("--num-conversations", "--conversation-num", &["3"]),
    ours("--num-sessions", "--conversation-num", &["3"]),
    same("--num-dataset-entries", &["3"]),
    ours("--num-prompts", "--num-dataset-entries", &["3"]),
    same("--conversation-turn-mean", &["2"]),
    ours("--session-turns-mean", "--conversation-turn-mean", &["2"]),
    same("--conversation-turn-stddev", &["1"]),
    ours("--session-turns-stddev", "--conversation-turn-stddev", &["1"]),
    same("--conversation-turn-delay-mean", &["100"]),
    ours("--session-turn-delay-mean", "--conversation-turn-delay-mean", &["100"]),
    same("--conversation-turn-delay-stddev", &["10"]),
    ours("--session-turn-delay-stddev", "--conversation-turn-delay-stddev", &["10"]),
    same("--conversation-turn-delay-ratio", &["0.5"]),
    ours("--session-delay-ratio", "--conversation-turn-delay-ratio", &["0.5"]),
    same("--inter-turn-delay-cap-seconds", &["5"]),
    same("--max-idle-gap-cap-seconds", &["5"]),
    same("--replay-speedup", &["2"]),
    same("--open-loop-replay", &[]),
    same("--no-open-loop-replay", &["--custom-dataset-type", "baseten_trace"]),
    same("--open-loop-strict", &["--custom-dataset-type", "baseten_trace"]),
    same("--omit-kv-hints", &["--custom-dataset-type", "baseten_trace"]),
    same("--force-min-tokens", &[]),
    same("--no-force-min-tokens", &["--custom-dataset-type", "baseten_trace"]),
    same("--prompt-input-tokens-mean", &["100"]),
    ours("--synthetic-input-tokens-mean", "--prompt-input-tokens-mean", &["100"]),
    ours("--isl", "--prompt-input-tokens-mean", &["100"]),
    same("--prompt-input-tokens-stddev", &["10"]),
    ours("--synthetic-input-tokens-stddev", "--prompt-input-tokens-stddev", &["10"]),
    ours("--isl-stddev", "--prompt-input-tokens-stddev", &["10"]),
    ours("--prompt-input-tokens-block-size", "--isl-block-size", &["64"]),
    ours("--synthetic-input-tokens-block-size", "--isl-block-size", &["64"]),
    same("--isl-block-size", &["64"]),
    same("--seq-dist", &["100,10:100"]),
    ours("--sequence-distribution", "--seq-dist", &["100,10:100"]),
    same("--random-range-ratio", &["0.5", "--isl", "100", "--osl", "10"]),
    same("--random-corpus-style", &["vllm"]),
    same("--prompt-output-tokens-mean", &["10"]),
    ours("--output-tokens-mean", "--prompt-output-tokens-mean", &["10"]),
    ours("--osl", "--prompt-output-tokens-mean", &["10"]),
    same("--prompt-output-tokens-stddev", &["1"]),
    ours("--output-tokens-stddev", "--prompt-output-tokens-stddev", &["1"]),
    ours("--osl-stddev", "--prompt-output-tokens-stddev", &["1"]),
    refused("--prompt-batch-size", &BATCH),
    refused("--batch-size-text", &BATCH),
    refused("--batch-size", &BATCH),
    refused("-b", &BATCH),
    refused("--prompt-corpus", &PROMPT_TEXT),
    same("--system-prompt", &["Be terse."]),
    same("--system-prompt-file", &["system-prompt.txt"]),
    same("--prompt-prefix-pool-size", &["2"]),
    ours("--prefix-prompt-pool-size", "--prompt-prefix-pool-size", &["2"]),
    ours("--num-prefix-prompts", "--prompt-prefix-pool-size", &["2"]),
    same("--prompt-prefix-length", &["64", "--prompt-prefix-pool-size", "2"]),
    ours("--prefix-prompt-length", "--prompt-prefix-length", &["64", "--prompt-prefix-pool-size", "2"]),
    same("--shared-system-prompt-length", &["64"]),
    same("--user-context-prompt-length", &["64"]),
    same("--cache-bust", &["first_turn_prefix"]),
    refused("--rankings-passages-mean", &RANKINGS),
    refused("--rankings-passages-stddev", &RANKINGS),
    refused("--rankings-passages-prompt-token-mean", &RANKINGS),
    refused("--rankings-passages-prompt-token-stddev", &RANKINGS),
    refused("--rankings-query-prompt-token-mean", &RANKINGS),
    refused("--rankings-query-prompt-token-stddev", &RANKINGS),
    same("--synthesis-speedup-ratio", &["2"]),
    same("--synthesis-prefix-len-multiplier", &["2"]),
    same("--synthesis-prefix-root-multiplier", &["2"]),
    same("--synthesis-prompt-len-multiplier", &["2"]),
    same("--synthesis-output-len-multiplier", &["2"]),
    same("--synthesis-max-isl", &["1000"]),
    same("--synthesis-max-osl", &["1000"]),
    // Audio, image, video
    refused("--audio-batch-size", &MEDIA),
    refused("--batch-size-audio", &MEDIA),
    refused("--audio-length-mean", &MEDIA),
    refused("--audio-length-stddev", &MEDIA),
    refused("--audio-format", &MEDIA),
    refused("--audio-depths", &MEDIA),
    refused("--audio-sample-rates", &MEDIA),
    refused("--audio-num-channels", &MEDIA),
    refused("--image-width-mean", &MEDIA),
    refused("--image-width-stddev", &MEDIA),
    refused("--image-height-mean", &MEDIA),
    refused("--image-height-stddev", &MEDIA),
    refused("--image-batch-size", &MEDIA),
    refused("--batch-size-image", &MEDIA),
    refused("--image-format", &MEDIA),
    refused("--image-source", &MEDIA),
    refused("--image-source-sampling", &MEDIA),
    refused("--video-batch-size", &MEDIA),
    refused("--batch-size-video", &MEDIA),
    refused("--video-duration", &MEDIA),
    refused("--video-fps", &MEDIA),
    refused("--video-width", &MEDIA),
    refused("--video-height", &MEDIA),
    refused("--video-synth-type", &MEDIA),
    refused("--video-format", &MEDIA),
    refused("--video-codec", &MEDIA),
    refused("--video-audio-sample-rate", &MEDIA),
    refused("--video-audio-num-channels", &MEDIA),
    refused("--video-audio-codec", &MEDIA),
    refused("--video-audio-depth", &MEDIA),
    // Console and services
    same("--log-level", &["info"]),
    same("--verbose", &[]),
    ours("-v", "--verbose", &[]),
    same("--extra-verbose", &[]),
    ours("-vv", "--extra-verbose", &[]),
    refused("--record-processor-service-count", &SERVICES),
    refused("--record-processors", &SERVICES),
    refused("--api-port", &SERVICES),
    refused("--api-host", &SERVICES),
    refused("--stats-interval", &CONSOLE),
    same("--server-metrics", &["http://127.0.0.1:9/metrics"]),
    same("--no-server-metrics", &[]),
    same("--server-metrics-formats", &["json", "csv"]),
    same("--network-latency-automatic", &[]),
    same("--network-latency-mean", &["2.5"]),
    same("--network-latency-ping-interval", &["0.5", "--network-latency-automatic"]),
    same("--gpu-telemetry", &["http://127.0.0.1:9/metrics"]),
    ours("--no-gpu-telemetry", "--no-gpu-telemetry", &[]),
    same("--ui-type", &["dashboard"]),
    ours("--ui", "--ui-type", &["none"]),
    refused("--workers-max", &SERVICES),
    refused("--max-workers", &SERVICES),
    refused("--zmq-host", &SERVICES),
    refused("--zmq-ipc-path", &SERVICES),
    refused("--zmq-dual-bind", &SERVICES),
    refused("--accuracy-benchmark", &ACCURACY),
    refused("--accuracy-tasks", &ACCURACY),
    refused("--accuracy-n-shots", &ACCURACY),
    refused("--accuracy-enable-cot", &ACCURACY),
    refused("--accuracy-no-enable-cot", &ACCURACY),
    refused("--accuracy-grader", &ACCURACY),
    refused("--accuracy-system-prompt", &ACCURACY),
    refused("--accuracy-verbose", &ACCURACY),
    // Repeats and sweeps
    same("--num-profile-runs", &["2"]),
    ours("--profile-run-cooldown-seconds", "--parameter-sweep-cooldown-seconds", &["1"]),
    same("--confidence-level", &["0.9"]),
    same("--profile-run-disable-warmup-after-first", &[]),
    same("--no-profile-run-disable-warmup-after-first", &[]),
    same("--set-consistent-seed", &[]),
    refused("--no-set-consistent-seed", &SEEDS),
    same("--vary-seed-per-trial", &[]),
    same("--no-vary-seed-per-trial", &[]),
    refused("--convergence-metric", &CONVERGENCE),
    refused("--convergence-stat", &CONVERGENCE),
    refused("--convergence-threshold", &CONVERGENCE),
    refused("--convergence-mode", &CONVERGENCE),
    same("--parameter-sweep-cooldown-seconds", &["1"]),
    same("--parameter-sweep-same-seed", &[]),
    same("--no-parameter-sweep-same-seed", &[]),
    refused("--parameter-sweep-mode", &SWEEP_SHAPE),
    refused("--sweep-type", &SWEEP_SHAPE),
    refused("--no-sweep-table", &SWEEP_SHAPE),
    refused("--variant", &SWEEP_SHAPE),
    refused("--sweep-variant", &SWEEP_SHAPE),
    // Search
    refused("--search-space", &BAYESIAN),
    refused("--search-metric", &BAYESIAN),
    refused("--search-stat", &BAYESIAN),
    refused("--search-direction", &BAYESIAN),
    refused("--search-max-iterations", &BAYESIAN),
    refused("--search-initial-points", &BAYESIAN),
    refused("--search-random-seed", &BAYESIAN),
    refused("--search-planner", &BAYESIAN),
    refused("--optuna-sampler", &BAYESIAN),
    refused("--optuna-acquisition", &BAYESIAN),
    refused("--optuna-terminator", &BAYESIAN),
    refused("--search-percentile-pooling", &BAYESIAN),
    refused("--bo-constraint-mode", &BAYESIAN),
    refused("--search-sla", &SLA),
    refused("--search-sla-tier", &SLA),
    refused("--search-recipe", &BAYESIAN),
    refused("--search-style", &BAYESIAN),
    same("--ttft-sla-ms", &["500"]),
    same("--itl-sla-ms", &["20"]),
    same("--tpot-sla-ms", &["20"]),
    same("--e2e-sla-ms", &["2000"]),
    same("--error-rate-sla", &["0.05"]),
    same("--slo-attainment-fraction", &["0.9"]),
    refused("--degradation-threshold", &BAYESIAN),
    refused("--degradation-metric-tag", &BAYESIAN),
    refused("--degradation-stat", &BAYESIAN),
    refused("--isl-osl-pairs", &GRID),
    refused("--isl-min", &GRID),
    refused("--isl-max", &GRID),
    refused("--isl-steps", &GRID),
    refused("--concurrency-min", &GRID),
    refused("--concurrency-max", &GRID),
    refused("--concurrency-steps", &GRID),
    refused("--osl-min", &GRID),
    refused("--osl-max", &GRID),
    refused("--osl-steps", &GRID),
];

/// The entry of an AIPerf spelling, if it is one.
pub fn lookup(spelling: &str) -> Option<&'static AiperfOption> {
    OPTIONS.iter().find(|o| o.spelling == spelling)
}

/// The refusal of the first refused AIPerf spelling among `args` (`--name`, `--name=value`, or a
/// refused short form with its value attached), as one line, or `None`.
pub fn refusal(args: &[String]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        if a == "--" {
            return None;
        }
        // AIPerf's `--stream DOMAIN` (OpenTelemetry); our `--stream` is a switch (`--streaming`).
        let domain = match a.split_once('=') {
            Some(("--stream", v)) => Some(v),
            None if a == "--stream" => args.get(i + 1).map(String::as_str),
            _ => None,
        };
        if let Some(d @ ("metrics" | "timing" | "default")) = domain {
            return Some(format!(
                "the AIPerf option --stream {d} is not supported by `aiperf-cli profile`: {}; instead: {}",
                TRACKING.why, TRACKING.instead
            ));
        }
        let name = if a.starts_with("--") { a.split('=').next().unwrap_or(a) } else { short_name(a) };
        if let Some(AiperfOption { spelling, verdict: Verdict::Refused(r) }) = lookup(name) {
            return Some(format!(
                "the AIPerf option {spelling} is not supported by `aiperf-cli profile`: {}; instead: {}",
                r.why, r.instead
            ));
        }
    }
    None
}

/// The refused short form takes a value, which may be attached (`-b4`).
fn short_name(a: &str) -> &str {
    match a.get(..2) {
        Some(s @ "-b") => s,
        _ => a,
    }
}

/// How many spellings are honoured and how many refused.
pub fn counts() -> (usize, usize) {
    let honoured = OPTIONS.iter().filter(|o| matches!(o.verdict, Verdict::Honoured { .. })).count();
    (honoured, OPTIONS.len() - honoured)
}

/// `aiperf-cli profile --aiperf-options`: the table, one spelling a line (tab-separated:
/// spelling, honoured or refused, our flag or the reason and what to use instead), under a line
/// with the counts.
pub fn listing() -> String {
    let (honoured, refused) = counts();
    let mut out = format!("# AIPerf 0.13.0 `profile` option spellings: {honoured} honoured, {refused} refused\n");
    for o in OPTIONS {
        match o.verdict {
            Verdict::Honoured { ours, .. } => out.push_str(&format!("{}\thonoured\t{ours}\n", o.spelling)),
            Verdict::Refused(r) => {
                out.push_str(&format!("{}\trefused\t{}; instead: {}\n", o.spelling, r.why, r.instead))
            }
        }
    }
    out
}
