//! Streaming, validating JSONL reader for Mooncake traces: lines in, rows out, each line read as
//! one row by [`super::row`] (the fast path, else serde with the visitors of [`super::visit`]),
//! each error named by file and line: `trace.jsonl:17: field 'input_length': expected an
//! integer, found "abc"`.
//!
//! [`read`] never holds more than [`ParseOptions::max_line_bytes`] of one line: a line without an
//! end (a gzip bomb of zeros, a file with CR-only line endings) stops the read with
//! [`TraceError::LineTooLong`](crate::trace::TraceError::LineTooLong) instead of growing without bound. A UTF-8 byte order mark at the
//! start of the file is skipped (editors on Windows write one); anywhere else it is named in the
//! error, since it is invisible when printed.

mod parser;
mod read;
#[cfg(test)]
mod tests;

pub use parser::{DEFAULT_MAX_LINE_BYTES, ParseOptions, ParseOutcome, TraceParser, parse_str};
pub use read::{LineRead, read, read_each, read_line_capped};
