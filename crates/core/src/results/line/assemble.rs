//! The rules both readers share: what a line said ([`Said`]) made a record by [`assemble`], and
//! the conversions of a metric's number to the record's times and counts.

use crate::results::record::{CANCELLED, HttpTiming, RecordError, RequestRecord, ServerUsage};

/// The error kind of an error that AIPerf wrote without a `type`.
pub(super) const UNTYPED: &str = "error";

/// Milliseconds (a metric's value) as whole nanoseconds; `None` unless finite, not negative and
/// within `u64`.
pub(super) fn ms_to_ns(ms: f64) -> Option<u64> {
    let ns = (ms * 1e6).round();
    (0.0..18_446_744_073_709_551_615.0).contains(&ns).then_some(ns as u64)
}

/// A token count given as a metric's number; `None` unless a whole number from 0 to 2^53.
pub(super) fn token_count(v: f64) -> Option<u64> {
    ((0.0..=9_007_199_254_740_992.0).contains(&v) && v.fract() == 0.0).then_some(v as u64)
}

/// The chunk times that a time to first token and the inter-chunk latencies (ms) give back from
/// the send time: none without a time to first token; `None` when a value is no duration or a
/// time overflows.
pub(super) fn chunks_from_metrics(
    sent_ns: u64,
    ttft_ms: Option<f64>,
    gaps_ms: impl Iterator<Item = f64>,
) -> Option<Vec<u64>> {
    let Some(ttft) = ttft_ms else { return Some(Vec::new()) };
    let mut t = sent_ns.checked_add(ms_to_ns(ttft)?)?;
    let mut out = vec![t];
    for g in gaps_ms {
        t = t.checked_add(ms_to_ns(g)?)?;
        out.push(t);
    }
    Some(out)
}

/// Turns the gaps (ns) held in `chunks` into chunk times after `first`; `None` on overflow.
fn gaps_to_chunks(first: u64, chunks: &mut Vec<u64>) -> Option<()> {
    chunks.insert(0, first);
    for i in 1..chunks.len() {
        chunks[i] = chunks[i - 1].checked_add(chunks[i])?;
    }
    Some(())
}

/// What a line said, before [`assemble`] applies the rules that make it a record; its strings
/// and lists are in the record being read (their allocations reused).
#[derive(Default)]
pub(super) struct Said {
    pub(super) session_num: Option<u32>,
    pub(super) turn: Option<u32>,
    pub(super) trace_line: Option<u32>,
    pub(super) credit_issued: Option<u64>,
    pub(super) request_start: Option<u64>,
    pub(super) request_ack: Option<u64>,
    pub(super) request_end: Option<u64>,
    pub(super) warmup: bool,
    pub(super) was_cancelled: bool,
    pub(super) scheduled: Option<u64>,
    pub(super) dispatched: Option<u64>,
    pub(super) sent: Option<u64>,
    pub(super) first_byte: Option<u64>,
    pub(super) end: Option<u64>,
    /// `chunk_ns` holds the line's chunk times.
    pub(super) chunks_given: bool,
    /// `chunk_ns` holds the inter-chunk latencies (ns) of the metrics.
    pub(super) gaps_given: bool,
    pub(super) streaming: Option<bool>,
    pub(super) input: Option<u64>,
    pub(super) output: Option<u64>,
    pub(super) max_tokens: Option<u64>,
    pub(super) usage: Option<ServerUsage>,
    pub(super) expected: Option<u64>,
    pub(super) url_index: Option<u32>,
    /// The metrics' numbers, checked where a rule uses them.
    pub(super) ttft_ms: Option<f64>,
    pub(super) isl: Option<f64>,
    pub(super) osl: Option<f64>,
    pub(super) usage_prompt: Option<f64>,
    pub(super) usage_completion: Option<f64>,
    pub(super) usage_cached: Option<f64>,
    /// The numbers of [`HTTP_KEYS`], in its order.
    pub(super) http: [Option<f64>; 9],
    /// AIPerf's top-level error: its `type` (`error` when it has none); the record's `error`
    /// holds the message.
    pub(super) error_type: Option<String>,
}

/// The `http_req_*` metrics a record's [`HttpTiming`] is rebuilt from (the others follow from
/// them): name lookup, connecting, sending, waiting, duration, bytes sent and received (KB),
/// chunks received, connection reused.
pub(super) const HTTP_KEYS: [&str; 9] = [
    "http_req_dns_lookup",
    "http_req_connecting",
    "http_req_sending",
    "http_req_waiting",
    "http_req_duration",
    "http_req_data_sent",
    "http_req_data_received",
    "http_req_chunks_received",
    "http_req_connection_reused",
];

