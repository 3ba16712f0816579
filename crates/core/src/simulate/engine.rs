//! The step engine ([`Steps`]): a replica's time advances in steps, each a forward pass over a
//! batch of at most `max_batch_tokens` tokens, as vLLM v1's scheduler builds it
//! (`vllm/v1/core/sched/scheduler.py`, `Scheduler.schedule`) with chunked prefill:
//!
//! 1. the running requests, in the order they started, each get their next tokens while the
//!    budget lasts: one decode token, or the rest of their prompt (a resumed request's prompt
//!    and output so far) up to what the budget has left. A decode token that needs a new KV
//!    block ([`OutputBlocks`](super::OutputBlocks)) when every block is pinned preempts the
//!    latest started running request ([`preempt`](super::preempt)) until the block fits; when
//!    that request is itself, it waits for the next step and the batch ends there;
//! 2. when nothing was preempted, the waiting requests start in order while the budget lasts, a
//!    slot is free (`max_running`) and their blocks fit, each computing its uncached prompt
//!    tokens up to the budget's rest.
//!
//! The step takes `fixed + per_prefill_token × prompt tokens + per_decode_token × decode tokens`;
//! at its end each request whose prompt is done makes a token (the first token when its prompt
//! was computed in this step), and the next step is scheduled at once; a replica with nothing
//! to run waits for the next arrival.
//!
//! The steps are built over a [`StepHost`]: one replica's requests, running order, waiting line
//! and KV blocks. The simulator is one host (its replicas over the cluster's block table, in
//! virtual time), the mock server's KV model another (one replica over its hash-keyed
//! [`BlockCache`](super::cache::BlockCache), on its own clock): both run these steps.
//!
//! In llama.cpp's order ([`StepOrder::LlamaCpp`]) a step is built as llama.cpp's server builds
//! its batch (`tools/server/server-context.cpp`): every waiting request that finds a free slot
//! starts (`get_available_slot`, `launch_slot_with_task`: a slot takes a task whatever the batch
//! holds; its blocks must fit, as above), then `server_context::update_slots` puts in every
//! decoding request's next token ("first, add sampled tokens from any ongoing sequences"; its
//! batch holds `max(n_batch, n_parallel)` tokens, so every slot's fits), then the running
//! requests' prompt tokens in slot order ([`Slots`]) while the batch holds fewer than
//! `max_batch_tokens` ("next, batch any pending prompts without exceeding n_batch"). Nothing is
//! preempted: a slot holds its whole context, so a decode token whose output block finds no room
//! goes on without caching it. A step is timed as one pass (llama.cpp splits it into passes of
//! `--ubatch-size` tokens).
//!
//! The decode tokens go first in both orders: in vLLM's a request gets prompt tokens only when
//! those started before it have all of theirs, so every decoding request comes before every
//! prefilling one, and at most one request is part way through its prompt when a step begins.
//! llama.cpp starts every request a slot is free for, so several prompts are under way at once,
//! the lowest slot's first: a request sent later can overtake one sent earlier.

use serde::{Deserialize, Serialize};

use super::blocks::OutputBlocks;
use super::error::SimulateError;
use super::timing::Engine;

/// Engine steps with a token budget, and the time a step takes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    /// Most tokens one step computes (vLLM's `max_num_batched_tokens`, llama.cpp's
    /// `--batch-size`).
    pub max_batch_tokens: u32,
    /// Time of a step: fixed, per prompt token and per decode token in it (µs).
    pub fixed_us: f64,
    pub per_prefill_token_us: f64,
    pub per_decode_token_us: f64,
    /// The order a step takes its tokens in.
    #[serde(default)]
    pub order: StepOrder,
}

/// The order a step takes the requests' tokens in (the module's comment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOrder {
    /// vLLM v1's: the running requests in the order they started, each its next decode token or
    /// prompt chunk while the budget lasts (preempting for a block), then the waiting ones.
    #[default]
    Vllm,
    /// llama.cpp's: every waiting request a slot is free for starts, then every decode token
    /// goes in, then the running requests' prompt tokens in slot order; no preemption.
    LlamaCpp,
}

