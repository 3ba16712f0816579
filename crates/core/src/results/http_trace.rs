//! AIPerf's `--export-http-trace`: each record's `trace_data`, the HTTP exchange as the client's
//! connection saw it, in the shape of AIPerf's `TraceDataExport` (wall-clock nanoseconds, k6's
//! durations), added to the record's line of `profile_export.jsonl`.
//!
//! What the client measures is one write of the request body and the response body's reads
//! ([`HttpTiming`]); the transport-level chunk lists and the headers of AIPerf's aiohttp trace
//! are not kept, so `request_chunks` and `response_chunks` are absent (AIPerf's default: empty).
//! The response's status is there for every request that got one, successful or not.

use serde::Serialize;

use super::metrics::Metric;
use super::record::{HttpTiming, RequestRecord};
use super::summary::RunSummary;

/// The `trace_type` of our traces: the client is hyper's, not aiohttp's.
pub const TRACE_TYPE: &str = "hyper";

/// One record's `trace_data`, in AIPerf's field names.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct TraceData {
    pub trace_type: &'static str,
    pub request_send_start_ns: u64,
    pub request_send_end_ns: u64,
    pub request_chunks_count: u64,
    pub request_bytes_total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status_code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_receive_start_ns: Option<u64>,
    pub response_chunks_count: u64,
    pub response_bytes_total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_receive_end_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_timestamp_ns: Option<u64>,
    /// When the request took a connection that had carried an earlier one (AIPerf's aiohttp
    /// field): its send start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_reused_ns: Option<u64>,
    /// k6's `http_req_sending`, `_waiting`, `_receiving`, `_duration`, `_connecting` and
    /// `_looking_up`, as AIPerf computes them from the times above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sending_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiving_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    pub connecting_ns: u64,
    pub dns_lookup_ns: u64,
}

impl TraceData {
    /// The trace of a record whose connection was traced (`None` otherwise: a request that
    /// never reached a connection); `t0_unix_ns` is the run's time zero on the wall clock.
    pub fn of(rec: &RequestRecord, t0_unix_ns: u64) -> Option<TraceData> {
        let h: &HttpTiming = rec.http.as_ref()?;
        let wall = |t: u64| t0_unix_ns.saturating_add(t);
        let start = wall(rec.sent_ns);
        let send_end = wall(h.send_end_ns.max(rec.sent_ns));
        let first = h.body_first_ns.map(wall);
        let last = h.body_last_ns.map(wall);
        Some(TraceData {
            trace_type: TRACE_TYPE,
            request_send_start_ns: start,
            request_send_end_ns: send_end,
            request_chunks_count: 1,
            request_bytes_total: h.bytes_sent,
            response_status_code: h.status.or_else(|| rec.error.as_ref().and_then(|e| e.code())),
            response_receive_start_ns: first,
            response_chunks_count: h.chunks_received,
            response_bytes_total: h.bytes_received,
            response_receive_end_ns: last,
            error_timestamp_ns: rec.error.as_ref().map(|_| wall(rec.end_ns)),
            connection_reused_ns: h.reused.then_some(start),
            sending_ns: Some(send_end - start),
            waiting_ns: first.map(|f| f.saturating_sub(send_end)),
            receiving_ns: match h.chunks_received {
                0 => None,
                1 => Some(0),
                _ => first.zip(last).map(|(f, l)| l.saturating_sub(f)),
            },
            duration_ns: last.map(|l| l.saturating_sub(start)),
            connecting_ns: h.connect_ns,
            dns_lookup_ns: h.dns_lookup_ns,
        })
    }
}

/// Adds `"trace_data":{…}` to a record's JSONL `line` (one JSON object and its newline), when
/// the record has a trace.
pub fn add_to_line(line: &mut Vec<u8>, rec: &RequestRecord, t0_unix_ns: u64) {
    let Some(trace) = TraceData::of(rec, t0_unix_ns) else { return };
    let Ok(json) = serde_json::to_vec(&trace) else { return };
    let end = line.iter().rposition(|&b| b == b'}');
    if let Some(end) = end {
        let mut tail = line.split_off(end);
        line.extend_from_slice(b",\"trace_data\":");
        line.extend_from_slice(&json);
        line.append(&mut tail);
    }
}

