//! [`Metric`]: every metric of the report, with AIPerf's tag, header and unit, which way is
//! better, and whether the console and the error-adjusted statistics show it.

use serde::{Deserialize, Serialize};

/// A metric of the report, with AIPerf's tag where AIPerf has it (and AIPerf's definition under
/// it); ours have their own tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Metric {
    TimeToFirstToken,
    TimeToSecondToken,
    RequestLatency,
    InterTokenLatency,
    InterChunkLatency,
    OutputSequenceLength,
    InputSequenceLength,
    ServerInputSequenceLength,
    OutputTokenThroughputPerUser,
    CachedTokens,
    SendLateness,
    TimeToFirstTokenFromScheduled,
    RequestLatencyFromScheduled,
    OutputTokenCount,
    TimeToFirstOutputToken,
    DecodeDuration,
    E2eOutputTokenThroughput,
    PrefillThroughputPerUser,
    UsagePromptTokens,
    UsageCompletionTokens,
    UsageTotalTokens,
    UsagePromptCacheReadTokens,
    UsagePromptTokensDiffPct,
    UsageCompletionTokensDiffPct,
    OslMismatchDiffPct,
    /// Failed requests' input lengths (never in a successful request's metrics).
    ErrorInputSequenceLength,
    /// Send lateness of every request, under AIPerf's name for the wait before sending.
    CreditToStartLatency,
    /// From the scheduled time to the end of every request, failed ones included.
    EffectiveLatency,
    /// TTFT of every request that received a token, failed ones included.
    TimeToFirstTokenAllRequests,
    /// Chunk gaps of every request, failed ones included.
    InterChunkLatencyAllRequests,
    /// AIPerf's `http_req_*`: the exchange as the client's connection saw it.
    HttpReqBlocked,
    HttpReqDnsLookup,
    HttpReqConnecting,
    HttpReqSending,
    HttpReqWaiting,
    HttpReqReceiving,
    HttpReqDuration,
    HttpReqDataSent,
    HttpReqDataReceived,
    HttpReqChunksSent,
    HttpReqChunksReceived,
    HttpReqConnectionReused,
    HttpReqConnectionOverhead,
    HttpReqTotal,
    /// AIPerf's `network_adjusted_*`: a latency less the run's mean network RTT
    /// (`--network-latency-automatic`/`--network-latency-mean`), made at the end of the run by
    /// [`crate::results::network`], not per request.
    NetworkAdjustedRequestLatency,
    NetworkAdjustedTimeToFirstToken,
    NetworkAdjustedTimeToFirstOutputToken,
    /// The mean network RTT subtracted: one value.
    NetworkRtt,
}

impl Metric {
    /// All metrics with a distribution, in report order.
    pub const ALL: [Metric; 44] = [
        Metric::TimeToFirstToken,
        Metric::TimeToSecondToken,
        Metric::RequestLatency,
        Metric::InterTokenLatency,
        Metric::InterChunkLatency,
        Metric::OutputTokenThroughputPerUser,
        Metric::OutputSequenceLength,
        Metric::InputSequenceLength,
        Metric::ServerInputSequenceLength,
        Metric::CachedTokens,
        Metric::SendLateness,
        Metric::TimeToFirstTokenFromScheduled,
        Metric::RequestLatencyFromScheduled,
        Metric::TimeToFirstTokenAllRequests,
        Metric::InterChunkLatencyAllRequests,
        Metric::OutputTokenCount,
        Metric::TimeToFirstOutputToken,
        Metric::DecodeDuration,
        Metric::E2eOutputTokenThroughput,
        Metric::PrefillThroughputPerUser,
        Metric::UsagePromptTokens,
        Metric::UsageCompletionTokens,
        Metric::UsageTotalTokens,
        Metric::UsagePromptCacheReadTokens,
        Metric::UsagePromptTokensDiffPct,
        Metric::UsageCompletionTokensDiffPct,
        Metric::OslMismatchDiffPct,
        Metric::ErrorInputSequenceLength,
        Metric::CreditToStartLatency,
        Metric::EffectiveLatency,
        Metric::HttpReqBlocked,
        Metric::HttpReqDnsLookup,
        Metric::HttpReqConnecting,
        Metric::HttpReqSending,
        Metric::HttpReqWaiting,
        Metric::HttpReqReceiving,
        Metric::HttpReqDuration,
        Metric::HttpReqDataSent,
        Metric::HttpReqDataReceived,
        Metric::HttpReqChunksSent,
        Metric::HttpReqChunksReceived,
        Metric::HttpReqConnectionReused,
        Metric::HttpReqConnectionOverhead,
        Metric::HttpReqTotal,
    ];

