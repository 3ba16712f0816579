//! `mock-server`'s options, their defaults and the checks of their values.

use std::path::PathBuf;
use std::time::Duration;

use aiperf_core::simulate::engine::{DEFAULT_MAX_BATCH_TOKENS, EngineMode};
use aiperf_core::simulate::{Engine, Steps};

/// Options of the mock server.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Port on 127.0.0.1 (0 = any free port; the chosen one is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Time to first token (ms, at most a day).
    #[arg(long, default_value_t = 0.0, value_parser = millis)]
    pub ttft_ms: f64,
    /// Time between tokens (ms, at most a day).
    #[arg(long, default_value_t = 0.0, value_parser = millis)]
    pub itl_ms: f64,
    /// Output tokens when a request sets no max_tokens.
    #[arg(long, default_value_t = 16)]
    pub default_output_tokens: u64,
    /// Without `ignore_eos: true`, stop after this many tokens (like an early end of sequence).
    #[arg(long)]
    pub eos_after: Option<u64>,
    /// Fraction of requests answered with HTTP 500.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub error_rate: f64,
    /// Fraction of streams cut (connection reset) halfway.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub disconnect_rate: f64,
    /// Fraction of streams with a malformed JSON chunk.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub malformed_rate: f64,
    /// Fraction of streams that stall after the first token (until the client gives up).
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub stall_rate: f64,
    /// Fraction of requests answered with more tokens than max_tokens.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub ignore_max_tokens_rate: f64,
    /// Write one JSON line per request (arrival time, tokens asked, prompt size) to this file
    /// (`-`: standard output; a FIFO is written through).
    #[arg(long)]
    pub arrivals_file: Option<PathBuf>,
    /// With --arrivals-file: each line also carries the request's JSON body (`body`), to compare
    /// what clients send.
    #[arg(long, requires = "arrivals_file")]
    pub log_bodies: bool,
    /// Most output tokens one request may ask for (`max_tokens`); more is answered with HTTP 400.
    #[arg(long, default_value_t = DEFAULT_MAX_OUTPUT_TOKENS)]
    pub max_output_tokens: u64,
    /// The model's context (tokens), as vLLM's `--max-model-len`: a prompt that fills it, or a
    /// prompt and `max_tokens` over it, is answered with HTTP 400 and vLLM's message.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_model_len: Option<u64>,
    /// Largest request body accepted (bytes); a larger one is answered with HTTP 413.
    #[arg(long, default_value_t = DEFAULT_MAX_REQUEST_BYTES)]
    pub max_request_bytes: usize,
    /// Close a keep-alive connection that sends no new request for this long (seconds). The
    /// default outlasts `profile`'s own 90 s pool idle timeout, so the client closes first.
    #[arg(long, default_value = DEFAULT_IDLE_TIMEOUT_SECONDS, value_parser = positive_seconds)]
    pub idle_timeout_seconds: Duration,
    /// Exit after this many seconds (a safety net for scripts; at most 30 days).
    #[arg(long, value_parser = seconds)]
    pub exit_after_seconds: Option<Duration>,
    /// Load model: at most this many requests served at once (from their TTFT to their last
    /// token); the others wait in a FIFO queue, so TTFT grows with load.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub slots: Option<u32>,
    /// KV model: tokens per block of the prefix cache (vLLM's block size). A prompt's whole
    /// blocks are chain-hashed over its tokens and held in the simulator's cache (`aiperf-cli
    /// simulate`): this option, `--tokenizer` or `--kv-blocks` turns the model on (default
    /// block size 512 then); without them the cache hashes blocks of 16 words and empties itself
    /// at 65,536 blocks. Cached tokens are whole blocks up to the prompt's last token, which is
    /// always computed again (as vLLM does: a fully cached prompt of whole blocks hits one block
    /// less).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub block_size: Option<u32>,
    /// KV model: the prompt's tokens are this tokenizer's ids (a tokenizer.json, a folder holding
    /// one, or a Hugging Face model name; a chat request's message contents are tokenized one
    /// after the other, without a chat template). Without it a token is a word of the prompt.
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// KV model: blocks the prefix cache holds; blocks of running requests are pinned, the others
    /// evicted by `--policy`, and a request waits in line until the blocks it would pin (new
    /// ones, and cached ones no running request holds) fit beside the pinned ones (unbounded when
    /// absent).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub kv_blocks: Option<u64>,
    /// KV model: which unpinned block is evicted when `--kv-blocks` are full.
    #[arg(long, value_enum, default_value = "lru")]
    pub policy: aiperf_core::simulate::Policy,
    /// Prefill time per uncached prompt token (ms, at most a day), added to `--ttft-ms`: the
    /// first token comes `ttft-ms + prefill-per-token-ms × (prompt tokens − cached tokens)`
    /// after the request starts.
    #[arg(long, default_value_t = 0.0, value_parser = millis)]
    pub prefill_per_token_ms: f64,
    /// KV model: how its time advances (`step` turns the KV model on). `request`: each request
    /// on its own, its first token `--ttft-ms` + `--prefill-per-token-ms` × uncached prompt
    /// tokens after it starts, then one every `--itl-ms`. `step`: in engine steps of at most
    /// `--max-batch-tokens` tokens, `aiperf-cli simulate --engine step`'s own engine (vLLM v1's
    /// scheduler with chunked prefill: the running requests' next tokens first, in the order they
    /// started, then the waiting requests' prompts), each step taking `--itl-ms` +
    /// `--prefill-per-token-ms` per prompt token + `--decode-per-running-ms` per decode token in
    /// it; a decode token that needs a KV block when every block is pinned preempts the latest
    /// started request, which computes its prompt and output again later (vLLM's
    /// `vllm:num_preemptions_total` in `/metrics`). `step-llamacpp`: the same steps in
    /// llama.cpp's server's order (every request a slot is free for starts; every decoding
    /// request's next token first, then prompt tokens in slot order; no preemption). `--ttft-ms`
    /// is for `request` only.
    #[arg(long, value_enum, default_value = "request")]
    pub engine: EngineMode,
    /// Most tokens one engine step computes (`--engine step`, `step-llamacpp`): vLLM's
    /// max_num_batched_tokens, llama.cpp's --batch-size.
    #[arg(long, default_value_t = DEFAULT_MAX_BATCH_TOKENS, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_batch_tokens: u32,
    /// Time a step takes per decode token in it (ms, at most a day; `--engine step`), as
    /// `aiperf-cli simulate --decode-per-running-ms`.
    #[arg(long, default_value_t = 0.0, value_parser = millis)]
    pub decode_per_running_ms: f64,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first); needs
    /// `--tls-key`.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve an HTML page at /metrics instead of Prometheus text (to test scrapers).
    #[arg(long)]
    pub metrics_garbage: bool,
    /// Answer with varied text (common words, numbers and punctuation drawn per request) instead
    /// of eight repeated words, so that a client's tokenizer meets text as from a model. A token
    /// of the answer is still one word of it.
    #[arg(long)]
    pub varied_text: bool,
    /// Tokens in the first content chunk of a stream (the others carry one each), as a server
    /// that bundles its first tokens (TensorRT-LLM's stream interval).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub first_chunk_tokens: u64,
}

