//! AIPerf's synthetic dataset parameters with its defaults, and their checks against its bounds
//! and combinations.

use super::dist::LengthDist;
use super::error::{MAX_IDS, MAX_ROWS, SyntheticError, invalid};
use super::lengths::{CorpusStyle, RangeRatio, SeqDist};
use super::option;

/// AIPerf's default `--prompt-input-tokens-mean`.
pub const DEFAULT_ISL: u64 = 550;
/// AIPerf's default `--num-dataset-entries`.
pub const DEFAULT_ENTRIES: u64 = 100;
/// AIPerf's default `--prompt-input-tokens-block-size` for Mooncake traces.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;
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
    pub(super) fn prefix_enabled(&self) -> bool {
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
}