/// llama.cpp's default `--batch-size`.
pub const DEFAULT_MAX_BATCH_TOKENS: u32 = 2048;

/// How a replica's time advances: each request timed on its own ([`super::Engine`]), or in engine
/// steps with a token budget ([`Steps`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum EngineMode {
    #[default]
    Request,
    /// Engine steps in vLLM v1's order.
    Step,
    /// Engine steps in llama.cpp's order.
    StepLlamacpp,
}

impl EngineMode {
    pub const ALL: [EngineMode; 3] = [EngineMode::Request, EngineMode::Step, EngineMode::StepLlamacpp];

    /// The name on the command line (`--engine`).
    pub fn name(self) -> &'static str {
        match self {
            EngineMode::Request => "request",
            EngineMode::Step => "step",
            EngineMode::StepLlamacpp => "step-llamacpp",
        }
    }

    /// The order of this mode's steps; `None` for [`EngineMode::Request`].
    pub fn step_order(self) -> Option<StepOrder> {
        match self {
            EngineMode::Request => None,
            EngineMode::Step => Some(StepOrder::Vllm),
            EngineMode::StepLlamacpp => Some(StepOrder::LlamaCpp),
        }
    }

    /// The mode that runs `steps` (`None`: [`EngineMode::Request`]).
    pub fn of(steps: Option<Steps>) -> EngineMode {
        match steps.map(|s| s.order) {
            None => EngineMode::Request,
            Some(StepOrder::Vllm) => EngineMode::Step,
            Some(StepOrder::LlamaCpp) => EngineMode::StepLlamacpp,
        }
    }

    /// The steps this mode runs with `engine`'s timing ([`Steps::from_engine`]); `None` for
    /// [`EngineMode::Request`].
    pub fn steps(self, engine: &Engine, max_batch_tokens: u32) -> Option<Steps> {
        self.step_order().map(|order| Steps { order, ..Steps::from_engine(engine, max_batch_tokens) })
    }
}

impl Steps {
    /// Steps of at most `max_batch_tokens` tokens timed by the per-request engine's figures: a
    /// step takes `decode_fixed_us`, plus `prefill_per_token_us` per prompt token and
    /// `decode_per_running_us` per decode token in it (`simulate --engine step`'s reading of the
    /// four timing options).
    pub fn from_engine(engine: &Engine, max_batch_tokens: u32) -> Steps {
        Steps {
            max_batch_tokens,
            fixed_us: engine.decode_fixed_us,
            per_prefill_token_us: engine.prefill_per_token_us,
            per_decode_token_us: engine.decode_per_running_us,
            order: StepOrder::Vllm,
        }
    }

    /// The time of a step of `prefill` prompt tokens and `decode` decode tokens (µs).
    pub fn step_us(&self, prefill: u64, decode: u64) -> f64 {
        self.fixed_us + self.per_prefill_token_us * prefill as f64 + self.per_decode_token_us * decode as f64
    }

    pub(super) fn check(&self) -> Result<(), SimulateError> {
        if self.max_batch_tokens == 0 {
            return Err(SimulateError::ZeroBatchTokens);
        }
        for (field, value) in [
            ("step fixed time", self.fixed_us),
            ("step time per prompt token", self.per_prefill_token_us),
            ("step time per decode token", self.per_decode_token_us),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(SimulateError::BadEngine { field, value });
            }
        }
        Ok(())
    }
}