impl Args {
    /// Whether the KV model (`--block-size`, `--tokenizer`, `--kv-blocks`) replaces the word cache.
    pub fn kv_model(&self) -> bool {
        self.block_size.is_some() || self.tokenizer.is_some() || self.kv_blocks.is_some() || self.steps().is_some()
    }

    /// The engine steps of `--engine step`, `None` for `request`.
    pub fn steps(&self) -> Option<Steps> {
        // `simulate --engine step`'s reading of its timing options, with `--itl-ms` as its
        // `--decode-fixed-ms`.
        let engine = Engine {
            prefill_fixed_us: 0.0,
            prefill_per_token_us: self.prefill_per_token_ms * 1000.0,
            decode_fixed_us: self.itl_ms * 1000.0,
            decode_per_running_us: self.decode_per_running_ms * 1000.0,
        };
        self.engine.steps(&engine, self.max_batch_tokens)
    }

    /// Refuses the options that the chosen engine does not use.
    pub fn check(&self) -> std::result::Result<(), String> {
        match self.engine {
            EngineMode::Step | EngineMode::StepLlamacpp if self.ttft_ms > 0.0 => Err(format!(
                "--ttft-ms {}: not accepted with --engine {}, where the first token comes at the end of the \
                 step that computes the prompt's last token (--itl-ms + --prefill-per-token-ms per prompt token \
                 + --decode-per-running-ms per decode token in it)",
                self.ttft_ms,
                self.engine.name()
            )),
            EngineMode::Request if self.decode_per_running_ms > 0.0 => {
                Err(format!("--decode-per-running-ms {}: accepted with --engine step only", self.decode_per_running_ms))
            }
            _ => Ok(()),
        }
    }
}

