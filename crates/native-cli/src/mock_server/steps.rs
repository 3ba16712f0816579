//! The mock's KV model in engine steps (`--engine step`): the core's step engine
//! ([`Steps::plan`], [`Steps::end`], the one `aiperf-cli simulate --engine step` runs) over one
//! replica's [`BlockCache`], on the mock's clock. A task of its own ([`StepKv::drive`]) runs the
//! steps one after the other, each ending at its deadline (the previous step's end plus the
//! step's time, so the steps do not drift); requests arriving meanwhile wait for the next step,
//! as in the simulation. Each request is told when it starts (its hit) and when each of its
//! tokens is made; one whose client goes away leaves at the next step's start.
//!
//! So a replay over mocks and the simulation preempt and hit alike whenever each replica sees
//! the same requests arrive between the same steps.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aiperf_core::simulate::cache::{BlockCache, Tail};
use aiperf_core::simulate::engine::Slots;
use aiperf_core::simulate::{OutputBlocks, Policy, Progress, StepHost, Steps, engine_cached_tokens};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

/// The step engine shared by every connection.
#[derive(Clone)]
pub struct StepKv(Arc<Shared>);

struct Shared {
    steps: Steps,
    block_size: u32,
    capacity: Option<u64>,
    policy: Policy,
    engine: Mutex<Engine>,
    /// Rung by an arrival or a departure, for an idle engine.
    wake: Notify,
}

/// One replica's requests, queues and blocks: the core's [`StepHost`].
struct Engine {
    cache: BlockCache,
    block_size: u32,
    max_running: Option<u32>,
    requests: HashMap<u64, Request>,
    waiting: VecDeque<u64>,
    order: Vec<u64>,
    running: u32,
    next_id: u64,
    preemptions: u64,
    /// llama.cpp's slots (`--engine step-llamacpp`).
    slots: Slots,
    /// What [`StepHost::progress`] gives for a request that is not there (none is asked for).
    absent: Progress,
}

struct Request {
    hashes: Vec<u64>,
    prompt_tokens: u64,
    output: OutputBlocks,
    tail: Tail,
    progress: Progress,
    held: Vec<u32>,
    made: mpsc::UnboundedSender<Made>,
    /// Its client went away: it leaves at the next step's start.
    gone: bool,
}

/// What the engine tells a request.
enum Made {
    /// It started for the first time, finding this many leading blocks cached.
    Started(u64),
    /// It made its next output token.
    Token,
}

impl StepHost for Engine {
    type Id = u64;

    fn progress(&mut self, id: u64) -> &mut Progress {
        match self.requests.get_mut(&id) {
            Some(r) => &mut r.progress,
            None => &mut self.absent,
        }
    }

    fn order(&mut self) -> &mut Vec<u64> {
        &mut self.order
    }

    fn next_waiting(&self) -> Option<u64> {
        if self.max_running.is_some_and(|m| self.running >= m) {
            return None;
        }
        self.waiting.front().copied()
    }

    fn fits_next(&self, more: u64) -> bool {
        let Some(r) = self.waiting.front().and_then(|id| self.requests.get(id)) else { return false };
        let more = usize::try_from(more).unwrap_or(usize::MAX);
        let tail = usize::from(r.tail != Tail::None);
        self.running == 0
            || self.cache.fits(r.hashes.len().saturating_add(tail).saturating_add(more))
            || self.cache.fits(self.cache.to_pin(&r.hashes).saturating_add(tail).saturating_add(more))
    }

    fn start_next(&mut self) -> u64 {
        let Some(id) = self.waiting.pop_front() else { return 0 };
        let Some(r) = self.requests.get_mut(&id) else { return 0 };
        let hit = self.cache.admit_with_tail(&r.hashes, r.tail, &mut r.held) as u64;
        let output = r.progress.output;
        r.progress.plan(r.prompt_tokens, output, r.output);
        self.running += 1;
        if !r.progress.started {
            let _ = r.made.send(Made::Started(hit));
        }
        engine_cached_tokens(hit, r.prompt_tokens, self.block_size)
    }

    fn extend(&mut self, id: u64, partial: bool) -> bool {
        match self.requests.get_mut(&id) {
            Some(r) => self.cache.extend(&mut r.held, partial),
            None => false,
        }
    }

