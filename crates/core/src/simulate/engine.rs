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
//! to run waits for the next arrival. llama.cpp's server (`tools/server/server.cpp`,
//! `update_slots`) builds its batch the same way from its slots, but puts every decoding slot's
//! token first and has no preemption (a slot holds its whole context).

use std::cmp::Reverse;

use serde::{Deserialize, Serialize};

use super::{Event, SimulateError, us_to_ns};

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
    Step,
}

impl EngineMode {
    pub const ALL: [EngineMode; 2] = [EngineMode::Request, EngineMode::Step];

    /// The name on the command line (`--engine`).
    pub fn name(self) -> &'static str {
        match self {
            EngineMode::Request => "request",
            EngineMode::Step => "step",
        }
    }

    /// The steps this mode runs with `engine`'s timing ([`Steps::from_engine`]); `None` for
    /// [`EngineMode::Request`].
    pub fn steps(self, engine: &super::Engine, max_batch_tokens: u32) -> Option<Steps> {
        match self {
            EngineMode::Request => None,
            EngineMode::Step => Some(Steps::from_engine(engine, max_batch_tokens)),
        }
    }
}

impl Steps {
    /// Steps of at most `max_batch_tokens` tokens timed by the per-request engine's figures: a
    /// step takes `decode_fixed_us`, plus `prefill_per_token_us` per prompt token and
    /// `decode_per_running_us` per decode token in it (`simulate --engine step`'s reading of the
    /// four timing options).
    pub fn from_engine(engine: &super::Engine, max_batch_tokens: u32) -> Steps {
        Steps {
            max_batch_tokens,
            fixed_us: engine.decode_fixed_us,
            per_prefill_token_us: engine.prefill_per_token_us,
            per_decode_token_us: engine.decode_per_running_us,
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

impl super::Sim<'_> {
    /// Builds the replica's next step at `now` (see the module's comment) and schedules its end;
    /// with nothing to run, the replica waits for an arrival.
    pub(super) fn schedule_step(&mut self, replica: u32, now: u64) {
        let Some(steps) = self.cluster.steps else { return };
        let mut budget = u64::from(steps.max_batch_tokens);
        let mut batch = std::mem::take(&mut self.replicas[replica as usize].batch);
        batch.clear();
        let mut preempted = false;
        let mut i = 0;
        while budget > 0 {
            let Some(&idx) = self.replicas[replica as usize].order.get(i) else { break };
            let p = &self.pending[idx as usize];
            if p.prefill_left > 0 {
                let take = p.prefill_left.min(budget);
                batch.push((idx, take));
                budget -= take;
                i += 1;
                continue;
            }
            let block_due = p.grows_left > 0
                && p.first_grow.saturating_add(p.grown.saturating_mul(u64::from(self.cluster.block_size)))
                    <= p.produced;
            if block_due && !self.take_output_block(idx, &mut preempted) {
                break;
            }
            batch.push((idx, 0));
            budget -= 1;
            i += 1;
        }
        if !preempted {
            self.start_waiting(replica, now, &mut budget, &mut batch);
        }
        let r = &mut self.replicas[replica as usize];
        if batch.is_empty() {
            r.stepping = false;
            r.batch = batch;
            return;
        }
        let prefill: u64 = batch.iter().map(|b| b.1).sum();
        let decode = batch.iter().filter(|b| b.1 == 0).count() as u64;
        r.stepping = true;
        r.batch = batch;
        let end = now.saturating_add(us_to_ns(steps.step_us(prefill, decode)));
        self.seq += 1;
        self.ends.push(Reverse((end, self.seq, replica, Event::Step)));
    }

    /// The running request `idx` takes its next output block, preempting the latest started
    /// running requests of its replica while none is free. Returns false when it preempted
    /// itself. Alone on its replica, it runs without the block (what fits of a request larger
    /// than the capacity).
    fn take_output_block(&mut self, idx: u32, preempted: &mut bool) -> bool {
        let replica = self.pending[idx as usize].replica;
        loop {
            let p = &mut self.pending[idx as usize];
            let last = p.grows_left == 1;
            let kept = self.blocks.extend(replica, &mut p.held, last && p.last_partial);
            let r = &mut self.replicas[replica as usize];
            if kept || r.order.len() <= 1 {
                p.grows_left -= 1;
                p.grown += 1;
                r.stats.peak_blocks = r.stats.peak_blocks.max(self.blocks.len(replica) as u64);
                return true;
            }
            let Some(victim) = r.order.pop() else { return true };
            self.preempt(victim);
            *preempted = true;
            if victim == idx {
                return false;
            }
        }
    }

    /// Starts the replica's waiting requests into `batch` while the budget lasts, a slot is free
    /// and their blocks fit.
    fn start_waiting(&mut self, replica: u32, now: u64, budget: &mut u64, batch: &mut Vec<(u32, u64)>) {
        let cluster = self.cluster;
        while *budget > 0 {
            let r = &self.replicas[replica as usize];
            if cluster.max_running.is_some_and(|m| r.running >= m) {
                return;
            }
            let Some(&idx) = r.waiting.front() else { return };
            let p = &self.pending[idx as usize];
            // A resumed request computes its output so far again: the blocks those tokens fill.
            let resumed = p.out_idx != u32::MAX;
            let bs = u64::from(cluster.block_size);
            let need = match p.produced >= p.first_grow && p.first_grow > 0 {
                true => ((p.produced - p.first_grow) / bs + 1).min(p.grows_left.saturating_add(p.grown)),
                false => 0,
            };
            if !self.fits_next(replica, usize::try_from(need).unwrap_or(usize::MAX)) {
                return;
            }
            let started = self.start(replica, !resumed);
            let (input, cached) = (started.input, started.cached);
            let p = &mut self.pending[idx as usize];
            // Blocks that find no room are not kept, as for a request larger than the capacity.
            for k in 0..need {
                let partial = k + 1 == p.grows_left && p.last_partial;
                self.blocks.extend(replica, &mut p.held, partial);
            }
            p.grows_left = p.grows_left.saturating_sub(need);
            p.grown = need;
            p.prefill_left = input.saturating_add(p.produced).saturating_sub(cached).max(1);
            if !resumed {
                p.out_idx = self.out.requests.len() as u32;
                self.out.requests.push(started.record(p, replica, now, now, now, 0));
            }
            let take = p.prefill_left.min(*budget);
            *budget -= take;
            batch.push((idx, take));
            let r = &mut self.replicas[replica as usize];
            r.order.push(idx);
            r.stats.peak_blocks = r.stats.peak_blocks.max(self.blocks.len(replica) as u64);
        }
    }

    /// The replica's step ends at `now`: its requests make their tokens, those done end (their
    /// jobs into `self.done`), and the next step starts.
    pub(super) fn step_end(&mut self, replica: u32, now: u64) {
        let batch = std::mem::take(&mut self.replicas[replica as usize].batch);
        for &(idx, take) in &batch {
            let p = &mut self.pending[idx as usize];
            if take > 0 {
                p.prefill_left -= take;
                if p.prefill_left > 0 {
                    continue;
                }
            }
            p.produced += 1;
            let Some(out) = self.out.requests.get_mut(p.out_idx as usize) else { continue };
            if p.produced == 1 {
                out.first_token_ns = now;
            }
            if p.produced < p.output {
                continue;
            }
            out.end_ns = now;
            out.itl_ns = (now - out.first_token_ns) / (p.output - 1).max(1);
            let (job, _) = self.release(idx);
            self.replicas[replica as usize].order.retain(|&o| o != idx);
            self.free(idx);
            self.done.push(job);
        }
        self.replicas[replica as usize].batch = batch;
        self.schedule_step(replica, now);
    }
}
