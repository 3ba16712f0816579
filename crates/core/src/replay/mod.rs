//! Replaying a trace: the decisions of a run, without its clock or its sockets.
//!
//! - [`cache_bust`]: AIPerf's `--cache-bust` markers: their text, which session carries which, where they go;
//! - [`cancel`]: which requests the client cancels on purpose, and after how long;
//! - [`sampling`]: which session a generated run starts next (AIPerf's dataset samplers);
//! - [`schedule`]: sessions and their starts as data (lazily generated for rate runs; a shard of them);
//! - [`dispatch`]: which request goes next and when (session slots, turn timing, stop);
//! - [`expected_cache`]: the prefix cache a request would find (its expected cached tokens);
//! - [`sharding`]: a shard's clock offset from `Date` probes, what a shard and a merge record;
//! - [`warmup`]: the warm-up phase's schedule and dispatcher (its bounds, rate or concurrency);
//! - [`sse`]: server-sent events and OpenAI streaming chunks.

pub mod cache_bust;
pub mod cancel;
pub mod dispatch;
pub mod expected_cache;
pub mod sampling;
pub mod schedule;
pub mod sharding;
pub mod sse;
pub mod warmup;
