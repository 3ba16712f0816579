//! AIPerf's synthetic workloads (its `--isl`/`--osl`, `--num-dataset-entries`,
//! `--conversation-turn-*`, prefix prompt and `--seq-dist`/`--random-range-ratio` options) generated
//! as a Mooncake trace, so that they replay, export and analyze like any trace.
//!
//! A [`SyntheticWorkload`] holds AIPerf 0.13.0's parameters with its defaults and bounds;
//! [`SyntheticWorkload::generate`] turns it into a [`Trace`]: one conversation per dataset entry
//! (`session_id` `session_000000`, … as AIPerf names them when seeded), each with a number of turns
//! drawn as AIPerf draws them (a normal sample, truncated at 0, rounded up, at least 1), a `delay`
//! before every later turn when `--conversation-turn-delay-mean` is positive (the same draw, times
//! `--conversation-turn-delay-ratio`), an `input_length` per turn from the ISL distribution (normal
//! with `--isl-stddev`, a `--seq-dist` bucket, or the `--random-range-ratio` window) and an
//! `output_length` from the OSL distribution (none without `--osl`, as AIPerf then sends no
//! `max_tokens`).
//!
//! **Lengths and history.** Our replay threads a session's history as AIPerf does (its default
//! `deltas_without_responses`): a later turn sends the earlier prompts and the server's live
//! replies before its new prompt, so a row's `input_length` counts the *new* tokens of its turn
//! only. The first turn of a conversation carries what AIPerf sends once per conversation ahead of
//! the first user message: the shared system prompt (`--shared-system-prompt-length`), the user
//! context (`--user-context-prompt-length`) or the pool prefix (`--prompt-prefix-length`), so its
//! `input_length` is their length plus the sampled ISL (AIPerf's prefix is additive too: `--isl`
//! sizes the body). Later turns carry these tokens through the history, as in AIPerf.
//!
//! **Sharing as hash ids.** `hash_ids` are what hashing AIPerf's prompts at `block_size` tokens a
//! block would give: a block is shared when every token up to its end is shared. The shared system
//! prompt's whole blocks are the same ids on every conversation; each pool prefix's whole blocks are
//! the same ids on every conversation that drew it; every other block (the user context, the body,
//! the block where shared text meets unique text) gets a fresh id. A prefix shorter than a block
//! (AIPerf's `--prefix-prompt-length 64` at the default 512) therefore shares no block: choose a
//! smaller `--isl-block-size` to see it.
//!
//! **Where the rows differ from AIPerf's prompts.** We write lengths and block ids, not AIPerf's
//! token stream (the replay builds the text). The turn counts, delays, ISLs, OSLs, `--seq-dist`
//! buckets and prefix choices are drawn with AIPerf's generators for the same seed (CPython's
//! Mersenne Twister and `gauss`, seeded by [`derive_seed`] per component, one component per
//! quantity as AIPerf), so for the same `--random-seed` they are AIPerf's values, up to the last bit
//! of a `cos`/`log` in a rare sample. The exceptions: AIPerf subtracts the tokens its tokenizer adds
//! (BOS) from `--isl` and, with `--apply-chat-template`, the template's tokens; we count the
//! prompt's tokens as `--isl` (the core knows no tokenizer). The `--random-range-ratio` window is
//! AIPerf's, but drawn with our generator (AIPerf uses NumPy's PCG64 for it), so those lengths
//! follow the same distribution without being the same numbers. AIPerf without `--random-seed`
//! draws from the OS; here the seed is always a parameter.
//!
//! `lengths` reads the length distributions' options (`--seq-dist`, `--random-range-ratio`),
//! `dist` AIPerf's config-file distributions (`--isl-distribution`, `--osl-distribution`: log-normal,
//! mixtures of peaks, weighted points), `generate` draws the rows.

mod dist;
mod generate;
mod lengths;
#[cfg(test)]
mod tests;

use std::fmt;

pub use dist::{DistError, LengthDist};
pub use lengths::{CorpusStyle, RangeRatio, SeqBucket, SeqDist};

use crate::trace::Trace;
use generate::Generator;

