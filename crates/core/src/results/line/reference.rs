//! The reference reader: a line through serde, which takes every line the fast path takes (with
//! the same record) and words the error of those it refuses.

use serde::Deserialize;

use super::assemble::{Said, UNTYPED, assemble, ms_to_ns};
use super::write::Valued;
use crate::results::record::{RecordError, RequestRecord, ServerUsage};

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
