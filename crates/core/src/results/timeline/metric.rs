//! The time-weighted metrics' names, units and statistics (AIPerf's `SweepLineStats`).

use serde::{Deserialize, Serialize};

/// Nanoseconds in a second: a rate per ns times this is per second.
pub(super) const PER_SECOND: f64 = 1e9;

/// The fractions of AIPerf's percentiles: p50, p90, p95, p99.
pub(super) const FRACTIONS: [f64; 4] = [0.50, 0.90, 0.95, 0.99];

/// A time-weighted metric of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimelineMetric {
    EffectiveConcurrency,
    EffectiveDecodeThroughput,
    EffectivePrefillThroughput,
    EffectiveDecodeConcurrency,
    EffectivePrefillConcurrency,
    EffectiveTotalThroughput,
    EffectiveDecodeThroughputPerUser,
    EffectivePrefillThroughputPerUser,
    TokensInFlight,
    ActiveDecodeThroughput,
    ActivePrefillThroughput,
    ActiveDecodeThroughputPerUser,
    ActivePrefillThroughputPerUser,
    ActiveTotalThroughput,
}

impl TimelineMetric {
    /// AIPerf's tag.
    pub fn tag(self) -> &'static str {
        match self {
            TimelineMetric::EffectiveConcurrency => "effective_concurrency",
            TimelineMetric::EffectiveDecodeThroughput => "effective_decode_throughput",
            TimelineMetric::EffectivePrefillThroughput => "effective_prefill_throughput",
            TimelineMetric::EffectiveDecodeConcurrency => "effective_decode_concurrency",
            TimelineMetric::EffectivePrefillConcurrency => "effective_prefill_concurrency",
            TimelineMetric::EffectiveTotalThroughput => "effective_total_throughput",
            TimelineMetric::EffectiveDecodeThroughputPerUser => "effective_decode_throughput_per_user",
            TimelineMetric::EffectivePrefillThroughputPerUser => "effective_prefill_throughput_per_user",
            TimelineMetric::TokensInFlight => "tokens_in_flight",
            TimelineMetric::ActiveDecodeThroughput => "active_decode_throughput",
            TimelineMetric::ActivePrefillThroughput => "active_prefill_throughput",
            TimelineMetric::ActiveDecodeThroughputPerUser => "active_decode_throughput_per_user",
            TimelineMetric::ActivePrefillThroughputPerUser => "active_prefill_throughput_per_user",
            TimelineMetric::ActiveTotalThroughput => "active_total_throughput",
        }
    }

    /// AIPerf's header.
    pub fn header(self) -> &'static str {
        match self {
            TimelineMetric::EffectiveConcurrency => "Effective Concurrency",
            TimelineMetric::EffectiveDecodeThroughput => "Effective Decode Throughput",
            TimelineMetric::EffectivePrefillThroughput => "Effective Prefill Throughput",
            TimelineMetric::EffectiveDecodeConcurrency => "Effective Decode Concurrency",
            TimelineMetric::EffectivePrefillConcurrency => "Effective Prefill Concurrency",
            TimelineMetric::EffectiveTotalThroughput => "Effective Total Throughput",
            TimelineMetric::EffectiveDecodeThroughputPerUser => "Effective Decode Throughput Per User",
            TimelineMetric::EffectivePrefillThroughputPerUser => "Effective Prefill Throughput Per User",
            TimelineMetric::TokensInFlight => "Tokens In Flight",
            TimelineMetric::ActiveDecodeThroughput => "Active Decode Throughput",
            TimelineMetric::ActivePrefillThroughput => "Active Prefill Throughput",
            TimelineMetric::ActiveDecodeThroughputPerUser => "Active Decode Throughput Per User",
            TimelineMetric::ActivePrefillThroughputPerUser => "Active Prefill Throughput Per User",
            TimelineMetric::ActiveTotalThroughput => "Active Total Throughput",
        }
    }

    /// AIPerf's unit.
    pub fn unit(self) -> &'static str {
        use TimelineMetric as T;
        match self {
            T::EffectiveConcurrency | T::EffectiveDecodeConcurrency | T::EffectivePrefillConcurrency => "requests",
            T::TokensInFlight => "tokens",
            T::EffectiveDecodeThroughputPerUser
            | T::EffectivePrefillThroughputPerUser
            | T::ActiveDecodeThroughputPerUser
            | T::ActivePrefillThroughputPerUser => "tokens/sec/user",
            _ => "tokens/sec",
        }
    }
}

/// Time-weighted statistics of a step function (AIPerf's `SweepLineStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeWeighted {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub std: f64,
}

impl TimeWeighted {
    /// The statistics as (AIPerf's key, value), in the order AIPerf writes them.
    pub fn stats(&self) -> [(&'static str, f64); 8] {
        [
            ("avg", self.avg),
            ("p50", self.p50),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("min", self.min),
            ("max", self.max),
            ("std", self.std),
        ]
    }
}