    /// The tag used in exports and `--goodput` (AIPerf's where it exists).
    pub fn tag(self) -> &'static str {
        match self {
            Metric::TimeToFirstToken => "time_to_first_token",
            Metric::TimeToSecondToken => "time_to_second_token",
            Metric::RequestLatency => "request_latency",
            Metric::InterTokenLatency => "inter_token_latency",
            Metric::InterChunkLatency => "inter_chunk_latency",
            Metric::OutputSequenceLength => "output_sequence_length",
            Metric::InputSequenceLength => "input_sequence_length",
            Metric::ServerInputSequenceLength => "server_input_sequence_length",
            Metric::OutputTokenThroughputPerUser => "output_token_throughput_per_user",
            Metric::CachedTokens => "cached_tokens",
            Metric::SendLateness => "send_lateness",
            Metric::TimeToFirstTokenFromScheduled => "time_to_first_token_from_scheduled",
            Metric::RequestLatencyFromScheduled => "request_latency_from_scheduled",
            Metric::OutputTokenCount => "output_token_count",
            Metric::TimeToFirstOutputToken => "time_to_first_output_token",
            Metric::DecodeDuration => "decode_duration",
            Metric::E2eOutputTokenThroughput => "e2e_output_token_throughput",
            Metric::PrefillThroughputPerUser => "prefill_throughput_per_user",
            Metric::UsagePromptTokens => "usage_prompt_tokens",
            Metric::UsageCompletionTokens => "usage_completion_tokens",
            Metric::UsageTotalTokens => "usage_total_tokens",
            Metric::UsagePromptCacheReadTokens => "usage_prompt_cache_read_tokens",
            Metric::UsagePromptTokensDiffPct => "usage_prompt_tokens_diff_pct",
            Metric::UsageCompletionTokensDiffPct => "usage_completion_tokens_diff_pct",
            Metric::OslMismatchDiffPct => "osl_mismatch_diff_pct",
            Metric::ErrorInputSequenceLength => "error_isl",
            Metric::CreditToStartLatency => "credit_to_start_latency",
            Metric::EffectiveLatency => "effective_latency",
            Metric::TimeToFirstTokenAllRequests => "time_to_first_token_all_requests",
            Metric::InterChunkLatencyAllRequests => "inter_chunk_latency_all_requests",
            Metric::HttpReqBlocked => "http_req_blocked",
            Metric::HttpReqDnsLookup => "http_req_dns_lookup",
            Metric::HttpReqConnecting => "http_req_connecting",
            Metric::HttpReqSending => "http_req_sending",
            Metric::HttpReqWaiting => "http_req_waiting",
            Metric::HttpReqReceiving => "http_req_receiving",
            Metric::HttpReqDuration => "http_req_duration",
            Metric::HttpReqDataSent => "http_req_data_sent",
            Metric::HttpReqDataReceived => "http_req_data_received",
            Metric::HttpReqChunksSent => "http_req_chunks_sent",
            Metric::HttpReqChunksReceived => "http_req_chunks_received",
            Metric::HttpReqConnectionReused => "http_req_connection_reused",
            Metric::HttpReqConnectionOverhead => "http_req_connection_overhead",
            Metric::HttpReqTotal => "http_req_total",
            Metric::NetworkAdjustedRequestLatency => "network_adjusted_request_latency",
            Metric::NetworkAdjustedTimeToFirstToken => "network_adjusted_time_to_first_token",
            Metric::NetworkAdjustedTimeToFirstOutputToken => "network_adjusted_time_to_first_output_token",
            Metric::NetworkRtt => "network_rtt",
        }
    }

    /// Human-readable name for tables (AIPerf's `header` where it exists).
    pub fn header(self) -> &'static str {
        match self {
            Metric::TimeToFirstToken => "Time to First Token",
            Metric::TimeToSecondToken => "Time to Second Token",
            Metric::RequestLatency => "Request Latency",
            Metric::InterTokenLatency => "Inter Token Latency",
            Metric::InterChunkLatency => "Inter Chunk Latency",
            Metric::OutputSequenceLength => "Output Sequence Length",
            Metric::InputSequenceLength => "Input Sequence Length",
            Metric::ServerInputSequenceLength => "Server Input Sequence Length",
            Metric::OutputTokenThroughputPerUser => "Output Token Throughput Per User",
            Metric::CachedTokens => "Cached Tokens (server)",
            Metric::SendLateness => "Send Lateness",
            Metric::TimeToFirstTokenFromScheduled => "TTFT from Scheduled Time",
            Metric::RequestLatencyFromScheduled => "Request Latency from Scheduled Time",
            Metric::OutputTokenCount => "Output Token Count",
            Metric::TimeToFirstOutputToken => "Time to First Output Token",
            Metric::DecodeDuration => "Decode Duration",
            Metric::E2eOutputTokenThroughput => "E2E Output Token Throughput",
            Metric::PrefillThroughputPerUser => "Prefill Throughput Per User",
            Metric::UsagePromptTokens => "Usage Prompt Tokens",
            Metric::UsageCompletionTokens => "Usage Completion Tokens",
            Metric::UsageTotalTokens => "Usage Total Tokens",
            Metric::UsagePromptCacheReadTokens => "Usage Prompt Cache Read Tokens",
            Metric::UsagePromptTokensDiffPct => "Usage Prompt Diff %",
            Metric::UsageCompletionTokensDiffPct => "Usage Completion Diff %",
            Metric::OslMismatchDiffPct => "OSL Mismatch Diff %",
            Metric::ErrorInputSequenceLength => "Error Input Sequence Length",
            Metric::CreditToStartLatency => "Credit-to-Start Latency",
            Metric::EffectiveLatency => "Effective Latency (CO-aware)",
            Metric::TimeToFirstTokenAllRequests => "TTFT incl. Failed Requests",
            Metric::InterChunkLatencyAllRequests => "Inter Chunk Latency incl. Failed Requests",
            Metric::HttpReqBlocked => "HTTP Blocked",
            Metric::HttpReqDnsLookup => "HTTP DNS Lookup",
            Metric::HttpReqConnecting => "HTTP Connecting",
            Metric::HttpReqSending => "HTTP Sending",
            Metric::HttpReqWaiting => "HTTP Waiting (TTFB)",
            Metric::HttpReqReceiving => "HTTP Receiving",
            Metric::HttpReqDuration => "HTTP Duration (excl. conn)",
            Metric::HttpReqDataSent => "HTTP Data Sent",
            Metric::HttpReqDataReceived => "HTTP Data Received",
            Metric::HttpReqChunksSent => "HTTP Chunks Sent",
            Metric::HttpReqChunksReceived => "HTTP Chunks Received",
            Metric::HttpReqConnectionReused => "HTTP Connection Reused",
            Metric::HttpReqConnectionOverhead => "HTTP Connection Overhead",
            Metric::HttpReqTotal => "HTTP Total Time",
            Metric::NetworkAdjustedRequestLatency => "Network-Adjusted Request Latency",
            Metric::NetworkAdjustedTimeToFirstToken => "Network-Adjusted Time to First Token",
            Metric::NetworkAdjustedTimeToFirstOutputToken => "Network-Adjusted Time to First Output Token",
            Metric::NetworkRtt => "Network RTT",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Metric::OutputSequenceLength
            | Metric::InputSequenceLength
            | Metric::ServerInputSequenceLength
            | Metric::CachedTokens
            | Metric::OutputTokenCount
            | Metric::UsagePromptTokens
            | Metric::UsageCompletionTokens
            | Metric::UsageTotalTokens
            | Metric::UsagePromptCacheReadTokens
            | Metric::ErrorInputSequenceLength => "tokens",
            Metric::OutputTokenThroughputPerUser
            | Metric::E2eOutputTokenThroughput
            | Metric::PrefillThroughputPerUser => "tokens/sec/user",
            Metric::UsagePromptTokensDiffPct | Metric::UsageCompletionTokensDiffPct | Metric::OslMismatchDiffPct => "%",
            Metric::HttpReqDataSent | Metric::HttpReqDataReceived => "KB",
            Metric::HttpReqChunksSent | Metric::HttpReqChunksReceived => "count",
            Metric::HttpReqConnectionReused => "ratio",
            _ => "ms",
        }
    }

    /// For goodput: true when a larger value is better (AIPerf's `LARGER_IS_BETTER`).
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::OutputTokenThroughputPerUser
                | Metric::OutputSequenceLength
                | Metric::InputSequenceLength
                | Metric::OutputTokenCount
                | Metric::E2eOutputTokenThroughput
                | Metric::PrefillThroughputPerUser
                | Metric::UsagePromptTokens
                | Metric::UsageCompletionTokens
                | Metric::UsageTotalTokens
                | Metric::UsagePromptCacheReadTokens
                | Metric::ErrorInputSequenceLength
        )
    }

    /// Whether the console table shows it (the rest are in the files).
    pub fn on_console(self) -> bool {
        matches!(
            self,
            Metric::TimeToFirstToken
                | Metric::TimeToSecondToken
                | Metric::RequestLatency
                | Metric::InterTokenLatency
                | Metric::InterChunkLatency
                | Metric::OutputTokenThroughputPerUser
                | Metric::OutputSequenceLength
                | Metric::InputSequenceLength
                | Metric::ServerInputSequenceLength
                | Metric::CachedTokens
                | Metric::SendLateness
                | Metric::TimeToFirstTokenFromScheduled
                | Metric::RequestLatencyFromScheduled
                | Metric::TimeToFirstTokenAllRequests
                | Metric::NetworkAdjustedRequestLatency
                | Metric::NetworkAdjustedTimeToFirstToken
                | Metric::NetworkAdjustedTimeToFirstOutputToken
                | Metric::NetworkRtt
        )
    }

    /// Whether AIPerf counts failed requests in this metric's error-adjusted percentiles
    /// (`PERCENTILE_INCLUDES_FAILED_REQUESTS`: `adj_<tag>`).
    pub fn adjusted_for_failures(self) -> bool {
        matches!(
            self,
            Metric::RequestLatency | Metric::TimeToFirstToken | Metric::InterTokenLatency | Metric::DecodeDuration
        )
    }

    /// The metric with this tag.
    pub fn from_tag(tag: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.tag() == tag)
    }
}
