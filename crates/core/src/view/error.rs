//! Why a run cannot be read.

/// A run that cannot be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error("{file}:{line}: {field}: {reason}")]
    Line { file: String, line: u64, field: String, reason: String },
    #[error("{file}:{line}: line longer than {limit} bytes (is this a profile_export.jsonl?)")]
    LineTooLong { file: String, line: u64, limit: usize },
    #[error("{file}: {reason}")]
    Config { file: String, reason: String },
    #[error("{file}: no request record (expected profile_export.jsonl lines with a \"metadata\" object)")]
    Empty { file: String },
}
