//! AIPerf's `--export-level raw`: `profile_export_raw.jsonl`, one line per request in the shape
//! of AIPerf's `RawRecordInfo` — the record's `metadata` (as in `profile_export.jsonl`), the
//! request body as sent (`payload`, spliced verbatim), the request's headers, the response's
//! status, what came back (`responses`: each SSE message with its arrival time, or the whole
//! body) and the error. Times (`start_perf_ns`, each response's `perf_ns`) are on the run's
//! clock, nanoseconds from time zero, as AIPerf's are on one `perf_counter_ns`.
//!
//! The headers are written as given: the caller masks credentials before (see the CLI's records
//! stage).

use serde::Serialize;

use super::line::{error_out, metadata};
use super::metrics::RequestMetrics;
use super::record::RequestRecord;

/// AIPerf's name of the raw records file.
pub const RAW_FILE: &str = "profile_export_raw.jsonl";

/// One SSE message as it arrived: its `event` and `data` fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseMessage {
    /// Arrival, nanoseconds from time zero.
    pub perf_ns: u64,
    pub event: Option<String>,
    pub data: String,
}

/// What came back for one request, as the client kept it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Responses {
    /// Nothing arrived (no connection, or a body that was never read).
    #[default]
    None,
    /// A streamed answer: every SSE message.
    Sse(Vec<SseMessage>),
    /// A whole body (a JSON answer, or an error's text), read to its end at `perf_ns`.
    Body { perf_ns: u64, text: String, content_type: Option<String> },
}

/// The exchange of one request beside its record: what was sent and what came back.
#[derive(Clone, Copy, Debug)]
pub struct RawExchange<'a> {
    /// The request body sent: a JSON object.
    pub payload: &'a [u8],
    /// The request's headers, credentials already masked.
    pub headers: &'a [(String, String)],
    /// The response's HTTP status, when one came.
    pub status: Option<u16>,
    pub responses: &'a Responses,
}

#[derive(Serialize)]
struct Line<'a> {
    metadata: super::line::Meta<'a>,
    start_perf_ns: u64,
    #[serde(skip_serializing_if = "<[_]>::is_empty", serialize_with = "header_map")]
    request_headers: &'a [(String, String)],
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    responses: ResponsesOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<super::line::ErrorOut<'a>>,
}

/// The headers as a JSON object, in the order sent.
fn header_map<S: serde::Serializer>(h: &&[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(h.iter().map(|(k, v)| (k, v)))
}

struct ResponsesOut<'a>(&'a Responses);

#[derive(Serialize)]
struct Packet<'a> {
    name: &'static str,
    value: &'a str,
}

#[derive(Serialize)]
struct SseOut<'a> {
    perf_ns: u64,
    packets: Vec<Packet<'a>>,
}

#[derive(Serialize)]
struct TextOut<'a> {
    perf_ns: u64,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_type: Option<&'a str>,
}

impl Serialize for ResponsesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Responses::None => s.collect_seq(std::iter::empty::<()>()),
            Responses::Sse(messages) => s.collect_seq(messages.iter().map(|m| {
                SseOut {
                    perf_ns: m.perf_ns,
                    packets: m
                        .event
                        .as_deref()
                        .map(|e| Packet { name: "event", value: e })
                        .into_iter()
                        .chain(std::iter::once(Packet { name: "data", value: &m.data }))
                        .collect(),
                }
            })),
            Responses::Body { perf_ns, text, content_type } => s.collect_seq(std::iter::once(TextOut {
                perf_ns: *perf_ns,
                text,
                content_type: content_type.as_deref(),
            })),
        }
    }
}

