//! [`Aggregate`]: the metrics of many requests collected, merged with another aggregate, errors
//! counted by kind, goodput counted, and the final [`Report`] computed through [`crate::stats`].
//!
//! Here the collecting and merging; `columns`: the metric values kept, one list per metric;
//! `reporting`: the report computed from them; `report`: the [`Report`] and its parts.

mod columns;
mod report;
mod reporting;

use columns::Columns;
pub use report::{Adjusted, Outcomes, Report, TokenCountCheck, UrlReport};
pub use reporting::Pending;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::metrics::{Metric, RequestMetrics, Slo, meets, osl_mismatch};
use crate::results::record::{ChunkTimes, RecordError, RequestRecord};
use crate::results::timeline::Timeline;
use crate::stats::Runs;

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

/// Mergeable collection of per-request metric values, counts and error kinds; serialized whole
/// (a part of a run file read by another worker, merged where the run is finished).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    values: Columns,
    /// The chunk gaps (ms) of successful requests, in order, as runs of equal gaps (a simulated
    /// request's gaps are one run).
    #[serde(with = "runs_as_pairs")]
    inter_chunk_ms: Runs,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    /// The first message of each error kind (what the console and the report show beside the count).
    pub error_examples: BTreeMap<String, String>,
    /// Failed requests whose error is a context-length overflow
    /// ([`crate::results::record::RecordError::is_context_overflow`]).
    pub context_overflows: u64,
    pub good: u64,
    pub first_sent_ns: Option<u64>,
    pub last_end_ns: Option<u64>,
    /// AIPerf's benchmark window: the first successful request's send and the latest last
    /// answer (send + request latency) of a successful one.
    pub ok_window_ns: Option<(u64, u64)>,
    pub total_output_tokens: u64,
    pub total_input_tokens: u64,
    /// TTFT (ms) of failed requests that received a token before failing.
    pub failed_ttft_ms: Vec<f64>,
    /// Chunk gaps (ms) of failed requests.
    pub failed_icl_ms: Vec<f64>,
    /// Sums of the server's usage counts over successful requests: (requests reporting it, sum)
    /// for prompt, completion, total and cache-read tokens.
    pub usage_totals: [(u64, u64); 4],
    /// Requests with a prompt-count difference, and those that were a usage discrepancy.
    pub usage_discrepancies: (u64, u64),
    /// Requests with `max_tokens` and an output length, and those off it (an OSL mismatch).
    pub osl_mismatches: (u64, u64),
    pub total_cached_tokens: u64,
    pub total_expected_cached_tokens: u64,
    /// Requests whose server usage reported `cached_tokens`.
    pub cached_reported: u64,
    /// Output tokens of the requests counted both ways: (requests, client's count, server's).
    pub counted_both: (u64, u64, u64),
    /// Per `--url` (records with a [`RequestRecord::url_index`]), by index.
    pub per_url: BTreeMap<u32, UrlAggregate>,
    /// Every request's phases, for the time-weighted metrics.
    pub timeline: Timeline,
}

/// What one URL of several served: request counts and latencies (the rest is run-wide).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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

impl Aggregate {
    /// An empty aggregate for `requests` requests: each list makes room for them when it takes its
    /// first value (a list no request fills takes no memory); the timeline's spans at once.
    pub fn expecting(requests: usize) -> Aggregate {
        let mut a = Aggregate::default();
        a.values.expect(requests);
        a.timeline.reserve(requests);
        a
    }

    /// Adds one record; returns its metrics when it succeeded.
    pub fn add(&mut self, r: &RequestRecord, use_server_token_count: bool, slos: &[Slo]) -> Option<RequestMetrics> {
        self.add_chunks(r, r.chunks(), use_server_token_count, slos)
    }

    /// [`Aggregate::add`] of a record whose chunks are `chunks` (its `chunk_ns` not read).
    pub fn add_chunks(
        &mut self,
        r: &RequestRecord,
        chunks: ChunkTimes<'_>,
        use_server_token_count: bool,
        slos: &[Slo],
    ) -> Option<RequestMetrics> {
        self.first_sent_ns = Some(self.first_sent_ns.map_or(r.sent_ns, |t| t.min(r.sent_ns)));
        self.last_end_ns = Some(self.last_end_ns.map_or(r.end_ns, |t| t.max(r.end_ns)));
        let m = match &r.error {
            Some(e) => {
                self.add_failed(r, e, chunks, use_server_token_count);
                None
            }
            None => {
                let m = RequestMetrics::of_chunks(r, chunks, use_server_token_count);
                self.add_succeeded(r, &m, slos);
                Some(m)
            }
        };
        self.timeline.add_chunks(r, chunks, m.as_ref());
        if let Some(i) = r.url_index {
            self.per_url.entry(i).or_default().add(m.as_ref());
        }
        m
    }

