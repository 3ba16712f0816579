//! The record of one request ([`RequestRecord`]: raw times, token counts, the error if any);
//! [`RequestRecord::rebase`] moves a record to another time zero (a shard's records merged). Its
//! line of `profile_export.jsonl` is written and read in [`crate::results::line`].

use serde::{Deserialize, Serialize};

use crate::stats::Runs;

/// Token usage as the server reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerUsage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// `completion_tokens` of the first content chunk that carried usage, when the server
    /// reported usage on every chunk (`--per-chunk-usage`): the tokens of the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_chunk_tokens: Option<u64>,
}

impl ServerUsage {
    /// Nothing reported.
    pub fn is_empty(&self) -> bool {
        *self == ServerUsage::default()
    }
}

/// The error kind of a request cancelled in flight when the run was stopped.
pub const CANCELLED: &str = "cancelled";

/// What a server's error says when a prompt does not fit its context: AIPerf's allowlist
/// (`AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS`' default), matched without regard to case.
pub const CONTEXT_OVERFLOW_SUBSTRINGS: [&str; 4] =
    ["context length", "maximum context", "context_length_exceeded", "prompt is too long"];

/// Why a request failed: a short kind (`http_status`, `timeout`, …) and a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordError {
    pub kind: String,
    pub message: String,
}

impl RecordError {
    /// AIPerf's `code` of the error: 499 for a request cancelled in flight (AIPerf's code for
    /// it), the status of an `http_status` error (its message starts `HTTP <status>`).
    pub fn code(&self) -> Option<u16> {
        match self.kind.as_str() {
            CANCELLED => Some(499),
            "http_status" => self.message.strip_prefix("HTTP ")?.get(..3)?.parse().ok(),
            _ => None,
        }
    }

    /// A context-length overflow, as AIPerf tells it: the message (the server's answer for an
    /// HTTP error) holds one of [`CONTEXT_OVERFLOW_SUBSTRINGS`], whatever the case.
    pub fn is_context_overflow(&self) -> bool {
        let lowered = self.message.to_lowercase();
        CONTEXT_OVERFLOW_SUBSTRINGS.iter().any(|s| lowered.contains(s))
    }
}

/// The HTTP exchange as the client's connection saw it: what AIPerf's `http_req_*` metrics are
/// computed from (times on the run's clock, like the record's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpTiming {
    /// The connection had carried an earlier request.
    pub reused: bool,
    /// Opening the connection: name lookup, TCP, a proxy's tunnel, TLS (0 when reused).
    pub connect_ns: u64,
    /// The name lookup's share of it (0 when reused or the host was an IP address).
    pub dns_lookup_ns: u64,
    /// When the request's last byte was written to the connection.
    pub send_end_ns: u64,
    /// When the first and the last part of the response body arrived (`None`: an empty body).
    pub body_first_ns: Option<u64>,
    pub body_last_ns: Option<u64>,
    /// Request body bytes (sent as one chunk).
    pub bytes_sent: u64,
    /// Response body bytes and the reads they arrived in.
    pub bytes_received: u64,
    pub chunks_received: u64,
    /// The response's HTTP status (`None`: not known, as in a record read back from a line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// Everything measured about one request; times are nanoseconds from the benchmark start (a
/// record read from a run AIPerf wrote has its wall-clock nanoseconds instead: readers take time
/// differences and the earliest send as the start).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The trace's session (or conversation) id, if any: AIPerf's `conversation_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The `X-Request-ID` the request was sent with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The correlation id the request was sent with (the session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// Index of the session run in the schedule (AIPerf's `session_num`).
    pub session_num: u32,
    /// 0-based turn within the session.
    pub turn: u32,
    /// 1-based line of the trace row.
    pub trace_line: u32,
    pub scheduled_ns: u64,
    /// When the dispatcher handed the request to the async runtime (diagnoses where lateness
    /// arises: pacing before it, task start-up after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched_ns: Option<u64>,
    pub sent_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    /// Arrival time of every content chunk (chunks with generated text).
    pub chunk_ns: Vec<u64>,
    pub end_ns: u64,
    pub streaming: bool,
    /// Prompt tokens by the client's tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens by the client's tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The `max_completion_tokens` asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub usage: ServerUsage,
    /// Prompt tokens the trace predicts a prefix cache could reuse (shared leading hash ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_cached_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordError>,
    /// Which `--url` the request went to (0-based, in the order given), when several were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_index: Option<u32>,
    /// The exchange as the connection saw it (`None`: no response, or not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTiming>,
}

