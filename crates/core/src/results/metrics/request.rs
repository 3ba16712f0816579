//! The metrics of one request ([`RequestMetrics`]) computed from its record: AIPerf's, the HTTP
//! exchange's, and the send lateness and latencies from the scheduled time.

use super::metric::Metric;
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
