//! Per-request records of a replay and the AIPerf metrics computed from them.
//!
//! A [`RequestRecord`] holds raw times (nanoseconds from the benchmark start: scheduled, sent,
//! first byte, every content chunk, end), token counts and the error if any. [`RequestMetrics`]
//! derives AIPerf's per-request metrics (plus send lateness and latencies from the scheduled time,
//! which expose coordinated omission). [`Aggregate`] collects them, merges with another aggregate,
//! counts errors by kind and goodput, and produces the final [`Report`] through [`crate::stats`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::Distribution;

/// Token usage as the server reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerUsage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// Why a request failed: a short kind (`http_status`, `timeout`, …) and a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordError {
    pub kind: String,
    pub message: String,
}

/// Everything measured about one request; times are nanoseconds from the benchmark start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The trace's session id, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Index of the session run in the schedule.
    pub session_run: u32,
    /// 0-based turn within the session.
    pub turn: u32,
    /// 1-based line of the trace row.
    pub trace_line: u32,
    pub scheduled_ns: u64,
    /// When the dispatcher handed the request to the async runtime (diagnoses where lateness
    /// arises: pacing before it, task start-up after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched_ns: Option<u64>,
    pub sent_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    /// Arrival time of every content chunk (chunks with generated text).
    pub chunk_ns: Vec<u64>,
    pub end_ns: u64,
    pub streaming: bool,
    /// Prompt tokens by the client's tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens by the client's tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The `max_completion_tokens` asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub usage: ServerUsage,
    /// Prompt tokens the trace predicts a prefix cache could reuse (shared leading hash ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_cached_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordError>,
    /// Which `--url` the request went to (0-based, in the order given), when several were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_index: Option<u32>,
}

/// A metric of the report, with AIPerf's tag where AIPerf has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Metric {
    TimeToFirstToken,
    TimeToSecondToken,
    RequestLatency,
    InterTokenLatency,
    InterChunkLatency,
    OutputSequenceLength,
    InputSequenceLength,
    ServerInputSequenceLength,
    OutputTokenThroughputPerUser,
    CachedTokens,
    SendLateness,
    TimeToFirstTokenFromScheduled,
    RequestLatencyFromScheduled,
}

impl Metric {
    /// All per-request metrics in report order.
    pub const ALL: [Metric; 13] = [
        Metric::TimeToFirstToken,
        Metric::TimeToSecondToken,
        Metric::RequestLatency,
        Metric::InterTokenLatency,
        Metric::InterChunkLatency,
        Metric::OutputTokenThroughputPerUser,
        Metric::OutputSequenceLength,
        Metric::InputSequenceLength,
        Metric::ServerInputSequenceLength,
        Metric::CachedTokens,
        Metric::SendLateness,
        Metric::TimeToFirstTokenFromScheduled,
        Metric::RequestLatencyFromScheduled,
    ];

