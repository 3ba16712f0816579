//! What a simulation gives: each request, each replica's counts and samples over time.

use serde::{Deserialize, Serialize};

use crate::results::record::{ChunkTimes, RequestRecord, ServerUsage};
use crate::trace::Row;

/// One simulated request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimRequest {
    /// Index of the trace row.
    pub row: u32,
    pub replica: u32,
    /// Index of the session run and the turn in it.
    pub run: u32,
    pub turn: u32,
    /// Arrival at the router, start of prefill, first token, end (ns from the start).
    pub arrival_ns: u64,
    pub start_ns: u64,
    pub first_token_ns: u64,
    pub end_ns: u64,
    /// Time between output tokens.
    pub itl_ns: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens served from the cache ([`engine_cached_tokens`] of the hit blocks).
    pub cached_tokens: u64,
    /// Prompt blocks (hash ids) and the leading ones found in the cache.
    pub blocks: u32,
    pub hit_blocks: u32,
}

impl SimRequest {
    /// The request as a run's record: sent at its arrival, a chunk per output token, the server's
    /// usage with the cached tokens, the replica as its URL index.
    pub fn record(&self, rows: &[Row]) -> RequestRecord {
        RequestRecord { chunk_ns: self.chunks().to_vec(), ..self.record_without_chunks(rows) }
    }

    /// Its chunks: one an output token, the first at its first token, then one every `itl_ns`.
    pub fn chunks(&self) -> ChunkTimes<'static> {
        ChunkTimes::Even { first: self.first_token_ns, gap: self.itl_ns, count: self.output_tokens }
    }

    /// [`SimRequest::record`] without its chunks listed (they are [`SimRequest::chunks`]), for
    /// [`crate::results::aggregate::Aggregate::add_chunks`].
    pub fn record_without_chunks(&self, rows: &[Row]) -> RequestRecord {
        let row = rows.get(self.row as usize);
        RequestRecord {
            session_id: row.and_then(|r| r.session_id.as_deref().or(r.conversation_id())).map(str::to_string),
            trace_line: row.map_or(self.row + 1, |r| if r.line == 0 { self.row + 1 } else { r.line }),
            ..self.record_for_metrics()
        }
    }

    /// [`SimRequest::record_without_chunks`] without what the trace's row adds, which no metric
    /// reads: no session, and the row's index as its line.
    pub fn record_for_metrics(&self) -> RequestRecord {
        RequestRecord {
            session_id: None,
            request_id: None,
            correlation_id: None,
            session_num: self.run,
            turn: self.turn,
            trace_line: self.row + 1,
            scheduled_ns: self.arrival_ns,
            dispatched_ns: None,
            sent_ns: self.arrival_ns,
            first_byte_ns: Some(self.first_token_ns),
            chunk_ns: Vec::new(),
            end_ns: self.end_ns,
            streaming: true,
            input_tokens: Some(self.input_tokens),
            output_tokens: Some(self.output_tokens),
            max_tokens: Some(self.output_tokens),
            usage: ServerUsage {
                prompt_tokens: Some(self.input_tokens),
                completion_tokens: Some(self.output_tokens),
                cached_tokens: Some(self.cached_tokens),
                first_chunk_tokens: None,
            },
            expected_cached_tokens: None,
            error: None,
            url_index: Some(self.replica),
            http: None,
        }
    }
}

/// What one replica saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaStats {
    pub requests: u64,
    pub input_tokens: u64,
    pub cached_tokens: u64,
    /// Rows with hash ids, and the sum of their hit fractions (hit blocks / blocks).
    pub rows_with_blocks: u64,
    pub hit_fraction_sum: f64,
    pub evictions: u64,
    pub peak_waiting: u64,
    pub peak_running: u64,
    pub peak_blocks: u64,
    /// Running requests preempted for a block another running request needed ([`Steps`] only).
    #[serde(default)]
    pub preemptions: u64,
}

impl ReplicaStats {
    /// Cached prompt tokens over prompt tokens.
    pub fn token_hit_rate(&self) -> f64 {
        if self.input_tokens == 0 { 0.0 } else { self.cached_tokens as f64 / self.input_tokens as f64 }
    }

    /// Mean over rows with hash ids of the fraction of leading blocks that hit (`analyze-trace`'s
    /// per-row hit rate).
    pub fn row_hit_rate(&self) -> f64 {
        if self.rows_with_blocks == 0 { 0.0 } else { self.hit_fraction_sum / self.rows_with_blocks as f64 }
    }

    fn add(&mut self, o: &ReplicaStats) {
        self.requests += o.requests;
        self.input_tokens += o.input_tokens;
        self.cached_tokens += o.cached_tokens;
        self.rows_with_blocks += o.rows_with_blocks;
        self.hit_fraction_sum += o.hit_fraction_sum;
        self.evictions += o.evictions;
        self.peak_waiting = self.peak_waiting.max(o.peak_waiting);
        self.peak_running = self.peak_running.max(o.peak_running);
        self.peak_blocks = self.peak_blocks.max(o.peak_blocks);
        self.preemptions += o.preemptions;
    }
}

/// A replica's state at one sampled time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub t_ns: u64,
    pub replica: u32,
    /// Blocks held, and those pinned by running requests.
    pub blocks: u64,
    pub pinned: u64,
    pub waiting: u32,
    pub running: u32,
}

/// The result of one simulation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Simulation {
    /// Requests in the order they started (none when the observer keeps none,
    /// [`Observer::keep_requests`](super::Observer::keep_requests)).
    pub requests: Vec<SimRequest>,
    pub replicas: Vec<ReplicaStats>,
    pub samples: Vec<Sample>,
}

impl Simulation {
    /// The whole cluster's counts.
    pub fn total(&self) -> ReplicaStats {
        let mut t = ReplicaStats::default();
        for r in &self.replicas {
            t.add(r);
        }
        t
    }

    /// Times to first token (ms) from each request's arrival, sorted.
    pub fn ttft_ms(&self) -> Vec<f64> {
        self.sorted_ms(|r| r.first_token_ns.saturating_sub(r.arrival_ns))
    }

    /// Request latencies (ms) from each request's arrival, sorted.
    pub fn latency_ms(&self) -> Vec<f64> {
        self.sorted_ms(|r| r.end_ns.saturating_sub(r.arrival_ns))
    }

    fn sorted_ms(&self, ns: impl Fn(&SimRequest) -> u64) -> Vec<f64> {
        crate::stats::sorted(&self.requests.iter().map(|r| ns(r) as f64 / 1e6).collect::<Vec<_>>())
    }

    /// Routing balance: the busiest replica's requests over the mean (1 = even).
    pub fn imbalance(&self) -> f64 {
        let n = self.replicas.len().max(1) as f64;
        let total: u64 = self.replicas.iter().map(|r| r.requests).sum();
        let max = self.replicas.iter().map(|r| r.requests).max().unwrap_or(0);
        if total == 0 { 1.0 } else { max as f64 / (total as f64 / n) }
    }
}