/// The exchange's timings that give back its `http_req_*` metrics (the times of an exchange
/// whose times run in order exactly): `None` unless the line has every metric it needs, each a
/// duration, a byte count or a count.
fn http_timing(h: &[Option<f64>; 9], sent_ns: u64) -> Option<HttpTiming> {
    let [dns, connecting, sending, waiting, duration, data_sent, data_received, chunks, reused] = *h;
    let bytes = |kb: f64| token_count(kb * 1024.0);
    let send_end_ns = sent_ns.checked_add(ms_to_ns(sending?)?)?;
    let (body_first_ns, body_last_ns) = match (waiting, duration) {
        (Some(w), Some(d)) => (Some(send_end_ns.checked_add(ms_to_ns(w)?)?), Some(sent_ns.checked_add(ms_to_ns(d)?)?)),
        _ => (None, None),
    };
    Some(HttpTiming {
        reused: reused? != 0.0,
        connect_ns: ms_to_ns(connecting?)?,
        dns_lookup_ns: ms_to_ns(dns?)?,
        send_end_ns,
        body_first_ns,
        body_last_ns,
        bytes_sent: bytes(data_sent?)?,
        bytes_received: bytes(data_received?)?,
        chunks_received: token_count(chunks?)?,
        status: None,
    })
}

/// The rules shared by both readers: a line with `sent_ns` is one of ours (times from time zero,
/// token counts in the metadata); any other line is AIPerf's (wall-clock times, token counts from
/// its metrics). `Ok(false)`: a warm-up request (AIPerf writes them too), not part of the run.
pub(super) fn assemble(said: Said, rec: &mut RequestRecord) -> Result<bool, &'static str> {
    if said.warmup {
        return Ok(false);
    }
    rec.session_num = said.session_num.ok_or("missing field `session_num`")?;
    let count = |v: Option<f64>, err: &'static str| v.map(|v| token_count(v).ok_or(err)).transpose();
    let usage_of_metrics = || -> Result<ServerUsage, &'static str> {
        Ok(ServerUsage {
            prompt_tokens: count(said.usage_prompt, "metrics.usage_prompt_tokens: not a token count")?,
            completion_tokens: count(said.usage_completion, "metrics.usage_completion_tokens: not a token count")?,
            cached_tokens: count(said.usage_cached, "metrics.usage_prompt_cache_read_tokens: not a token count")?,
            first_chunk_tokens: None,
        })
    };
    if let Some(sent) = said.sent {
        // A time left out is its wall-clock time less the wall clock's time zero, which
        // `request_start_ns` and `sent_ns` give.
        let t0 = said.request_start.and_then(|s| s.checked_sub(sent));
        let from_wall = |wall: Option<u64>| t0.zip(wall).and_then(|(t0, t)| t.checked_sub(t0));
        rec.turn = said.turn.ok_or("missing field `turn_index`")?;
        rec.trace_line = said.trace_line.ok_or("missing field `trace_line`")?;
        rec.scheduled_ns =
            said.scheduled.or_else(|| from_wall(said.credit_issued)).ok_or("missing field `scheduled_ns`")?;
        rec.sent_ns = sent;
        rec.end_ns = said.end.or_else(|| from_wall(said.request_end)).ok_or("missing field `end_ns`")?;
        // A line without `streaming` streamed when it has a time to first token.
        rec.streaming = said.streaming.unwrap_or(said.ttft_ms.is_some());
        rec.dispatched_ns = said.dispatched;
        rec.first_byte_ns = said.first_byte.or_else(|| from_wall(said.request_ack));
        rec.input_tokens = said.input;
        rec.output_tokens = said.output;
        rec.max_tokens = said.max_tokens;
        rec.usage = match said.usage {
            Some(u) => u,
            None => usage_of_metrics()?,
        };
        rec.expected_cached_tokens = said.expected;
        rec.url_index = said.url_index;
    } else {
        let start = said.request_start.ok_or("missing field `request_start_ns`")?;
        rec.turn = said.turn.unwrap_or(0);
        rec.trace_line = said.trace_line.unwrap_or(0);
        rec.scheduled_ns = said.credit_issued.unwrap_or(start);
        rec.sent_ns = start;
        rec.end_ns = said.request_end.ok_or("missing field `request_end_ns`")?;
        rec.streaming = said.ttft_ms.is_some();
        rec.dispatched_ns = None;
        rec.first_byte_ns = said.request_ack;
        rec.input_tokens = count(said.isl, "metrics.input_sequence_length: not a token count")?;
        rec.output_tokens = count(said.osl, "metrics.output_sequence_length: not a token count")?;
        rec.max_tokens = None;
        rec.usage = usage_of_metrics()?;
        rec.expected_cached_tokens = None;
        rec.url_index = None;
    }
    rec.http = http_timing(&said.http, rec.sent_ns);
    if !said.chunks_given {
        if !said.gaps_given {
            rec.chunk_ns.clear();
        }
        match said.ttft_ms {
            Some(ttft) => {
                let first = ms_to_ns(ttft)
                    .and_then(|t| rec.sent_ns.checked_add(t))
                    .ok_or("metrics.time_to_first_token: not a duration from the send")?;
                gaps_to_chunks(first, &mut rec.chunk_ns).ok_or("metrics.inter_chunk_latency: out of range")?;
            }
            None => rec.chunk_ns.clear(),
        }
    }
    if said.was_cancelled {
        let e = rec.error.get_or_insert_with(|| RecordError { kind: String::new(), message: String::new() });
        e.kind.clear();
        e.kind.push_str(CANCELLED);
    } else if let (Some(kind), Some(e)) = (said.error_type, rec.error.as_mut()) {
        e.kind = kind;
    }
    Ok(true)
}
