//! A record's line written: AIPerf's `MetricRecordInfo` with the record's own fields beside
//! AIPerf's in its metadata, every value left out that the readers give back from the others.

use serde::Serialize;

use super::assemble::{chunks_from_metrics, token_count};
use crate::results::metrics::{Metric, RequestMetrics};
use crate::results::record::{RequestRecord, ServerUsage};

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
pub(in crate::results) fn error_out(rec: &RequestRecord) -> Option<ErrorOut<'_>> {
    rec.error.as_ref().map(|e| ErrorOut { code: e.code(), kind: &e.kind, message: &e.message })
}

/// A record's `metadata` object, AIPerf's `MetricRecordMetadata` with the record's own fields
/// (see [`record_line`]).
pub(in crate::results) fn metadata<'a>(
    rec: &'a RequestRecord,
    metrics: Option<&RequestMetrics>,
    t0_unix_ns: u64,
) -> Meta<'a> {
    let wall = |t: u64| t0_unix_ns.saturating_add(t);
    let chunks_in_metrics = match metrics {
        Some(m) => chunks_from_metrics(rec.sent_ns, m.get(Metric::TimeToFirstToken), m.inter_chunk_ms.values())
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
pub(in crate::results) struct Meta<'a> {
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
pub(in crate::results) struct ErrorOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

/// A metric as AIPerf writes it.
#[derive(Serialize)]
pub(super) struct Valued<T> {
    pub(super) value: T,
    pub(super) unit: &'static str,
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
