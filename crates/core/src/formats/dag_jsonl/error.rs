//! Why a `dag_jsonl` file cannot be replayed.

/// A `dag_jsonl` file that cannot be replayed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DagError {
    #[error("line {line}: invalid JSON: {message}")]
    Json { line: u32, message: String },
    /// A key of a line: its path (`turns.0.max_tokens`), what is accepted and the value given.
    #[error("line {line}: {field}: {expected}, got {value}")]
    Field { line: u32, field: String, expected: String, value: String },
    /// The conversations do not form a graph AIPerf replays.
    #[error("line {line}: {message}")]
    Graph { line: u32, message: String },
    #[error("the file holds no conversation; supply at least one conversation line")]
    Empty,
}
