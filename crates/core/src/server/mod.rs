//! A server's Prometheus metrics over a run.
//!
//! - [`prometheus`]: a strict parser of the Prometheus text format;
//! - [`series`]: the scrapes of each endpoint as a compact time series ([`series::EndpointSeries`]);
//! - [`window`]: their summary over the profiling window ([`window::ServerMetrics`], AIPerf's
//!   `server_metrics_export` semantics);
//! - [`kinds`]: which server the names come from and the few numbers compared with the client's
//!   view ([`kinds::ServerView`]: prefix-cache hit rate, KV-cache usage, queue depth);
//! - [`live`]: the same numbers at the last scrape, while a run goes on (the dashboard's);
//! - [`gpu`]: GPU telemetry from DCGM exporters, AIPerf's records and per-GPU summary;
//! - [`export`]: `server_metrics_export.json` and `.csv`;
//! - [`raw`]: every in-window scrape as the rows of AIPerf's `server_metrics_export.parquet`, with
//!   [`units`]: the unit AIPerf infers from a metric's name and help text.
//!
//! Times are data: every scrape carries the Unix time (ns) the caller read. Memory is bounded:
//! at most [`series::SeriesLimits::max_columns`] values per scrape (a histogram bucket is one), and
//! at most [`series::SeriesLimits::max_kept_scrapes`] scrapes kept per endpoint: past it every
//! second unpinned scrape is dropped (the baseline, the time-zero reference and the latest are
//! pinned), so a long run keeps an evenly thinned series and exact counter deltas.

pub mod export;
pub mod gpu;
pub mod kinds;
pub mod live;
pub mod prometheus;
pub mod raw;
pub mod series;
pub mod units;
pub mod window;

#[cfg(test)]
pub(crate) mod tests {
    use super::series::{DEFAULT_SERIES_LIMITS, EndpointSeries};
    use super::window::ServerMetrics;

    pub(crate) fn vllm(hits: f64, queries: f64, running: f64, waiting: f64, kv: f64, lat: [f64; 3]) -> String {
        format!(
            "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{model_name=\"m\"}} {queries}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{model_name=\"m\"}} {running}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{model_name=\"m\"}} {waiting}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}
# TYPE process_start_time_seconds gauge
process_uptime_seconds 12
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{{le=\"0.1\",model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_bucket{{le=\"1.0\",model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_bucket{{le=\"+Inf\",model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_count{{model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_sum{{model_name=\"m\"}} {}
",
            lat[0],
            lat[1],
            lat[2],
            lat[2],
            lat[2] * 0.5
        )
    }

    pub(crate) const S: u64 = 1_000_000_000;

    pub(crate) fn run() -> ServerMetrics {
        let mut ep = EndpointSeries::new("http://h/metrics", DEFAULT_SERIES_LIMITS);
        // Baseline before time zero (10 s), then three scrapes in the window, the last final.
        ep.add(9 * S, 1_000_000, &vllm(100.0, 1000.0, 0.0, 0.0, 0.0, [1.0, 2.0, 2.0]), true).unwrap();
        ep.add(11 * S, 3_000_000, &vllm(400.0, 2000.0, 4.0, 2.0, 0.25, [3.0, 10.0, 12.0]), false).unwrap();
        ep.add(12 * S, 1_000_000, &vllm(700.0, 3000.0, 2.0, 6.0, 0.5, [5.0, 20.0, 22.0]), false).unwrap();
        ep.add(13 * S, 1_000_000, &vllm(1100.0, 4000.0, 0.0, 0.0, 0.25, [5.0, 20.0, 22.0]), true).unwrap();
        ServerMetrics::of(&[ep], 10 * S)
    }
}
