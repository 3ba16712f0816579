//! The mock's KV model (`--block-size`, `--tokenizer`, `--kv-blocks`): the prompt's tokens in
//! whole blocks, chain-hashed over their token ids as vLLM's automatic prefix caching does, held
//! in the simulator's own prefix cache ([`BlockCache`]: blocks pinned while their request runs,
//! evicted by a [`Policy`] when `--kv-blocks` is reached), behind the simulator's admission: a FIFO
//! queue whose first request starts when a running slot is free (`--slots`) and the blocks it
//! would pin fit beside the pinned ones (or nothing runs). A prompt's partial last block takes room unhashed,
//! and the output tokens take blocks as decoding reaches them ([`OutputBlocks`]), as in the
//! simulator.
//!
//! So a trace replayed over mocks and `aiperf-cli simulate` of it hit the same blocks whenever
//! each replica sees its requests start and end in the same order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aiperf_core::simulate::cache::{BlockCache, Tail};
use aiperf_core::simulate::{OutputBlocks, Policy};
use tokenizers::Tokenizer;

use super::steps::StepKv;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The chained hashes of the whole blocks of `tokens`: block `i` stands for every token up to
/// its end (a partial last block is not cached).
pub fn block_hashes<T: Hash>(tokens: &[T], block_size: usize) -> Vec<u64> {
    let mut parent = 0u64;
    tokens
        .chunks_exact(block_size.max(1))
        .map(|block| {
            let mut h = DefaultHasher::new();
            (parent, block).hash(&mut h);
            parent = h.finish();
            parent
        })
        .collect()
}

/// How a prompt becomes tokens: a tokenizer's ids, or its words.
pub enum Tokens {
    Words,
    Tokenizer(Box<Tokenizer>),
}

/// A prompt as the KV model sees it.
pub struct Prompt {
    pub tokens: u64,
    pub hashes: Vec<u64>,
}

impl Tokens {
    /// The prompt's tokens and block hashes: the messages' contents (their token ids one after
    /// the other, no chat template) or the completion prompt.
    pub fn prompt(&self, prompt: &serde_json::Value, block_size: usize) -> Prompt {
        match self {
            Tokens::Words => {
                let mut words = Vec::new();
                super::answer::words_of(prompt, &mut words);
                Prompt { tokens: words.len() as u64, hashes: block_hashes(&words, block_size) }
            }
            Tokens::Tokenizer(t) => {
                let mut ids = Vec::new();
                let mut texts = Vec::new();
                texts_of(prompt, &mut texts);
                for text in texts {
                    if let Ok(e) = t.encode_fast(text, false) {
                        ids.extend_from_slice(e.get_ids());
                    }
                }
                Prompt { tokens: ids.len() as u64, hashes: block_hashes(&ids, block_size) }
            }
        }
    }
}

/// The prompt's texts in order (the messages' string contents, or the prompt string).
fn texts_of<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    use serde_json::Value;
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().filter_map(|m| m.get("content")).for_each(|c| texts_of(c, out)),
        _ => {}
    }
}

/// The KV model: requests timed on their own ([`Kv`], `--engine request`) or in engine steps
/// ([`StepKv`], `--engine step`).
pub enum Model {
    Request(Kv),
    Step(StepKv),
}

impl Model {
    pub fn block_size(&self) -> u32 {
        match self {
            Model::Request(kv) => kv.block_size(),
            Model::Step(kv) => kv.block_size(),
        }
    }

    /// Empties the cache (`/reset_prefix_cache`).
    pub fn reset(&self) {
        match self {
            Model::Request(kv) => kv.reset(),
            Model::Step(kv) => kv.reset(),
        }
    }

    /// Fraction of the capacity pinned by running requests.
    pub fn usage(&self) -> f64 {
        match self {
            Model::Request(kv) => kv.usage(),
            Model::Step(kv) => kv.usage(),
        }
    }

    /// Running requests preempted so far (only engine steps preempt).
    pub fn preemptions(&self) -> u64 {
        match self {
            Model::Request(_) => 0,
            Model::Step(kv) => kv.preemptions(),
        }
    }
}

/// The KV model of requests timed on their own, shared by every connection.
#[derive(Clone)]
pub struct Kv(Arc<Shared>);

struct Shared {
    block_size: u32,
    capacity: Option<u64>,
    policy: Policy,
    max_running: Option<u32>,
    inner: Mutex<Inner>,
}

struct Inner {
    cache: BlockCache,
    /// Bumped by a cache reset: requests admitted before it release nothing into the new cache.
    generation: u64,
    running: u32,
    waiting: VecDeque<Waiter>,
    /// Running requests' blocks, by request number.
    held: HashMap<u64, Vec<u32>>,
    next_id: u64,
    /// Output blocks still to take (when, order, request, whether it stays partial), taken
    /// before anything else looks at the cache.
    growths: BinaryHeap<Reverse<(Instant, u64, u64, bool)>>,
}