/// The content chunks' arrival times of a record: each one listed, or evenly spaced (a simulated
/// request's) and kept as one gap, so that its metrics and aggregate cost the same whatever the
/// chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkTimes<'a> {
    /// Every chunk's time, in order.
    Listed(&'a [u64]),
    /// `count` chunks: chunk k (from 0) at `first + k × gap`, held at `u64::MAX` past it.
    Even { first: u64, gap: u64, count: u64 },
}

impl ChunkTimes<'_> {
    /// Number of chunks.
    pub fn len(&self) -> u64 {
        match *self {
            ChunkTimes::Listed(t) => t.len() as u64,
            ChunkTimes::Even { count, .. } => count,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The time of chunk `k` (from 0).
    pub fn get(&self, k: u64) -> Option<u64> {
        match *self {
            ChunkTimes::Listed(t) => usize::try_from(k).ok().and_then(|k| t.get(k).copied()),
            ChunkTimes::Even { first, gap, count } => (k < count).then(|| first.saturating_add(k.saturating_mul(gap))),
        }
    }

    pub fn first(&self) -> Option<u64> {
        self.get(0)
    }

    pub fn last(&self) -> Option<u64> {
        self.len().checked_sub(1).and_then(|k| self.get(k))
    }

    /// The gap between every two chunks in a row when it is one exact gap (evenly spaced chunks
    /// none of which is held at `u64::MAX`); `None` for a listed record.
    pub fn even_gap(&self) -> Option<u64> {
        match *self {
            ChunkTimes::Listed(_) => None,
            ChunkTimes::Even { first, gap, count } => {
                gap.checked_mul(count.saturating_sub(1)).and_then(|span| first.checked_add(span)).map(|_| gap)
            }
        }
    }

    /// The chunks' times written out.
    pub fn to_vec(&self) -> Vec<u64> {
        match *self {
            ChunkTimes::Listed(t) => t.to_vec(),
            ChunkTimes::Even { count, .. } => (0..count).filter_map(|k| self.get(k)).collect(),
        }
    }

    /// The gap (ms) between every two chunks in a row, in order, as runs of equal gaps.
    pub fn gaps_ms(&self) -> Runs {
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut runs = Runs::default();
        match *self {
            ChunkTimes::Listed(t) => {
                let mut rest = t;
                while let [a, b, ..] = *rest {
                    let gap = b.saturating_sub(a);
                    let n = 1 + rest[1..].windows(2).take_while(|w| w[1].saturating_sub(w[0]) == gap).count();
                    runs.push_n(ms(gap), n as u64);
                    rest = &rest[n..];
                }
            }
            ChunkTimes::Even { first, gap, count } => {
                if count < 2 {
                    return runs;
                }
                // Chunks 1..=whole are exact; the next is held at the maximum, and so are the rest.
                let whole = match gap {
                    0 => count - 1,
                    g => ((u64::MAX - first) / g).min(count - 1),
                };
                runs.push_n(ms(gap), whole);
                if whole < count - 1 {
                    let before = first + whole * gap;
                    runs.push_n(ms(u64::MAX - before), 1);
                    runs.push_n(0.0, count - 2 - whole);
                }
            }
        }
        runs
    }
}

impl RequestRecord {
    /// The record's chunk times, as listed.
    pub fn chunks(&self) -> ChunkTimes<'_> {
        ChunkTimes::Listed(&self.chunk_ns)
    }

    /// Moves every time later by `shift_ns` (a shard's records onto the merged run's zero).
    pub fn rebase(&mut self, shift_ns: u64) {
        let s = |t: u64| t.saturating_add(shift_ns);
        self.scheduled_ns = s(self.scheduled_ns);
        self.dispatched_ns = self.dispatched_ns.map(s);
        self.sent_ns = s(self.sent_ns);
        self.first_byte_ns = self.first_byte_ns.map(s);
        for c in &mut self.chunk_ns {
            *c = s(*c);
        }
        self.end_ns = s(self.end_ns);
        if let Some(h) = &mut self.http {
            h.send_end_ns = s(h.send_end_ns);
            h.body_first_ns = h.body_first_ns.map(s);
            h.body_last_ns = h.body_last_ns.map(s);
        }
    }

    /// Cancelled in flight when the run was stopped.
    pub fn was_cancelled(&self) -> bool {
        self.error.as_ref().is_some_and(|e| e.kind == CANCELLED)
    }
}