    /// The run-wide counts and lists of a failed request (`e`: its error).
    fn add_failed(&mut self, r: &RequestRecord, e: &RecordError, chunks: ChunkTimes<'_>, use_server_token_count: bool) {
        *self.errors.entry(e.kind.clone()).or_default() += 1;
        if !self.error_examples.contains_key(&e.kind) {
            self.error_examples.insert(e.kind.clone(), error_example(&e.message));
        }
        self.context_overflows += u64::from(e.is_context_overflow());
        let ms = |ns: u64| ns as f64 / 1e6;
        // Sending happened (or was attempted) on time or not, whatever the answer.
        let lateness = ms(r.sent_ns.saturating_sub(r.scheduled_ns));
        self.values.push(Metric::SendLateness, lateness);
        self.values.push(Metric::EffectiveLatency, ms(r.end_ns.saturating_sub(r.scheduled_ns)));
        let isl = if use_server_token_count { r.usage.prompt_tokens.or(r.input_tokens) } else { r.input_tokens };
        if let Some(n) = isl {
            self.values.push(Metric::ErrorInputSequenceLength, n as f64);
        }
        // A request that received tokens before it failed (cancelled under overload, timed
        // out mid-stream) still tells how long the first token took: leaving it out would
        // understate TTFT exactly when the server is overloaded (our `*_all_requests`; AIPerf's
        // keys count successful requests only).
        if r.streaming
            && let Some(first) = chunks.first()
        {
            self.failed_ttft_ms.push(ms(first.saturating_sub(r.sent_ns)));
            self.values.push(Metric::TimeToFirstTokenFromScheduled, ms(first.saturating_sub(r.scheduled_ns)));
            self.failed_icl_ms.extend(chunks.gaps_ms().values());
        }
    }

    /// The run-wide counts and lists of a successful request (`m`: its metrics).
    fn add_succeeded(&mut self, r: &RequestRecord, m: &RequestMetrics, slos: &[Slo]) {
        self.ok += 1;
        for &(k, v) in m.values() {
            if stored(k) {
                self.values.push(k, v);
            }
        }
        self.values.push(Metric::EffectiveLatency, r.end_ns.saturating_sub(r.scheduled_ns) as f64 / 1e6);
        self.inter_chunk_ms.extend_runs(&m.inter_chunk_ms);
        if let Some(l) = m.get(Metric::RequestLatency) {
            let end = r.sent_ns.saturating_add((l * 1e6).round() as u64);
            self.ok_window_ns =
                Some(self.ok_window_ns.map_or((r.sent_ns, end), |(a, b)| (a.min(r.sent_ns), b.max(end))));
        }
        let usage = [
            r.usage.prompt_tokens,
            r.usage.completion_tokens,
            r.usage.prompt_tokens.zip(r.usage.completion_tokens).map(|(p, c)| p.saturating_add(c)),
            r.usage.cached_tokens,
        ];
        for (total, n) in self.usage_totals.iter_mut().zip(usage) {
            if let Some(n) = n {
                total.0 += 1;
                total.1 = total.1.saturating_add(n);
            }
        }
        if let Some(d) = m.usage_discrepancy() {
            self.usage_discrepancies.0 += 1;
            self.usage_discrepancies.1 += u64::from(d);
        } else if m.get(Metric::UsagePromptTokensDiffPct).is_some() {
            self.usage_discrepancies.0 += 1;
        }
        if let (Some(asked), Some(osl)) = (r.max_tokens.filter(|&a| a > 0), m.get(Metric::OutputSequenceLength)) {
            self.osl_mismatches.0 += 1;
            self.osl_mismatches.1 += u64::from(osl_mismatch(asked, osl as u64));
        }
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
        if !slos.is_empty() && meets(m, slos) {
            self.good += 1;
        }
    }

    /// Adds another aggregate's contents to this one.
    pub fn merge(&mut self, other: &Aggregate) {
        // In the metrics' order, so that a twin's values are in before its shadow's.
        for i in 0..other.values.lists.len() {
            self.values.extend_from(i, &other.values);
        }
        self.inter_chunk_ms.extend_runs(&other.inter_chunk_ms);
        self.ok += other.ok;
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
        for (k, m) in &other.error_examples {
            self.error_examples.entry(k.clone()).or_insert_with(|| m.clone());
        }
        self.context_overflows += other.context_overflows;
        self.good += other.good;
        self.first_sent_ns = match (self.first_sent_ns, other.first_sent_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_end_ns = match (self.last_end_ns, other.last_end_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.ok_window_ns = match (self.ok_window_ns, other.ok_window_ns) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        self.failed_ttft_ms.extend_from_slice(&other.failed_ttft_ms);
        self.failed_icl_ms.extend_from_slice(&other.failed_icl_ms);
        for (t, o) in self.usage_totals.iter_mut().zip(other.usage_totals) {
            t.0 += o.0;
            t.1 = t.1.saturating_add(o.1);
        }
        self.usage_discrepancies.0 += other.usage_discrepancies.0;
        self.usage_discrepancies.1 += other.usage_discrepancies.1;
        self.osl_mismatches.0 += other.osl_mismatches.0;
        self.osl_mismatches.1 += other.osl_mismatches.1;
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
        self.timeline.merge(&other.timeline);
    }

    /// Number of failed requests.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// [`Runs`] serialized as its (value, count) runs, not written out.
mod runs_as_pairs {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::stats::Runs;

    pub(super) fn serialize<S: Serializer>(runs: &Runs, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(runs.runs())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Runs, D::Error> {
        let mut runs = Runs::default();
        for (v, n) in Vec::<(f64, u64)>::deserialize(d)? {
            runs.push_n(v, n);
        }
        Ok(runs)
    }
}

/// Whether a successful request's metric is kept in its own list (the others equal a twin's
/// values, see [`Aggregate::metric_values`]).
fn stored(m: Metric) -> bool {
    !matches!(
        m,
        Metric::TimeToFirstOutputToken
            | Metric::UsagePromptTokens
            | Metric::UsagePromptCacheReadTokens
            | Metric::OutputTokenCount
            | Metric::OutputTokenThroughputPerUser
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
