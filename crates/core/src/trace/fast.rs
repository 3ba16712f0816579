//! A fast path for the common shape of a Mooncake row.
//!
//! Real traces are millions of lines like `{"timestamp": 27, "input_length": 6755,
//! "output_length": 500, "hash_ids": [0, 1, 2]}`. Going through serde costs ~280 instructions per
//! hash id; this scanner reads such rows directly with [`crate::json_scan`]. It accepts only a flat
//! object whose keys are `timestamp`, `input_length`, `output_length`, `hash_ids`, `delay`,
//! `session_id` and `conversation_id`, with plain integers (and plain strings for the two ids),
//! `input_length` present, no key twice. For anything else — floats, escapes, nulls, other fields,
//! any error — it returns `None` and the caller parses the line with the full serde path, which
//! also writes the error messages. A property test checks that both paths agree on every row the
//! fast path accepts.

use super::model::{Input, Number, Row};
use crate::json_scan::Cursor;

/// Parses `text` as a plain Mooncake row, pushing its ids onto `ids`. On `None`, `ids` may hold
/// a partial tail that the caller must truncate. The bytes need not be checked as UTF-8 first:
/// a row taken has ASCII tokens only but for its strings, each checked.
pub(super) fn parse(text: &[u8], ids: &mut Vec<u64>, line: u64) -> Option<Row> {
    let mut s = Cursor::new(text);
    s.ws();
    if !s.open(b'{', b'}')? {
        return None;
    }
    let mut row = Row::new(Input::Length(0));
    let mut seen = 0u8;
    let mut has_input = false;
    loop {
        let bit = match s.key()? {
            b"timestamp" => {
                row.timestamp = Some(Number::Int(s.int()?));
                1
            }
            b"input_length" => {
                row.input = Input::Length(s.int()?);
                has_input = true;
                2
            }
            b"output_length" => {
                row.output_length = Some(u64::try_from(s.int()?).ok()?);
                4
            }
            b"hash_ids" => {
                if s.open(b'[', b']')? {
                    loop {
                        ids.push(s.uint()?);
                        if !s.more(b']')? {
                            break;
                        }
                    }
                }
                8
            }
            b"delay" => {
                let d = s.int()?;
                if d < 0 {
                    return None;
                }
                row.delay = Some(Number::Int(d));
                16
            }
            b"session_id" => {
                row.session_id = Some(std::str::from_utf8(s.plain_str()?).ok()?.into());
                32
            }
            b"conversation_id" => {
                row.conversation = Some(std::str::from_utf8(s.plain_str()?).ok()?.into());
                64
            }
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if !s.more(b'}')? {
            break;
        }
    }
    if !s.at_end() || !has_input {
        return None;
    }
    row.line = u32::try_from(line).unwrap_or(u32::MAX);
    Some(row)
}
