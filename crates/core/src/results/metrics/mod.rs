//! The AIPerf metrics of one request ([`RequestMetrics`], derived from its
//! [`RequestRecord`]: AIPerf's per-request metrics plus send lateness and latencies from the
//! scheduled time, which expose coordinated omission) and the `--goodput` objectives they are
//! judged by.

//!
//! Here the per-request computation; `metric`: the [`Metric`] table (AIPerf's tags, headers,
//! units); `goodput`: the `--goodput` objectives.

mod goodput;
mod metric;

pub use goodput::{GoodputError, Slo, meets, parse_goodput};
pub use metric::Metric;

use crate::results::record::{ChunkTimes, HttpTiming, RequestRecord};
use crate::stats::Runs;

/// AIPerf's `http_req_*` of one exchange (its definitions: sending counts from the request's
/// start, so it includes opening a connection, as `http_req_total` then counts that twice).
/// Requests never wait for a free connection (the pool has no cap): `http_req_blocked` is 0.
fn http_metrics(h: &HttpTiming, sent_ns: u64, put: &mut impl FnMut(Metric, f64)) {
    let ms = |ns: u64| ns as f64 / 1e6;
    let kb = |bytes: u64| bytes as f64 / 1024.0;
    let (blocked, dns, connecting) = (0, h.dns_lookup_ns, h.connect_ns);
    let sending = h.send_end_ns.saturating_sub(sent_ns);
    put(Metric::HttpReqBlocked, ms(blocked));
    put(Metric::HttpReqDnsLookup, ms(dns));
    put(Metric::HttpReqConnecting, ms(connecting));
    put(Metric::HttpReqSending, ms(sending));
    put(Metric::HttpReqDataSent, kb(h.bytes_sent));
    put(Metric::HttpReqChunksSent, if h.bytes_sent > 0 { 1.0 } else { 0.0 });
    put(Metric::HttpReqDataReceived, kb(h.bytes_received));
    put(Metric::HttpReqChunksReceived, h.chunks_received as f64);
    put(Metric::HttpReqConnectionReused, if h.reused { 1.0 } else { 0.0 });
    put(Metric::HttpReqConnectionOverhead, ms(blocked + dns + connecting));
    // Without a response body AIPerf has no waiting, receiving, duration nor total.
    if let (Some(first), Some(last)) = (h.body_first_ns, h.body_last_ns) {
        let waiting = first.saturating_sub(h.send_end_ns);
        let receiving = if h.chunks_received > 1 { last.saturating_sub(first) } else { 0 };
        put(Metric::HttpReqWaiting, ms(waiting));
        put(Metric::HttpReqReceiving, ms(receiving));
        put(Metric::HttpReqDuration, ms(last.saturating_sub(sent_ns)));
        put(Metric::HttpReqTotal, ms(blocked + dns + connecting + sending + waiting + receiving));
    }
}

/// A prompt or completion count differing from the client's by more than this (%) makes a
/// usage discrepancy (AIPerf's `AIPERF_METRICS_USAGE_PCT_DIFF_THRESHOLD` default).
pub const USAGE_DIFF_THRESHOLD_PCT: f64 = 10.0;
/// An output length off the `max_tokens` asked for by more than this share (%), or
/// [`OSL_MISMATCH_MAX_TOKENS`] tokens if fewer, is an OSL mismatch (AIPerf's defaults).
pub const OSL_MISMATCH_THRESHOLD_PCT: f64 = 5.0;
pub const OSL_MISMATCH_MAX_TOKENS: f64 = 50.0;

/// The per-request metrics of one successful request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMetrics {
    values: Vec<(Metric, f64)>,
    /// Inter-chunk gaps (ms), as runs of equal gaps; aggregated over all gaps.
    pub inter_chunk_ms: Runs,
}

impl RequestMetrics {
    /// Metrics of a record (AIPerf's definitions); `use_server_token_count` takes OSL/ISL from
    /// the server's usage.
    pub fn of(r: &RequestRecord, use_server_token_count: bool) -> RequestMetrics {
        RequestMetrics::of_chunks(r, r.chunks(), use_server_token_count)
    }

