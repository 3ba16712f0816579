//! The load model's side of a request: the slot it waits for (`--slots`, the KV model or its
//! engine steps), and the pace its tokens come at.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;

use super::plan::Planned;
use crate::mock_server::kv::{Model, Running};
use crate::mock_server::metrics::InLine;
use crate::mock_server::state::State;
use crate::mock_server::steps::Stepping;

/// What a started request holds until its last token: a `--slots` slot, or its place in the KV
/// model (a running slot and its pinned blocks), or in its engine steps (which make its tokens).
pub(super) enum Slot {
    Permit(#[allow(dead_code)] OwnedSemaphorePermit),
    Kv(#[allow(dead_code)] Running),
    Steps(Stepping),
}

/// The load model: waits in line for a slot, held until the last token. With the KV model the
/// request's cache hit is known once it starts.
pub(super) async fn take_slot(state: &State, planned: &mut Planned, hashes: Option<Vec<u64>>) -> Option<Slot> {
    if let Some(Model::Step(kv)) = &state.kv {
        let mut stepping = kv.start(hashes.unwrap_or_default(), planned.prompt_tokens, planned.tokens);
        let hit = {
            let _in_line = InLine::new(&state.metrics);
            stepping.started().await?
        };
        planned.cached = aiperf_core::simulate::engine_cached_tokens(hit, planned.prompt_tokens, kv.block_size());
        state.metrics.hits.fetch_add(planned.cached, Ordering::Relaxed);
        return Some(Slot::Steps(stepping));
    }
    if let Some(Model::Request(kv)) = &state.kv {
        let hashes = hashes.unwrap_or_default();
        let running = {
            let _in_line = InLine::new(&state.metrics);
            kv.start(hashes, planned.prompt_tokens, planned.tokens).await?
        };
        planned.cached =
            aiperf_core::simulate::engine_cached_tokens(running.hit_blocks, planned.prompt_tokens, kv.block_size());
        state.metrics.hits.fetch_add(planned.cached, Ordering::Relaxed);
        planned.set_ttft(&state.args);
        let (ttft, itl) = pacing(state, planned.ttft_ms);
        running.decode(tokio::time::Instant::now() + ttft, itl);
        return Some(Slot::Kv(running));
    }
    match &state.slots {
        Some(s) => {
            let _in_line = InLine::new(&state.metrics);
            s.take().await.map(Slot::Permit)
        }
        None => None,
    }
}

/// Time to first token (`ttft_ms`) and between tokens.
fn pacing(state: &State, ttft_ms: f64) -> (Duration, Duration) {
    let a = &state.args;
    (Duration::from_secs_f64(ttft_ms.max(0.0) / 1e3), Duration::from_secs_f64(a.itl_ms.max(0.0) / 1e3))
}

/// When a request's tokens come: on the clock (the first after `ttft`, then one every `itl`),
/// or as its engine steps make them.
pub(super) enum Pace {
    Clock { ttft: Duration, itl: Duration, first: Option<tokio::time::Instant> },
    Steps(Stepping),
}

impl Pace {
    /// The request's pace, and what it holds until its last token (`None` when its steps hold
    /// its place).
    pub(super) fn of(state: &State, ttft_ms: f64, slot: Option<Slot>) -> (Pace, Option<Slot>) {
        match slot {
            Some(Slot::Steps(s)) => (Pace::Steps(s), None),
            slot => {
                let (ttft, itl) = pacing(state, ttft_ms);
                (Pace::Clock { ttft, itl, first: None }, slot)
            }
        }
    }

    /// Waits until content chunk `chunk` (from 0), which carries the output tokens up to
    /// `token` (from 0), is due; false when it never will be.
    pub(super) async fn until(&mut self, chunk: u64, token: u64) -> bool {
        match self {
            Pace::Clock { ttft, itl, first } => {
                match first {
                    None => {
                        tokio::time::sleep(*ttft).await;
                        *first = Some(tokio::time::Instant::now());
                    }
                    // Deadlines from the first token, so timer rounding does not add up.
                    Some(f) if !itl.is_zero() => {
                        tokio::time::sleep_until(*f + *itl * u32::try_from(chunk).unwrap_or(u32::MAX)).await;
                    }
                    Some(_) => {}
                }
                true
            }
            Pace::Steps(s) => s.made(token.saturating_add(1)).await,
        }
    }

    /// Whether the chunks leave one by one as they are due (otherwise all at once).
    pub(super) fn spaced(&self) -> bool {
        match self {
            Pace::Clock { itl, .. } => !itl.is_zero(),
            Pace::Steps(_) => true,
        }
    }

    /// Waits until all `tokens` are made.
    pub(super) async fn finished(&mut self, tokens: u64) {
        match self {
            Pace::Clock { ttft, itl, .. } => {
                tokio::time::sleep(*ttft + *itl * (tokens.saturating_sub(1) as u32)).await;
            }
            Pace::Steps(s) => {
                s.made(tokens.max(1)).await;
            }
        }
    }
}
