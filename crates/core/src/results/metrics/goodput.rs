//! The `--goodput` service-level objectives: parsed from their string, and whether a request's
//! metrics meet them.

use serde::{Deserialize, Serialize};

use super::metric::Metric;
use super::request::RequestMetrics;

/// One service-level objective of `--goodput`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: Metric,
    /// In the metric's unit (ms for latencies).
    pub threshold: f64,
}

/// A `--goodput` string that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GoodputError {
    #[error("goodput: '{0}' is not of the form metric:value")]
    Syntax(String),
    #[error("goodput: unknown metric '{0}' (use e.g. time_to_first_token, inter_token_latency, request_latency)")]
    Metric(String),
    #[error("goodput: '{0}' is not a non-negative number")]
    Value(String),
}

/// Parses `"time_to_first_token:200 inter_token_latency:20"` (spaces or commas between SLOs).
pub fn parse_goodput(s: &str) -> Result<Vec<Slo>, GoodputError> {
    s.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (name, value) = part.split_once([':', '=']).ok_or_else(|| GoodputError::Syntax(part.into()))?;
            let metric = Metric::from_tag(name.trim()).ok_or_else(|| GoodputError::Metric(name.into()))?;
            let threshold: f64 = value.trim().parse().map_err(|_| GoodputError::Value(value.into()))?;
            if !(threshold.is_finite() && threshold >= 0.0) {
                return Err(GoodputError::Value(value.into()));
            }
            Ok(Slo { metric, threshold })
        })
        .collect()
}

/// Whether a successful request meets every SLO (a metric the request lacks fails its SLO).
pub fn meets(metrics: &RequestMetrics, slos: &[Slo]) -> bool {
    slos.iter().all(|slo| match metrics.get(slo.metric) {
        Some(v) if slo.metric.higher_is_better() => v >= slo.threshold,
        Some(v) => v <= slo.threshold,
        None => false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::metrics::tests::rec;

    #[test]
    fn goodput_parsing_and_checking() {
        let slos = parse_goodput("time_to_first_token:200 inter_token_latency:20").unwrap();
        assert_eq!(slos.len(), 2);
        assert!(matches!(parse_goodput("ttft:2"), Err(GoodputError::Metric(_))));
        assert!(matches!(parse_goodput("request_latency:x"), Err(GoodputError::Value(_))));
        let m = RequestMetrics::of(&rec(&[13_000_000, 15_000_000], 2), false);
        assert!(meets(&m, &parse_goodput("time_to_first_token:10").unwrap()));
        assert!(!meets(&m, &parse_goodput("time_to_first_token:9.9").unwrap()));
        assert!(meets(&m, &parse_goodput("output_token_throughput_per_user:400").unwrap()));
    }
}