    /// The tag used in exports and `--goodput` (AIPerf's where it exists).
    pub fn tag(self) -> &'static str {
        match self {
            Metric::TimeToFirstToken => "time_to_first_token",
            Metric::TimeToSecondToken => "time_to_second_token",
            Metric::RequestLatency => "request_latency",
            Metric::InterTokenLatency => "inter_token_latency",
            Metric::InterChunkLatency => "inter_chunk_latency",
            Metric::OutputSequenceLength => "output_sequence_length",
            Metric::InputSequenceLength => "input_sequence_length",
            Metric::ServerInputSequenceLength => "server_input_sequence_length",
            Metric::OutputTokenThroughputPerUser => "output_token_throughput_per_user",
            Metric::CachedTokens => "cached_tokens",
            Metric::SendLateness => "send_lateness",
            Metric::TimeToFirstTokenFromScheduled => "time_to_first_token_from_scheduled",
            Metric::RequestLatencyFromScheduled => "request_latency_from_scheduled",
        }
    }

    /// Human-readable name for tables.
    pub fn header(self) -> &'static str {
        match self {
            Metric::TimeToFirstToken => "Time to First Token",
            Metric::TimeToSecondToken => "Time to Second Token",
            Metric::RequestLatency => "Request Latency",
            Metric::InterTokenLatency => "Inter Token Latency",
            Metric::InterChunkLatency => "Inter Chunk Latency",
            Metric::OutputSequenceLength => "Output Sequence Length",
            Metric::InputSequenceLength => "Input Sequence Length",
            Metric::ServerInputSequenceLength => "Server Input Sequence Length",
            Metric::OutputTokenThroughputPerUser => "Output Token Throughput Per User",
            Metric::CachedTokens => "Cached Tokens (server)",
            Metric::SendLateness => "Send Lateness",
            Metric::TimeToFirstTokenFromScheduled => "TTFT from Scheduled Time",
            Metric::RequestLatencyFromScheduled => "Request Latency from Scheduled Time",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Metric::OutputSequenceLength
            | Metric::InputSequenceLength
            | Metric::ServerInputSequenceLength
            | Metric::CachedTokens => "tokens",
            Metric::OutputTokenThroughputPerUser => "tokens/sec/user",
            _ => "ms",
        }
    }

    /// For goodput: true when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::OutputTokenThroughputPerUser)
    }

    /// The metric with this tag.
    pub fn from_tag(tag: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.tag() == tag)
    }
}

/// The per-request metrics of one successful request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMetrics {
    values: Vec<(Metric, f64)>,
    /// Inter-chunk gaps (ms); a list per request, aggregated over all gaps.
    pub inter_chunk_ms: Vec<f64>,
}

impl RequestMetrics {
    /// Metrics of a record; `use_server_token_count` takes OSL/ISL from the server's usage.
    pub fn of(r: &RequestRecord, use_server_token_count: bool) -> RequestMetrics {
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut m = RequestMetrics::default();
        let mut put = |k: Metric, v: f64| m.values.push((k, v));
        put(Metric::SendLateness, ms(r.sent_ns.saturating_sub(r.scheduled_ns)));
        let osl = if use_server_token_count { r.usage.completion_tokens.or(r.output_tokens) } else { r.output_tokens };
        let isl = if use_server_token_count { r.usage.prompt_tokens.or(r.input_tokens) } else { r.input_tokens };
        let last = if r.streaming { r.chunk_ns.last().copied() } else { Some(r.end_ns) };
        let latency = last.map(|t| t.saturating_sub(r.sent_ns));
        if let Some(l) = latency {
            put(Metric::RequestLatency, ms(l));
        }
        if let Some(t) = last {
            put(Metric::RequestLatencyFromScheduled, ms(t.saturating_sub(r.scheduled_ns)));
        }
        if r.streaming
            && let Some(&first) = r.chunk_ns.first()
        {
            let ttft = first.saturating_sub(r.sent_ns);
            put(Metric::TimeToFirstToken, ms(ttft));
            put(Metric::TimeToFirstTokenFromScheduled, ms(first.saturating_sub(r.scheduled_ns)));
            if let Some(&second) = r.chunk_ns.get(1) {
                put(Metric::TimeToSecondToken, ms(second - first.min(second)));
            }
            if let (Some(l), Some(n)) = (latency, osl)
                && n >= 2
            {
                let itl = ms(l.saturating_sub(ttft)) / (n - 1) as f64;
                put(Metric::InterTokenLatency, itl);
                if itl > 0.0 {
                    put(Metric::OutputTokenThroughputPerUser, 1000.0 / itl);
                }
            }
        }
        if let Some(n) = osl {
            put(Metric::OutputSequenceLength, n as f64);
        }
        if let Some(n) = isl {
            put(Metric::InputSequenceLength, n as f64);
        }
        if let Some(n) = r.usage.prompt_tokens {
            put(Metric::ServerInputSequenceLength, n as f64);
        }
        if let Some(n) = r.usage.cached_tokens {
            put(Metric::CachedTokens, n as f64);
        }
        m.inter_chunk_ms = r.chunk_ns.windows(2).map(|w| ms(w[1].saturating_sub(w[0]))).collect();
        m
    }

