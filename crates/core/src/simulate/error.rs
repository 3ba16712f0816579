//! Why a cluster configuration cannot run.

/// Most replicas of one simulated cluster (each holds its own cache, queue and counters).
pub const MAX_REPLICAS: u32 = 4096;

/// A configuration that cannot run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimulateError {
    #[error("replicas must be 1 to {MAX_REPLICAS}, got {0}")]
    NoReplicas(u32),
    #[error("the block size must be at least 1 token, got 0")]
    ZeroBlockSize,
    #[error("{field} must be a finite number ≥ 0, got {value}")]
    BadEngine { field: &'static str, value: f64 },
    #[error("max running must be at least 1, got 0")]
    ZeroRunning,
    #[error("the trace has more than {} distinct hash ids", u32::MAX)]
    TooManyBlocks,
    #[error("the tokens of a step must be at least 1, got 0")]
    ZeroBatchTokens,
    #[error(
        "the numbered blocks are not the trace's: {numbered} rows numbered, the trace has {rows} rows, its last row's blocks ending at {reach} of {blocks}"
    )]
    BlockIdsOfAnotherTrace { numbered: usize, rows: usize, reach: usize, blocks: usize },
}
