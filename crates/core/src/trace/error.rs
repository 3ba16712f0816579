//! Errors of reading a trace: one [`RowError`] per rejected line, gathered into a [`TraceError`].

use std::fmt;
use std::sync::Arc;

/// Why one line of a trace was rejected: `file:line: field 'x': reason`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowError {
    /// The file (or other source) name given in [`super::ParseOptions`].
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: u64,
    /// The offending field (`hash_ids[3]`, `messages[0]`), when the problem is one field.
    pub field: Option<String>,
    pub reason: String,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}:{}: field '{}': {}", self.file, self.line, field, self.reason),
            None => write!(f, "{}:{}: {}", self.file, self.line, self.reason),
        }
    }
}

impl std::error::Error for RowError {}

/// Reading a trace failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// Some rows are invalid (and skipping them was not asked for).
    #[error("{file}: {total} invalid row(s){}:\n{}", if *.total > .errors.len() as u64 { format!(" (first {} shown)", .errors.len()) } else { String::new() }, list(.errors))]
    InvalidRows { file: Arc<str>, errors: Vec<RowError>, total: u64 },
    /// A line is longer than [`super::ParseOptions::max_line_bytes`] (reading stopped there).
    #[error(
        "{file}:{line}: the line is longer than {limit} bytes, the most a line may hold (raise it with \
         --max-line-bytes if the file is right){}",
        if *.cr_only { "; the file holds carriage returns (CR, \\r) but no line feed: it seems to use CR-only line \
         endings, convert them to LF (e.g. `tr '\\r' '\\n'`)" } else { "" }
    )]
    LineTooLong { file: Arc<str>, line: u64, limit: usize, cr_only: bool },
    /// The underlying reader failed.
    #[error("{file}: read error after line {line}: {error}")]
    Read { file: Arc<str>, line: u64, error: std::io::Error },
}

fn list(errors: &[RowError]) -> String {
    errors.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n")
}