/// A request's progress through engine steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Prompt and output tokens.
    pub input: u64,
    pub output: u64,
    /// Output tokens made so far.
    pub produced: u64,
    /// Tokens still to compute before its next token: its prompt, and after a preemption its
    /// output so far too.
    pub prefill_left: u64,
    /// Output blocks ([`OutputBlocks`]): the output token whose step takes the first, those
    /// taken and those still to take, and whether the last stays partial.
    pub first_grow: u64,
    pub grown: u64,
    pub grows_left: u64,
    pub last_partial: bool,
    /// Whether it started before (a start after a preemption resumes it).
    pub started: bool,
    /// Its llama.cpp slot ([`Slots`]) while it runs in llama.cpp's order.
    pub slot: Option<u32>,
}

impl Progress {
    /// A start's plan: `input` prompt and `output` output tokens, output blocks as `grows` says.
    pub fn plan(&mut self, input: u64, output: u64, grows: OutputBlocks) {
        (self.input, self.output) = (input, output);
        (self.grows_left, self.last_partial, self.first_grow) = (grows.count, grows.last_partial, grows.first_token);
    }
}

/// One replica as the steps see it: its requests' [`Progress`], the running ones in the order
/// they started, the waiting line and the KV blocks.
pub trait StepHost {
    /// A request of the replica.
    type Id: Copy + PartialEq;
    fn progress(&mut self, id: Self::Id) -> &mut Progress;
    /// The running requests in the order they started (in llama.cpp's order, by slot).
    fn order(&mut self) -> &mut Vec<Self::Id>;
    /// The first waiting request, when a running slot is free for it.
    fn next_waiting(&self) -> Option<Self::Id>;
    /// Whether the first waiting request's prompt blocks fit beside the pinned ones with `more`
    /// blocks besides (always when nothing runs).
    fn fits_next(&self, more: u64) -> bool;
    /// Starts the first waiting request: out of the line, its prompt blocks matched and pinned,
    /// its progress planned ([`Progress::plan`]), counted unless it resumes
    /// ([`Progress::started`]). Returns its prompt tokens served from the cache.
    fn start_next(&mut self) -> u64;
    /// The running request takes one more output block (`partial`: still partial when it
    /// ends); false when no block is free.
    fn extend(&mut self, id: Self::Id, partial: bool) -> bool;
    /// The running request, already out of the running order, gives its blocks back and waits
    /// first in line; counted as a preemption.
    fn preempt(&mut self, id: Self::Id);
    /// The request made its `produced`-th output token at the end of a step.
    fn token(&mut self, id: Self::Id, produced: u64);
    /// The request made its last token and is out of the running order: its blocks go back.
    fn finish(&mut self, id: Self::Id);
    /// The replica's llama.cpp slots ([`StepOrder::LlamaCpp`]).
    fn slots(&mut self) -> &mut Slots;
}

/// llama.cpp's slots on one replica (`--parallel`, `max_running` of them): a starting request
/// takes the idle slot used least recently, one never used first and the highest numbered of
/// those (`server_context::get_available_slot`: `slot.t_last_used <= t_last`, every slot starting
/// at -1; its choice by prompt similarity is not modelled), and the running requests' prompts are
/// computed in slot order. Without `max_running` a slot is added when none is idle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slots {
    /// The slots made so far: number, last release (0: never released), whether one runs.
    slots: Vec<(u32, u64, bool)>,
    cap: Option<u32>,
    releases: u64,
}

impl Slots {
    pub fn new(max_running: Option<u32>) -> Slots {
        Slots { slots: Vec::new(), cap: max_running, releases: 0 }
    }

    /// A starting request's slot: its number.
    pub fn take(&mut self) -> u32 {
        let made = self.slots.len() as u32;
        let never_used = self.cap.is_some_and(|n| made < n);
        let idle = self.slots.iter_mut().filter(|s| !s.2).min_by_key(|s| (s.1, std::cmp::Reverse(s.0)));
        match idle {
            Some(slot) if !never_used => {
                slot.2 = true;
                slot.0
            }
            _ => {
                let number = self.cap.map_or(made, |n| n.saturating_sub(made + 1));
                self.slots.push((number, 0, true));
                number
            }
        }
    }