struct Waiter {
    hashes: Vec<u64>,
    tail: Tail,
    tx: oneshot::Sender<Running>,
}

/// A request admitted: its hit, and its blocks pinned until it is dropped.
pub struct Running {
    kv: Kv,
    generation: u64,
    id: u64,
    /// Leading blocks of the prompt found in the cache.
    pub hit_blocks: u64,
    /// The blocks its output takes as it is decoded.
    output: OutputBlocks,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kv.release(self.generation, self.id);
    }
}

impl Running {
    /// Decoding starts with the first token at `first_token`, one token every `itl`: each
    /// block its output tokens need is taken when their step comes ([`OutputBlocks`]).
    pub fn decode(&self, first_token: Instant, itl: Duration) {
        let Ok(mut inner) = self.kv.0.inner.lock() else { return };
        let step = itl.saturating_mul(self.kv.0.block_size);
        let mut at = first_token + itl.saturating_mul(u32::try_from(self.output.first_token - 1).unwrap_or(u32::MAX));
        for i in 0..self.output.count {
            let last = i + 1 == self.output.count;
            let order = inner.next_id;
            inner.next_id += 1;
            inner.growths.push(Reverse((at, order, self.id, last && self.output.last_partial)));
            at += step;
        }
    }
}

impl Kv {
    pub fn new(block_size: u32, capacity: Option<u64>, policy: Policy, max_running: Option<u32>) -> Kv {
        Kv(Arc::new(Shared {
            block_size,
            capacity,
            policy,
            max_running,
            inner: Mutex::new(Inner {
                cache: BlockCache::new(capacity, policy),
                generation: 0,
                running: 0,
                waiting: VecDeque::new(),
                held: HashMap::new(),
                next_id: 0,
                growths: BinaryHeap::new(),
            }),
        }))
    }

    pub fn block_size(&self) -> u32 {
        self.0.block_size
    }

    /// Waits in line until the request (`hashes` of the whole blocks of its `prompt_tokens`,
    /// then `output_tokens`) starts: `None` only if the model is broken (a poisoned lock), in
    /// which case the request runs without the cache.
    pub async fn start(&self, hashes: Vec<u64>, prompt_tokens: u64, output_tokens: u64) -> Option<Running> {
        let (output, tail) = OutputBlocks::with_tail(hashes.len(), prompt_tokens, output_tokens, self.0.block_size);
        let (tx, rx) = oneshot::channel();
        let refused = {
            let mut inner = self.0.inner.lock().ok()?;
            take_output_blocks(&mut inner, Instant::now());
            inner.waiting.push_back(Waiter { hashes, tail, tx });
            self.admit(&mut inner)
        };
        drop(refused);
        let mut running = rx.await.ok()?;
        running.output = output;
        Some(running)
    }

    /// Starts the waiting requests in order while a slot is free and their new blocks fit (or
    /// nothing runs). Returns the requests whose client went away meanwhile, to be dropped once
    /// the lock is released (dropping them releases their blocks).
    fn admit(&self, inner: &mut Inner) -> Vec<Running> {
        let mut refused = Vec::new();
        loop {
            if self.0.max_running.is_some_and(|m| inner.running >= m) {
                break;
            }
            let Some(front) = inner.waiting.front() else { break };
            let alone = inner.running == 0;
            let tail = usize::from(front.tail != Tail::None);
            if !alone
                && !inner.cache.fits(front.hashes.len() + tail)
                && !inner.cache.fits(inner.cache.to_pin(&front.hashes) + tail)
            {
                break;
            }
            let Some(w) = inner.waiting.pop_front() else { break };
            let mut held = Vec::new();
            let hit = inner.cache.admit_with_tail(&w.hashes, w.tail, &mut held);
            inner.running += 1;
            let id = inner.next_id;
            inner.next_id += 1;
            inner.held.insert(id, held);
            let running = Running {
                kv: self.clone(),
                generation: inner.generation,
                id,
                hit_blocks: hit as u64,
                output: OutputBlocks { count: 0, first_token: 1, last_partial: false },
            };
            if let Err(r) = w.tx.send(running) {
                refused.push(r);
            }
        }
        refused
    }

    fn release(&self, generation: u64, id: u64) {
        let refused = {
            let Ok(mut inner) = self.0.inner.lock() else { return };
            take_output_blocks(&mut inner, Instant::now());
            let held = inner.held.remove(&id).unwrap_or_default();
            // Blocks admitted before a reset are not in the new cache; the slot is freed either way.
            if generation == inner.generation {
                inner.cache.release(&held);
            }
            inner.running = inner.running.saturating_sub(1);
            self.admit(&mut inner)
        };
        drop(refused);
    }

