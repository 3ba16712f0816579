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
//! `workload` holds the parameters and their checks, `lengths` reads the length distributions'
//! options (`--seq-dist`, `--random-range-ratio`), `dist` AIPerf's config-file distributions
//! (`--isl-distribution`, `--osl-distribution`: log-normal, mixtures of peaks, weighted points),
//! `normal` CPython's normal draws, `generate` draws the rows; `error` and `option` are what they
//! all report with.

mod dist;
mod error;
mod generate;
mod lengths;
mod normal;
pub mod option;
#[cfg(test)]
mod tests;
mod workload;

pub use dist::{DistError, LengthDist};
pub use error::{MAX_IDS, MAX_ROWS, SyntheticError};
pub use lengths::{CorpusStyle, RangeRatio, SeqBucket, SeqDist};
pub use workload::{DEFAULT_BLOCK_SIZE, DEFAULT_ENTRIES, DEFAULT_ISL, SyntheticWorkload};

use crate::trace::Trace;
use generate::Generator;
use normal::Normal;

impl SyntheticWorkload {
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
    let mut draws = Normal::new(seed, "composer.turn.max_tokens");
    let stddev = if stddev.is_finite() && stddev > 0.0 { stddev.trunc() } else { 0.0 };
    for i in order {
        if rows[i].output_length.is_none() {
            rows[i].output_length = Some(draws.positive_int(mean as f64, stddev));
        }
    }
}
