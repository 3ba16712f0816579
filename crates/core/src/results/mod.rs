//! What a run measured, from one request to the files of the whole run.
//!
//! - [`record`]: a request's [`record::RequestRecord`];
//! - [`line`]: its line of `profile_export.jsonl` (AIPerf's record), written and read back;
//! - [`metrics`]: AIPerf's per-request metrics and the `--goodput` objectives;
//! - [`aggregate`]: the metrics of many requests, mergeable, and the run's [`aggregate::Report`];
//! - [`summary`]: everything known at the end of a run ([`summary::RunSummary`]);
//! - [`http_trace`]: a record's `trace_data` (AIPerf's `--export-http-trace`);
//! - [`names`]: the file names of a run written with `--profile-export-prefix`;
//! - [`raw`]: a request's body, headers and responses beside its record (`--export-level raw`);
//! - [`export`]: the summary as `profile_export_aiperf.json`/`.csv` and the console table;
//! - [`network`]: AIPerf's network RTT probes (`*_network_latency.jsonl`) and the
//!   `network_adjusted_*` metrics made with their mean;
//! - [`timeslices`]: the run's metrics per slice of send time (`--slice-duration`);
//! - [`timeline`]: AIPerf's time-weighted metrics (`effective_*`, `active_*`, `tokens_in_flight`).

pub mod aggregate;
pub mod export;
#[cfg(test)]
mod golden;
pub mod http_trace;
pub mod line;
pub mod live;
pub mod metrics;
pub mod names;
pub mod network;
pub mod raw;
pub mod record;
pub mod summary;
pub mod timeline;
pub mod timeslices;
