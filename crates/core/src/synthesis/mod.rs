//! Trace synthesis: turn a trace into a new one with scaled prefixes, prompts, timing and output.
//!
//! - [`transform()`]: AIPerf's prefix synthesis (`--synthesis-*` options), row for row, with the same
//!   ids and random draws as AIPerf 0.13.0 for the same seed, minus its three defects;
//! - [`generate()`]: learn a trace's prefix tree and length/arrival distributions, then sample any
//!   number of new rows from them;
//! - [`fidelity`]: how close a synthesized trace's distributions are to the original's;
//! - [`rng`]: CPython-compatible MT19937 and AIPerf's seed derivation.
//!
//! All functions are pure and deterministic: the seed is a parameter.

pub mod fidelity;
pub mod generate;
pub mod rng;
pub mod transform;

pub use fidelity::{FidelityReport, MetricFidelity, fidelity_from_analyses, fidelity_report};
pub use generate::{GenerateParams, ModelStats, PrefixModel, generate};
pub use transform::{TransformParams, synthesize_direct, transform};

/// Most hash ids a synthesized trace may hold (2^28, 2 GiB of ids): past it synthesis stops with
/// [`SynthesisError::TooLarge`] instead of exhausting memory (a browser tab has 4 GiB at most).
pub const MAX_OUTPUT_IDS: u64 = 1 << 28;

/// Fails with [`SynthesisError::TooLarge`] if `have + more` ids exceed [`MAX_OUTPUT_IDS`].
pub(crate) fn room_for(have: usize, more: u64) -> Result<(), SynthesisError> {
    if (have as u64).saturating_add(more) > MAX_OUTPUT_IDS {
        Err(SynthesisError::TooLarge { limit: MAX_OUTPUT_IDS })
    } else {
        Ok(())
    }
}

/// Why a synthesis could not run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SynthesisError {
    /// A parameter is out of its domain; `param` is the field name of the params struct.
    #[error("{param} must be {expected}, got {value}")]
    InvalidParam { param: &'static str, expected: &'static str, value: String },
    /// Scaling a hash id would overflow 64 bits.
    #[error("line {line}: hash id {id} is too large to be scaled (prefix multipliers overflow 64-bit ids)")]
    IdOverflow { line: u32, id: u64 },
    /// The output would exceed [`MAX_OUTPUT_IDS`] hash ids (multipliers far too large).
    #[error(
        "the synthesized trace would hold more than {limit} hash ids; the multipliers are too large for this trace"
    )]
    TooLarge { limit: u64 },
    /// Generation needs at least one row with `input_length` to learn from.
    #[error("the trace has no rows with input_length to learn from")]
    NothingToLearn,
    /// Rows have `input_length` but none has `hash_ids`, which generation learns prefixes from.
    #[error(
        "the trace has {rows} row(s) with input_length but none with hash_ids: generation learns the prefix \
         structure from hash_ids (add them, e.g. with hash-prompts, or transform the trace instead of generating one)"
    )]
    NoHashIds { rows: usize },
    /// The ISL filter of generation rejects (almost) every sampled request.
    #[error(
        "the input-length filter [min_isl {min_isl}, max_isl {max_isl}] passed only {accepted} of {} sampled \
         requests (under 1%); the learned lengths almost never fall in this range", .accepted + .rejected
    )]
    FilterRejectsEverything { min_isl: u64, max_isl: String, accepted: usize, rejected: usize },
}

impl SynthesisError {
    /// The parameter at fault, if the error is about one.
    pub fn param(&self) -> Option<&'static str> {
        match self {
            SynthesisError::InvalidParam { param, .. } => Some(param),
            _ => None,
        }
    }
}

/// Checks `value > 0` and finite.
pub(crate) fn positive(param: &'static str, value: f64) -> Result<(), SynthesisError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(SynthesisError::InvalidParam { param, expected: "a finite number > 0", value: value.to_string() })
    }
}

/// Checks `value >= 0` and finite.
pub(crate) fn non_negative(param: &'static str, value: f64) -> Result<(), SynthesisError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(SynthesisError::InvalidParam { param, expected: "a finite number >= 0", value: value.to_string() })
    }
}

/// Checks an optional bound is at least 1.
pub(crate) fn at_least_one(param: &'static str, value: Option<u64>) -> Result<(), SynthesisError> {
    match value {
        Some(0) => Err(SynthesisError::InvalidParam { param, expected: "at least 1", value: "0".into() }),
        _ => Ok(()),
    }
}