    /// Slot `number` is idle again.
    pub fn release(&mut self, number: u32) {
        self.releases += 1;
        if let Some(slot) = self.slots.iter_mut().find(|s| s.0 == number) {
            (slot.1, slot.2) = (self.releases, false);
        }
    }
}

impl Steps {
    /// Builds the host's next step into `batch` (each request with the prompt tokens it computes;
    /// 0: one decode token), as the module's comment says, for blocks of `block_size` tokens.
    /// Returns the step's time (µs), `None` when there is nothing to run.
    pub fn plan<H: StepHost>(&self, host: &mut H, block_size: u32, batch: &mut Vec<(H::Id, u64)>) -> Option<f64> {
        batch.clear();
        let mut budget = u64::from(self.max_batch_tokens);
        let mut preempted = false;
        match self.order {
            StepOrder::Vllm => {
                running_in_order(host, block_size, &mut budget, &mut preempted, batch);
                if !preempted {
                    start_waiting(host, block_size, &mut budget, batch);
                }
            }
            StepOrder::LlamaCpp => {
                while start_next(host, StepOrder::LlamaCpp, block_size).is_some() {}
                decodes_first(host, block_size, &mut budget, batch);
            }
        }
        if batch.is_empty() {
            return None;
        }
        let prefill: u64 = batch.iter().map(|b| b.1).sum();
        let decode = batch.iter().filter(|b| b.1 == 0).count() as u64;
        Some(self.step_us(prefill, decode))
    }

    /// The step of `batch` ended: its requests make their tokens ([`StepHost::token`]), and
    /// those done leave the running order and end ([`StepHost::finish`]).
    pub fn end<H: StepHost>(host: &mut H, batch: &[(H::Id, u64)]) {
        for &(id, take) in batch {
            let p = host.progress(id);
            if take > 0 {
                p.prefill_left = p.prefill_left.saturating_sub(take);
                if p.prefill_left > 0 {
                    continue;
                }
            }
            p.produced += 1;
            let (produced, output) = (p.produced, p.output);
            host.token(id, produced);
            if produced < output {
                continue;
            }
            host.order().retain(|&o| o != id);
            if let Some(slot) = host.progress(id).slot.take() {
                host.slots().release(slot);
            }
            host.finish(id);
        }
    }
}

/// vLLM's order: the running requests in the order they started, each its next decode token
/// (taking its output block when one is due, preempting for it) or the prompt tokens the budget
/// has left, until the budget or the requests run out, or a request preempted itself.
fn running_in_order<H: StepHost>(
    host: &mut H,
    block_size: u32,
    budget: &mut u64,
    preempted: &mut bool,
    batch: &mut Vec<(H::Id, u64)>,
) {
    let mut i = 0;
    while *budget > 0 {
        let Some(&id) = host.order().get(i) else { break };
        let p = *host.progress(id);
        if p.prefill_left > 0 {
            let take = p.prefill_left.min(*budget);
            batch.push((id, take));
            *budget -= take;
            i += 1;
            continue;
        }
        if block_due(&p, block_size) && !take_output_block(host, id, preempted) {
            break;
        }
        batch.push((id, 0));
        *budget -= 1;
        i += 1;
    }
}

/// llama.cpp's order: every decoding request's next token (its output block taken when due and
/// one is free, else the token goes on uncached), then the running requests' prompt tokens in
/// order while the batch holds fewer than the budget's tokens; `budget` keeps what is left.
fn decodes_first<H: StepHost>(host: &mut H, block_size: u32, budget: &mut u64, batch: &mut Vec<(H::Id, u64)>) {
    let running = host.order().len();
    for i in 0..running {
        let Some(&id) = host.order().get(i) else { break };
        let p = *host.progress(id);
        if p.prefill_left > 0 {
            continue;
        }
        if block_due(&p, block_size) {
            host.extend(id, p.grows_left == 1 && p.last_partial);
            let p = host.progress(id);
            p.grows_left -= 1;
            p.grown += 1;
        }
        batch.push((id, 0));
        *budget = budget.saturating_sub(1);
    }
    for i in 0..running {
        if *budget == 0 {
            break;
        }
        let Some(&id) = host.order().get(i) else { break };
        let left = host.progress(id).prefill_left;
        if left > 0 {
            let take = left.min(*budget);
            batch.push((id, take));
            *budget -= take;
        }
    }
}