    /// [`RequestMetrics::of`] a record whose chunks are `chunks` (its `chunk_ns` not read).
    pub fn of_chunks(r: &RequestRecord, chunks: ChunkTimes<'_>, use_server_token_count: bool) -> RequestMetrics {
        let ms = |ns: u64| ns as f64 / 1e6;
        // Room for every metric up front: one allocation a request.
        let mut m = RequestMetrics { values: Vec::with_capacity(Metric::ALL.len()), inter_chunk_ms: Runs::default() };
        let mut put = |k: Metric, v: f64| m.values.push((k, v));
        put(Metric::SendLateness, ms(r.sent_ns.saturating_sub(r.scheduled_ns)));
        let osl = if use_server_token_count { r.usage.completion_tokens.or(r.output_tokens) } else { r.output_tokens };
        let isl = if use_server_token_count { r.usage.prompt_tokens.or(r.input_tokens) } else { r.input_tokens };
        let last = if r.streaming { chunks.last() } else { Some(r.end_ns) };
        let latency = last.map(|t| t.saturating_sub(r.sent_ns));
        if let Some(l) = latency {
            put(Metric::RequestLatency, ms(l));
        }
        if let Some(t) = last {
            put(Metric::RequestLatencyFromScheduled, ms(t.saturating_sub(r.scheduled_ns)));
        }
        if r.streaming
            && let Some(first) = chunks.first()
        {
            let ttft = first.saturating_sub(r.sent_ns);
            put(Metric::TimeToFirstToken, ms(ttft));
            put(Metric::TimeToFirstOutputToken, ms(ttft));
            put(Metric::TimeToFirstTokenFromScheduled, ms(first.saturating_sub(r.scheduled_ns)));
            if let Some(second) = chunks.get(1) {
                put(Metric::TimeToSecondToken, ms(second - first.min(second)));
            }
            if let Some(l) = latency {
                put(Metric::DecodeDuration, ms(l.saturating_sub(ttft)));
            }
            if let (Some(l), Some(n)) = (latency, osl)
                && n >= 2
            {
                // AIPerf's divisor: the tokens after the first chunk, the first chunk's own
                // count when the server reported one that fits the output (per-chunk usage), one
                // otherwise.
                let first = r.usage.first_chunk_tokens.filter(|&f| f > 0 && f < n).unwrap_or(1);
                let itl = ms(l.saturating_sub(ttft)) / (n - first) as f64;
                put(Metric::InterTokenLatency, itl);
                if itl > 0.0 {
                    put(Metric::OutputTokenThroughputPerUser, 1000.0 / itl);
                }
            }
            if let Some(n) = isl
                && ttft > 0
            {
                put(Metric::PrefillThroughputPerUser, n as f64 / (ttft as f64 / 1e9));
            }
        }
        if let Some(n) = osl {
            put(Metric::OutputSequenceLength, n as f64);
            if n > 0 {
                put(Metric::OutputTokenCount, n as f64);
            }
            if let Some(l) = latency.filter(|&l| l > 0) {
                put(Metric::E2eOutputTokenThroughput, n as f64 / (l as f64 / 1e9));
            }
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
        let (prompt, completion) = (r.usage.prompt_tokens, r.usage.completion_tokens);
        if let Some(n) = prompt {
            put(Metric::UsagePromptTokens, n as f64);
        }
        if let Some(n) = completion {
            put(Metric::UsageCompletionTokens, n as f64);
        }
        // The record keeps prompt and completion counts; their sum is the usage total.
        if let (Some(p), Some(c)) = (prompt, completion) {
            put(Metric::UsageTotalTokens, p.saturating_add(c) as f64);
        }
        if let Some(n) = r.usage.cached_tokens {
            put(Metric::UsagePromptCacheReadTokens, n as f64);
        }
        let diff_pct = |server: u64, client: u64| (server as f64 - client as f64).abs() / client as f64 * 100.0;
        if let (Some(s), Some(c)) = (prompt, isl.filter(|&c| c > 0)) {
            put(Metric::UsagePromptTokensDiffPct, diff_pct(s, c));
        }
        if let (Some(s), Some(c)) = (completion, osl.filter(|&c| c > 0)) {
            put(Metric::UsageCompletionTokensDiffPct, diff_pct(s, c));
        }
        if let (Some(asked), Some(n)) = (r.max_tokens.filter(|&a| a > 0), osl) {
            put(Metric::OslMismatchDiffPct, (n as f64 - asked as f64) / asked as f64 * 100.0);
        }
        if let Some(h) = &r.http {
            http_metrics(h, r.sent_ns, &mut put);
        }
        m.inter_chunk_ms = chunks.gaps_ms();
        m
    }

    /// The value of a metric, when this request has it.
    pub fn get(&self, metric: Metric) -> Option<f64> {
        if metric == Metric::InterChunkLatency {
            return (!self.inter_chunk_ms.is_empty()).then(|| self.inter_chunk_ms.mean().unwrap_or_default());
        }
        self.values.iter().find(|(k, _)| *k == metric).map(|(_, v)| *v)
    }

    /// All single-valued metrics of this request.
    pub fn values(&self) -> &[(Metric, f64)] {
        &self.values
    }

    /// AIPerf's usage discrepancy: the prompt count off by more than
    /// [`USAGE_DIFF_THRESHOLD_PCT`], or (the prompt's known) the completion count; `None` when the
    /// request has no prompt difference.
    pub fn usage_discrepancy(&self) -> Option<bool> {
        let prompt = self.get(Metric::UsagePromptTokensDiffPct)?;
        if prompt > USAGE_DIFF_THRESHOLD_PCT {
            return Some(true);
        }
        Some(self.get(Metric::UsageCompletionTokensDiffPct)? > USAGE_DIFF_THRESHOLD_PCT)
    }
}

/// AIPerf's OSL mismatch: `osl` off `asked` by more than the smaller of
/// [`OSL_MISMATCH_THRESHOLD_PCT`] of it and [`OSL_MISMATCH_MAX_TOKENS`].
pub fn osl_mismatch(asked: u64, osl: u64) -> bool {
    let threshold = (asked as f64 * OSL_MISMATCH_THRESHOLD_PCT / 100.0).min(OSL_MISMATCH_MAX_TOKENS);
    (osl as f64 - asked as f64).abs() > threshold
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn rec(chunks: &[u64], osl: u64) -> RequestRecord {
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
    fn http_metrics_are_aiperfs_definitions() {
        let mut r = rec(&[10_000_000, 12_000_000], 2);
        r.http = Some(HttpTiming {
            reused: false,
            connect_ns: 1_000_000,
            dns_lookup_ns: 250_000,
            send_end_ns: 4_500_000,
            body_first_ns: Some(9_000_000),
            body_last_ns: Some(12_500_000),
            bytes_sent: 2048,
            bytes_received: 512,
            chunks_received: 3,
            status: Some(200),
        });
        let m = RequestMetrics::of(&r, false);
        let got = |k: Metric| m.get(k).unwrap();
        assert_eq!(got(Metric::HttpReqBlocked), 0.0);
        assert_eq!(got(Metric::HttpReqDnsLookup), 0.25);
        assert_eq!(got(Metric::HttpReqConnecting), 1.0);
        // From the request's start (3 ms) to its last byte written, as AIPerf's.
        assert_eq!(got(Metric::HttpReqSending), 1.5);
        assert_eq!(got(Metric::HttpReqWaiting), 4.5);
        assert_eq!(got(Metric::HttpReqReceiving), 3.5);
        assert_eq!(got(Metric::HttpReqDuration), 9.5);
        assert_eq!(got(Metric::HttpReqDataSent), 2.0);
        assert_eq!(got(Metric::HttpReqDataReceived), 0.5);
        assert_eq!(got(Metric::HttpReqChunksSent), 1.0);
        assert_eq!(got(Metric::HttpReqChunksReceived), 3.0);
        assert_eq!(got(Metric::HttpReqConnectionReused), 0.0);
        assert_eq!(got(Metric::HttpReqConnectionOverhead), 1.25);
        assert_eq!(got(Metric::HttpReqTotal), 0.25 + 1.0 + 1.5 + 4.5 + 3.5);
        // One body chunk: nothing to receive after the first; no body: no waiting nor duration.
        let h = r.http.as_mut().unwrap();
        h.chunks_received = 1;
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::HttpReqReceiving), Some(0.0));
        let h = r.http.as_mut().unwrap();
        (h.body_first_ns, h.body_last_ns, h.chunks_received) = (None, None, 0);
        let m = RequestMetrics::of(&r, false);
        assert_eq!(m.get(Metric::HttpReqWaiting), None);
        assert_eq!(m.get(Metric::HttpReqTotal), None);
        assert_eq!(m.get(Metric::HttpReqConnecting), Some(1.0));
        // Not measured (records of other tools, simulations): no http_req_* at all.
        assert!(
            RequestMetrics::of(&rec(&[10_000_000], 1), false)
                .values()
                .iter()
                .all(|(k, _)| !k.tag().starts_with("http_req"))
        );
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
        assert_eq!(m.inter_chunk_ms.expanded(), vec![2.0, 2.0, 6.0]);
    }

    #[test]
    fn itl_leaves_out_the_tokens_of_the_first_chunk_when_the_server_counted_them() {
        let mut r = rec(&[10_000_000, 12_000_000, 13_000_000], 5);
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::InterTokenLatency), Some(3.0 / 4.0));
        r.usage.first_chunk_tokens = Some(3);
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::InterTokenLatency), Some(3.0 / 2.0));
        // A count that does not fit the output is AIPerf's fallback: one token.
        for bad in [0, 5, 9] {
            r.usage.first_chunk_tokens = Some(bad);
            assert_eq!(RequestMetrics::of(&r, false).get(Metric::InterTokenLatency), Some(3.0 / 4.0));
        }
    }

    #[test]
    fn itl_needs_two_tokens_and_server_count_is_optional() {
        let mut r = rec(&[13_000_000], 1);
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::InterTokenLatency), None);
        r.usage.completion_tokens = Some(7);
        assert_eq!(RequestMetrics::of(&r, true).get(Metric::OutputSequenceLength), Some(7.0));
        assert_eq!(RequestMetrics::of(&r, false).get(Metric::OutputSequenceLength), Some(1.0));
    }
}
