//! Which server the metrics come from ([`ServerKind`]), the one table of the metric names each
//! server gives to what is measured ([`NAMES`]), and the few numbers compared with the client's
//! ([`ServerView`]: prefix-cache hit rate, KV-cache usage, queue depth).

use crate::server::prometheus::Kind;
use crate::server::window::ServerMetrics;

/// What a server's metric measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Share of the KV cache in use (a ratio, or a percentage on some servers).
    KvCacheUsage,
    /// Requests waiting in the server's queue.
    Waiting,
    /// Requests running.
    Running,
    /// Tokens generated.
    OutputTokens,
    /// Prompt tokens received.
    PromptTokens,
    /// Prompt tokens the server evaluated, those its prefix cache served left out (llama.cpp).
    EvaluatedPromptTokens,
    /// Prefix-cache hits (the numerator of the hit rate).
    PrefixCacheHits,
    /// Prefix-cache lookups (its denominator, by position in [`Names::exact`] beside the hits').
    PrefixCacheQueries,
    /// The hit rate as the server computes it.
    PrefixCacheHitRate,
}

/// The names of one measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Names {
    pub measure: Measure,
    /// The metric type that carries it.
    pub kind: Kind,
    /// The names servers give it (vLLM, SGLang, llama.cpp, Dynamo), in the order the comparison
    /// with the client tries them.
    pub exact: &'static [&'static str],
    /// Parts of a name (in any case) that mark it whatever the server's prefix, for the charts of
    /// a run; a name holding one of `except` does not.
    pub fragments: &'static [&'static str],
    pub except: &'static [&'static str],
}

/// Every measure's names; a name is classified by the first row of its type it matches.
pub const NAMES: [Names; 9] = [
    Names {
        measure: Measure::KvCacheUsage,
        kind: Kind::Gauge,
        exact: &[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
            "sglang_token_usage",
            "llamacpp:kv_cache_usage_ratio",
            "dynamo_component_kvstats_gpu_cache_usage_percent",
        ],
        fragments: &["cache_usage", "token_usage"],
        except: &[],
    },
    Names {
        measure: Measure::Waiting,
        kind: Kind::Gauge,
        exact: &[
            "vllm:num_requests_waiting",
            "sglang:num_queue_reqs",
            "sglang_num_queue_reqs",
            "llamacpp:requests_deferred",
            "dynamo_frontend_queued_requests",
        ],
        fragments: &["requests_waiting", "requests_deferred", "num_queue_reqs"],
        except: &[],
    },
    Names {
        measure: Measure::Running,
        kind: Kind::Gauge,
        exact: &[
            "vllm:num_requests_running",
            "sglang:num_running_reqs",
            "sglang_num_running_reqs",
            "llamacpp:requests_processing",
            "dynamo_frontend_inflight_requests",
        ],
        fragments: &["requests_running", "requests_processing", "num_running_reqs"],
        except: &[],
    },
    Names {
        measure: Measure::OutputTokens,
        kind: Kind::Counter,
        exact: &[],
        fragments: &["generation_tokens", "tokens_predicted"],
        except: &[],
    },
    Names {
        measure: Measure::PromptTokens,
        kind: Kind::Counter,
        exact: &[],
        fragments: &["prompt_tokens"],
        except: &["cached"],
    },
    Names {
        measure: Measure::EvaluatedPromptTokens,
        kind: Kind::Counter,
        exact: &["llamacpp:prompt_tokens"],
        fragments: &[],
        except: &[],
    },
    Names {
        measure: Measure::PrefixCacheHits,
        kind: Kind::Counter,
        exact: &[
            "vllm:prefix_cache_hits",
            "vllm:gpu_prefix_cache_hits",
            "sglang:cached_tokens",
            "sglang_cached_tokens",
        ],
        fragments: &["prefix_cache_hits"],
        except: &[],
    },
    Names {
        measure: Measure::PrefixCacheQueries,
        kind: Kind::Counter,
        exact: &[
            "vllm:prefix_cache_queries",
            "vllm:gpu_prefix_cache_queries",
            "sglang:prompt_tokens",
            "sglang_prompt_tokens",
        ],
        fragments: &["prefix_cache_queries"],
        except: &[],
    },
    Names {
        measure: Measure::PrefixCacheHitRate,
        kind: Kind::Gauge,
        exact: &[
            "sglang:cache_hit_rate",
            "sglang_cache_hit_rate",
            "vllm:gpu_prefix_cache_hit_rate",
            "dynamo_component_kvstats_gpu_prefix_cache_hit_rate",
        ],
        fragments: &[],
        except: &[],
    },
];

