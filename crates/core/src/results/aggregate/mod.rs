//! [`Aggregate`]: the metrics of many requests collected, merged with another aggregate, errors
//! counted by kind, goodput counted, and the final [`Report`] computed through [`crate::stats`].
//!
//! Here the collecting and the report's computation; `columns`: the metric values kept, one list
//! per metric; `report`: the [`Report`] and its parts.

mod columns;
mod report;

use columns::Columns;
pub use report::{Adjusted, Outcomes, Report, TokenCountCheck, UrlReport};

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::results::metrics::{Metric, RequestMetrics, Slo, meets, osl_mismatch};
use crate::results::record::{ChunkTimes, RequestRecord};
use crate::results::timeline::{TimeWeighted, Timeline, TimelineMetric};
use crate::stats::{Distribution, Runs};

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
    values: Columns,
    /// The chunk gaps (ms) of successful requests, in order, as runs of equal gaps (a simulated
    /// request's gaps are one run).
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

impl Aggregate {
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
        let m = self.add_run_wide(r, chunks, use_server_token_count, slos);
        self.timeline.add_chunks(r, chunks, m.as_ref());
        if let Some(i) = r.url_index {
            self.per_url.entry(i).or_default().add(m.as_ref());
        }
        m
    }

    fn add_run_wide(
        &mut self,
        r: &RequestRecord,
        chunks: ChunkTimes<'_>,
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
            return None;
        }
        let m = RequestMetrics::of_chunks(r, chunks, use_server_token_count);
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
        if !slos.is_empty() && meets(&m, slos) {
            self.good += 1;
        }
        Some(m)
    }

    /// Adds another aggregate's contents to this one.
    pub fn merge(&mut self, other: &Aggregate) {
        // In the metrics' order, so that a twin's values are in before its shadow's.
        for i in 0..other.values.lists.len() {
            self.values.extend_at(i, &other.values.at(i));
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

    /// The values collected for a metric that is stored as such (see [`Aggregate::metric_values`]
    /// for every metric); the chunk gaps are kept as runs ([`Aggregate::inter_chunk_ms`]).
    pub fn values(&self, metric: Metric) -> &[f64] {
        self.values.slice(metric)
    }

    /// The metric whose stored list is `metric`'s values unchanged (itself, or the twin AIPerf's
    /// copy of our metric equals: copies are not stored twice); `None` when its values are made
    /// from others'.
    fn served_by(&self, metric: Metric) -> Option<Metric> {
        match metric {
            Metric::TimeToFirstOutputToken => Some(Metric::TimeToFirstToken),
            Metric::UsagePromptTokens => Some(Metric::ServerInputSequenceLength),
            Metric::UsagePromptCacheReadTokens => Some(Metric::CachedTokens),
            Metric::CreditToStartLatency => Some(Metric::SendLateness),
            Metric::OutputTokenCount | Metric::OutputTokenThroughputPerUser => None,
            // Without failed requests the "all requests" metric is the successful ones' list.
            Metric::TimeToFirstTokenAllRequests => self.failed_ttft_ms.is_empty().then_some(Metric::TimeToFirstToken),
            Metric::InterChunkLatencyAllRequests => self.failed_icl_ms.is_empty().then_some(Metric::InterChunkLatency),
            m => Some(m),
        }
    }

    /// The chunk gaps (ms) of the successful requests, in order.
    pub fn inter_chunk_ms(&self) -> &Runs {
        &self.inter_chunk_ms
    }

    /// The chunk gaps of `metric`: the successful requests' ([`Metric::InterChunkLatency`]), or
    /// theirs then the failed ones' ([`Metric::InterChunkLatencyAllRequests`]).
    fn inter_chunk_ms_all_or_ok(&self, metric: Metric) -> Cow<'_, Runs> {
        if metric == Metric::InterChunkLatency {
            return Cow::Borrowed(&self.inter_chunk_ms);
        }
        if self.failed_icl_ms.is_empty() {
            return Cow::Borrowed(&self.inter_chunk_ms);
        }
        let mut all = self.inter_chunk_ms.clone();
        all.extend_from_slice(&self.failed_icl_ms);
        Cow::Owned(all)
    }

    /// The values of any metric: a stored list (see `served_by`), or one made from others.
    pub fn metric_values(&self, metric: Metric) -> Cow<'_, [f64]> {
        if matches!(metric, Metric::InterChunkLatency | Metric::InterChunkLatencyAllRequests) {
            return Cow::Owned(self.inter_chunk_ms_all_or_ok(metric).expanded());
        }
        if let Some(source) = self.served_by(metric) {
            return self.values.get(source);
        }
        let join = |a: &[f64], b: &[f64]| Cow::Owned([a, b].concat());
        match metric {
            Metric::TimeToFirstTokenAllRequests => {
                join(&self.values.get(Metric::TimeToFirstToken), &self.failed_ttft_ms)
            }
            Metric::OutputTokenCount => {
                Cow::Owned(self.values.get(Metric::OutputSequenceLength).iter().copied().filter(|&n| n > 0.0).collect())
            }
            // `RequestMetrics::of`'s: one per inter-token latency above zero.
            Metric::OutputTokenThroughputPerUser => Cow::Owned(
                self.values
                    .get(Metric::InterTokenLatency)
                    .iter()
                    .filter(|&&itl| itl > 0.0)
                    .map(|&itl| 1000.0 / itl)
                    .collect(),
            ),
            m => self.values.get(m),
        }
    }

    /// The final report; `with_goodput` adds the goodput scalars.
    pub fn report(&self, with_goodput: bool) -> Report {
        self.report_over(with_goodput, None)
    }

    /// The final report with the time-weighted metrics weighed over `window` (ns on the
    /// records' clock) instead of the records' own window.
    pub fn report_over(&self, with_goodput: bool, window: Option<(u64, u64)>) -> Report {
        let mut report = self.report_of_lists(with_goodput);
        report.timeline = self.timeline_metrics(window);
        report
    }

    /// [`Aggregate::report_over`] of an aggregate no longer needed: its lists are dropped once
    /// their statistics are taken, before the time-weighted metrics are swept.
    pub fn into_report_over(mut self, with_goodput: bool, window: Option<(u64, u64)>) -> Report {
        let timeline = std::mem::take(&mut self.timeline);
        let mut report = self.report_of_lists(with_goodput);
        drop(self);
        report.timeline = timeline.window_metrics(window);
        report
    }

    /// The time-weighted metrics over `window`, else the records' own window.
    fn timeline_metrics(&self, window: Option<(u64, u64)>) -> Vec<(TimelineMetric, TimeWeighted)> {
        self.timeline.window_metrics(window)
    }

    /// The report but its time-weighted metrics.
    fn report_of_lists(&self, with_goodput: bool) -> Report {
        // Metrics served by the same stored list, or by lists of the same values, share its
        // distribution: computed once.
        let mut by_source: Vec<(Metric, Distribution)> = Vec::new();
        let metrics: Vec<(Metric, Distribution)> = Metric::ALL
            .into_iter()
            .filter_map(|m| {
                let Some(source) = self.served_by(m) else {
                    if m == Metric::InterChunkLatencyAllRequests {
                        return Distribution::of_runs(&self.inter_chunk_ms_all_or_ok(m)).map(|d| (m, d));
                    }
                    return Distribution::of_cow(self.metric_values(m)).map(|d| (m, d));
                };
                if let Some((_, d)) = by_source.iter().find(|(s, _)| *s == source) {
                    return Some((m, d.clone()));
                }
                let d = if source == Metric::InterChunkLatency {
                    Distribution::of_runs(&self.inter_chunk_ms)?
                } else if let Some((_, d)) =
                    by_source.iter().find(|(s, _)| *s != Metric::InterChunkLatency && self.values.same(*s, source))
                {
                    d.clone()
                } else {
                    Distribution::of_cow(self.values.get(source))?
                };
                by_source.push((source, d.clone()));
                Some((m, d))
            })
            .collect();
        let errors = self.error_count();
        let adjusted = if errors == 0 {
            Vec::new()
        } else {
            metrics
                .iter()
                .filter(|(m, _)| m.adjusted_for_failures())
                .map(|(m, _)| (*m, Adjusted::of(&self.metric_values(*m), errors)))
                .collect()
        };
        let seconds = |w: Option<(u64, u64)>| match w {
            Some((a, b)) if b > a => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let duration_s = seconds(self.ok_window_ns);
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        let total = |i: usize| (self.usage_totals[i].0 > 0).then_some(self.usage_totals[i].1);
        let error_isl = self.values.get(Metric::ErrorInputSequenceLength);
        let attempted = self.ok + errors;
        Report {
            metrics,
            adjusted,
            benchmark_duration_s: duration_s,
            run_duration_s: seconds(self.first_sent_ns.zip(self.last_end_ns)),
            request_count: self.ok,
            error_request_count: errors,
            context_overflow_count: self.context_overflows,
            request_throughput: per_s(self.ok as f64),
            output_token_throughput: per_s(self.total_output_tokens as f64),
            input_token_throughput: per_s(self.total_input_tokens as f64),
            total_token_throughput: per_s((self.total_input_tokens + self.total_output_tokens) as f64),
            total_input_tokens: self.total_input_tokens,
            total_output_tokens: self.total_output_tokens,
            total_error_input_tokens: (!error_isl.is_empty()).then(|| error_isl.iter().sum::<f64>() as u64),
            usage_prompt_tokens: total(0),
            usage_completion_tokens: total(1),
            usage_total_tokens: total(2),
            usage_cache_read_tokens: total(3),
            usage_discrepancy_count: (self.usage_discrepancies.0 > 0).then_some(self.usage_discrepancies.1),
            osl_mismatch_count: (self.osl_mismatches.0 > 0).then_some(self.osl_mismatches.1),
            goodput: with_goodput.then(|| per_s(self.good as f64)),
            good_request_count: with_goodput.then_some(self.good),
            good_request_fraction: with_goodput
                .then(|| if attempted > 0 { self.good as f64 / attempted as f64 } else { 0.0 }),
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
            timeline: Vec::new(),
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
mod tests {
    use super::*;
    use crate::results::metrics::parse_goodput;
    use crate::results::metrics::tests::rec;
    use crate::results::record::RecordError;

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
    fn ttft_of_all_requests_covers_those_that_failed_after_their_first_token() {
        let mut agg = Aggregate::default();
        agg.add(&rec(&[13_000_000, 15_000_000], 2), false, &[]);
        let mut cancelled = rec(&[43_000_000], 1);
        cancelled.error = Some(RecordError { kind: "cancelled".into(), message: "x".into() });
        agg.add(&cancelled, false, &[]);
        let mut refused = rec(&[], 0);
        refused.error = Some(RecordError { kind: "connection_error".into(), message: "x".into() });
        agg.add(&refused, false, &[]);
        let r = agg.report(false);
        let ttft = r.get(Metric::TimeToFirstTokenAllRequests).unwrap();
        assert_eq!((ttft.count, ttft.max), (2, 40.0));
        // AIPerf's key counts the successful request only.
        assert_eq!(r.get(Metric::TimeToFirstToken).unwrap().count, 1);
        // Its error-adjusted view counts the two failures as infinitely slow.
        let (m, adj) = &r.adjusted[0];
        assert_eq!(
            (*m, adj.count, adj.min, adj.percentiles[0], adj.percentiles[4]),
            (Metric::TimeToFirstToken, 3, Some(10.0), Some(10.0), None)
        );
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

    #[test]
    fn chunk_gaps_kept_as_runs_give_the_written_out_lists_statistics() {
        let mut agg = Aggregate::default();
        let mut gaps = Vec::new();
        for i in 0..40u64 {
            // Evenly spaced chunks (one run of gaps a request), and some uneven ones.
            let step = 1_000_000 + (i % 3) * 333_333;
            let mut chunks: Vec<u64> = (0..(5 + i % 7)).map(|k| 10_000_000 + i * 1_000_000 + k * step).collect();
            if i % 5 == 0 {
                chunks.push(chunks[chunks.len() - 1] + 77_777);
            }
            let r = rec(&chunks, chunks.len() as u64);
            gaps.extend(RequestMetrics::of(&r, false).inter_chunk_ms.values());
            agg.add(&r, false, &[]);
        }
        let mut failed = rec(&[90_000_000, 91_000_000, 92_000_000], 3);
        failed.error = Some(RecordError { kind: "timeout".into(), message: "x".into() });
        agg.add(&failed, false, &[]);
        let bits = |d: &Distribution| {
            [d.sum, d.avg, d.std, d.min, d.max].iter().chain(&d.percentiles).map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        let report = agg.report(false);
        let icl = report.get(Metric::InterChunkLatency).unwrap();
        assert_eq!(bits(icl), bits(&Distribution::of(&gaps).unwrap()));
        assert_eq!(agg.metric_values(Metric::InterChunkLatency).as_ref(), gaps.as_slice());
        gaps.extend([1.0, 1.0]);
        let all = report.get(Metric::InterChunkLatencyAllRequests).unwrap();
        assert_eq!(bits(all), bits(&Distribution::of(&gaps).unwrap()));
        assert!(agg.inter_chunk_ms().runs().count() < gaps.len() / 2);
        assert_eq!(agg.clone().into_report_over(false, None), report);
    }

    proptest::proptest! {
        /// Evenly spaced chunks kept as one gap give the metrics, aggregate and report of the
        /// same chunks listed, at a time's limit too (chunks held at `u64::MAX`).
        #[test]
        fn evenly_spaced_chunks_kept_as_one_gap_aggregate_as_listed(
            requests in proptest::collection::vec(
                (0u64..50_000_000, proptest::prop_oneof![4 => 0u64..3_000_000, 1 => proptest::strategy::Just(u64::MAX / 3)], 0u64..40, proptest::bool::ANY),
                1..12,
            ),
        ) {
            let (mut listed, mut even) = (Aggregate::default(), Aggregate::default());
            for (i, &(first, gap, count, failed)) in requests.iter().enumerate() {
                let chunks = ChunkTimes::Even { first: first + 3_000_000, gap, count };
                let mut r = rec(&[], count.max(1));
                r.chunk_ns = chunks.to_vec();
                r.end_ns = chunks.last().unwrap_or(r.sent_ns).max(r.sent_ns + i as u64);
                if failed {
                    r.error = Some(RecordError { kind: "timeout".into(), message: "x".into() });
                }
                let a = listed.add(&r, false, &[]);
                let chunk_ns = std::mem::take(&mut r.chunk_ns);
                let b = even.add_chunks(&r, chunks, false, &[]);
                proptest::prop_assert_eq!(a.as_ref().map(|m| m.inter_chunk_ms.expanded()), b.as_ref().map(|m| m.inter_chunk_ms.expanded()));
                proptest::prop_assert_eq!(&a, &b);
                r.chunk_ns = chunk_ns;
                proptest::prop_assert_eq!(
                    a.map(|m| crate::results::line::record_line(&r, Some(&m), 7)),
                    b.map(|m| crate::results::line::record_line(&r, Some(&m), 7))
                );
            }
            // As text: a failed request's counts are NaN, never equal to themselves.
            proptest::prop_assert_eq!(format!("{listed:?}"), format!("{even:?}"));
            proptest::prop_assert_eq!(format!("{:?}", listed.report(false)), format!("{:?}", even.report(false)));
        }
    }

    #[test]
    fn context_overflows_are_told_by_the_servers_message_as_aiperf_tells_them() {
        let failed = |message: &str| {
            let mut r = rec(&[], 0);
            r.error = Some(RecordError { kind: "http_status".into(), message: message.into() });
            r
        };
        let vllm = "HTTP 400: {\"error\":{\"message\":\"This model's maximum context length is 64 tokens. \
                    However, you requested 80 tokens (60 in the messages, 20 in the completion).\"}}";
        let (mut a, mut b) = (Aggregate::default(), Aggregate::default());
        a.add(&failed(vllm), false, &[]);
        a.add(&failed("HTTP 500: mock: injected server error"), false, &[]);
        b.add(&failed("HTTP 400: {\"error\":{\"code\":\"context_length_exceeded\"}}"), false, &[]);
        b.add(&failed("Prompt Is Too Long"), false, &[]);
        b.add(&rec(&[13_000_000], 1), false, &[]);
        a.merge(&b);
        let r = a.report(false);
        assert_eq!((r.error_request_count, r.context_overflow_count), (4, 3));
        let scalars = crate::results::export::scalars(&r);
        assert!(scalars.iter().any(|(tag, _, _, v)| *tag == "context_overflow_count" && *v == 3.0));
    }
}
