//! The answer planned: its tokens and finish reason, the prompt's cache hit, its usage and time
//! to first token, and the request counted as running until it ends.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::admit::{Ask, hits, prompt_of};
use crate::mock_server::answer::words_of;
use crate::mock_server::args::Args;
use crate::mock_server::state::State;

/// The answer planned for a request.
pub(super) struct Planned {
    pub(super) tokens: u64,
    pub(super) finish: &'static str,
    pub(super) prompt_tokens: u64,
    /// Prompt tokens found in the prefix cache (the KV model's are known once the request starts).
    pub(super) cached: u64,
    /// The request's time to first token once started (ms).
    pub(super) ttft_ms: f64,
    /// Ends the request's `running` count when dropped.
    pub(super) done: Finish,
}

impl Planned {
    pub(super) fn usage(&self) -> Value {
        let (p, t) = (self.prompt_tokens, self.tokens);
        json!({"prompt_tokens": p, "completion_tokens": t, "total_tokens": p + t,
            "prompt_tokens_details": {"cached_tokens": self.cached}})
    }

    /// `--ttft-ms`, plus `--prefill-per-token-ms` for each uncached prompt token.
    pub(super) fn set_ttft(&mut self, a: &Args) {
        self.ttft_ms = if a.prefill_per_token_ms > 0.0 {
            a.ttft_ms + a.prefill_per_token_ms * self.prompt_tokens.saturating_sub(self.cached) as f64
        } else {
            a.ttft_ms
        };
    }
}

/// How many tokens the answer has and why it ends; the prompt looked up in the prefix cache; the
/// request counted as running.
pub(super) fn plan(state: &Arc<State>, ask: &Ask, body: &Value) -> Planned {
    let a = &state.args;
    let mut tokens = ask.max_tokens.unwrap_or(a.default_output_tokens);
    if !ask.ignore_eos
        && let Some(e) = a.eos_after
    {
        tokens = tokens.min(e);
    }
    if hits(ask.n, a.ignore_max_tokens_rate, 4 * 7919) {
        tokens += 5;
    }
    let finish = if Some(tokens) == ask.max_tokens { "length" } else { "stop" };
    let cached = if state.kv.is_some() {
        0
    } else {
        let mut words = Vec::new();
        words_of(prompt_of(body, ask.chat), &mut words);
        state.cache.lock().map(|mut c| c.query(&words)).unwrap_or(0)
    };
    let m = &state.metrics;
    m.running.fetch_add(1, Ordering::Relaxed);
    let done = Finish { state: state.clone(), started: std::time::Instant::now() };
    let prompt_tokens = ask.prompt_tokens;
    m.prompt_tokens.fetch_add(prompt_tokens, Ordering::Relaxed);
    m.generation_tokens.fetch_add(tokens, Ordering::Relaxed);
    m.queries.fetch_add(prompt_tokens, Ordering::Relaxed);
    m.hits.fetch_add(cached, Ordering::Relaxed);
    let mut planned = Planned { tokens, finish, prompt_tokens, cached, ttft_ms: 0.0, done };
    planned.set_ttft(a);
    planned
}

/// Ends a request's `running` count and records its latency when dropped (a stream may end early).
pub(super) struct Finish {
    state: Arc<State>,
    started: std::time::Instant,
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.state.metrics.finished(self.started.elapsed());
    }
}
