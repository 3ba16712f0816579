use super::*;
use crate::results::metrics::parse_goodput;
use crate::results::metrics::tests::rec;
use crate::results::record::RecordError;
use crate::stats::Distribution;

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
    // Run at once, every list's distribution (the URLs' too) is a part of its own, taken last
    // first here: the same report, with goodput too.
    let at_once = crate::fork::LastFirst { at_once: true };
    assert_eq!(a.report_over_on(false, None, &at_once), report);
    assert_eq!(a.clone().into_report_over_on(true, None, &at_once), a.report(true));
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
    assert_eq!(agg.clone().into_report_over_on(false, None, &crate::fork::LastFirst { at_once: true }), report);
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
        // Its parts run at once (the chunk gaps' distribution apart without failed requests),
        // the same report.
        let at_once = even.clone().into_report_over_on(false, None, &crate::fork::LastFirst { at_once: true });
        proptest::prop_assert_eq!(format!("{at_once:?}"), format!("{:?}", even.report(false)));
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
