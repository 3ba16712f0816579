//! `aiperf-core`: the sans-IO heart of aiperf-rs.
//!
//! Everything here is pure computation over in-memory data: no files, no clock, no OS randomness.
//! The same code runs in the native CLI and, compiled to `wasm32-unknown-unknown`, in the browser.
//!
//! Traces, before any request is sent:
//! - [`trace`]: the Mooncake trace format (rows, validating reader, writer) and prompt hashing;
//! - [`formats`]: other production trace formats (Bailian, ServeGen, Azure, BurstGPT, WEKA, Baseten) → traces;
//! - [`analysis`]: the reference's trace statistics plus arrivals, cache curve, lint, and their report;
//! - [`synthesis`]: transform and generative trace synthesis (AIPerf/Dynamo-compatible).
//!
//! Replaying a trace and measuring it:
//! - [`replay`]: the schedule as data, the dispatcher's decisions, sharded runs, SSE parsing;
//! - [`results`]: a request's record and its JSONL line, metrics, aggregates, the run's summary
//!   and its exports, time slices;
//! - [`campaign`]: several runs: sweeps, repeated runs, the capacity search;
//! - [`server`]: a server's Prometheus metrics over a run, their exports and the comparison;
//! - [`simulate`]: a trace served by a simulated cluster (replicas, prefix caches, routers, timing);
//! - [`view`]: finished runs read back from their files: charts, comparison, HTML report.
//!
//! Shared by all: [`stats`] (the one statistics module), [`datetime`] (date-times read and
//! written over one calendar), [`duration`] (the longest time span a run accepts, and the check
//! of one given in seconds), [`hashing`] (the maps keyed by session ids and other strings), [`csv`] (the one CSV dialect, read and written), [`json_scan`]
//! (the one hand-written JSON cursor of the fast paths, with one SWAR digit reader) and [`rng`]
//! (CPython's MT19937, NumPy's PCG64 and AIPerf's seed derivation: the draws AIPerf makes).

pub mod analysis;
pub mod campaign;
pub mod csv;
pub mod datetime;
pub mod duration;
pub mod fork;
pub mod formats;
pub mod hashing;
pub mod json_scan;
pub mod replay;
pub mod results;
pub mod rng;
pub mod server;
pub mod simulate;
pub mod stats;
pub mod synthesis;
pub mod trace;
pub mod view;
