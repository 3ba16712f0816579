//! `simulate`'s command line: the cluster options (lists give a sweep), the engine and its fit.

use aiperf_core::analysis::DEFAULT_BLOCK_SIZE;
use aiperf_core::simulate::engine::{DEFAULT_MAX_BATCH_TOKENS, EngineMode};
use aiperf_core::simulate::{Engine, Policy, Router};
use aiperf_core::trace::DEFAULT_MAX_LINE_BYTES;
use anyhow::Result;
use std::path::PathBuf;

/// Simulate a trace on a cluster: replicas with prefix caches, a router, engine timing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace (any format `analyze-trace` reads).
    pub file: PathBuf,
    #[command(flatten)]
    pub format: crate::io::trace_format::TraceFormatArgs,
    /// Replicas (a comma-separated list sweeps).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub replicas: Vec<u32>,
    /// KV capacity of each replica in blocks, or `unbounded` (a list sweeps).
    #[arg(long, value_delimiter = ',', default_value = "unbounded", value_parser = parse_blocks)]
    pub kv_blocks: Vec<Option<u64>>,
    /// KV capacity of each replica in GB (10^9 bytes), converted to blocks with
    /// --bytes-per-token; replaces --kv-blocks (a list sweeps).
    #[arg(long, value_delimiter = ',', requires = "bytes_per_token")]
    pub kv_gb: Vec<f64>,
    /// KV bytes per token (2 × layers × KV heads × head size × bytes per value).
    #[arg(long)]
    pub bytes_per_token: Option<u64>,
    /// Tokens per block: the trace's hash-id block size. The engine serves whole cached blocks
    /// up to the prompt's last token, which it always computes again (as vLLM does: a fully
    /// cached prompt of whole blocks hits one block less).
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Router (a list sweeps); kv-aware is NVIDIA Dynamo's KV router cost.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "kv-aware")]
    pub router: Vec<Router>,
    /// Eviction policy (a list sweeps).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "lru")]
    pub policy: Vec<Policy>,
    /// Weight of the blocks to prefill in the kv-aware cost (Dynamo's overlap_score_weight).
    #[arg(long, default_value_t = 1.0)]
    pub overlap_weight: f64,
    /// Most requests running at once on a replica (unbounded when absent).
    #[arg(long)]
    pub max_running: Option<u32>,
    /// Fixed prefill time (ms).
    #[arg(long, default_value_t = Engine::default().prefill_fixed_us / 1000.0)]
    pub prefill_fixed_ms: f64,
    /// Prefill time per uncached prompt token (ms).
    #[arg(long, default_value_t = Engine::default().prefill_per_token_us / 1000.0)]
    pub prefill_per_token_ms: f64,
    /// Fixed time between output tokens (ms).
    #[arg(long, default_value_t = Engine::default().decode_fixed_us / 1000.0)]
    pub decode_fixed_ms: f64,
    /// Time between output tokens added by each running request (ms).
    #[arg(long, default_value_t = Engine::default().decode_per_running_us / 1000.0)]
    pub decode_per_running_ms: f64,
    /// How a replica's time advances. `request`: each request timed on its own (prefill from its
    /// uncached tokens, then its tokens at the decode time). `step`: in engine steps of at most
    /// --max-batch-tokens tokens, as vLLM v1's scheduler builds them (running requests' next
    /// tokens first, in the order they started, then waiting requests' prompts, chunked to the
    /// budget), each taking --decode-fixed-ms + --prefill-per-token-ms per prompt token +
    /// --decode-per-running-ms per decode token in it; a decode token that needs a KV block when
    /// every block is pinned preempts the latest started request, which computes its prompt and
    /// output again later (counted per replica in simulation.json). `step-llamacpp`: the same
    /// steps in llama.cpp's server's order: every waiting request that finds a free slot
    /// (--max-running slots, the least recently used first) starts, then each step takes every
    /// decoding request's next token and the running requests' prompt tokens in slot order up to
    /// --max-batch-tokens; no preemption.
    #[arg(long, value_enum, default_value = "request")]
    pub engine: EngineMode,
    /// Most tokens one engine step computes (--engine step, step-llamacpp): vLLM's max_num_batched_tokens,
    /// llama.cpp's --batch-size.
    #[arg(long, default_value_t = DEFAULT_MAX_BATCH_TOKENS, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_batch_tokens: u32,
    /// Fit the engine timing from a measured run folder's records (its profile_export.jsonl):
    /// time to first token against uncached prompt tokens, time between tokens against requests
    /// running; replaces the four timing options. With --max-running, the server is taken to
    /// run that many requests at once per URL, first come first served, and each request's wait
    /// for a slot is taken out of its time to first token (give the server's own limit: vLLM's
    /// max_num_seqs, llama.cpp's --parallel). Without it, the prefill is fitted on the requests
    /// sent while nothing else was in flight on their URL, when 3 or more were (the others may
    /// have waited in the server's queue).
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["prefill_fixed_ms", "prefill_per_token_ms", "decode_fixed_ms", "decode_per_running_ms"])]
    pub calibrate: Option<PathBuf>,
    /// Seed of the random router.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Hold each request's prompt blocks only. By default its output tokens also take blocks
    /// as they are decoded, as vLLM's do (a prompt of whole blocks takes one more at its first
    /// output token); `analyze-trace`'s LRU curve counts prompt blocks only.
    #[arg(long)]
    pub prompt_blocks_only: bool,
    /// Sampled series points (KV usage, queue, running) over the trace's span.
    #[arg(long, default_value_t = 200)]
    pub samples: u64,
    /// Folder of the run folders and the sweep's summary.
    #[arg(long, default_value = "simulate")]
    pub output_dir: PathBuf,
    /// Replace the files of an earlier simulation in --output-dir (a folder holding one is
    /// refused otherwise).
    #[arg(long)]
    pub overwrite: bool,
    /// Skip the records (`profile_export.jsonl`): only the summaries.
    #[arg(long)]
    pub no_records: bool,
    /// Skip invalid rows instead of stopping at the first one.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Longest line accepted (bytes).
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

fn parse_blocks(s: &str) -> Result<Option<u64>, String> {
    match s.trim() {
        "unbounded" | "inf" => Ok(None),
        t => match t.parse::<u64>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(format!("'{s}' is not a block count: a whole number ≥ 1, or `unbounded`")),
        },
    }
}
