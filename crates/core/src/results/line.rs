//! A request's line of `profile_export.jsonl`, written ([`record_line`]) and read back
//! ([`read_line`]) here and nowhere else.
//!
//! The line is AIPerf's `MetricRecordInfo` (AIPerf's readers, `aiperf plot` and `analyze
//! swim-lane`, take it) with the record's own fields beside AIPerf's in its metadata. The reader
//! takes three kinds of line: ours, AIPerf's own (wall-clock times, token counts from its
//! metrics, warm-up requests skipped), and those of earlier versions of this tool (bare metric
//! values, `session_run`, the error in the metadata).
//!
//! [`parse_fast`] reads the common form (strings without escapes) with [`crate::json_scan`] into
//! a reused record: no JSON tree, no `String` per record (the record's strings and `chunk_ns`
//! keep their allocations from line to line), only the metrics a record is rebuilt from read,
//! the others checked and skipped. It gives up (`None`) on anything it does not fully understand
//! — escapes, repeated keys, numbers that are not plain integers where integers are expected,
//! nesting deeper than [`crate::json_scan::MAX_DEPTH`] — and the caller then parses the line
//! with serde ([`parse_serde`]), which also words the error. Whatever it accepts, serde accepts
//! with the same record (a differential property test and the `parse_run_line` fuzz target check
//! it), so the fast path is never wrong, only sometimes skipped.

use serde::{Deserialize, Serialize};

use crate::json_scan::Cursor;
use crate::results::metrics::{Metric, RequestMetrics};
use crate::results::record::{CANCELLED, HttpTiming, RecordError, RequestRecord, ServerUsage};

/// The error kind of an error that AIPerf wrote without a `type`.
const UNTYPED: &str = "error";

/// The name of the per-request export.
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// AIPerf's `worker_id` and `record_processor_id` in every line (one process sends and records).
pub const WORKER_ID: &str = "worker_0";
pub const RECORD_PROCESSOR_ID: &str = "record_processor_0";

/// One line of `profile_export.jsonl` (with its newline): AIPerf's `MetricRecordInfo` — its
/// metadata with wall-clock times (`t0_unix_ns` is the run's time zero on the wall clock), the
/// metrics as `{"value", "unit"}` under their tags, AIPerf's `error` — and the record's own fields
/// beside AIPerf's in the metadata (times from time zero, trace line, token counts, usage). The
/// chunk times are left out when the metrics give them back exactly (time to first token and
/// inter-chunk latencies), so a line costs no more than the metrics AIPerf writes anyway.
pub fn record_line(rec: &RequestRecord, metrics: Option<&RequestMetrics>, t0_unix_ns: u64) -> Vec<u8> {
    let line = Line { metadata: metadata(rec, metrics, t0_unix_ns), metrics: Metrics(metrics), error: error_out(rec) };
    let mut out = serde_json::to_vec(&line).unwrap_or_default();
    out.push(b'\n');
    out
}

/// A record's error as AIPerf's `ErrorDetails`.
pub(super) fn error_out(rec: &RequestRecord) -> Option<ErrorOut<'_>> {
    rec.error.as_ref().map(|e| ErrorOut { code: e.code(), kind: &e.kind, message: &e.message })
}

/// A record's `metadata` object, AIPerf's `MetricRecordMetadata` with the record's own fields
/// (see [`record_line`]).
pub(super) fn metadata<'a>(rec: &'a RequestRecord, metrics: Option<&RequestMetrics>, t0_unix_ns: u64) -> Meta<'a> {
    let wall = |t: u64| t0_unix_ns.saturating_add(t);
    let chunks_in_metrics = match metrics {
        Some(m) => chunks_from_metrics(rec.sent_ns, m.get(Metric::TimeToFirstToken), m.inter_chunk_ms.iter().copied())
            .is_some_and(|c| c == rec.chunk_ns),
        None => rec.chunk_ns.is_empty(),
    };
    let cancelled = rec.was_cancelled();
    // `streaming` is left out when the line's time to first token says it (see `assemble`).
    let has_ttft = metrics.is_some_and(|m| m.get(Metric::TimeToFirstToken).is_some());
    // A run-relative time is left out when its wall-clock time and `sent_ns` give it back (see
    // `assemble`), and the usage when the metrics' `usage_*` carry all of it.
    let t0 = wall(rec.sent_ns) - rec.sent_ns;
    let unless_implied = |t: u64| (wall(t).checked_sub(t0) != Some(t)).then_some(t);
    let usage_in_metrics = metrics.is_some()
        && rec.usage.first_chunk_tokens.is_none()
        && [rec.usage.prompt_tokens, rec.usage.completion_tokens, rec.usage.cached_tokens]
            .into_iter()
            .flatten()
            .all(|n| n <= MAX_EXACT_COUNT);
    Meta {
        session_num: rec.session_num,
        x_request_id: rec.request_id.as_deref(),
        x_correlation_id: rec.correlation_id.as_deref(),
        conversation_id: rec.session_id.as_deref(),
        turn_index: rec.turn,
        credit_issued_ns: wall(rec.scheduled_ns),
        request_start_ns: wall(rec.sent_ns),
        request_ack_ns: rec.first_byte_ns.map(wall),
        request_end_ns: wall(rec.end_ns),
        worker_id: WORKER_ID,
        record_processor_id: RECORD_PROCESSOR_ID,
        benchmark_phase: "profiling",
        was_cancelled: cancelled,
        cancellation_time_ns: cancelled.then(|| wall(rec.end_ns)),
        trace_line: rec.trace_line,
        scheduled_ns: unless_implied(rec.scheduled_ns),
        dispatched_ns: rec.dispatched_ns,
        sent_ns: rec.sent_ns,
        first_byte_ns: rec.first_byte_ns.and_then(unless_implied),
        end_ns: unless_implied(rec.end_ns),
        chunk_ns: (!chunks_in_metrics).then_some(&rec.chunk_ns[..]),
        streaming: (rec.streaming != has_ttft).then_some(rec.streaming),
        input_tokens: rec.input_tokens,
        output_tokens: rec.output_tokens,
        max_tokens: rec.max_tokens,
        usage: (!usage_in_metrics).then_some(&rec.usage),
        expected_cached_tokens: rec.expected_cached_tokens,
        url_index: rec.url_index,
    }
}

/// One line of the JSONL, serialized without building a JSON tree.
#[derive(Serialize)]
struct Line<'a> {
    metadata: Meta<'a>,
    metrics: Metrics<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorOut<'a>>,
}

#[derive(Serialize)]
pub(super) struct Meta<'a> {
    session_num: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    x_request_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x_correlation_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conversation_id: Option<&'a str>,
    turn_index: u32,
    credit_issued_ns: u64,
    request_start_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_ack_ns: Option<u64>,
    request_end_ns: u64,
    worker_id: &'static str,
    record_processor_id: &'static str,
    benchmark_phase: &'static str,
    /// Left out when false, AIPerf's default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    was_cancelled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cancellation_time_ns: Option<u64>,
    trace_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduled_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatched_ns: Option<u64>,
    sent_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_byte_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunk_ns: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    streaming: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "no_usage")]
    usage: Option<&'a ServerUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_cached_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url_index: Option<u32>,
}

fn no_usage(u: &Option<&ServerUsage>) -> bool {
    u.is_none_or(|u| u.is_empty())
}

/// The largest token count a metric's number (`f64`) holds exactly: 2^53.
const MAX_EXACT_COUNT: u64 = 1 << 53;