    /// The value of a metric, when this request has it.
    pub fn get(&self, metric: Metric) -> Option<f64> {
        if metric == Metric::InterChunkLatency {
            return (!self.inter_chunk_ms.is_empty())
                .then(|| crate::stats::mean(&self.inter_chunk_ms).unwrap_or_default());
        }
        self.values.iter().find(|(k, _)| *k == metric).map(|(_, v)| *v)
    }

    /// All single-valued metrics of this request.
    pub fn values(&self) -> &[(Metric, f64)] {
        &self.values
    }
}

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

/// Longest error message kept as an example of its kind (characters).
pub const MAX_ERROR_EXAMPLE_CHARS: usize = 300;

/// An error message as kept for its kind: on one line, at most [`MAX_ERROR_EXAMPLE_CHARS`].
fn error_example(message: &str) -> String {
    let one_line: String =
        message.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(MAX_ERROR_EXAMPLE_CHARS + 1).collect();
    if one_line.chars().count() > MAX_ERROR_EXAMPLE_CHARS {
        let cut: String = one_line.chars().take(MAX_ERROR_EXAMPLE_CHARS).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// Mergeable collection of per-request metric values, counts and error kinds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Aggregate {
    values: BTreeMap<Metric, Vec<f64>>,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    /// The first message of each error kind (what the console and the report show beside the count).
    pub error_examples: BTreeMap<String, String>,
    pub good: u64,
    pub first_sent_ns: Option<u64>,
    pub last_end_ns: Option<u64>,
    pub total_output_tokens: u64,
    pub total_input_tokens: u64,
    pub total_cached_tokens: u64,
    pub total_expected_cached_tokens: u64,
    /// Requests whose server usage reported `cached_tokens`.
    pub cached_reported: u64,
    /// Output tokens of the requests counted both ways: (requests, client's count, server's).
    pub counted_both: (u64, u64, u64),
    /// Per `--url` (records with a [`RequestRecord::url_index`]), by index.
    pub per_url: BTreeMap<u32, UrlAggregate>,
}

/// What one URL of several served: request counts and latencies (the rest is run-wide).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UrlAggregate {
    pub ok: u64,
    pub errors: u64,
    /// Request latency (ms) of its successful requests.
    pub request_latency_ms: Vec<f64>,
    /// Time to first token (ms) of its successful streamed requests.
    pub ttft_ms: Vec<f64>,
}

impl UrlAggregate {
    fn add(&mut self, m: Option<&RequestMetrics>) {
        let Some(m) = m else {
            self.errors += 1;
            return;
        };
        self.ok += 1;
        self.request_latency_ms.extend(m.get(Metric::RequestLatency));
        self.ttft_ms.extend(m.get(Metric::TimeToFirstToken));
    }

    fn merge(&mut self, other: &UrlAggregate) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.request_latency_ms.extend_from_slice(&other.request_latency_ms);
        self.ttft_ms.extend_from_slice(&other.ttft_ms);
    }
}

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

impl Aggregate {
    /// Adds one record; returns its metrics when it succeeded.
    pub fn add(&mut self, r: &RequestRecord, use_server_token_count: bool, slos: &[Slo]) -> Option<RequestMetrics> {
        let m = self.add_run_wide(r, use_server_token_count, slos);
        if let Some(i) = r.url_index {
            self.per_url.entry(i).or_default().add(m.as_ref());
        }
        m
    }

