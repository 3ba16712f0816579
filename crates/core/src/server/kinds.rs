//! Which server the metrics come from ([`ServerKind`]) and the few numbers compared with the
//! client's ([`ServerView`]: prefix-cache hit rate, KV-cache usage, queue depth).

use crate::server::window::ServerMetrics;

/// Which inference server a set of metric names comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    Vllm,
    Sglang,
    Llamacpp,
    Dynamo,
}

impl ServerKind {
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Vllm => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::Llamacpp => "llamacpp",
            ServerKind::Dynamo => "dynamo",
        }
    }

    /// The kind whose metric prefix (`vllm:`, `sglang:`/`sglang_`, `llamacpp:`, `dynamo_`) most
    /// names carry.
    pub fn detect<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<ServerKind> {
        let mut counts = [0usize; 4];
        for n in names {
            let k = if n.starts_with("vllm:") {
                0
            } else if n.starts_with("sglang:") || n.starts_with("sglang_") {
                1
            } else if n.starts_with("llamacpp:") {
                2
            } else if n.starts_with("dynamo_") {
                3
            } else {
                continue;
            };
            counts[k] += 1;
        }
        let (i, &n) = counts.iter().enumerate().max_by_key(|&(i, n)| (*n, std::cmp::Reverse(i)))?;
        (n > 0).then_some([ServerKind::Vllm, ServerKind::Sglang, ServerKind::Llamacpp, ServerKind::Dynamo][i])
    }
}

/// A number read from the server's metrics and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    /// The metric(s) it was computed from.
    pub source: String,
}

/// The server's side of the comparison with the client's numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerView {
    /// Prefix-cache hit rate (0–1) over the window.
    pub prefix_cache_hit_rate: Option<Sourced<f64>>,
    /// KV-cache usage (0–1): (mean, max) over the scrapes.
    pub kv_cache_usage: Option<Sourced<(f64, f64)>>,
    /// Most requests waiting in the server's queue at a scrape.
    pub queue_depth_max: Option<Sourced<f64>>,
    /// Most requests running at a scrape.
    pub running_max: Option<Sourced<f64>>,
}

/// Ratio gauges some servers report in percent: values above 1 are taken as percentages
/// (AIPerf's rule).
fn as_ratio((mean, max): (f64, f64)) -> (f64, f64) {
    if max > 1.0 { (mean / 100.0, max / 100.0) } else { (mean, max) }
}

impl ServerView {
    /// The comparison numbers from `m`. `prompt_tokens_sent` (the run's input tokens) turns
    /// llama.cpp's `prompt_tokens` counter, which counts only the tokens it evaluated, into a hit
    /// rate: `1 − evaluated / sent`.
    pub fn of(m: &ServerMetrics, prompt_tokens_sent: Option<u64>) -> ServerView {
        let ratio = |hits: &str, queries: &str| -> Option<Sourced<f64>> {
            let (h, q) = (m.counter_total(hits)?, m.counter_total(queries)?);
            (q > 0.0).then(|| Sourced { value: h / q, source: format!("{hits} / {queries}") })
        };
        let gauge_mean = |name: &str| -> Option<Sourced<f64>> {
            m.gauge_mean_max(name).map(|mm| Sourced { value: as_ratio(mm).0, source: format!("{name} (mean)") })
        };
        let llamacpp = || -> Option<Sourced<f64>> {
            let evaluated = m.counter_total("llamacpp:prompt_tokens")?;
            let sent = prompt_tokens_sent.filter(|&s| s > 0)? as f64;
            Some(Sourced {
                value: (1.0 - evaluated / sent).clamp(0.0, 1.0),
                source: "1 − llamacpp:prompt_tokens (evaluated) / prompt tokens sent".into(),
            })
        };
        let prefix_cache_hit_rate = ratio("vllm:prefix_cache_hits", "vllm:prefix_cache_queries")
            .or_else(|| ratio("vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries"))
            .or_else(|| ratio("sglang:cached_tokens", "sglang:prompt_tokens"))
            .or_else(|| ratio("sglang_cached_tokens", "sglang_prompt_tokens"))
            .or_else(|| gauge_mean("sglang:cache_hit_rate"))
            .or_else(|| gauge_mean("sglang_cache_hit_rate"))
            .or_else(|| gauge_mean("vllm:gpu_prefix_cache_hit_rate"))
            .or_else(|| gauge_mean("dynamo_component_kvstats_gpu_prefix_cache_hit_rate"))
            .or_else(llamacpp);
        let first_gauge = |names: &[&str]| {
            names.iter().find_map(|n| m.gauge_mean_max(n).map(|v| Sourced { value: v, source: (*n).to_owned() }))
        };
        let kv_cache_usage = first_gauge(&[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
            "sglang_token_usage",
            "llamacpp:kv_cache_usage_ratio",
            "dynamo_component_kvstats_gpu_cache_usage_percent",
        ])
        .map(|s| Sourced { value: as_ratio(s.value), source: s.source });
        let max_of = |names: &[&str]| first_gauge(names).map(|s| Sourced { value: s.value.1, source: s.source });
        ServerView {
            prefix_cache_hit_rate,
            kv_cache_usage,
            queue_depth_max: max_of(&[
                "vllm:num_requests_waiting",
                "sglang:num_queue_reqs",
                "sglang_num_queue_reqs",
                "llamacpp:requests_deferred",
                "dynamo_frontend_queued_requests",
            ]),
            running_max: max_of(&[
                "vllm:num_requests_running",
                "sglang:num_running_reqs",
                "sglang_num_running_reqs",
                "llamacpp:requests_processing",
                "dynamo_frontend_inflight_requests",
            ]),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ServerView::default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::series::{DEFAULT_SERIES_LIMITS, EndpointSeries};
    use crate::server::tests::S;

    #[test]
    fn kinds_are_detected_from_prefixes() {
        assert_eq!(ServerKind::detect(["vllm:a", "vllm:b", "python_gc"]), Some(ServerKind::Vllm));
        assert_eq!(ServerKind::detect(["sglang_cache_hit_rate"]), Some(ServerKind::Sglang));
        assert_eq!(ServerKind::detect(["llamacpp:prompt_tokens"]), Some(ServerKind::Llamacpp));
        assert_eq!(ServerKind::detect(["dynamo_frontend_requests"]), Some(ServerKind::Dynamo));
        assert_eq!(ServerKind::detect(["go_goroutines"]), None);
    }

    #[test]
    fn llamacpp_hit_rate_is_one_minus_evaluated_over_sent() {
        let mut ep = EndpointSeries::new("u", DEFAULT_SERIES_LIMITS);
        ep.add(0, 0, "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 10\n", true).unwrap();
        ep.add(S, 0, "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 70\n", true).unwrap();
        let m = ServerMetrics::of(&[ep], 0);
        assert_eq!(ServerView::of(&m, Some(100)).prefix_cache_hit_rate.unwrap().value, 0.4);
        assert!(ServerView::of(&m, None).prefix_cache_hit_rate.is_none());
    }
}
