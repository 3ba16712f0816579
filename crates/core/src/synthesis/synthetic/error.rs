//! Why a synthetic workload cannot be generated, and the bounds that refuse it.

use std::fmt;

/// Most rows a synthetic trace may hold (a million-row trace costs about 100 MB; this is 64 times
/// that).
pub const MAX_ROWS: u64 = crate::synthesis::error::MAX_OUTPUT_ROWS;
/// Most hash ids a synthetic trace may hold (as every synthesis).
pub const MAX_IDS: u64 = crate::synthesis::error::MAX_OUTPUT_IDS;

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

pub(super) fn invalid(option: &'static str, expected: &str, value: impl fmt::Display) -> SyntheticError {
    SyntheticError::Invalid { option, expected: expected.to_string(), value: value.to_string() }
}