/// AIPerf's `ErrorDetails`.
#[derive(Serialize)]
pub(super) struct ErrorOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

/// A metric as AIPerf writes it.
#[derive(Serialize)]
struct Valued<T> {
    value: T,
    unit: &'static str,
}

struct Metrics<'a>(Option<&'a RequestMetrics>);

impl serde::Serialize for Metrics<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if let Some(m) = self.0 {
            // Two of ours repeat AIPerf's usage metrics of the same line exactly, and AIPerf's
            // time to first output token is the time to first token in every record of ours:
            // left out of the line (the summary has them, computed from the record).
            let repeated = |k: Metric| {
                matches!(k, Metric::ServerInputSequenceLength | Metric::CachedTokens | Metric::TimeToFirstOutputToken)
            };
            for &(k, v) in m.values().iter().filter(|(k, _)| !repeated(*k)) {
                // Counts are written as AIPerf writes them: whole numbers without a fraction.
                match whole(k, v) {
                    Some(n) => map.serialize_entry(k.tag(), &Valued { value: n, unit: k.unit() })?,
                    None => map.serialize_entry(k.tag(), &Valued { value: v, unit: k.unit() })?,
                }
            }
            if !m.inter_chunk_ms.is_empty() {
                let icl = Metric::InterChunkLatency;
                map.serialize_entry(icl.tag(), &Valued { value: &m.inter_chunk_ms, unit: icl.unit() })?;
            }
        }
        map.end()
    }
}

/// A counting metric's value as an integer, when it is a whole number within 2^53.
fn whole(metric: Metric, v: f64) -> Option<u64> {
    let counts = matches!(metric.unit(), "tokens" | "count") || metric == Metric::HttpReqConnectionReused;
    counts.then(|| token_count(v)).flatten()
}

/// Milliseconds (a metric's value) as whole nanoseconds; `None` unless finite, not negative and
/// within `u64`.
fn ms_to_ns(ms: f64) -> Option<u64> {
    let ns = (ms * 1e6).round();
    (0.0..18_446_744_073_709_551_615.0).contains(&ns).then_some(ns as u64)
}

/// A token count given as a metric's number; `None` unless a whole number from 0 to 2^53.
fn token_count(v: f64) -> Option<u64> {
    ((0.0..=9_007_199_254_740_992.0).contains(&v) && v.fract() == 0.0).then_some(v as u64)
}

/// The chunk times that a time to first token and the inter-chunk latencies (ms) give back from
/// the send time: none without a time to first token; `None` when a value is no duration or a
/// time overflows.
fn chunks_from_metrics(sent_ns: u64, ttft_ms: Option<f64>, gaps_ms: impl Iterator<Item = f64>) -> Option<Vec<u64>> {
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
struct Said {
    session_num: Option<u32>,
    turn: Option<u32>,
    trace_line: Option<u32>,
    credit_issued: Option<u64>,
    request_start: Option<u64>,
    request_ack: Option<u64>,
    request_end: Option<u64>,
    warmup: bool,
    was_cancelled: bool,
    scheduled: Option<u64>,
    dispatched: Option<u64>,
    sent: Option<u64>,
    first_byte: Option<u64>,
    end: Option<u64>,
    /// `chunk_ns` holds the line's chunk times.
    chunks_given: bool,
    /// `chunk_ns` holds the inter-chunk latencies (ns) of the metrics.
    gaps_given: bool,
    streaming: Option<bool>,
    input: Option<u64>,
    output: Option<u64>,
    max_tokens: Option<u64>,
    usage: Option<ServerUsage>,
    expected: Option<u64>,
    url_index: Option<u32>,
    /// The metrics' numbers, checked where a rule uses them.
    ttft_ms: Option<f64>,
    isl: Option<f64>,
    osl: Option<f64>,
    usage_prompt: Option<f64>,
    usage_completion: Option<f64>,
    usage_cached: Option<f64>,
    /// The numbers of [`HTTP_KEYS`], in its order.
    http: [Option<f64>; 9],
    /// AIPerf's top-level error: its `type` (`error` when it has none); the record's `error`
    /// holds the message.
    error_type: Option<String>,
}

/// The `http_req_*` metrics a record's [`HttpTiming`] is rebuilt from (the others follow from
/// them): name lookup, connecting, sending, waiting, duration, bytes sent and received (KB),
/// chunks received, connection reused.
const HTTP_KEYS: [&str; 9] = [
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
fn assemble(said: Said, rec: &mut RequestRecord) -> Result<bool, &'static str> {
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

// ---- serde: the reference reader ----

/// A line through serde (the reference the fast path agrees with): the keys of both kinds of
/// line, every one optional here; [`assemble`] says which are required.
#[derive(Deserialize)]
struct LineIn {
    metadata: MetaIn,
    #[serde(default)]
    metrics: Option<MetricsIn>,
    #[serde(default)]
    error: Option<ErrorIn>,
}

#[derive(Deserialize)]
struct MetaIn {
    #[serde(default, alias = "session_run")]
    session_num: Option<u32>,
    #[serde(default)]
    x_request_id: Option<String>,
    #[serde(default)]
    x_correlation_id: Option<String>,
    #[serde(default, alias = "session_id")]
    conversation_id: Option<String>,
    #[serde(default, alias = "turn")]
    turn_index: Option<u32>,
    #[serde(default)]
    credit_issued_ns: Option<u64>,
    #[serde(default)]
    request_start_ns: Option<u64>,
    #[serde(default)]
    request_ack_ns: Option<u64>,
    #[serde(default)]
    request_end_ns: Option<u64>,
    #[serde(default)]
    benchmark_phase: Option<String>,
    #[serde(default)]
    was_cancelled: Option<bool>,
    #[serde(default)]
    trace_line: Option<u32>,
    #[serde(default)]
    scheduled_ns: Option<u64>,
    #[serde(default)]
    dispatched_ns: Option<u64>,
    #[serde(default)]
    sent_ns: Option<u64>,
    #[serde(default)]
    first_byte_ns: Option<u64>,
    #[serde(default)]
    chunk_ns: Option<Vec<u64>>,
    #[serde(default)]
    end_ns: Option<u64>,
    #[serde(default)]
    streaming: Option<bool>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    usage: Option<ServerUsage>,
    #[serde(default)]
    expected_cached_tokens: Option<u64>,
    #[serde(default)]
    url_index: Option<u32>,
    /// The error as earlier versions of this tool wrote it (in the metadata).
    #[serde(default)]
    error: Option<RecordError>,
}

/// The metrics a record is rebuilt from (the others are recomputed, not read).
#[derive(Deserialize)]
struct MetricsIn {
    #[serde(default)]
    time_to_first_token: Option<Valued<f64>>,
    #[serde(default)]
    inter_chunk_latency: Option<Valued<Vec<f64>>>,
    #[serde(default)]
    input_sequence_length: Option<Valued<f64>>,
    #[serde(default)]
    output_sequence_length: Option<Valued<f64>>,
    #[serde(default)]
    usage_prompt_tokens: Option<Valued<f64>>,
    #[serde(default)]
    usage_completion_tokens: Option<Valued<f64>>,
    #[serde(default)]
    usage_prompt_cache_read_tokens: Option<Valued<f64>>,
    #[serde(default)]
    http_req_dns_lookup: Option<Valued<f64>>,
    #[serde(default)]
    http_req_connecting: Option<Valued<f64>>,
    #[serde(default)]
    http_req_sending: Option<Valued<f64>>,
    #[serde(default)]
    http_req_waiting: Option<Valued<f64>>,
    #[serde(default)]
    http_req_duration: Option<Valued<f64>>,
    #[serde(default)]
    http_req_data_sent: Option<Valued<f64>>,
    #[serde(default)]
    http_req_data_received: Option<Valued<f64>>,
    #[serde(default)]
    http_req_chunks_received: Option<Valued<f64>>,
    #[serde(default)]
    http_req_connection_reused: Option<Valued<f64>>,
}

/// A metric's value: AIPerf's `{"value": …, "unit": …}` or the bare value earlier versions of
/// this tool wrote.
#[derive(Deserialize)]
#[serde(untagged)]
enum ValuedIn<T> {
    Valued { value: T },
    Bare(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Valued<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match ValuedIn::deserialize(d)? {
            ValuedIn::Valued { value } | ValuedIn::Bare(value) => Valued { value, unit: "" },
        })
    }
}

/// AIPerf's `ErrorDetails` (its `code` is derived from the kind, see [`RecordError::code`]).
#[derive(Deserialize)]
struct ErrorIn {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    message: String,
}

fn custom(reason: &str) -> serde_json::Error {
    <serde_json::Error as serde::de::Error>::custom(reason)
}

/// The line through serde; `Ok(None)` for a warm-up request.
pub fn parse_serde(raw: &[u8]) -> Result<Option<RequestRecord>, serde_json::Error> {
    let line: LineIn = serde_json::from_slice(raw)?;
    let m = line.metadata;
    let mut rec = RequestRecord {
        session_id: m.conversation_id,
        request_id: m.x_request_id,
        correlation_id: m.x_correlation_id,
        error: m.error,
        ..Default::default()
    };
    let mut said = Said {
        session_num: m.session_num,
        turn: m.turn_index,
        trace_line: m.trace_line,
        credit_issued: m.credit_issued_ns,
        request_start: m.request_start_ns,
        request_ack: m.request_ack_ns,
        request_end: m.request_end_ns,
        warmup: m.benchmark_phase.as_deref() == Some("warmup"),
        was_cancelled: m.was_cancelled.unwrap_or(false),
        scheduled: m.scheduled_ns,
        dispatched: m.dispatched_ns,
        sent: m.sent_ns,
        first_byte: m.first_byte_ns,
        end: m.end_ns,
        streaming: m.streaming,
        input: m.input_tokens,
        output: m.output_tokens,
        max_tokens: m.max_tokens,
        usage: m.usage,
        expected: m.expected_cached_tokens,
        url_index: m.url_index,
        ..Default::default()
    };
    if let Some(chunks) = m.chunk_ns {
        rec.chunk_ns = chunks;
        said.chunks_given = true;
    }
    if let Some(x) = line.metrics {
        let value = |v: Option<Valued<f64>>| v.map(|v| v.value);
        said.ttft_ms = value(x.time_to_first_token);
        if let Some(gaps) = x.inter_chunk_latency
            && !said.chunks_given
        {
            rec.chunk_ns = gaps
                .value
                .into_iter()
                .map(ms_to_ns)
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| custom("metrics.inter_chunk_latency: not a list of durations"))?;
            said.gaps_given = true;
        }
        said.isl = value(x.input_sequence_length);
        said.osl = value(x.output_sequence_length);
        said.usage_prompt = value(x.usage_prompt_tokens);
        said.usage_completion = value(x.usage_completion_tokens);
        said.usage_cached = value(x.usage_prompt_cache_read_tokens);
        said.http = [
            value(x.http_req_dns_lookup),
            value(x.http_req_connecting),
            value(x.http_req_sending),
            value(x.http_req_waiting),
            value(x.http_req_duration),
            value(x.http_req_data_sent),
            value(x.http_req_data_received),
            value(x.http_req_chunks_received),
            value(x.http_req_connection_reused),
        ];
    }
    if let Some(e) = line.error {
        rec.error = Some(RecordError { kind: String::new(), message: e.message });
        said.error_type = Some(e.kind.unwrap_or_else(|| UNTYPED.into()));
    }
    match assemble(said, &mut rec) {
        Ok(true) => Ok(Some(rec)),
        Ok(false) => Ok(None),
        Err(reason) => Err(custom(reason)),
    }
}

