//! One cluster configuration: replicas, capacity, router, engine timing, and the routers.

use serde::{Deserialize, Serialize};

use super::cache::Policy;
use super::engine::Steps;
use super::error::{MAX_REPLICAS, SimulateError};
use super::timing::Engine;

/// Where a request goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Router {
    /// Replicas in turn, request by request.
    RoundRobin,
    /// A replica drawn uniformly from the seeded generator.
    Random,
    /// All turns of a session run on one replica: the run's index modulo the replicas, as
    /// `profile --url A --url B` assigns sessions to URLs.
    SessionAffinity,
    /// The replica with the fewest requests running or waiting (the lowest index on ties).
    LeastLoaded,
    /// NVIDIA Dynamo's KV router cost: the replica minimising `overlap_weight × prefill_blocks +
    /// decode_blocks`, where `prefill_blocks` are the request's blocks not cached there plus
    /// those its waiting requests still have to prefill, and `decode_blocks` the blocks its
    /// running requests hold plus the request's own (the lowest index on ties).
    #[default]
    KvAware,
}

impl Router {
    /// The name on the command line and in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Router::RoundRobin => "round-robin",
            Router::Random => "random",
            Router::SessionAffinity => "session-affinity",
            Router::LeastLoaded => "least-loaded",
            Router::KvAware => "kv-aware",
        }
    }
}

/// One cluster configuration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub replicas: u32,
    /// KV capacity of each replica in blocks; `None`: unbounded.
    pub kv_blocks: Option<u64>,
    /// Tokens per block (the trace's hash-id block size).
    pub block_size: u32,
    pub policy: Policy,
    pub router: Router,
    /// The weight of prefill blocks in the KV-aware cost (Dynamo's `overlap_score_weight`).
    pub overlap_weight: f64,
    /// Most requests running at once on a replica; `None`: no cap.
    pub max_running: Option<u32>,
    pub engine: Engine,
    /// Seed of the random router.
    pub seed: u64,
    /// Interval of the sampled series (KV usage, queue, running), in nanoseconds; 0: none.
    pub sample_every_ns: u64,
    /// Whether output tokens take KV blocks as they are decoded ([`OutputBlocks`]), as vLLM's
    /// do; without, a request holds its prompt's blocks only (what `analyze-trace`'s LRU curve
    /// counts).
    #[serde(default = "yes")]
    pub output_blocks: bool,
    /// Time in engine steps with a token budget ([`Steps`]: chunked prefill, preemption); `None`:
    /// each request timed on its own by [`Engine`].
    #[serde(default)]
    pub steps: Option<Steps>,
}

fn yes() -> bool {
    true
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            replicas: 1,
            kv_blocks: None,
            block_size: crate::analysis::DEFAULT_BLOCK_SIZE,
            policy: Policy::Lru,
            router: Router::KvAware,
            overlap_weight: 1.0,
            max_running: None,
            engine: Engine::default(),
            seed: 0,
            sample_every_ns: 0,
            output_blocks: true,
            steps: None,
        }
    }
}

impl Cluster {
    pub(super) fn check(&self) -> Result<(), SimulateError> {
        if !(1..=MAX_REPLICAS).contains(&self.replicas) {
            return Err(SimulateError::NoReplicas(self.replicas));
        }
        if self.block_size == 0 {
            return Err(SimulateError::ZeroBlockSize);
        }
        if self.max_running == Some(0) {
            return Err(SimulateError::ZeroRunning);
        }
        let e = &self.engine;
        for (field, value) in [
            ("prefill fixed time", e.prefill_fixed_us),
            ("prefill time per token", e.prefill_per_token_us),
            ("decode fixed time", e.decode_fixed_us),
            ("decode time per running request", e.decode_per_running_us),
            ("overlap weight", self.overlap_weight),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(SimulateError::BadEngine { field, value });
            }
        }
        if let Some(steps) = &self.steps {
            steps.check()?;
        }
        Ok(())
    }
}
