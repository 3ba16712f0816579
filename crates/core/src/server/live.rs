//! The server's state while a run goes on (what the terminal dashboard shows beside the
//! client's numbers): KV-cache usage, requests waiting and running, and the prefix-cache hit
//! rate between the last two scrapes, read from the names of [`super::kinds::NAMES`].

use crate::server::kinds::Measure;
use crate::server::prometheus::Family;

/// The server at the last scrape (every endpoint together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerNow {
    /// KV-cache usage in percent (the highest of the endpoints).
    pub kv_usage_pct: Option<f64>,
    /// Requests waiting and running (summed over the endpoints).
    pub waiting: Option<f64>,
    pub running: Option<f64>,
    /// Prefix-cache hit rate in percent: the hits over the lookups since the previous scrape,
    /// or the server's own gauge.
    pub hit_rate_pct: Option<f64>,
    /// Scrapes taken.
    pub scrapes: u64,
}

/// Follows the scrapes of a run.
#[derive(Clone, Debug, Default)]
pub struct LiveServer {
    now: ServerNow,
    /// The hit and lookup counters at the previous scrape.
    counters: Option<(f64, f64)>,
}

impl LiveServer {
    /// Takes one round of scrapes (one list of families per endpoint).
    pub fn scrape(&mut self, endpoints: &[Vec<Family>]) {
        let all = || endpoints.iter().flatten();
        let value = |m: Measure| {
            let names = m.names().exact;
            let found: Vec<f64> = all().filter(|f| names.contains(&f.name.as_str())).map(family_sum).collect();
            (!found.is_empty()).then_some(found)
        };
        let kv = value(Measure::KvCacheUsage).map(|v| {
            let max = v.into_iter().fold(0.0, f64::max);
            // A ratio on vLLM, SGLang and llama.cpp; a percentage on Dynamo.
            if max <= 1.0 { max * 100.0 } else { max }
        });
        let sum = |v: Vec<f64>| v.into_iter().sum::<f64>();
        let counters = value(Measure::PrefixCacheHits).map(sum).zip(value(Measure::PrefixCacheQueries).map(sum));
        let from_counters = match (self.counters, counters) {
            (Some((h0, q0)), Some((h1, q1))) if q1 > q0 && h1 >= h0 => Some((h1 - h0) / (q1 - q0) * 100.0),
            _ => None,
        };
        let gauge = value(Measure::PrefixCacheHitRate).map(|v| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            if mean <= 1.0 { mean * 100.0 } else { mean }
        });
        self.counters = counters.or(self.counters);
        self.now = ServerNow {
            kv_usage_pct: kv,
            waiting: value(Measure::Waiting).map(sum),
            running: value(Measure::Running).map(sum),
            hit_rate_pct: from_counters.or(gauge).or(self.now.hit_rate_pct),
            scrapes: self.now.scrapes + 1,
        };
    }

    /// The server at the last scrape.
    pub fn now(&self) -> ServerNow {
        self.now
    }
}

/// The sum of a gauge's or counter's samples (every label set), `_created` samples left out.
fn family_sum(f: &Family) -> f64 {
    f.samples.iter().filter(|s| !s.name.ends_with("_created")).map(|s| s.value).sum()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::prometheus::{DEFAULT_LIMITS, parse};

    fn page(kv: f64, waiting: u32, hits: u32, queries: u32) -> Vec<Family> {
        let text = format!(
            "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}\n\
             # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\n\
             # TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} 4\n\
             # TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}\n\
             # TYPE vllm:prefix_cache_queries counter\nvllm:prefix_cache_queries_total{{model_name=\"m\"}} {queries}\n"
        );
        parse(&text, DEFAULT_LIMITS).unwrap()
    }

    #[test]
    fn gauges_are_read_and_the_hit_rate_is_taken_between_scrapes() {
        let mut live = LiveServer::default();
        live.scrape(&[page(0.25, 3, 100, 400)]);
        let now = live.now();
        assert_eq!(now.kv_usage_pct, Some(25.0));
        assert_eq!((now.waiting, now.running, now.hit_rate_pct), (Some(3.0), Some(4.0), None));
        live.scrape(&[page(0.5, 1, 190, 500), page(0.75, 2, 0, 0)]);
        let now = live.now();
        assert_eq!(now.kv_usage_pct, Some(75.0));
        assert_eq!(now.waiting, Some(3.0));
        assert_eq!(now.hit_rate_pct, Some(90.0));
        assert_eq!(now.scrapes, 2);
        live.scrape(&[]);
        assert_eq!(live.now().kv_usage_pct, None);
        assert_eq!(live.now().hit_rate_pct, Some(90.0));
    }
}
