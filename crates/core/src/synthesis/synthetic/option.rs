//! The option names errors use (AIPerf's short spellings).

pub const ISL: &str = "--isl";
pub const ISL_STDDEV: &str = "--isl-stddev";
pub const OSL: &str = "--osl";
pub const OSL_STDDEV: &str = "--osl-stddev";
pub const ENTRIES: &str = "--num-dataset-entries";
pub const TURN_MEAN: &str = "--conversation-turn-mean";
pub const TURN_STDDEV: &str = "--conversation-turn-stddev";
pub const DELAY_MEAN: &str = "--conversation-turn-delay-mean";
pub const DELAY_STDDEV: &str = "--conversation-turn-delay-stddev";
pub const DELAY_RATIO: &str = "--conversation-turn-delay-ratio";
pub const POOL_SIZE: &str = "--prompt-prefix-pool-size";
pub const PREFIX_LENGTH: &str = "--prompt-prefix-length";
pub const SHARED_SYSTEM: &str = "--shared-system-prompt-length";
pub const USER_CONTEXT: &str = "--user-context-prompt-length";
pub const SEQ_DIST: &str = "--seq-dist";
pub const ISL_DIST: &str = "--isl-distribution";
pub const OSL_DIST: &str = "--osl-distribution";
pub const RANGE_RATIO: &str = "--random-range-ratio";
pub const BATCH_SIZE: &str = "--prompt-batch-size";
pub const BLOCK_SIZE: &str = "--isl-block-size";