    fn preempt(&mut self, id: u64) {
        if let Some(r) = self.requests.get_mut(&id) {
            self.cache.release(&r.held);
            r.held.clear();
        }
        self.running = self.running.saturating_sub(1);
        self.waiting.push_front(id);
        self.preemptions += 1;
    }

    fn token(&mut self, id: u64, _produced: u64) {
        if let Some(r) = self.requests.get(&id) {
            let _ = r.made.send(Made::Token);
        }
    }

    fn finish(&mut self, id: u64) {
        if let Some(r) = self.requests.remove(&id) {
            self.cache.release(&r.held);
        }
        self.running = self.running.saturating_sub(1);
    }

    fn slots(&mut self) -> &mut Slots {
        &mut self.slots
    }
}

impl Engine {
    /// Takes out the requests whose client went away: out of the line, or out of the running
    /// order with their blocks given back.
    fn purge(&mut self) {
        let gone: Vec<u64> = self.requests.iter().filter(|(_, r)| r.gone).map(|(&id, _)| id).collect();
        for id in gone {
            self.waiting.retain(|&w| w != id);
            if let Some(at) = self.order.iter().position(|&o| o == id) {
                self.order.remove(at);
                self.running = self.running.saturating_sub(1);
            }
            if let Some(r) = self.requests.remove(&id) {
                self.cache.release(&r.held);
                if let Some(slot) = r.progress.slot {
                    self.slots.release(slot);
                }
            }
        }
    }
}

impl StepKv {
    pub fn new(
        steps: Steps,
        block_size: u32,
        capacity: Option<u64>,
        policy: Policy,
        max_running: Option<u32>,
    ) -> StepKv {
        StepKv(Arc::new(Shared {
            steps,
            block_size,
            capacity,
            policy,
            engine: Mutex::new(Engine {
                cache: BlockCache::new(capacity, policy),
                block_size,
                max_running,
                requests: HashMap::new(),
                waiting: VecDeque::new(),
                order: Vec::new(),
                running: 0,
                next_id: 0,
                preemptions: 0,
                slots: Slots::new(max_running),
                absent: Progress::default(),
            }),
            wake: Notify::new(),
        }))
    }

    pub fn block_size(&self) -> u32 {
        self.0.block_size
    }

    /// Runs the steps while the server runs (see the module's comment).
    pub async fn drive(self) {
        let mut batch = Vec::new();
        let mut at = Instant::now();
        loop {
            let step = {
                let Ok(mut engine) = self.0.engine.lock() else { return };
                engine.purge();
                self.0.steps.plan(&mut *engine, self.0.block_size, &mut batch)
            };
            let Some(us) = step else {
                self.0.wake.notified().await;
                at = Instant::now();
                continue;
            };
            at += Duration::from_nanos((us * 1000.0).round().clamp(0.0, u64::MAX as f64) as u64);
            tokio::time::sleep_until(at).await;
            let Ok(mut engine) = self.0.engine.lock() else { return };
            Steps::end(&mut *engine, &batch);
        }
    }

    /// Puts a request in line: `hashes` of the whole blocks of its `prompt_tokens`, then
    /// `output_tokens` (at least one is made).
    pub fn start(&self, hashes: Vec<u64>, prompt_tokens: u64, output_tokens: u64) -> Stepping {
        let output_tokens = output_tokens.max(1);
        let (output, tail) = OutputBlocks::with_tail(hashes.len(), prompt_tokens, output_tokens, self.0.block_size);
        let (tx, rx) = mpsc::unbounded_channel();
        let id = match self.0.engine.lock() {
            Ok(mut engine) => {
                let id = engine.next_id;
                engine.next_id += 1;
                let progress = Progress { output: output_tokens, ..Progress::default() };
                let r =
                    Request { hashes, prompt_tokens, output, tail, progress, held: Vec::new(), made: tx, gone: false };
                engine.requests.insert(id, r);
                engine.waiting.push_back(id);
                Some(id)
            }
            Err(_) => None,
        };
        self.0.wake.notify_one();
        Stepping { kv: self.clone(), id, made: rx, tokens: 0 }
    }

    /// Empties the cache (`/reset_prefix_cache`); requests running keep their places, and their
    /// blocks from before are not in the new cache.
    pub fn reset(&self) {
        if let Ok(mut engine) = self.0.engine.lock() {
            engine.cache = BlockCache::new(self.0.capacity, self.0.policy);
            engine.requests.values_mut().for_each(|r| r.held.clear());
        }
    }

