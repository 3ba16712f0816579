//! What the mock's `/metrics` reports (Prometheus text, vLLM's names): counters kept as requests
//! are answered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What the mock's `/metrics` reports.
#[derive(Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub queries: AtomicU64,
    pub hits: AtomicU64,
    pub running: AtomicU64,
    /// Requests in line for a slot (`--slots`); they count in `running` too until served.
    pub waiting: AtomicU64,
    /// Requests finished, by latency bucket ([`LATENCY_BUCKETS`] and +Inf), and their sum (µs).
    pub latency_buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    pub latency_sum_us: AtomicU64,
    /// Failed `accept`s: each one is followed by a pause, so this counts the pauses.
    pub accept_errors: AtomicU64,
}

/// Upper bounds (s) of the mock's end-to-end latency histogram.
const LATENCY_BUCKETS: [f64; 6] = [0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

impl Counters {
    pub fn finished(&self, latency: Duration) {
        let s = latency.as_secs_f64();
        let i = LATENCY_BUCKETS.iter().position(|&b| s <= b).unwrap_or(LATENCY_BUCKETS.len());
        self.latency_buckets[i].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
        self.running.fetch_sub(1, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The metrics, with the KV usage and the preemptions so far; `unit` names what the prefix
    /// cache counts ("prompt words", "prompt tokens").
    pub fn exposition(&self, usage: f64, preemptions: u64, unit: &str) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{model_name=\"mock\"}} {value}\n"
            ));
        };
        let waiting = g(&self.waiting);
        let running = g(&self.running).saturating_sub(waiting);
        metric("vllm:num_requests_running", "gauge", "Requests being answered.", running.to_string());
        metric("vllm:num_requests_waiting", "gauge", "Requests in line for a slot (--slots).", waiting.to_string());
        metric("vllm:kv_cache_usage_perc", "gauge", "Fraction of the mock's prefix cache in use.", usage.to_string());
        metric("vllm:request_success_total", "counter", "Requests answered.", g(&self.requests).to_string());
        metric("vllm:prompt_tokens_total", "counter", "Prompt words received.", g(&self.prompt_tokens).to_string());
        metric("vllm:generation_tokens_total", "counter", "Tokens generated.", g(&self.generation_tokens).to_string());
        metric(
            "vllm:prefix_cache_queries_total",
            "counter",
            &format!("Prefix cache queries, in {unit}."),
            g(&self.queries).to_string(),
        );
        metric(
            "vllm:prefix_cache_hits_total",
            "counter",
            &format!("Prefix cache hits, in {unit}."),
            g(&self.hits).to_string(),
        );
        metric(
            "vllm:num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
            preemptions.to_string(),
        );
        metric(
            "mock_accept_errors_total",
            "counter",
            "Failed accepts of a connection, each followed by a pause.",
            g(&self.accept_errors).to_string(),
        );
        out.push_str("# HELP vllm:e2e_request_latency_seconds End-to-end latency of answered requests.\n");
        out.push_str("# TYPE vllm:e2e_request_latency_seconds histogram\n");
        let mut cumulative = 0;
        for (i, b) in self.latency_buckets.iter().enumerate() {
            cumulative += g(b);
            let le = LATENCY_BUCKETS.get(i).map_or_else(|| "+Inf".to_owned(), |v| v.to_string());
            out.push_str(&format!(
                "vllm:e2e_request_latency_seconds_bucket{{le=\"{le}\",model_name=\"mock\"}} {cumulative}\n"
            ));
        }
        out.push_str(&format!("vllm:e2e_request_latency_seconds_count{{model_name=\"mock\"}} {cumulative}\n"));
        out.push_str(&format!(
            "vllm:e2e_request_latency_seconds_sum{{model_name=\"mock\"}} {}\n",
            g(&self.latency_sum_us) as f64 / 1e6
        ));
        out
    }
}

/// Counts a request as waiting for a slot while it lives (also when the client goes away).
pub struct InLine<'a>(&'a Counters);

impl<'a> InLine<'a> {
    pub fn new(c: &'a Counters) -> InLine<'a> {
        c.waiting.fetch_add(1, Ordering::Relaxed);
        InLine(c)
    }
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_is_prometheus_text_the_core_parses() {
        let m = Counters::default();
        m.running.fetch_add(1, Ordering::Relaxed);
        m.finished(Duration::from_millis(30));
        m.hits.fetch_add(16, Ordering::Relaxed);
        let families = aiperf_core::server::prometheus::parse(
            &m.exposition(0.5, 3, "prompt words"),
            aiperf_core::server::prometheus::DEFAULT_LIMITS,
        )
        .unwrap();
        let get = |n: &str| families.iter().find(|f| f.name == n).unwrap();
        assert_eq!(get("vllm:request_success").samples[0].value, 1.0);
        assert_eq!(get("vllm:prefix_cache_hits").samples[0].value, 16.0);
        assert_eq!(get("vllm:num_requests_running").samples[0].value, 0.0);
        assert_eq!(get("vllm:kv_cache_usage_perc").samples[0].value, 0.5);
        assert_eq!(get("mock_accept_errors").samples[0].value, 0.0);
        assert_eq!(get("vllm:num_preemptions").samples[0].value, 3.0);
        // Two requests in, one of them in line for a slot: one running, one waiting.
        m.running.fetch_add(2, Ordering::Relaxed);
        let in_line = InLine::new(&m);
        let families = aiperf_core::server::prometheus::parse(
            &m.exposition(0.5, 3, "prompt words"),
            aiperf_core::server::prometheus::DEFAULT_LIMITS,
        )
        .unwrap();
        let value = |n: &str| families.iter().find(|f| f.name == n).unwrap().samples[0].value;
        assert_eq!((value("vllm:num_requests_running"), value("vllm:num_requests_waiting")), (1.0, 1.0));
        drop(in_line);
        assert_eq!(m.waiting.load(Ordering::Relaxed), 0);
        let h = get("vllm:e2e_request_latency_seconds");
        assert_eq!(h.kind, aiperf_core::server::prometheus::Kind::Histogram);
        // 30 ms falls in the 0.05 bucket: cumulative 0 at 0.01, 1 from 0.05 on.
        let buckets: Vec<f64> = h.samples.iter().filter(|s| s.name.ends_with("_bucket")).map(|s| s.value).collect();
        assert_eq!(buckets, vec![0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    }
}