/// One line of `profile_export_raw.jsonl` (with its newline). A payload that is no JSON object
/// is written as `null` (AIPerf's `payload` is an object or nothing).
pub fn raw_line(rec: &RequestRecord, metrics: Option<&RequestMetrics>, t0_unix_ns: u64, ex: RawExchange) -> Vec<u8> {
    let line = Line {
        metadata: metadata(rec, metrics, t0_unix_ns),
        start_perf_ns: rec.sent_ns,
        request_headers: ex.headers,
        status: ex.status,
        responses: ResponsesOut(ex.responses),
        error: error_out(rec),
    };
    let Ok(rest) = serde_json::to_vec(&line) else { return Vec::new() };
    let payload: &[u8] = if is_object(ex.payload) { ex.payload } else { b"null" };
    let mut out = Vec::with_capacity(rest.len() + payload.len() + 16);
    out.extend_from_slice(b"{\"payload\":");
    out.extend_from_slice(payload);
    out.push(b',');
    out.extend_from_slice(rest.get(1..).unwrap_or_default());
    out.push(b'\n');
    out
}

/// Whether `b` is one JSON object.
fn is_object(b: &[u8]) -> bool {
    b.trim_ascii_start().first() == Some(&b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(b).is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::record::RecordError;

    fn rec() -> RequestRecord {
        RequestRecord {
            request_id: Some("r-1".into()),
            sent_ns: 1_000,
            first_byte_ns: Some(4_000),
            chunk_ns: vec![4_000, 6_000],
            end_ns: 7_000,
            streaming: true,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn a_streamed_exchange_is_aiperfs_raw_record() {
        let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        let responses = Responses::Sse(vec![
            SseMessage { perf_ns: 4_000, event: None, data: r#"{"choices":[]}"#.into() },
            SseMessage { perf_ns: 6_000, event: Some("end".into()), data: "[DONE]".into() },
        ]);
        let ex = RawExchange {
            payload: br#"{"model":"m","stream":true}"#,
            headers: &headers,
            status: Some(200),
            responses: &responses,
        };
        let line = raw_line(&rec(), None, 10, ex);
        assert!(line.ends_with(b"}\n"));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["payload"], serde_json::json!({"model": "m", "stream": true}));
        assert_eq!(v["metadata"]["x_request_id"], "r-1");
        assert_eq!(v["metadata"]["request_start_ns"], 1_010);
        assert_eq!(v["start_perf_ns"], 1_000);
        assert_eq!(v["request_headers"], serde_json::json!({"content-type": "application/json"}));
        assert_eq!(v["status"], 200);
        assert_eq!(
            v["responses"],
            serde_json::json!([
                {"perf_ns": 4_000, "packets": [{"name": "data", "value": "{\"choices\":[]}"}]},
                {"perf_ns": 6_000, "packets": [{"name": "event", "value": "end"}, {"name": "data", "value": "[DONE]"}]},
            ])
        );
        assert!(v.get("error").is_none());
    }

    #[test]
    fn a_body_its_error_and_a_payload_that_is_no_object() {
        let mut r = rec();
        r.error = Some(RecordError { kind: "http_status".into(), message: "HTTP 503: busy".into() });
        let responses =
            Responses::Body { perf_ns: 5_000, text: "busy".into(), content_type: Some("text/plain".into()) };
        let ex = RawExchange { payload: b"[1, 2", headers: &[], status: Some(503), responses: &responses };
        let v: serde_json::Value = serde_json::from_slice(&raw_line(&r, None, 0, ex)).unwrap();
        assert_eq!(v["payload"], serde_json::Value::Null);
        assert!(v.get("request_headers").is_none());
        assert_eq!(
            v["responses"],
            serde_json::json!([{"perf_ns": 5_000, "text": "busy", "content_type": "text/plain"}])
        );
        assert_eq!(v["error"], serde_json::json!({"code": 503, "type": "http_status", "message": "HTTP 503: busy"}));
        let none = RawExchange { payload: b"{}", headers: &[], status: None, responses: &Responses::None };
        let v: serde_json::Value = serde_json::from_slice(&raw_line(&r, None, 0, none)).unwrap();
        assert_eq!(v["responses"], serde_json::json!([]));
    }
}