    /// Empties the cache (`/reset_prefix_cache`); requests running keep their slots.
    pub fn reset(&self) {
        if let Ok(mut inner) = self.0.inner.lock() {
            inner.cache = BlockCache::new(self.0.capacity, self.0.policy);
            inner.generation += 1;
            inner.held.values_mut().for_each(Vec::clear);
            inner.growths.clear();
        }
    }

    /// Fraction of the capacity pinned by running requests (vLLM's KV usage: cached blocks no
    /// request holds are free to take); 0 with an unbounded capacity.
    pub fn usage(&self) -> f64 {
        self.usage_at(Instant::now())
    }

    fn usage_at(&self, now: Instant) -> f64 {
        match (self.0.capacity, self.0.inner.lock()) {
            (Some(c), Ok(mut inner)) => {
                take_output_blocks(&mut inner, now);
                inner.cache.pinned() as f64 / c as f64
            }
            _ => 0.0,
        }
    }
}

/// The output blocks whose time has come, in time order: each running request takes its own.
fn take_output_blocks(inner: &mut Inner, now: Instant) {
    while let Some(Reverse((at, _, id, partial))) = inner.growths.peek().copied() {
        if at > now {
            break;
        }
        inner.growths.pop();
        if let Some(held) = inner.held.get_mut(&id) {
            inner.cache.extend(held, partial);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn whole_blocks_are_chained_and_a_partial_one_is_not_hashed() {
        let a = block_hashes(&[1u32, 2, 3, 4, 5], 2);
        assert_eq!(a.len(), 2);
        let b = block_hashes(&[1u32, 2, 3, 9], 2);
        assert_eq!(a[0], b[0]);
        assert_ne!(a[1], b[1]);
        // The same block after a different prefix is another block.
        assert_ne!(block_hashes(&[0u32, 0, 3, 4], 2)[1], a[1]);
    }

    #[tokio::test]
    async fn requests_wait_for_a_slot_and_for_room_and_hit_what_is_cached() {
        let kv = Kv::new(1, Some(4), Policy::Lru, Some(2));
        let first = kv.start(vec![1, 2, 3], 3, 1).await.unwrap();
        assert_eq!(first.hit_blocks, 0);
        // 3 pinned of 4: a request needing 2 new blocks waits although a slot is free.
        let kv2 = kv.clone();
        let second = tokio::spawn(async move { kv2.start(vec![1, 2, 7, 8], 4, 1).await.map(|r| r.hit_blocks) });
        tokio::task::yield_now().await;
        assert!(!second.is_finished());
        assert_eq!(kv.usage(), 0.75);
        drop(first);
        assert_eq!(second.await.unwrap(), Some(2));
        assert_eq!(kv.usage(), 0.0);
        // 3 was evicted (released last of the first request's blocks after 1 and 2).
        let third = kv.start(vec![1, 2, 3], 3, 1).await.unwrap();
        assert_eq!(third.hit_blocks, 2);
        drop(third);
        kv.reset();
        assert_eq!(kv.start(vec![1], 1, 1).await.unwrap().hit_blocks, 0);
        // Requests running across a reset free their slots when they end.
        let (a, b) = (kv.start(vec![4], 1, 1).await.unwrap(), kv.start(vec![5], 1, 1).await.unwrap());
        kv.reset();
        drop((a, b));
        let after = tokio::time::timeout(std::time::Duration::from_secs(60), kv.start(vec![6], 1, 1)).await;
        assert_eq!(after.ok().flatten().map(|r| r.hit_blocks), Some(0), "a slot was never freed");
    }

    #[tokio::test]
    async fn output_tokens_take_blocks_when_decoding_reaches_them() {
        // Blocks of 2 tokens, room for 3: a prompt of 3 tokens (one whole block, one partial)
        // and 4 output tokens. The 1st output token fills the partial block; the 2nd (fed at
        // position 4) takes a new block one step after the first token.
        let kv = Kv::new(2, Some(3), Policy::Lru, None);
        let r = kv.start(vec![11], 3, 4).await.unwrap();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        r.decode(t0 + ms(5), ms(10));
        assert_eq!(kv.usage_at(t0 + ms(14)), 2.0 / 3.0);
        assert_eq!(kv.usage_at(t0 + ms(15)), 1.0);
        drop(r);
        assert_eq!(kv.usage(), 0.0);
        // Released tail first: the output block goes first, so [11] still hits.
        let again = kv.start(vec![11, 12], 4, 1).await.unwrap();
        assert_eq!(again.hit_blocks, 1);
    }

    #[test]
    fn words_or_token_ids_make_the_blocks() {
        let p = Tokens::Words.prompt(&serde_json::json!("a b c d e"), 2);
        assert_eq!((p.tokens, p.hashes.len()), (5, 2));
        let chat = serde_json::json!([{"role": "user", "content": "a b"}, {"role": "user", "content": "c d e"}]);
        assert_eq!(Tokens::Words.prompt(&chat, 2).hashes, p.hashes);
    }
}
