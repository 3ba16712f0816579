//! Why a synthesis could not run, and the bounds of what it writes.

/// Most hash ids a synthesized trace may hold (2^28, 2 GiB of ids): past it synthesis stops with
/// [`SynthesisError::TooLarge`] instead of exhausting memory (a browser tab has 4 GiB at most).
pub const MAX_OUTPUT_IDS: u64 = 1 << 28;

/// Most rows a generator may write (2^26, 67 M): past it generation stops with an error instead
/// of exhausting memory.
pub const MAX_OUTPUT_ROWS: u64 = 1 << 26;

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
    /// A parameter is out of its range; `param` is its [`Param::key`](super::Param::key).
    #[error("{param} must be {expected}, got {value}")]
    InvalidParam { param: &'static str, expected: String, value: String },
    /// A scaled timestamp or length does not fit the trace format's integers.
    #[error("line {line}: {field} {value} scaled by the synthesis options exceeds the largest integer")]
    ValueOverflow { line: u32, field: &'static str, value: String },
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

/// `value` truncated to an `i64`, or `None` when it does not fit (a plain `as` cast saturates).
pub(crate) fn to_i64(value: f64) -> Option<i64> {
    // 2^63 is exactly representable; every finite f64 of smaller magnitude converts exactly.
    (value.is_finite() && value.abs() < 9_223_372_036_854_775_808.0).then_some(value as i64)
}

/// `value` truncated to a `u64`, or `None` when it does not fit.
pub(crate) fn to_u64(value: f64) -> Option<u64> {
    (0.0..18_446_744_073_709_551_616.0).contains(&value).then_some(value as u64)
}