    /// Fraction of the capacity pinned by running requests; 0 with an unbounded capacity.
    pub fn usage(&self) -> f64 {
        match (self.0.capacity, self.0.engine.lock()) {
            (Some(c), Ok(engine)) => engine.cache.pinned() as f64 / c as f64,
            _ => 0.0,
        }
    }

    /// Running requests preempted so far.
    pub fn preemptions(&self) -> u64 {
        self.0.engine.lock().map_or(0, |e| e.preemptions)
    }
}

/// A request in the step engine, from its arrival to its last token; dropped early (its client
/// went away), it leaves the engine.
pub struct Stepping {
    kv: StepKv,
    /// `None` when the engine is broken (a poisoned lock): nothing is ever made.
    id: Option<u64>,
    made: mpsc::UnboundedReceiver<Made>,
    /// Output tokens made so far.
    tokens: u64,
}

impl Stepping {
    /// Waits until it starts: the leading blocks of its prompt found cached. `None` when it
    /// never will.
    pub async fn started(&mut self) -> Option<u64> {
        loop {
            match self.made.recv().await? {
                Made::Started(hit) => return Some(hit),
                Made::Token => self.tokens += 1,
            }
        }
    }

    /// Waits until `n` of its output tokens are made; false when they never will be.
    pub async fn made(&mut self, n: u64) -> bool {
        while self.tokens < n {
            match self.made.recv().await {
                Some(Made::Token) => self.tokens += 1,
                Some(Made::Started(_)) => {}
                None => return false,
            }
        }
        true
    }
}

impl Drop for Stepping {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        if let Ok(mut engine) = self.kv.0.engine.lock()
            && let Some(r) = engine.requests.get_mut(&id)
        {
            r.gone = true;
        }
        self.kv.0.wake.notify_one();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use aiperf_core::simulate::StepOrder;

    fn steps(max_batch_tokens: u32) -> Steps {
        Steps {
            max_batch_tokens,
            fixed_us: 100.0,
            per_prefill_token_us: 0.0,
            per_decode_token_us: 0.0,
            order: StepOrder::Vllm,
        }
    }

    #[tokio::test]
    async fn requests_get_their_hit_and_every_token_from_the_steps() {
        let kv = StepKv::new(steps(2048), 2, Some(16), Policy::Lru, None);
        tokio::spawn(kv.clone().drive());
        let mut a = kv.start(vec![1, 2], 4, 3);
        assert_eq!(a.started().await, Some(0));
        assert!(a.made(3).await);
        drop(a);
        // The same prompt again hits its first block (the last token is always computed).
        let mut b = kv.start(vec![1, 2], 4, 1);
        let hit = b.started().await.unwrap();
        assert_eq!((hit, engine_cached_tokens(hit, 4, 2)), (2, 2));
        assert!(b.made(1).await);
        assert_eq!(kv.preemptions(), 0);
    }

    #[tokio::test]
    async fn a_decode_token_without_a_block_preempts_the_latest_started_request() {
        // As the core's test: room for 4 blocks of 16 tokens; the first (24 tokens in 2 blocks)
        // needs an output block at its 9th token, the second (2 whole blocks) at its first.
        let kv = StepKv::new(steps(2048), 16, Some(4), Policy::Lru, None);
        tokio::spawn(kv.clone().drive());
        let mut a = kv.start(vec![1], 24, 12);
        assert_eq!(a.started().await, Some(0));
        let mut b = kv.start(vec![3, 4], 32, 8);
        assert_eq!(b.started().await, Some(0));
        assert!(a.made(12).await && b.made(8).await);
        assert!(kv.preemptions() >= 1);
        assert_eq!(kv.usage(), 0.0);
    }

    #[tokio::test]
    async fn a_request_whose_client_goes_away_leaves_the_engine() {
        let kv = StepKv::new(steps(2048), 2, Some(4), Policy::Lru, Some(1));
        tokio::spawn(kv.clone().drive());
        let mut a = kv.start(vec![1, 2], 4, 1000);
        a.started().await.unwrap();
        let mut b = kv.start(vec![5], 2, 1);
        drop(a);
        // The slot `a` held is freed: `b` starts and ends.
        let waited = tokio::time::timeout(Duration::from_secs(3600), b.started()).await;
        assert_eq!(waited.ok().flatten(), Some(0));
        assert!(b.made(1).await);
        drop(b);
        tokio::task::yield_now().await;
        assert_eq!(kv.usage(), 0.0);
    }
}
