//! The [`Report`] of a run: the metrics' distributions, AIPerf's error-adjusted ones, the run's
//! scalars, per-URL figures and the time-weighted metrics.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::metrics::Metric;
use crate::results::timeline::{TimeWeighted, TimelineMetric};
use crate::stats::{Distribution, REPORT_PERCENTILES, nearest_rank, sorted};

/// What one URL of several served, in the report.
#[derive(Clone, Debug, PartialEq)]
pub struct UrlReport {
    /// The index of the URL among `--url`s.
    pub index: u32,
    pub request_count: u64,
    pub error_request_count: u64,
    pub request_latency: Option<Distribution>,
    pub time_to_first_token: Option<Distribution>,
}

/// AIPerf's error-adjusted distribution (`adj_<tag>`): the successful requests' values with every
/// failed request counted as an infinitely large value; percentiles by the nearest rank (numpy's
/// `method="nearest"`), and only the finite statistics kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Adjusted {
    /// Values, failures included.
    pub count: usize,
    /// The smallest finite value.
    pub min: Option<f64>,
    /// At [`REPORT_PERCENTILES`], `None` where the rank falls on a failure.
    pub percentiles: [Option<f64>; 9],
}

impl Adjusted {
    pub(super) fn of(values: &[f64], failures: u64) -> Adjusted {
        let clean = sorted(values);
        let count = clean.len() + failures as usize;
        let mut percentiles = [None; 9];
        for (slot, &p) in percentiles.iter_mut().zip(&REPORT_PERCENTILES) {
            *slot = clean.get(nearest_rank(count, p)).copied();
        }
        Adjusted { count, min: clean.first().copied(), percentiles }
    }
}

/// The result of a run: distributions of per-request metrics and run-level scalars.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub metrics: Vec<(Metric, Distribution)>,
    /// AIPerf's error-adjusted distributions, when requests failed.
    pub adjusted: Vec<(Metric, Adjusted)>,
    /// AIPerf's: from the first successful request's send to the last answer of a successful one.
    pub benchmark_duration_s: f64,
    /// Ours: from the first send to the last end of any request, failed ones included.
    pub run_duration_s: f64,
    pub request_count: u64,
    pub error_request_count: u64,
    /// Failed requests that were context-length overflows (AIPerf's `context_overflow_count`).
    pub context_overflow_count: u64,
    /// Successful requests per second of the benchmark duration.
    pub request_throughput: f64,
    /// Output tokens (OSL) per second.
    pub output_token_throughput: f64,
    /// Input tokens (ISL) per second.
    pub input_token_throughput: f64,
    pub total_token_throughput: f64,
    /// ISL and OSL summed over successful requests.
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// ISL summed over failed requests (when any had one).
    pub total_error_input_tokens: Option<u64>,
    /// The server's usage counts summed over successful requests (when any reported them).
    pub usage_prompt_tokens: Option<u64>,
    pub usage_completion_tokens: Option<u64>,
    pub usage_total_tokens: Option<u64>,
    pub usage_cache_read_tokens: Option<u64>,
    /// Requests whose usage counts differ from the client's by more than 10 %.
    pub usage_discrepancy_count: Option<u64>,
    /// Requests whose output length is off the `max_tokens` asked for.
    pub osl_mismatch_count: Option<u64>,
    /// Requests per second meeting every SLO.
    pub goodput: Option<f64>,
    pub good_request_count: Option<u64>,
    /// Good requests among all (successful and failed).
    pub good_request_fraction: Option<f64>,
    /// Server-reported cached tokens / client-counted input tokens.
    pub cache_hit_rate: Option<f64>,
    /// What the trace's shared hash ids predict for the same ratio.
    pub expected_cache_hit_rate: Option<f64>,
    pub error_summary: BTreeMap<String, u64>,
    /// The first message of each error kind of `error_summary`.
    pub error_examples: BTreeMap<String, String>,
    /// How the requests ended.
    pub outcomes: Outcomes,
    /// The client's output token count against the server's, where both were known.
    pub token_count_check: Option<TokenCountCheck>,
    /// Per URL when requests went to several (`--url` repeated), by index; empty otherwise.
    pub per_url: Vec<UrlReport>,
    /// AIPerf's time-weighted metrics over the run's window ([`Timeline::window`]).
    pub timeline: Vec<(TimelineMetric, TimeWeighted)>,
}

/// Output tokens counted by the client (re-tokenized text) and by the server (`usage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCountCheck {
    pub requests: u64,
    pub client_output_tokens: u64,
    pub server_output_tokens: u64,
}

impl TokenCountCheck {
    /// (client − server) / server; 0 when the server counted nothing.
    pub fn relative_difference(&self) -> f64 {
        if self.server_output_tokens == 0 {
            return 0.0;
        }
        (self.client_output_tokens as f64 - self.server_output_tokens as f64) / self.server_output_tokens as f64
    }
}

/// How the requests of a run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    pub completed: u64,
    pub cancelled: u64,
    pub timed_out: u64,
    /// Every other error kind.
    pub failed: u64,
}

impl Report {
    /// The distribution of one metric, if any request had it.
    pub fn get(&self, metric: Metric) -> Option<&Distribution> {
        self.metrics.iter().find(|(m, _)| *m == metric).map(|(_, d)| d)
    }
}