/// Reads one line of `profile_export.jsonl` (ours, AIPerf's, or one written by an earlier
/// version of this tool) into `rec`: `Ok(false)` for a blank line or a warm-up request, else
/// the record, by the fast path when it reads the line ([`parse_fast`], `rec`'s allocations
/// reused), by serde otherwise, whose error says what is wrong.
pub fn read_line(raw: &[u8], rec: &mut RequestRecord) -> Result<bool, serde_json::Error> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(false);
    }
    match parse_fast(raw, rec) {
        Some(read) => Ok(read),
        None => match parse_serde(raw)? {
            Some(r) => {
                *rec = r;
                Ok(true)
            }
            None => Ok(false),
        },
    }
}

/// Parses `raw` into `rec` (its previous content is overwritten, its allocations reused):
/// `Some(true)` a record, `Some(false)` a warm-up request; `None`: not understood here, `rec` is
/// unspecified and the line must go through [`parse_serde`].
pub fn parse_fast(raw: &[u8], rec: &mut RequestRecord) -> Option<bool> {
    let mut c = Cursor::new(raw);
    let said = parse_line(&mut c, rec)?;
    assemble(said, rec).ok()
}

// ---- the fast path ----

// Field bits of the metadata object (a key given twice gives up, as serde refuses it).
const SESSION_NUM: u64 = 1;
const TURN: u64 = 1 << 1;
const TRACE_LINE: u64 = 1 << 2;
const SCHEDULED: u64 = 1 << 3;
const DISPATCHED: u64 = 1 << 4;
const SENT: u64 = 1 << 5;
const FIRST_BYTE: u64 = 1 << 6;
const CHUNKS: u64 = 1 << 7;
const END: u64 = 1 << 8;
const STREAMING: u64 = 1 << 9;
const INPUT: u64 = 1 << 10;
const OUTPUT: u64 = 1 << 11;
const MAX_TOKENS: u64 = 1 << 12;
const USAGE: u64 = 1 << 13;
const EXPECTED: u64 = 1 << 14;
const OLD_ERROR: u64 = 1 << 15;
const URL: u64 = 1 << 16;
const SESSION_ID: u64 = 1 << 17;
const REQUEST_ID: u64 = 1 << 18;
const CORRELATION_ID: u64 = 1 << 19;
const CREDIT: u64 = 1 << 20;
const START: u64 = 1 << 21;
const ACK: u64 = 1 << 22;
const REQUEST_END: u64 = 1 << 23;
const PHASE: u64 = 1 << 24;
const CANCELLED_BIT: u64 = 1 << 25;