/// AIPerf's default `--prompt-input-tokens-mean`.
pub const DEFAULT_ISL: u64 = 550;
/// AIPerf's default `--num-dataset-entries`.
pub const DEFAULT_ENTRIES: u64 = 100;
/// AIPerf's default `--prompt-input-tokens-block-size` for Mooncake traces.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;
/// Most rows a synthetic trace may hold (a million-row trace costs about 100 MB; this is 64 times
/// that).
pub const MAX_ROWS: u64 = super::error::MAX_OUTPUT_ROWS;
/// Most hash ids a synthetic trace may hold (as every synthesis).
pub const MAX_IDS: u64 = super::error::MAX_OUTPUT_IDS;

/// The option names errors use (AIPerf's short spellings).
pub mod option {
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
}

/// Why a synthetic workload cannot be generated; every variant names the option at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SyntheticError {
    /// An option's value is out of AIPerf's bounds or cannot be read.
    #[error("{option} must be {expected}, got {value}")]
    Invalid { option: &'static str, expected: String, value: String },
    /// Two options AIPerf does not take together.
    #[error("{first} and {second} are mutually exclusive ({why})")]
    Conflict { first: &'static str, second: &'static str, why: &'static str },
    /// An option that needs another one.
    #[error("{option} needs {needs} ({why})")]
    Needs { option: &'static str, needs: &'static str, why: &'static str },
    /// The trace would exceed [`MAX_ROWS`] rows or [`MAX_IDS`] hash ids.
    #[error(
        "the synthetic trace would hold more than {limit} {what}; lower --num-dataset-entries, the turns or the lengths"
    )]
    TooLarge { what: &'static str, limit: u64 },
}

impl SyntheticError {
    /// The option at fault (the first one of a conflict).
    pub fn option(&self) -> Option<&'static str> {
        match self {
            SyntheticError::Invalid { option, .. } | SyntheticError::Needs { option, .. } => Some(option),
            SyntheticError::Conflict { first, .. } => Some(first),
            SyntheticError::TooLarge { .. } => None,
        }
    }
}

fn invalid(option: &'static str, expected: &str, value: impl fmt::Display) -> SyntheticError {
    SyntheticError::Invalid { option, expected: expected.to_string(), value: value.to_string() }
}

/// AIPerf's synthetic dataset parameters (names as its options; defaults as AIPerf 0.13.0).
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticWorkload {
    /// `--num-dataset-entries`: conversations.
    pub entries: u64,
    /// `--isl` (`None`: AIPerf's 550).
    pub isl_mean: Option<u64>,
    /// `--isl-stddev` (AIPerf truncates it to an integer).
    pub isl_stddev: f64,
    /// `--osl` (`None`: no `output_length`, as AIPerf then sends no `max_tokens`).
    pub osl_mean: Option<u64>,
    /// `--osl-stddev` (truncated to an integer).
    pub osl_stddev: f64,
    /// `--conversation-turn-mean` (truncated to an integer, at least 1).
    pub turn_mean: f64,
    /// `--conversation-turn-stddev` (truncated).
    pub turn_stddev: f64,
    /// `--conversation-turn-delay-mean`, milliseconds (truncated); 0: no delays.
    pub delay_mean: f64,
    /// `--conversation-turn-delay-stddev`, milliseconds (truncated).
    pub delay_stddev: f64,
    /// `--conversation-turn-delay-ratio`: multiplies every delay.
    pub delay_ratio: f64,
    /// `--prompt-prefix-pool-size` (`None`: not given).
    pub prefix_pool_size: Option<u64>,
    /// `--prompt-prefix-length` (`None`: not given).
    pub prefix_length: Option<u64>,
    /// `--shared-system-prompt-length`.
    pub shared_system_length: Option<u64>,
    /// `--user-context-prompt-length`.
    pub user_context_length: Option<u64>,
    /// `--seq-dist`.
    pub seq_dist: Option<SeqDist>,
    /// `--isl-distribution`: the ISL drawn from a config-file distribution instead of `--isl`.
    pub isl_dist: Option<LengthDist>,
    /// `--osl-distribution`: the OSL drawn from a config-file distribution instead of `--osl`.
    pub osl_dist: Option<LengthDist>,
    /// `--random-range-ratio` (with `--random-corpus-style`).
    pub range_ratio: Option<RangeRatio>,
    /// `--prompt-batch-size` (only 1: AIPerf batches prompts for embeddings and rankings only).
    pub batch_size: u64,
    /// Tokens per hash id block (`--isl-block-size`).
    pub block_size: u32,
}

