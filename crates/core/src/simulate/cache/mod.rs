//! The prefix caches of KV blocks of a whole cluster: on each replica, blocks pinned while a
//! request that holds them runs, and evicted by a [`Policy`] among the unpinned ones when the
//! replica's capacity is reached.
//!
//! Prefix matching is chained as in vLLM's automatic prefix caching: a request's block hits only
//! when every block before it hit too (its id stands for the whole prefix up to it, as in the
//! Mooncake traces), so a request's hit is the leading run of its ids found in the cache.
//!
//! Blocks are dense numbers (`0..blocks`, a trace's hash ids numbered once by
//! [`Interner`](crate::analysis::Interner)), so nothing is hashed: every replica's cached blocks
//! are entries of one shared pool, and each block number leads to a short chain of its entries
//! (one per replica holding it). Asking which replicas hold a prompt's prefix is one walk over the
//! prompt. Each replica's eviction order is a queue of releases (LRU: oldest first; LFU: a heap
//! by uses) whose items go stale when their block is used again, so using a cached block touches
//! that block alone.
//!
//! `pool`: the cluster's pool ([`Blocks`]); `hashed`: [`BlockCache`], one replica keyed by any
//! `u64` block hash (the mock server's), on a pool of one.

mod hashed;
mod pool;

pub use hashed::{BlockCache, Tail};
pub use pool::{Blocks, ONCE, Policy};

#[cfg(test)]
mod tests;