fn parse_line(c: &mut Cursor, rec: &mut RequestRecord) -> Option<Said> {
    let mut said = Said::default();
    c.ws();
    c.eat(b'{')?;
    c.ws();
    let (mut metadata, mut metrics, mut error) = (false, false, false);
    // The metadata's strings, reused; the error is filled by the old metadata `error` or by
    // the top-level one.
    let mut strings = Strings::take(rec);
    let mut error_message: Option<String> = None;
    let mut ttft = None;
    let mut gaps_pending = false;
    loop {
        match c.key()? {
            b"metadata" if !metadata => {
                metadata = true;
                metadata_object(c, rec, &mut said, &mut strings)?;
            }
            b"metrics" if !metrics => {
                metrics = true;
                if !c.lit(b"null") {
                    metrics_object(c, rec, &mut said, &mut ttft, &mut gaps_pending)?;
                }
            }
            b"error" if !error => {
                error = true;
                if !c.lit(b"null") {
                    let mut msg = strings.error.take().map(|e| e.message).unwrap_or_default();
                    let kind = top_error(c, &mut msg)?;
                    error_message = Some(msg);
                    said.error_type = Some(kind);
                }
            }
            b"metadata" | b"metrics" | b"error" => return None,
            other => skip_member(c, other, 0)?,
        }
        if !c.more(b'}')? {
            break;
        }
    }
    if !(metadata && c.at_end()) {
        return None;
    }
    said.ttft_ms = ttft;
    // Gaps read before the metadata said it had its own chunk times are dropped.
    said.gaps_given = gaps_pending && !said.chunks_given;
    strings.put(rec);
    if let Some(message) = error_message {
        rec.error = Some(RecordError { kind: String::new(), message });
    }
    Some(said)
}

/// The record's strings, taken out to be refilled (their allocations reused).
struct Strings {
    session: Option<String>,
    request: Option<String>,
    correlation: Option<String>,
    error: Option<RecordError>,
    has: u8,
}

impl Strings {
    fn take(rec: &mut RequestRecord) -> Strings {
        Strings {
            session: rec.session_id.take(),
            request: rec.request_id.take(),
            correlation: rec.correlation_id.take(),
            error: rec.error.take(),
            has: 0,
        }
    }

    fn put(self, rec: &mut RequestRecord) {
        let has = |bit: u8| self.has & bit != 0;
        rec.session_id = self.session.filter(|_| has(1));
        rec.request_id = self.request.filter(|_| has(2));
        rec.correlation_id = self.correlation.filter(|_| has(4));
        rec.error = self.error.filter(|_| has(8));
    }
}

/// A string (or null) into a reused slot; `has` says whether one was read.
fn opt_string(c: &mut Cursor, slot: &mut Option<String>, has: &mut u8, bit: u8) -> Option<()> {
    if c.lit(b"null") {
        *has &= !bit;
        return Some(());
    }
    let s = str_of(c)?;
    let owned = slot.get_or_insert_with(String::new);
    owned.clear();
    owned.push_str(s);
    *has |= bit;
    Some(())
}

