//! Errors of converting a production trace: where (file, line, field), what was found and what
//! the format accepts.

use std::fmt;
use std::sync::Arc;

/// A position in a source file: a 1-based line, or none for a whole-document format (WEKA JSON)
/// where the field path says where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line(pub Option<u64>);

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(l) => write!(f, ":{l}"),
            None => Ok(()),
        }
    }
}

/// Converting a trace failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// One field of one record has a value the format does not accept.
    #[error("{file}{line}: field '{field}': found {value}, expected {expected}")]
    Field { file: Arc<str>, line: Line, field: String, value: String, expected: String },
    /// A record (or the whole file) does not have the format's shape.
    #[error("{file}{line}: {reason}")]
    Shape { file: Arc<str>, line: Line, reason: String },
    /// The conversion options are contradictory or out of range.
    #[error("{0}")]
    Options(String),
    /// The content matches none of the formats.
    #[error("cannot tell the trace format: {evidence}; accepted: {accepted}")]
    Unknown { evidence: String, accepted: &'static str },
    /// The content is a known file of another kind (an analysis, a run's summary), not a trace.
    #[error("not a trace ({what}); accepted: {accepted}")]
    NotATrace { what: String, accepted: &'static str },
}

/// A short, quoted rendering of an offending value.
pub(crate) fn shown(value: &str) -> String {
    let mut s: String = value.chars().take(40).collect();
    if s.len() < value.len() {
        s.push('…');
    }
    format!("{s:?}")
}