impl Default for SyntheticWorkload {
    fn default() -> Self {
        SyntheticWorkload {
            entries: DEFAULT_ENTRIES,
            isl_mean: None,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            turn_mean: 1.0,
            turn_stddev: 0.0,
            delay_mean: 0.0,
            delay_stddev: 0.0,
            delay_ratio: 1.0,
            prefix_pool_size: None,
            prefix_length: None,
            shared_system_length: None,
            user_context_length: None,
            seq_dist: None,
            isl_dist: None,
            osl_dist: None,
            range_ratio: None,
            batch_size: 1,
            block_size: DEFAULT_BLOCK_SIZE,
        }
    }
}

/// A finite, non-negative value.
fn non_negative(option: &'static str, v: f64) -> Result<(), SyntheticError> {
    if v.is_finite() && v >= 0.0 { Ok(()) } else { Err(invalid(option, "a finite number ≥ 0", v)) }
}

impl SyntheticWorkload {
    /// The ISL mean in effect.
    pub fn isl(&self) -> u64 {
        self.isl_mean.unwrap_or(DEFAULT_ISL)
    }

    /// Pool prefixes are prepended (AIPerf: a positive `--prompt-prefix-length`).
    fn prefix_enabled(&self) -> bool {
        self.prefix_length.is_some_and(|l| l > 0)
    }

    /// Checks every parameter against AIPerf's bounds and combinations.
    pub fn validate(&self) -> Result<(), SyntheticError> {
        use option::*;
        if self.entries == 0 {
            return Err(invalid(ENTRIES, "at least 1", 0));
        }
        if self.isl() == 0 && self.seq_dist.is_none() {
            return Err(invalid(ISL, "at least 1 (text is the synthetic payload generated here)", 0));
        }
        for (o, v) in [
            (ISL_STDDEV, self.isl_stddev),
            (OSL_STDDEV, self.osl_stddev),
            (TURN_STDDEV, self.turn_stddev),
            (DELAY_MEAN, self.delay_mean),
            (DELAY_STDDEV, self.delay_stddev),
            (DELAY_RATIO, self.delay_ratio),
        ] {
            non_negative(o, v)?;
        }
        if !(self.turn_mean.is_finite() && self.turn_mean >= 1.0) {
            return Err(invalid(TURN_MEAN, "at least 1", self.turn_mean));
        }
        if self.batch_size != 1 {
            let expected = "1 here (AIPerf batches prompts for embeddings and rankings endpoints only)";
            return Err(invalid(BATCH_SIZE, expected, self.batch_size));
        }
        if self.block_size == 0 {
            return Err(invalid(BLOCK_SIZE, "at least 1", 0));
        }
        for (o, v) in [(SHARED_SYSTEM, self.shared_system_length), (USER_CONTEXT, self.user_context_length)] {
            if v == Some(0) {
                return Err(invalid(o, "at least 1", 0));
            }
        }
        let pool_group = [(POOL_SIZE, self.prefix_pool_size), (PREFIX_LENGTH, self.prefix_length)];
        let system_group = [(SHARED_SYSTEM, self.shared_system_length), (USER_CONTEXT, self.user_context_length)];
        if let (Some((first, _)), Some((second, _))) =
            (pool_group.iter().find(|(_, v)| v.is_some()), system_group.iter().find(|(_, v)| v.is_some()))
        {
            let why = "a pool prefix or a shared system prompt with user context, not both";
            return Err(SyntheticError::Conflict { first, second, why });
        }
        if self.prefix_enabled() && self.prefix_pool_size.unwrap_or(0) == 0 {
            let why = "AIPerf stops with \"the prefix prompts pool is empty\"";
            return Err(SyntheticError::Needs {
                option: PREFIX_LENGTH,
                needs: "a --prompt-prefix-pool-size of at least 1",
                why,
            });
        }
        for (dist, o, mean, stddev, sd) in [
            (&self.isl_dist, ISL_DIST, ISL, ISL_STDDEV, self.isl_stddev),
            (&self.osl_dist, OSL_DIST, OSL, OSL_STDDEV, self.osl_stddev),
        ] {
            if dist.is_none() {
                continue;
            }
            let why = "both give the length distribution";
            let mean_given = if o == ISL_DIST { self.isl_mean.is_some() } else { self.osl_mean.is_some() };
            let other = [(SEQ_DIST, self.seq_dist.is_some()), (RANGE_RATIO, self.range_ratio.is_some())]
                .into_iter()
                .chain([(mean, mean_given), (stddev, sd != 0.0)])
                .find(|(_, given)| *given);
            if let Some((second, _)) = other {
                return Err(SyntheticError::Conflict { first: o, second, why });
            }
        }
        if self.seq_dist.is_some() && self.range_ratio.is_some() {
            let why = "both draw the ISL and OSL";
            return Err(SyntheticError::Conflict { first: RANGE_RATIO, second: SEQ_DIST, why });
        }
        if let Some(r) = &self.range_ratio {
            r.validate()?;
            if self.isl_mean.is_none() {
                let why = "the window is around the --isl mean, which has no default here";
                return Err(SyntheticError::Needs { option: RANGE_RATIO, needs: "--isl", why });
            }
            if self.osl_mean.is_none_or(|o| o == 0) {
                let why = "the window is around the --osl mean, which has no default";
                return Err(SyntheticError::Needs { option: RANGE_RATIO, needs: "--osl of at least 1", why });
            }
            for (o, v) in [(ISL_STDDEV, self.isl_stddev), (OSL_STDDEV, self.osl_stddev)] {
                if v != 0.0 {
                    let why = "the ratio window already sets the variance";
                    return Err(SyntheticError::Conflict { first: o, second: RANGE_RATIO, why });
                }
            }
            let (low, _) = r.input_bounds(self.isl());
            if r.style == CorpusStyle::Vllm && self.prefix_length.unwrap_or(0) + low < 1 {
                let value = format!("{} with --isl {} (a minimum input of 0 tokens)", r.input, self.isl());
                return Err(invalid(RANGE_RATIO, "a window whose minimum is at least 1 token", value));
            }
        }
        let (isl_mean, _) = self.seq_dist.as_ref().map_or((self.isl() as f64, 0.0), SeqDist::means);
        let isl_mean = self.isl_dist.as_ref().map_or(isl_mean, LengthDist::mean);
        let expected_rows = self.entries as f64 * self.turn_mean.trunc();
        if expected_rows > MAX_ROWS as f64 {
            return Err(SyntheticError::TooLarge { what: "rows", limit: MAX_ROWS });
        }
        if expected_rows * (isl_mean / f64::from(self.block_size)).ceil().max(1.0) > MAX_IDS as f64 {
            return Err(SyntheticError::TooLarge { what: "hash ids", limit: MAX_IDS });
        }
        Ok(())
    }