fn metadata_object(c: &mut Cursor, rec: &mut RequestRecord, said: &mut Said, strings: &mut Strings) -> Option<()> {
    let mut seen = 0u64;
    if !c.open(b'{', b'}')? {
        return Some(());
    }
    loop {
        let key = c.key()?;
        let bit = match key {
            b"session_num" | b"session_run" => SESSION_NUM,
            b"turn_index" | b"turn" => TURN,
            b"trace_line" => TRACE_LINE,
            b"scheduled_ns" => SCHEDULED,
            b"dispatched_ns" => DISPATCHED,
            b"sent_ns" => SENT,
            b"first_byte_ns" => FIRST_BYTE,
            b"chunk_ns" => CHUNKS,
            b"end_ns" => END,
            b"streaming" => STREAMING,
            b"input_tokens" => INPUT,
            b"output_tokens" => OUTPUT,
            b"max_tokens" => MAX_TOKENS,
            b"usage" => USAGE,
            b"expected_cached_tokens" => EXPECTED,
            b"error" => OLD_ERROR,
            b"url_index" => URL,
            b"conversation_id" | b"session_id" => SESSION_ID,
            b"x_request_id" => REQUEST_ID,
            b"x_correlation_id" => CORRELATION_ID,
            b"credit_issued_ns" => CREDIT,
            b"request_start_ns" => START,
            b"request_ack_ns" => ACK,
            b"request_end_ns" => REQUEST_END,
            b"benchmark_phase" => PHASE,
            b"was_cancelled" => CANCELLED_BIT,
            _ => 0,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match bit {
            0 => skip_member(c, key, 1)?,
            SESSION_NUM => said.session_num = opt_u32(c)?,
            TURN => said.turn = opt_u32(c)?,
            TRACE_LINE => said.trace_line = opt_u32(c)?,
            SCHEDULED => said.scheduled = opt_u64(c)?,
            DISPATCHED => said.dispatched = opt_u64(c)?,
            SENT => said.sent = opt_u64(c)?,
            FIRST_BYTE => said.first_byte = opt_u64(c)?,
            CHUNKS => {
                if c.lit(b"null") {
                    said.chunks_given = false;
                } else {
                    rec.chunk_ns.clear();
                    said.chunks_given = true;
                    if c.open(b'[', b']')? {
                        loop {
                            rec.chunk_ns.push(c.uint()?);
                            if !c.more(b']')? {
                                break;
                            }
                        }
                    }
                }
            }
            END => said.end = opt_u64(c)?,
            STREAMING => said.streaming = opt_bool(c)?,
            INPUT => said.input = opt_u64(c)?,
            OUTPUT => said.output = opt_u64(c)?,
            MAX_TOKENS => said.max_tokens = opt_u64(c)?,
            USAGE => said.usage = if c.lit(b"null") { None } else { Some(usage_object(c)?) },
            EXPECTED => said.expected = opt_u64(c)?,
            OLD_ERROR => {
                if c.lit(b"null") {
                    strings.has &= !8;
                } else {
                    let mut e =
                        strings.error.take().unwrap_or(RecordError { kind: String::new(), message: String::new() });
                    error_object(c, &mut e)?;
                    strings.error = Some(e);
                    strings.has |= 8;
                }
            }
            URL => said.url_index = opt_u32(c)?,
            SESSION_ID => opt_string(c, &mut strings.session, &mut strings.has, 1)?,
            REQUEST_ID => opt_string(c, &mut strings.request, &mut strings.has, 2)?,
            CORRELATION_ID => opt_string(c, &mut strings.correlation, &mut strings.has, 4)?,
            CREDIT => said.credit_issued = opt_u64(c)?,
            START => said.request_start = opt_u64(c)?,
            ACK => said.request_ack = opt_u64(c)?,
            REQUEST_END => said.request_end = opt_u64(c)?,
            PHASE => said.warmup = if c.lit(b"null") { false } else { str_of(c)? == "warmup" },
            _ => said.was_cancelled = opt_bool(c)?.unwrap_or(false),
        }
        if !c.more(b'}')? {
            return Some(());
        }
    }
}

/// The metrics a record is rebuilt from; the others skipped (checked as serde checks them).
fn metrics_object(
    c: &mut Cursor,
    rec: &mut RequestRecord,
    said: &mut Said,
    ttft: &mut Option<f64>,
    gaps: &mut bool,
) -> Option<()> {
    if !c.open(b'{', b'}')? {
        return Some(());
    }
    let mut seen = 0u16;
    loop {
        let key = c.key()?;
        let bit = match key {
            b"time_to_first_token" => 1,
            b"inter_chunk_latency" => 2,
            b"input_sequence_length" => 4,
            b"output_sequence_length" => 8,
            b"usage_prompt_tokens" => 16,
            b"usage_completion_tokens" => 32,
            b"usage_prompt_cache_read_tokens" => 64,
            // The `http_req_*` of HTTP_KEYS: bits 7 to 15.
            _ => HTTP_KEYS.iter().position(|k| k.as_bytes() == key).map_or(0, |i| 128 << i),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if bit == 0 {
            skip_member(c, key, 1)?;
        } else if c.lit(b"null") {
            if bit == 2 {
                *gaps = false;
            }
        } else {
            // `{"value": V, "unit": U}` (AIPerf's) or a bare `V`.
            let valued = c.peek()? == b'{';
            if valued {
                c.open(b'{', b'}')?.then_some(())?;
                let mut have_value = false;
                loop {
                    let inner = c.key()?;
                    if inner == b"value" {
                        if have_value {
                            return None;
                        }
                        have_value = true;
                        metric_value(c, bit, rec, said, ttft, gaps)?;
                    } else if inner == b"unit" {
                        // serde holds the whole object while it tries its forms: the unit is
                        // read as a string, not skipped.
                        str_of(c)?;
                    } else {
                        return None;
                    }
                    if !c.more(b'}')? {
                        break;
                    }
                }
                if !have_value {
                    return None;
                }
            } else {
                metric_value(c, bit, rec, said, ttft, gaps)?;
            }
        }
        if !c.more(b'}')? {
            return Some(());
        }
    }
}

fn metric_value(
    c: &mut Cursor,
    bit: u16,
    rec: &mut RequestRecord,
    said: &mut Said,
    ttft: &mut Option<f64>,
    gaps: &mut bool,
) -> Option<()> {
    match bit {
        1 => *ttft = Some(c.float()?),
        2 => {
            // The metadata's own chunk times, when it has them, win: the list is only checked.
            let keep = !said.chunks_given;
            if keep {
                rec.chunk_ns.clear();
            }
            *gaps = true;
            if c.open(b'[', b']')? {
                loop {
                    let ms = c.float()?;
                    if keep {
                        rec.chunk_ns.push(ms_to_ns(ms)?);
                    }
                    if !c.more(b']')? {
                        break;
                    }
                }
            }
        }
        _ => {
            let n = Some(c.float()?);
            match bit {
                4 => said.isl = n,
                8 => said.osl = n,
                16 => said.usage_prompt = n,
                32 => said.usage_completion = n,
                64 => said.usage_cached = n,
                _ => said.http[bit.trailing_zeros() as usize - 7] = n,
            }
        }
    }
    Some(())
}

/// AIPerf's top-level `error`: its `type` ([`UNTYPED`] when it has none) and its message in
/// `msg`.
fn top_error(c: &mut Cursor, msg: &mut String) -> Option<String> {
    let mut kind = String::new();
    let (mut has_kind, mut has_message, mut has_type_text) = (false, false, false);
    if !c.open(b'{', b'}')? {
        return None;
    }
    loop {
        match c.key()? {
            b"type" => {
                if has_kind {
                    return None;
                }
                has_kind = true;
                if !c.lit(b"null") {
                    kind.push_str(str_of(c)?);
                    has_type_text = true;
                }
            }
            b"message" => {
                if has_message {
                    return None;
                }
                has_message = true;
                msg.clear();
                msg.push_str(str_of(c)?);
            }
            other => skip_member(c, other, 2)?,
        }
        if !c.more(b'}')? {
            break;
        }
    }
    if !has_type_text {
        kind.push_str(UNTYPED);
    }
    has_message.then_some(kind)
}

fn usage_object(c: &mut Cursor) -> Option<ServerUsage> {
    let mut u = ServerUsage::default();
    if !c.open(b'{', b'}')? {
        return Some(u);
    }
    let mut seen = 0u8;
    loop {
        let (bit, slot) = match c.key()? {
            b"prompt_tokens" => (1, &mut u.prompt_tokens),
            b"completion_tokens" => (2, &mut u.completion_tokens),
            b"cached_tokens" => (4, &mut u.cached_tokens),
            b"first_chunk_tokens" => (8, &mut u.first_chunk_tokens),
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        *slot = opt_u64(c)?;
        if !c.more(b'}')? {
            return Some(u);
        }
    }
}

fn error_object(c: &mut Cursor, e: &mut RecordError) -> Option<()> {
    let mut seen = 0u8;
    if !c.open(b'{', b'}')? {
        return None;
    }
    loop {
        let (bit, slot) = match c.key()? {
            b"kind" => (1, &mut e.kind),
            b"message" => (2, &mut e.message),
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        let s = str_of(c)?;
        slot.clear();
        slot.push_str(s);
        if !c.more(b'}')? {
            break;
        }
    }
    (seen == 3).then_some(())
}

/// The value of a member this reader does not use, skipped; its key must be UTF-8, as serde
/// reads every key.
fn skip_member(c: &mut Cursor, key: &[u8], depth: usize) -> Option<()> {
    std::str::from_utf8(key).ok()?;
    c.skip_value(depth)
}

/// A string without escapes, valid UTF-8.
fn str_of<'a>(c: &mut Cursor<'a>) -> Option<&'a str> {
    std::str::from_utf8(c.plain_str()?).ok()
}

fn opt_u32(c: &mut Cursor) -> Option<Option<u32>> {
    match opt_u64(c)? {
        None => Some(None),
        Some(v) => u32::try_from(v).ok().map(Some),
    }
}

fn opt_u64(c: &mut Cursor) -> Option<Option<u64>> {
    if c.lit(b"null") { Some(None) } else { c.uint().map(Some) }
}

fn opt_bool(c: &mut Cursor) -> Option<Option<bool>> {
    if c.lit(b"null") {
        Some(None)
    } else if c.lit(b"true") {
        Some(Some(true))
    } else if c.lit(b"false") {
        Some(Some(false))
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::aggregate::Aggregate;
    use proptest::prelude::*;

    /// A wall-clock time zero (2026-11-25).
    const T0: u64 = 1_795_627_514_000_000_000;

    /// The fast path, if it accepts, agrees with serde; returns whether it accepted.
    fn agree(raw: &[u8]) -> bool {
        let mut rec = crate::view::tests::record(99, true); // stale content must not leak
        rec.request_id = Some("stale".into());
        let fast = parse_fast(raw, &mut rec);
        let slow = parse_serde(raw);
        match fast {
            Some(true) => assert_eq!(slow.as_ref().ok(), Some(&Some(rec)), "{}", String::from_utf8_lossy(raw)),
            Some(false) => assert!(matches!(slow, Ok(None)), "{}", String::from_utf8_lossy(raw)),
            None => {}
        }
        fast.is_some()
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_-]{0,12}", any::<String>(), "[\"\\\\/\n\t\u{0}\u{1f}é€😀a]{0,8}",]
    }

    fn opt_u64() -> impl Strategy<Value = Option<u64>> {
        prop_oneof![Just(None), any::<u64>().prop_map(Some), (0u64..1000).prop_map(Some)]
    }

    prop_compose! {
        /// An exchange whose times run in order, from a send at 0.
        fn http()(
            reused in any::<bool>(), connect in 0u64..5_000_000_000, dns in 0u64..1_000_000_000,
            sending in 0u64..5_000_000_000, body in proptest::option::of((0u64..5_000_000_000, 0u64..5_000_000_000)),
            bytes_sent in 0u64..1 << 40, bytes_received in 0u64..1 << 40, chunks_received in 0u64..1_000_000,
        ) -> HttpTiming {
            let send_end_ns = sending;
            HttpTiming {
                reused, connect_ns: connect, dns_lookup_ns: dns.min(connect), send_end_ns,
                body_first_ns: body.map(|(w, _)| send_end_ns + w),
                body_last_ns: body.map(|(w, r)| send_end_ns + w + r),
                bytes_sent, bytes_received, chunks_received, status: None,
            }
        }
    }

    prop_compose! {
        /// A record with, when it succeeded, maybe its exchange's timings.
        // Boxed: the strategies' trees, built on the stack, stay within a test thread's stack in
        // debug builds.
        fn record()(r in plain_record().boxed(), http in proptest::option::of(http()).boxed()) -> RequestRecord {
            // A failed request's line has no metrics, so no `http_req_*` to read back.
            let http = http.filter(|_| r.error.is_none()).map(|h| HttpTiming {
                send_end_ns: r.sent_ns + h.send_end_ns,
                body_first_ns: h.body_first_ns.map(|t| r.sent_ns + t),
                body_last_ns: h.body_last_ns.map(|t| r.sent_ns + t),
                ..h
            });
            RequestRecord { http, ..r }
        }
    }

    prop_compose! {
        fn plain_record()(
            session_id in proptest::option::of(text()),
            request_id in proptest::option::of(text()), correlation_id in proptest::option::of(text()),
            session_num in any::<u32>(), turn in 0u32..100, trace_line in any::<u32>(),
            scheduled_ns in any::<u64>(), dispatched_ns in opt_u64(), sent_ns in 0u64..u64::MAX / 2,
            first_byte_ns in opt_u64(),
            gaps in proptest::collection::vec(0u64..10_000_000, 0..6),
            extra in 0u64..1_000_000, streaming in any::<bool>(),
            input_tokens in opt_u64(), output_tokens in opt_u64(), max_tokens in opt_u64(),
            usage in (opt_u64(), opt_u64(), opt_u64(), opt_u64()), expected in opt_u64(),
            error in proptest::option::of((text(), text())), url_index in proptest::option::of(any::<u32>()),
        ) -> RequestRecord {
            let mut t = sent_ns;
            let chunk_ns: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
            RequestRecord {
                session_id, request_id, correlation_id, session_num, turn, trace_line, scheduled_ns, dispatched_ns, sent_ns,
                first_byte_ns, chunk_ns, end_ns: t + extra, streaming, input_tokens, output_tokens,
                max_tokens,
                usage: ServerUsage {
                    prompt_tokens: usage.0,
                    completion_tokens: usage.1,
                    cached_tokens: usage.2,
                    first_chunk_tokens: usage.3,
                },
                expected_cached_tokens: expected,
                error: error.map(|(kind, message)| RecordError { kind, message }),
                url_index,
                http: None,
            }
        }
    }

    /// A line as the CLI writes it (with its metrics when the record has any).
    fn line(r: &RequestRecord) -> Vec<u8> {
        let mut agg = Aggregate::default();
        let m = agg.add(r, true, &[]);
        let mut l = record_line(r, m.as_ref(), T0);
        l.pop();
        l
    }

    #[test]
    fn the_clis_lines_take_the_fast_path() {
        for i in 0..40 {
            let r = crate::view::tests::record(i, i % 3 == 0);
            let raw = line(&r);
            let mut got = RequestRecord::default();
            assert_eq!(parse_fast(&raw, &mut got), Some(true), "{}", String::from_utf8_lossy(&raw));
            assert_eq!(got, r);
            assert!(agree(&raw));
        }
    }

    #[test]
    fn gives_up_on_what_it_does_not_know() {
        let r = crate::view::tests::record(3, true);
        let raw = String::from_utf8(line(&r)).unwrap();
        let cases = [
            raw.replacen("\"turn_index\":0,", "\"turn_index\":\"0\",", 1), // string for u32
            raw.replacen("\"turn_index\":", "\"turn_index\":-", 1),        // sign
            raw.replacen("\"sent_ns\":", "\"sent_ns\":0", 1),              // leading zero
            raw.replacen("\"too slow\"", "\"too\\u0020slow\"", 1),         // escape
            raw.replacen("\"turn_index\":0,", "", 1),                      // missing required
            raw.replacen("\"turn_index\":0,", "\"turn_index\":0,\"turn\":0,", 1), // duplicate (alias)
            raw.replacen("\"turn_index\":0,", "\"turn_index\":0.0,", 1),   // float for u32
            raw.replacen("\"streaming\":true", "\"streaming\":1", 1),      // wrong type
            raw.replacen("\"metadata\":{", "\"metadata\":{\"novel\":[1,{\"a\":nul}],", 1), // bad skipped value
            format!("{raw}x"),                                             // trailing
            raw[..raw.len() - 1].to_string(),                              // truncated
        ];
        for case in &cases {
            assert_ne!(case, &raw);
            assert!(!agree(case.as_bytes()), "{case}");
        }
        // serde still reads the valid one (escape) and words the others.
        assert_eq!(parse_serde(cases[3].as_bytes()).unwrap(), Some(r.clone()));
        let missing = parse_serde(cases[4].as_bytes()).unwrap_err().to_string();
        assert!(missing.contains("`turn_index`"), "{missing}");
        // Whitespace, nulls, unknown keys (AIPerf writes many) and an absent usage are fine on
        // both paths.
        assert!(agree(format!("{raw} \r").as_bytes()));
        let spaced = raw.replacen("{\"metadata\":{", " { \"metadata\" :\n{ ", 1).replacen(
            ",\"turn_index\":",
            " , \"turn_index\": ",
            1,
        );
        assert!(agree(spaced.as_bytes()), "{spaced}");
        let nulls = raw.replacen("\"turn_index\":0,", "\"turn_index\":0,\"url_index\":null,", 1);
        let nulls = nulls.replacen("\"conversation_id\":\"s3\",", "\"conversation_id\":null,", 1);
        assert!(agree(nulls.as_bytes()), "{nulls}");
        let unknown = raw
            .replacen("\"turn_index\":0,", "\"turn_index\":0,\"agent_depth\":0,\"phase\":{\"a\":[1.5,\"x\"]},", 1)
            .replacen("{\"metadata\"", "{\"trace_data\":null,\"metadata\"", 1);
        assert!(agree(unknown.as_bytes()), "{unknown}");
        assert!(agree(b"{\"metadata\":{\"session_run\":0,\"turn\":0,\"trace_line\":1,\"scheduled_ns\":0,\"sent_ns\":0,\"chunk_ns\":[],\"end_ns\":0,\"streaming\":false}}"));
    }

    #[test]
    fn chunk_times_come_back_from_the_metrics() {
        let r = crate::view::tests::record(4, false);
        let raw = String::from_utf8(line(&r)).unwrap();
        assert!(!raw.contains("chunk_ns"), "{raw}");
        assert!(raw.contains("\"inter_chunk_latency\":{\"value\":[3.0,3.0,3.0],\"unit\":\"ms\"}"), "{raw}");
        let mut got = RequestRecord::default();
        assert_eq!(parse_fast(raw.as_bytes(), &mut got), Some(true));
        assert_eq!(got, r);
        // A failed request keeps its chunks in the metadata (it has no metrics).
        let failed = crate::view::tests::record(4, true);
        let raw = String::from_utf8(line(&failed)).unwrap();
        assert!(raw.contains("\"chunk_ns\":["), "{raw}");
        assert!(raw.contains("\"error\":{\"type\":\"timeout\",\"message\":\"too slow\"}"), "{raw}");
        // Times a metric cannot give back exactly stay in the metadata too.
        let mut odd = r.clone();
        odd.chunk_ns[1] = odd.chunk_ns[0] - 1;
        let raw = String::from_utf8(line(&odd)).unwrap();
        assert!(raw.contains("\"chunk_ns\":["), "{raw}");
        assert_eq!(parse_serde(raw.as_bytes()).unwrap(), Some(odd));
    }

    #[test]
    fn cancelled_and_http_errors_carry_aiperfs_codes() {
        let mut r = crate::view::tests::record(2, true);
        r.error = Some(RecordError { kind: CANCELLED.into(), message: "cancelled in flight".into() });
        let raw = String::from_utf8(line(&r)).unwrap();
        assert!(raw.contains("\"was_cancelled\":true,\"cancellation_time_ns\":"), "{raw}");
        assert!(raw.contains("\"error\":{\"code\":499,\"type\":\"cancelled\""), "{raw}");
        assert!(agree(raw.as_bytes()));
        let e = RecordError { kind: "http_status".into(), message: "HTTP 503: busy".into() };
        assert_eq!(e.code(), Some(503));
        assert_eq!(RecordError { kind: "http_status".into(), message: "HTTP".into() }.code(), None);
    }

    #[test]
    fn aiperfs_lines_are_read() {
        let aiperf = r#"{"metadata":{"session_num":3,"x_request_id":"c4e1","x_correlation_id":"fixed-schedule-s0","conversation_id":"s0","turn_index":1,"credit_issued_ns":1000000000,"request_start_ns":1002000000,"request_ack_ns":1010000000,"request_end_ns":1054242982,"worker_id":"worker_4d","record_processor_id":"rp","benchmark_phase":"profiling","phase_index":0,"was_cancelled":false,"agent_depth":0},"metrics":{"http_req_connection_reused":{"value":0,"unit":"ratio"},"time_to_first_token":{"value":39.351217999999996,"unit":"ms"},"input_sequence_length":{"value":40,"unit":"tokens"},"output_sequence_length":{"value":3,"unit":"tokens"},"usage_prompt_tokens":{"value":33,"unit":"tokens"},"usage_completion_tokens":{"value":3,"unit":"tokens"},"usage_prompt_cache_read_tokens":{"value":0,"unit":"tokens"},"inter_chunk_latency":{"value":[3.285331,1.066289],"unit":"ms"}}}"#;
        assert!(agree(aiperf.as_bytes()));
        let mut rec = RequestRecord::default();
        assert_eq!(read_line(aiperf.as_bytes(), &mut rec).ok(), Some(true));
        assert_eq!((rec.session_num, rec.turn, rec.session_id.as_deref()), (3, 1, Some("s0")));
        assert_eq!(
            (rec.scheduled_ns, rec.sent_ns, rec.first_byte_ns, rec.end_ns),
            (1_000_000_000, 1_002_000_000, Some(1_010_000_000), 1_054_242_982)
        );
        assert_eq!(rec.chunk_ns, [1_041_351_218, 1_044_636_549, 1_045_702_838]);
        assert!(rec.streaming);
        assert_eq!((rec.input_tokens, rec.output_tokens), (Some(40), Some(3)));
        assert_eq!(
            rec.usage,
            ServerUsage {
                prompt_tokens: Some(33),
                completion_tokens: Some(3),
                cached_tokens: Some(0),
                first_chunk_tokens: None
            }
        );
        // Warm-up requests are not part of the run; errors and cancellations keep AIPerf's text.
        let warm = aiperf.replace("\"benchmark_phase\":\"profiling\"", "\"benchmark_phase\":\"warmup\"");
        assert!(agree(warm.as_bytes()));
        assert_eq!(read_line(warm.as_bytes(), &mut rec).ok(), Some(false));
        let failed = r#"{"metadata":{"session_num":0,"request_start_ns":5,"request_end_ns":9,"worker_id":"w","record_processor_id":"r","benchmark_phase":"profiling"},"metrics":{"error_isl":{"value":12,"unit":"tokens"}},"error":{"type":"ClientPayloadError","message":"Response payload is not completed","cause":"x","cause_chain":["a","b"]}}"#;
        assert!(agree(failed.as_bytes()));
        assert_eq!(read_line(failed.as_bytes(), &mut rec).ok(), Some(true));
        assert_eq!(
            rec.error,
            Some(RecordError {
                kind: "ClientPayloadError".into(),
                message: "Response payload is not completed".into()
            })
        );
        assert!(!rec.streaming && rec.chunk_ns.is_empty());
        let cancelled = failed
            .replace("\"benchmark_phase\":\"profiling\"", "\"benchmark_phase\":\"profiling\",\"was_cancelled\":true");
        let cancelled =
            cancelled.replace("\"type\":\"ClientPayloadError\"", "\"code\":499,\"type\":\"RequestCancellationError\"");
        assert!(agree(cancelled.as_bytes()));
        assert_eq!(read_line(cancelled.as_bytes(), &mut rec).ok(), Some(true));
        assert!(rec.was_cancelled());
        // What is missing is named.
        let e = parse_serde(br#"{"metadata":{"session_num":0,"request_end_ns":9}}"#).unwrap_err().to_string();
        assert!(e.contains("`request_start_ns`"), "{e}");
    }

    /// Records of a run as the CLI measures them: a first byte, the exchange's timings on some
    /// (a failed request's line has no metrics, so none on those).
    fn measured(n: u64) -> Vec<RequestRecord> {
        (0..n)
            .map(|i| {
                let mut r = crate::view::tests::record(i, i % 7 == 3);
                r.first_byte_ns = Some(r.sent_ns + 900_000 + i);
                if i % 3 != 0 && r.error.is_none() {
                    r.http = Some(HttpTiming {
                        reused: i % 2 == 0,
                        connect_ns: 1_250_000 + i,
                        dns_lookup_ns: 250_000,
                        send_end_ns: r.sent_ns + 300_000 + i,
                        body_first_ns: Some(r.chunk_ns[0] - 5_000),
                        body_last_ns: Some(r.end_ns - 500),
                        bytes_sent: 2_000 + i,
                        bytes_received: 600 * i,
                        chunks_received: 5,
                        status: None,
                    });
                }
                r
            })
            .collect()
    }

    #[test]
    fn a_line_leaves_out_what_its_reader_gives_back() {
        for r in measured(12) {
            let raw = String::from_utf8(line(&r)).unwrap();
            let mut got = RequestRecord::default();
            assert_eq!(parse_fast(raw.as_bytes(), &mut got), Some(true), "{raw}");
            assert_eq!(got, r);
            assert!(agree(raw.as_bytes()));
            // The run-relative times come back from the wall-clock ones and `sent_ns`.
            for key in ["\"scheduled_ns\"", "\"first_byte_ns\"", "\"end_ns\""] {
                assert!(!raw.contains(key), "{key} in {raw}");
            }
            assert!(raw.contains("\"sent_ns\""), "{raw}");
            // A successful request's usage is in its `usage_*` metrics, its counts whole numbers.
            assert_eq!(raw.contains("\"usage\""), r.error.is_some(), "{raw}");
            assert!(raw.contains("\"output_sequence_length\":{\"value\":4,") || r.error.is_some(), "{raw}");
            assert!(!raw.contains(".0,\"unit\":\"tokens\""), "{raw}");
            // AIPerf's default `was_cancelled: false`, a `streaming` that the time to first token
            // says, and a time to first output token equal to it are left out.
            assert!(!raw.contains("\"was_cancelled\"") && !raw.contains("time_to_first_output_token"), "{raw}");
            assert_eq!(raw.contains("\"streaming\""), r.error.is_some(), "{raw}");
        }
        // A time the wall clock cannot give back (past its range) stays in the line.
        let mut far = measured(1).remove(0);
        far.end_ns = u64::MAX - 1;
        let raw = String::from_utf8(line(&far)).unwrap();
        assert!(raw.contains(&format!("\"end_ns\":{}", u64::MAX - 1)), "{raw}");
        assert_eq!(parse_serde(raw.as_bytes()).unwrap(), Some(far));
    }

    /// The lines as the previous version wrote them: every run-relative time and the usage in the
    /// metadata, counts with a fraction.
    fn previous_shape(lines: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let mut v: serde_json::Value = serde_json::from_slice(l).unwrap();
            let mut rec = RequestRecord::default();
            assert!(read_line(l, &mut rec).unwrap());
            let m = &mut v["metadata"];
            m["scheduled_ns"] = rec.scheduled_ns.into();
            m["end_ns"] = rec.end_ns.into();
            if let Some(t) = rec.first_byte_ns {
                m["first_byte_ns"] = t.into();
            }
            if !rec.usage.is_empty() {
                m["usage"] = serde_json::to_value(rec.usage).unwrap();
            }
            m["was_cancelled"] = rec.was_cancelled().into();
            m["streaming"] = rec.streaming.into();
            if let Some(metrics) = v["metrics"].as_object_mut() {
                if let Some(ttft) = metrics.get("time_to_first_token").cloned() {
                    metrics.insert("time_to_first_output_token".into(), ttft);
                }
                for x in metrics.values_mut() {
                    if let Some(n) = x["value"].as_u64() {
                        x["value"] = (n as f64).into();
                    }
                }
            }
            out.extend(serde_json::to_vec(&v).unwrap());
            out.push(b'\n');
        }
        out
    }

    #[test]
    fn a_run_reads_the_same_from_its_lines_as_from_the_previous_ones() {
        use crate::view::{Run, RunSettings};
        let records = measured(40);
        let (lines, agg) = crate::view::tests::jsonl(&records, true, &[]);
        let previous = previous_shape(&lines);
        assert!(previous.len() > lines.len() + 40 * 100, "{} vs {}", previous.len(), lines.len());
        let settings = RunSettings { server_token_count: true, ..RunSettings::default() };
        let now = Run::from_jsonl("r", "f", &lines, settings.clone()).unwrap();
        let before = Run::from_jsonl("r", "f", &previous, settings).unwrap();
        assert_eq!(now.report, before.report);
        assert_eq!(now.report, agg.report(false));
        // Debug text: a point without a latency holds NaN.
        assert_eq!(format!("{:?}", now.points), format!("{:?}", before.points));
        // The exchange's timings come back: the report has AIPerf's `http_req_*`.
        let waiting = now.report.get(Metric::HttpReqWaiting).unwrap();
        assert_eq!(waiting.count, records.iter().filter(|r| r.error.is_none() && r.http.is_some()).count());
        assert!(now.report.get(Metric::HttpReqConnectionOverhead).is_some());
    }

    #[test]
    fn aiperfs_http_metrics_are_read_only_whole() {
        let mut r = measured(2).remove(1);
        let raw = String::from_utf8(line(&r)).unwrap();
        // Without one of the metrics the timings are made of, the line has no timings.
        let cut = raw.replacen("\"http_req_sending\"", "\"http_req_sending_x\"", 1);
        assert!(agree(cut.as_bytes()));
        r.http = None;
        assert_eq!(parse_serde(cut.as_bytes()).unwrap(), Some(r));
    }

    #[test]
    fn earlier_versions_lines_are_read() {
        let old = r#"{"metadata":{"session_id":"s1","session_run":4,"turn":1,"trace_line":7,"scheduled_ns":1000,"sent_ns":2000,"chunk_ns":[5000000,7000000],"end_ns":7500000,"streaming":true,"output_tokens":2,"usage":{},"error":{"kind":"timeout","message":"slow"}},"metrics":{"send_lateness":0.001,"time_to_first_token":4.998,"inter_chunk_latency":[2.0]}}"#;
        assert!(agree(old.as_bytes()));
        let mut rec = RequestRecord::default();
        assert_eq!(read_line(old.as_bytes(), &mut rec).ok(), Some(true));
        assert_eq!((rec.session_id.as_deref(), rec.session_num, rec.turn, rec.trace_line), (Some("s1"), 4, 1, 7));
        assert_eq!(rec.chunk_ns, [5_000_000, 7_000_000]);
        assert_eq!(rec.error.map(|e| e.kind), Some("timeout".into()));
    }

    proptest! {
        /// Generated records (escapes, unicode, control characters, nulls, errors): the CLI's line
        /// goes through the fast path whenever its strings need no escape, and agrees with serde.
        #[test]
        fn fast_path_is_serde(r in record()) {
            let raw = line(&r);
            let plain = |s: &str| !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
            let escapes = [&r.session_id, &r.request_id, &r.correlation_id].iter().any(|s| s.as_deref().is_some_and(|s| !plain(s)))
                || r.error.as_ref().is_some_and(|e| !plain(&e.kind) || !plain(&e.message));
            let fast = agree(&raw);
            prop_assert_eq!(fast, !escapes);
            prop_assert_eq!(parse_serde(&raw).unwrap(), Some(r));
        }

        /// Damaged lines (a byte changed, cut, or a field nulled): whatever the fast
        /// path accepts, serde accepts with the same record.
        #[test]
        fn damaged_lines_agree(r in record(), at in any::<usize>(), byte in any::<u8>(), how in 0u8..4) {
            let mut raw = line(&r);
            let at = at % raw.len();
            match how {
                0 => raw[at] = byte,
                1 => raw.truncate(at),
                2 => raw.insert(at, byte),
                _ => {
                    // Null the value after the next colon.
                    if let Some(k) = raw[at..].iter().position(|&b| b == b':') {
                        let from = at + k + 1;
                        let to = raw[from..].iter().position(|&b| b == b',' || b == b'}').map_or(raw.len(), |e| from + e);
                        raw.splice(from..to, b"null".iter().copied());
                    }
                }
            }
            agree(&raw);
        }
    }

    #[test]
    fn lines_are_read_back_and_rebased() {
        let r = crate::view::tests::record(4, true);
        let mut rec = RequestRecord::default();
        assert_eq!(read_line(&line(&r), &mut rec).ok(), Some(true));
        assert_eq!(rec, r);
        let spaced = String::from_utf8(line(&r)).unwrap().replacen("{\"metadata\":", "{ \"metadata\": ", 1);
        assert_eq!(read_line(spaced.as_bytes(), &mut rec).ok(), Some(true));
        assert_eq!(rec, r);
        assert_eq!(read_line(b" \r", &mut rec).ok(), Some(false));
        assert!(read_line(b"{\"metadata\": 1}", &mut rec).is_err());
        let mut rec = r.clone();
        rec.rebase(1_000);
        assert_eq!(
            (rec.scheduled_ns, rec.sent_ns, rec.end_ns),
            (r.scheduled_ns + 1_000, r.sent_ns + 1_000, r.end_ns + 1_000)
        );
        assert_eq!(rec.chunk_ns, r.chunk_ns.iter().map(|c| c + 1_000).collect::<Vec<_>>());
        rec.rebase(u64::MAX);
        assert_eq!(rec.end_ns, u64::MAX);
    }

    #[test]
    fn record_line_snapshot() {
        let rec = RequestRecord {
            session_id: Some("s1".into()),
            turn: 1,
            trace_line: 7,
            scheduled_ns: 1_000,
            sent_ns: 2_000,
            chunk_ns: vec![5_000_000, 7_000_000],
            end_ns: 7_500_000,
            streaming: true,
            output_tokens: Some(2),
            ..Default::default()
        };
        let m = RequestMetrics::of(&rec, false);
        let line = String::from_utf8(record_line(&rec, Some(&m), T0)).unwrap();
        assert!(line.ends_with("}\n"));
        insta::assert_snapshot!(line);
    }
}
