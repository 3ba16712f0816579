//! A request's line of `profile_export.jsonl`, written ([`record_line`]) and read back
//! ([`read_line`]) here and nowhere else.
//!
//! The line is AIPerf's `MetricRecordInfo` (AIPerf's readers, `aiperf plot` and `analyze
//! swim-lane`, take it) with the record's own fields beside AIPerf's in its metadata. The reader
//! takes three kinds of line: ours, AIPerf's own (wall-clock times, token counts from its
//! metrics, warm-up requests skipped), and those of earlier versions of this tool (bare metric
//! values, `session_run`, the error in the metadata).
//!
//! [`parse_fast`] reads the common form (strings without escapes) with [`crate::json_scan`] into
//! a reused record: no JSON tree, no `String` per record (the record's strings and `chunk_ns`
//! keep their allocations from line to line), only the metrics a record is rebuilt from read,
//! the others checked and skipped. It gives up (`None`) on anything it does not fully understand
//! — escapes, repeated keys, numbers that are not plain integers where integers are expected,
//! nesting deeper than [`crate::json_scan::MAX_DEPTH`] — and the caller then parses the line
//! with serde ([`parse_serde`]), which also words the error. Whatever it accepts, serde accepts
//! with the same record (a differential property test and the `parse_run_line` fuzz target check
//! it), so the fast path is never wrong, only sometimes skipped.
//!
//! `write` writes the line, `fast` and `reference` read it, both through the rules of
//! `assemble`.

mod assemble;
mod fast;
mod reference;
#[cfg(test)]
mod tests;
mod write;

pub use fast::parse_fast;
pub use reference::parse_serde;
pub(super) use write::{ErrorOut, Meta, error_out, metadata};
pub use write::{RECORD_PROCESSOR_ID, WORKER_ID, record_line};

use crate::results::record::RequestRecord;

/// The name of the per-request export.
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// Reads one line of `profile_export.jsonl` (ours, AIPerf's, or one written by an earlier
/// version of this tool) into `rec`: `Ok(false)` for a blank line or a warm-up request, else
/// the record, by the fast path when it reads the line ([`parse_fast`], `rec`'s allocations
/// reused), by serde otherwise, whose error says what is wrong.
pub fn read_line(raw: &[u8], rec: &mut RequestRecord) -> Result<bool, serde_json::Error> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(false);
    }
    match parse_fast(raw, rec) {
        Some(read) => Ok(read),
        None => match parse_serde(raw)? {
            Some(r) => {
                *rec = r;
                Ok(true)
            }
            None => Ok(false),
        },
    }
}