    /// The trace of this workload for `seed` (AIPerf's `--random-seed`).
    pub fn generate(&self, seed: u64) -> Result<Trace, SyntheticError> {
        self.validate()?;
        let mut g = Generator::new(self, seed);
        let mut trace = Trace::with_capacity(self.entries.min(MAX_ROWS) as usize, 0);
        for conversation in 0..self.entries {
            g.conversation(conversation, &mut trace)?;
        }
        Ok(trace)
    }
}

/// AIPerf's `--osl`/`--osl-stddev` on a dataset file (its composer's `_set_max_tokens`): every
/// row without an `output_length` gets one drawn with AIPerf's max-tokens generator for `seed`
/// (a normal draw of mean `mean` and the whole part of `stddev`, truncated at 0, rounded up, at
/// least 1). Draws follow AIPerf's order: conversation by conversation (a `session_id`'s rows
/// in the order of its first row; a row without one is a conversation of its own), turn by turn.
/// Rows with an `output_length` keep it; a `mean` of 0 draws nothing, as AIPerf's does.
pub fn fill_output_lengths(trace: &mut Trace, seed: u64, mean: u64, stddev: f64) {
    if mean == 0 {
        return;
    }
    let rows = trace.rows_mut();
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let conversation: Vec<usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| match &r.session_id {
            Some(s) => *first.entry(s).or_insert(i),
            None => i,
        })
        .collect();
    drop(first);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| conversation[i]);
    let mut draws = generate::Normal::new(seed, "composer.turn.max_tokens");
    let stddev = if stddev.is_finite() && stddev > 0.0 { stddev.trunc() } else { 0.0 };
    for i in order {
        if rows[i].output_length.is_none() {
            rows[i].output_length = Some(draws.positive_int(mean as f64, stddev));
        }
    }
}