    fn add_run_wide(
        &mut self,
        r: &RequestRecord,
        use_server_token_count: bool,
        slos: &[Slo],
    ) -> Option<RequestMetrics> {
        self.first_sent_ns = Some(self.first_sent_ns.map_or(r.sent_ns, |t| t.min(r.sent_ns)));
        self.last_end_ns = Some(self.last_end_ns.map_or(r.end_ns, |t| t.max(r.end_ns)));
        if let Some(e) = &r.error {
            *self.errors.entry(e.kind.clone()).or_default() += 1;
            if !self.error_examples.contains_key(&e.kind) {
                self.error_examples.insert(e.kind.clone(), error_example(&e.message));
            }
            // Sending happened (or was attempted) on time or not, whatever the answer.
            let lateness = r.sent_ns.saturating_sub(r.scheduled_ns) as f64 / 1e6;
            self.values.entry(Metric::SendLateness).or_default().push(lateness);
            // A request that received tokens before it failed (cancelled under overload, timed
            // out mid-stream) still tells how long the first token took: leaving it out would
            // understate TTFT exactly when the server is overloaded.
            if r.streaming
                && let Some(&first) = r.chunk_ns.first()
            {
                let ms = |ns: u64| ns as f64 / 1e6;
                self.values.entry(Metric::TimeToFirstToken).or_default().push(ms(first.saturating_sub(r.sent_ns)));
                self.values
                    .entry(Metric::TimeToFirstTokenFromScheduled)
                    .or_default()
                    .push(ms(first.saturating_sub(r.scheduled_ns)));
                self.values
                    .entry(Metric::InterChunkLatency)
                    .or_default()
                    .extend(r.chunk_ns.windows(2).map(|w| ms(w[1].saturating_sub(w[0]))));
            }
            return None;
        }
        let m = RequestMetrics::of(r, use_server_token_count);
        self.ok += 1;
        for &(k, v) in m.values() {
            self.values.entry(k).or_default().push(v);
        }
        self.values.entry(Metric::InterChunkLatency).or_default().extend_from_slice(&m.inter_chunk_ms);
        self.total_output_tokens += m.get(Metric::OutputSequenceLength).unwrap_or(0.0) as u64;
        self.total_input_tokens += m.get(Metric::InputSequenceLength).unwrap_or(0.0) as u64;
        if let Some(c) = r.usage.cached_tokens {
            self.total_cached_tokens += c;
            self.cached_reported += 1;
        }
        self.total_expected_cached_tokens += r.expected_cached_tokens.unwrap_or(0);
        if let (Some(client), Some(server)) = (r.output_tokens, r.usage.completion_tokens) {
            let (n, c, s) = &mut self.counted_both;
            *n += 1;
            *c = c.saturating_add(client);
            *s = s.saturating_add(server);
        }
        if !slos.is_empty() && meets(&m, slos) {
            self.good += 1;
        }
        Some(m)
    }