impl Measure {
    /// Its row of [`NAMES`] (which lists the measures in this order).
    pub fn names(self) -> &'static Names {
        &NAMES[self as usize]
    }

    /// What a metric of type `kind` (as exported: `gauge`, `counter`, …) called `name` measures,
    /// from the parts of its name.
    pub fn of(kind: &str, name: &str) -> Option<Measure> {
        let lower = name.to_ascii_lowercase();
        NAMES
            .iter()
            .find(|n| {
                n.kind.name() == kind
                    && n.fragments.iter().any(|f| lower.contains(f))
                    && !n.except.iter().any(|f| lower.contains(f))
            })
            .map(|n| n.measure)
    }
}

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
            let sent = prompt_tokens_sent.filter(|&s| s > 0)? as f64;
            Measure::EvaluatedPromptTokens.names().exact.iter().find_map(|n| {
                let evaluated = m.counter_total(n)?;
                Some(Sourced {
                    value: (1.0 - evaluated / sent).clamp(0.0, 1.0),
                    source: format!("1 − {n} (evaluated) / prompt tokens sent"),
                })
            })
        };
        let (hits, queries) = (Measure::PrefixCacheHits.names().exact, Measure::PrefixCacheQueries.names().exact);
        let prefix_cache_hit_rate = hits
            .iter()
            .zip(queries)
            .find_map(|(h, q)| ratio(h, q))
            .or_else(|| Measure::PrefixCacheHitRate.names().exact.iter().find_map(|n| gauge_mean(n)))
            .or_else(llamacpp);
        let first_gauge = |measure: Measure| {
            measure
                .names()
                .exact
                .iter()
                .find_map(|n| m.gauge_mean_max(n).map(|v| Sourced { value: v, source: (*n).to_owned() }))
        };
        let kv_cache_usage =
            first_gauge(Measure::KvCacheUsage).map(|s| Sourced { value: as_ratio(s.value), source: s.source });
        let max_of = |measure: Measure| first_gauge(measure).map(|s| Sourced { value: s.value.1, source: s.source });
        ServerView {
            prefix_cache_hit_rate,
            kv_cache_usage,
            queue_depth_max: max_of(Measure::Waiting),
            running_max: max_of(Measure::Running),
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
    fn every_measure_has_its_row_and_exact_names_are_classified_alike() {
        for (i, n) in NAMES.iter().enumerate() {
            assert_eq!(n.measure as usize, i);
            assert_eq!(n.measure.names(), n);
        }
        assert_eq!(Measure::of("gauge", "vllm:KV_cache_usage_perc"), Some(Measure::KvCacheUsage));
        assert_eq!(Measure::of("counter", "vllm:kv_cache_usage_perc"), None);
        assert_eq!(Measure::of("counter", "sglang:cached_prompt_tokens"), None);
        assert_eq!(Measure::of("counter", "vllm:prompt_tokens"), Some(Measure::PromptTokens));
        // The charts find the comparison's names by their parts, but for Dynamo's frontend gauges
        // and SGLang's cached and prompt tokens (its prompt tokens are charted as such).
        let uncharted = ["dynamo_frontend_", "sglang:cached_", "sglang_cached_", "sglang:prompt_", "sglang_prompt_"];
        for n in NAMES.iter().filter(|n| !n.fragments.is_empty()) {
            for name in n.exact.iter().filter(|e| !uncharted.iter().any(|u| e.starts_with(u))) {
                assert_eq!(Measure::of(n.kind.name(), name), Some(n.measure), "{name}");
            }
        }
    }

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
