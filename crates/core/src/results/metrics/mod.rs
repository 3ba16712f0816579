//! The AIPerf metrics of one request ([`RequestMetrics`], derived from its
//! [`RequestRecord`](crate::results::record::RequestRecord): AIPerf's per-request metrics plus
//! send lateness and latencies from the scheduled time, which expose coordinated omission) and the
//! `--goodput` objectives they are judged by.
//!
//! `request`: the per-request computation; `metric`: the [`Metric`] table (AIPerf's tags,
//! headers, units); `goodput`: the `--goodput` objectives.

mod goodput;
mod metric;
mod request;

pub use goodput::{GoodputError, Slo, meets, parse_goodput};
pub use metric::Metric;
pub use request::{
    OSL_MISMATCH_MAX_TOKENS, OSL_MISMATCH_THRESHOLD_PCT, RequestMetrics, USAGE_DIFF_THRESHOLD_PCT, osl_mismatch,
};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::results::record::{HttpTiming, RequestRecord};

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