    /// Adds another aggregate's contents to this one.
    pub fn merge(&mut self, other: &Aggregate) {
        for (k, v) in &other.values {
            self.values.entry(*k).or_default().extend_from_slice(v);
        }
        self.ok += other.ok;
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
        for (k, m) in &other.error_examples {
            self.error_examples.entry(k.clone()).or_insert_with(|| m.clone());
        }
        self.good += other.good;
        self.first_sent_ns = match (self.first_sent_ns, other.first_sent_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_end_ns = match (self.last_end_ns, other.last_end_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.total_output_tokens += other.total_output_tokens;
        self.total_input_tokens += other.total_input_tokens;
        self.total_cached_tokens += other.total_cached_tokens;
        self.total_expected_cached_tokens += other.total_expected_cached_tokens;
        self.cached_reported += other.cached_reported;
        self.counted_both.0 += other.counted_both.0;
        self.counted_both.1 = self.counted_both.1.saturating_add(other.counted_both.1);
        self.counted_both.2 = self.counted_both.2.saturating_add(other.counted_both.2);
        for (i, u) in &other.per_url {
            self.per_url.entry(*i).or_default().merge(u);
        }
    }

    /// Number of failed requests.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The values collected for a metric.
    pub fn values(&self, metric: Metric) -> &[f64] {
        self.values.get(&metric).map_or(&[], Vec::as_slice)
    }

    /// The final report; `with_goodput` adds the goodput scalar.
    pub fn report(&self, with_goodput: bool) -> Report {
        let metrics =
            Metric::ALL.into_iter().filter_map(|m| Distribution::of(self.values(m)).map(|d| (m, d))).collect();
        let duration_s = match (self.first_sent_ns, self.last_end_ns) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        Report {
            metrics,
            benchmark_duration_s: duration_s,
            request_count: self.ok,
            error_request_count: self.error_count(),
            request_throughput: per_s(self.ok as f64),
            output_token_throughput: per_s(self.total_output_tokens as f64),
            goodput: with_goodput.then(|| per_s(self.good as f64)),
            good_request_count: with_goodput.then_some(self.good),
            cache_hit_rate: (self.cached_reported > 0 && self.total_input_tokens > 0)
                .then(|| self.total_cached_tokens as f64 / self.total_input_tokens as f64),
            expected_cache_hit_rate: (self.total_input_tokens > 0)
                .then(|| self.total_expected_cached_tokens as f64 / self.total_input_tokens as f64),
            error_summary: self.errors.clone(),
            error_examples: self.error_examples.clone(),
            token_count_check: (self.counted_both.0 > 0).then_some(TokenCountCheck {
                requests: self.counted_both.0,
                client_output_tokens: self.counted_both.1,
                server_output_tokens: self.counted_both.2,
            }),
            per_url: self
                .per_url
                .iter()
                .map(|(&index, u)| UrlReport {
                    index,
                    request_count: u.ok,
                    error_request_count: u.errors,
                    request_latency: Distribution::of(&u.request_latency_ms),
                    time_to_first_token: Distribution::of(&u.ttft_ms),
                })
                .collect(),
            outcomes: Outcomes {
                completed: self.ok,
                cancelled: self.errors.get("cancelled").copied().unwrap_or(0),
                timed_out: self.errors.get("timeout").copied().unwrap_or(0),
                failed: self
                    .errors
                    .iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "cancelled" | "timeout"))
                    .map(|(_, n)| n)
                    .sum(),
            },
        }
    }
}