/// AIPerf's `--show-trace-timing` table: the run's `http_req_*` metrics (k6's breakdown:
/// blocked, DNS, connecting, sending, waiting, receiving, duration, sizes, reuse), one a line.
pub fn timing_table(s: &RunSummary) -> String {
    let mut out = String::from("\naiperf-cli profile | HTTP Trace Timing\n");
    super::export::distribution_table(&mut out, s.report.metrics.iter().filter(|(m, _)| is_http_metric(*m)));
    out
}

/// Whether `m` is one of AIPerf's HTTP trace metrics.
pub fn is_http_metric(m: Metric) -> bool {
    m.tag().starts_with("http_req_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::record::RecordError;

    fn traced() -> RequestRecord {
        RequestRecord {
            sent_ns: 1_000,
            end_ns: 9_000,
            http: Some(HttpTiming {
                reused: true,
                connect_ns: 0,
                dns_lookup_ns: 0,
                send_end_ns: 1_500,
                body_first_ns: Some(4_000),
                body_last_ns: Some(8_500),
                bytes_sent: 120,
                bytes_received: 900,
                chunks_received: 5,
                status: Some(200),
            }),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn the_trace_has_aiperfs_wall_clock_times_and_k6_durations() {
        let t = TraceData::of(&traced(), 1_000_000).unwrap();
        assert_eq!((t.request_send_start_ns, t.request_send_end_ns), (1_001_000, 1_001_500));
        assert_eq!((t.response_receive_start_ns, t.response_receive_end_ns), (Some(1_004_000), Some(1_008_500)));
        assert_eq!(
            (t.sending_ns, t.waiting_ns, t.receiving_ns, t.duration_ns),
            (Some(500), Some(2_500), Some(4_500), Some(7_500))
        );
        assert_eq!(t.connection_reused_ns, Some(1_001_000));
        assert_eq!((t.response_status_code, t.error_timestamp_ns), (Some(200), None));
        assert!(TraceData::of(&RequestRecord::default(), 0).is_none(), "no connection, no trace");
    }

    #[test]
    fn a_failed_request_has_its_status_and_error_time() {
        let mut rec = traced();
        rec.error = Some(RecordError { kind: "http_status".into(), message: "HTTP 503: busy".into() });
        if let Some(h) = &mut rec.http {
            h.status = Some(503);
        }
        let t = TraceData::of(&rec, 0).unwrap();
        assert_eq!((t.response_status_code, t.error_timestamp_ns), (Some(503), Some(9_000)));
        if let Some(h) = &mut rec.http {
            h.status = None;
        }
        let t = TraceData::of(&rec, 0).unwrap();
        assert_eq!(t.response_status_code, Some(503), "the status read from the error's message");
    }

    #[test]
    fn the_trace_is_added_to_the_line_and_the_line_still_reads() {
        let rec = traced();
        let mut line = crate::results::line::record_line(&rec, None, 5);
        let before = line.clone();
        add_to_line(&mut line, &rec, 5);
        assert!(line.ends_with(b"}}\n"), "{}", String::from_utf8_lossy(&line));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["trace_data"]["trace_type"], "hyper");
        assert_eq!(v["trace_data"]["request_bytes_total"], 120);
        let mut a = RequestRecord::default();
        let mut b = RequestRecord::default();
        assert!(crate::results::line::read_line(&line, &mut a).unwrap());
        assert!(crate::results::line::read_line(&before, &mut b).unwrap());
        assert_eq!(a, b, "the trace changes nothing the reader reads");
        let mut untraced = crate::results::line::record_line(&RequestRecord::default(), None, 5);
        let same = untraced.clone();
        add_to_line(&mut untraced, &RequestRecord::default(), 5);
        assert_eq!(untraced, same);
    }
}