/// Whether the decoding request's next token needs a new output block ([`OutputBlocks`]).
fn block_due(p: &Progress, block_size: u32) -> bool {
    p.grows_left > 0 && p.first_grow.saturating_add(p.grown.saturating_mul(u64::from(block_size))) <= p.produced
}

/// The running request `id` takes its next output block, preempting the latest started running
/// requests of its replica while none is free. Returns false when it preempted itself. Alone on
/// its replica, it runs without the block (what fits of a request larger than the capacity).
fn take_output_block<H: StepHost>(host: &mut H, id: H::Id, preempted: &mut bool) -> bool {
    loop {
        let p = *host.progress(id);
        let last = p.grows_left == 1;
        let kept = host.extend(id, last && p.last_partial);
        if kept || host.order().len() <= 1 {
            let p = host.progress(id);
            p.grows_left -= 1;
            p.grown += 1;
            return true;
        }
        let Some(victim) = host.order().pop() else { return true };
        host.progress(victim).prefill_left = 0;
        host.preempt(victim);
        *preempted = true;
        if victim == id {
            return false;
        }
    }
}

/// Starts the host's waiting requests into `batch` while the budget lasts, a slot is free and
/// their blocks fit, each with the prompt tokens the budget has left (vLLM's order).
fn start_waiting<H: StepHost>(host: &mut H, block_size: u32, budget: &mut u64, batch: &mut Vec<(H::Id, u64)>) {
    while *budget > 0 {
        let Some(id) = start_next(host, StepOrder::Vllm, block_size) else { return };
        let take = host.progress(id).prefill_left.min(*budget);
        *budget -= take;
        batch.push((id, take));
    }
}

/// Starts the host's first waiting request when a slot is free and its blocks fit: its prompt
/// (and after a preemption its output so far) to compute, its place in the running order (last;
/// in llama.cpp's order at its slot's place). Returns it, `None` when it does not start.
fn start_next<H: StepHost>(host: &mut H, order: StepOrder, block_size: u32) -> Option<H::Id> {
    let bs = u64::from(block_size);
    let id = host.next_waiting()?;
    let p = *host.progress(id);
    // A resumed request computes its output so far again: the blocks those tokens fill.
    let need = match p.produced >= p.first_grow && p.first_grow > 0 {
        true => ((p.produced - p.first_grow) / bs + 1).min(p.grows_left.saturating_add(p.grown)),
        false => 0,
    };
    if !host.fits_next(need) {
        return None;
    }
    let cached = host.start_next();
    // Blocks that find no room are not kept, as for a request larger than the capacity.
    for k in 0..need {
        let p = *host.progress(id);
        host.extend(id, k + 1 == p.grows_left && p.last_partial);
    }
    let p = host.progress(id);
    p.grows_left = p.grows_left.saturating_sub(need);
    p.grown = need;
    p.prefill_left = p.input.saturating_add(p.produced).saturating_sub(cached).max(1);
    p.started = true;
    match order {
        StepOrder::Vllm => host.order().push(id),
        StepOrder::LlamaCpp => {
            let slot = host.slots().take();
            host.progress(id).slot = Some(slot);
            let mut at = host.order().len();
            while let Some(before) = at.checked_sub(1).and_then(|b| host.order().get(b).copied()) {
                if host.progress(before).slot.is_none_or(|s| s < slot) {
                    break;
                }
                at -= 1;
            }
            host.order().insert(at, id);
        }
    }
    Some(id)
}