/// The result of a run: distributions of per-request metrics and run-level scalars.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub metrics: Vec<(Metric, Distribution)>,
    pub benchmark_duration_s: f64,
    pub request_count: u64,
    pub error_request_count: u64,
    /// Successful requests per second.
    pub request_throughput: f64,
    /// Output tokens per second.
    pub output_token_throughput: f64,
    /// Requests per second meeting every SLO.
    pub goodput: Option<f64>,
    pub good_request_count: Option<u64>,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rec(chunks: &[u64], osl: u64) -> RequestRecord {
        RequestRecord {
            scheduled_ns: 1_000_000,
            sent_ns: 3_000_000,
            chunk_ns: chunks.to_vec(),
            end_ns: chunks.last().copied().unwrap_or(0) + 1000,
            streaming: true,
            output_tokens: Some(osl),
            input_tokens: Some(100),
            ..Default::default()
        }
    }

    #[test]
    fn requests_are_counted_per_url_and_merge_like_the_whole() {
        let mut a = Aggregate::default();
        let mut b = Aggregate::default();
        for i in 0..6u64 {
            let mut r = rec(&[5_000_000 + i * 1_000_000, 9_000_000], 2);
            r.url_index = Some((i % 2) as u32);
            if i == 5 {
                r.error = Some(RecordError { kind: "timeout".into(), message: "x".into() });
            }
            (if i < 3 { &mut a } else { &mut b }).add(&r, false, &[]);
        }
        // A record without an index (a single URL) is not counted per URL.
        a.add(&rec(&[5_000_000], 1), false, &[]);
        a.merge(&b);
        let report = a.report(false);
        let counts: Vec<(u32, u64, u64)> =
            report.per_url.iter().map(|u| (u.index, u.request_count, u.error_request_count)).collect();
        assert_eq!(counts, vec![(0, 3, 0), (1, 2, 1)]);
        let ttft0 = report.per_url[0].time_to_first_token.as_ref().unwrap();
        // TTFT from sent (3 ms): 2, 4 and 6 ms on URL 0.
        assert_eq!((ttft0.min, ttft0.max, ttft0.count), (2.0, 6.0, 3));
        assert_eq!(report.per_url[1].request_latency.as_ref().unwrap().count, 2);
        assert!(Aggregate::default().report(false).per_url.is_empty());
    }

    #[test]
    fn aiperf_definitions() {
        let m = RequestMetrics::of(&rec(&[13_000_000, 15_000_000, 17_000_000, 23_000_000], 4), false);
        assert_eq!(m.get(Metric::SendLateness), Some(2.0));
        assert_eq!(m.get(Metric::TimeToFirstToken), Some(10.0));
        assert_eq!(m.get(Metric::TimeToFirstTokenFromScheduled), Some(12.0));
        assert_eq!(m.get(Metric::TimeToSecondToken), Some(2.0));
        assert_eq!(m.get(Metric::RequestLatency), Some(20.0));
        assert_eq!(m.get(Metric::RequestLatencyFromScheduled), Some(22.0));
        assert_eq!(m.get(Metric::InterTokenLatency), Some(10.0 / 3.0));
        assert_eq!(m.get(Metric::OutputTokenThroughputPerUser), Some(300.0));
        assert_eq!(m.inter_chunk_ms, vec![2.0, 2.0, 6.0]);
    }

    #[test]
    fn itl_needs_two_tokens_and_server_count_is_optional() {
        let mut r = rec(&[13_000_000], 1);
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::InterTokenLatency), None);
        r.usage.completion_tokens = Some(7);
        assert_eq!(RequestMetrics::of(&r, true).get(Metric::OutputSequenceLength), Some(7.0));
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::OutputSequenceLength), Some(1.0));
    }

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

    #[test]
    fn ttft_covers_requests_that_failed_after_their_first_token() {
        let mut agg = Aggregate::default();
        agg.add(&rec(&[13_000_000, 15_000_000], 2), false, &[]);
        let mut cancelled = rec(&[43_000_000], 1);
        cancelled.error = Some(RecordError { kind: "cancelled".into(), message: "x".into() });
        agg.add(&cancelled, false, &[]);
        let mut refused = rec(&[], 0);
        refused.error = Some(RecordError { kind: "connection_error".into(), message: "x".into() });
        agg.add(&refused, false, &[]);
        let r = agg.report(false);
        let ttft = r.get(Metric::TimeToFirstToken).unwrap();
        assert_eq!((ttft.count, ttft.max), (2, 40.0));
        assert_eq!(r.request_count, 1);
        assert_eq!(r.outcomes, Outcomes { completed: 1, cancelled: 1, timed_out: 0, failed: 1 });
    }

    #[test]
    fn aggregates_merge_like_one() {
        let records: Vec<RequestRecord> = (1..=10u64)
            .map(|i| {
                let mut r = rec(&[3_000_000 + i * 1_000_000, 4_000_000 + i * 2_000_000], 2);
                if i % 4 == 0 {
                    r.error = Some(RecordError { kind: "timeout".into(), message: "x".into() });
                }
                r
            })
            .collect();
        let slos = parse_goodput("time_to_first_token:5").unwrap();
        let mut whole = Aggregate::default();
        let (mut a, mut b) = (Aggregate::default(), Aggregate::default());
        for (i, r) in records.iter().enumerate() {
            whole.add(r, false, &slos);
            if i % 2 == 0 {
                a.add(r, false, &slos)
            } else {
                b.add(r, false, &slos)
            };
        }
        a.merge(&b);
        let (rw, ra) = (whole.report(true), a.report(true));
        assert_eq!(rw.request_count, 8);
        assert_eq!(rw.error_summary.get("timeout"), Some(&2));
        assert_eq!(rw.good_request_count, Some(4));
        assert_eq!(rw.get(Metric::TimeToFirstToken).unwrap().max, ra.get(Metric::TimeToFirstToken).unwrap().max);
        assert_eq!(
            rw.get(Metric::TimeToFirstToken).unwrap().percentiles,
            ra.get(Metric::TimeToFirstToken).unwrap().percentiles
        );
        assert_eq!(rw.request_throughput, ra.request_throughput);
    }
}
