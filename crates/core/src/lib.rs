//! `aiperf-core`: the sans-IO heart of aiperf-rs.
//!
//! Everything here is pure computation over in-memory data: no files, no clock, no OS randomness.
//! The same code runs in the native CLI and, compiled to `wasm32-unknown-unknown`, in the browser.
//!
//! - [`trace`]: the Mooncake trace format (rows, validating reader, writer);
//! - [`formats`]: other production trace formats (Bailian, ServeGen, Azure, BurstGPT, WEKA) → traces;
//! - [`analysis`]: the reference's trace statistics plus arrivals, cache curve and lint;
//! - [`stats`]: the one statistics module (mean, std, percentiles);
//! - [`prompt_hash`]: prompts → hash_ids (AIPerf-compatible chained block hashing);
//! - [`synthesis`]: transform and generative trace synthesis (AIPerf/Dynamo-compatible);
//! - [`report`]: the console report of an analysis;
//! - [`sse`]: incremental server-sent-events parser and OpenAI chunk interpretation;
//! - [`duration`]: the longest time span a run accepts, and the check of one given in seconds;
//! - [`schedule`]: the replay schedule as data;
//! - [`dispatch`]: which request goes next and when (sessions, concurrency ceiling, stop);
//! - [`metrics`]: per-request records, AIPerf metrics, mergeable aggregates, goodput;
//! - [`results`]: a run's summary and its exports (JSONL line, JSON, CSV, console table);
//! - [`timeslices`]: a run's metrics per slice of time (`--slice-duration`);
//! - [`sweep`]: sweep summaries and repeated runs with confidence intervals;
//! - [`search`]: the capacity search as a state machine (which load to measure next).
//! - [`prometheus`]: a strict parser of the Prometheus text format;
//! - [`server_metrics`]: a server's scraped metrics over a run, their exports and the comparison.
//! - [`run`]: a finished run read back from its exports: summary, charts, comparison, HTML report.

pub mod analysis;
pub mod dispatch;
pub mod duration;
pub mod formats;
pub mod metrics;
pub mod prometheus;
pub mod prompt_hash;
pub mod report;
pub mod results;
pub mod run;
pub mod schedule;
pub mod search;
pub mod server_metrics;
pub mod sharding;
pub mod sse;
pub mod stats;
pub mod sweep;
pub mod synthesis;
pub mod timeslices;
pub mod trace;