/// Default of `--max-output-tokens`: a million tokens (a few MB of text).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 1_000_000;
/// Default of `--max-request-bytes`: 64 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 64 << 20;
/// Default of `--idle-timeout-seconds`.
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: &str = "120";

/// A number in `[lo, hi]` (`lo` excluded when `open`), described as `what` in the error.
fn number_in(s: &str, lo: f64, hi: f64, open: bool, what: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (v > lo || (!open && v == lo)) && v <= hi => Ok(v),
        _ => Err(format!(
            "expected {what} from {lo} ({}) to {hi}, found {s:?}",
            if open { "excluded" } else { "included" }
        )),
    }
}

/// A time span in seconds > 0 ([`aiperf_core::duration`]).
fn positive_seconds(s: &str) -> std::result::Result<Duration, String> {
    aiperf_core::duration::parse_seconds(s, false).map_err(|e| e.to_string())
}

/// A time span in seconds ≥ 0.
fn seconds(s: &str) -> std::result::Result<Duration, String> {
    aiperf_core::duration::parse_seconds(s, true).map_err(|e| e.to_string())
}

/// Milliseconds >= 0, at most a day.
fn millis(s: &str) -> std::result::Result<f64, String> {
    number_in(s, 0.0, 86_400_000.0, false, "a number of milliseconds")
}

/// A fraction of requests.
fn rate(s: &str) -> std::result::Result<f64, String> {
    number_in(s, 0.0, 1.0, false, "a fraction")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use aiperf_core::simulate::StepOrder;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(a: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("mock-server").chain(a.iter().copied())).unwrap().args
    }

    #[test]
    fn engine_steps_take_their_times_from_the_mock_options_and_refuse_a_ttft() {
        let a = parse(&["--engine", "step", "--itl-ms", "2", "--prefill-per-token-ms", "0.5"]);
        let a = Args { decode_per_running_ms: 0.25, max_batch_tokens: 64, ..a };
        assert!(a.kv_model());
        let steps = Steps {
            max_batch_tokens: 64,
            fixed_us: 2000.0,
            per_prefill_token_us: 500.0,
            per_decode_token_us: 250.0,
            order: StepOrder::Vllm,
        };
        assert_eq!(a.steps(), Some(steps));
        assert_eq!(a.check(), Ok(()));
        let e = parse(&["--engine", "step", "--ttft-ms", "5"]).check().unwrap_err();
        assert!(e.starts_with("--ttft-ms 5: not accepted with --engine step"), "{e}");
        let llama = parse(&["--engine", "step-llamacpp", "--itl-ms", "2", "--prefill-per-token-ms", "0.5"]);
        let llama = Args { decode_per_running_ms: 0.25, max_batch_tokens: 64, ..llama };
        assert_eq!(llama.steps(), Some(Steps { order: StepOrder::LlamaCpp, ..steps }));
        let e = parse(&["--engine", "step-llamacpp", "--ttft-ms", "5"]).check().unwrap_err();
        assert!(e.starts_with("--ttft-ms 5: not accepted with --engine step-llamacpp"), "{e}");
        let e = parse(&["--decode-per-running-ms", "1"]).check().unwrap_err();
        assert_eq!(e, "--decode-per-running-ms 1: accepted with --engine step only");
        let plain = parse(&[]);
        assert!(plain.steps().is_none() && !plain.kv_model() && plain.check().is_ok());
        assert!(Cli::try_parse_from(["mock-server", "--max-batch-tokens", "0"]).is_err());
    }
}
