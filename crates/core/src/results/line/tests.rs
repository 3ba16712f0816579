#![allow(clippy::unwrap_used)]

use super::*;
use crate::results::aggregate::Aggregate;
use crate::results::metrics::{Metric, RequestMetrics};
use crate::results::record::{CANCELLED, HttpTiming, RecordError, RequestRecord, ServerUsage};
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
        Some(RecordError { kind: "ClientPayloadError".into(), message: "Response payload is not completed".into() })
    );
    assert!(!rec.streaming && rec.chunk_ns.is_empty());
    let cancelled =
        failed.replace("\"benchmark_phase\":\"profiling\"", "\"benchmark_phase\":\"profiling\",\"was_cancelled\":true");
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
