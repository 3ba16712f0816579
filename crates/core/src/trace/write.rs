//! Writing rows back as compact JSONL.
//!
//! Fields come out in one fixed order (`timestamp, session_id, conversation_id, delay, <input>, output_length,
//! hash_ids, tools, extra`, then unknown fields as read), which is the Mooncake order for plain
//! Mooncake rows, so reading and writing such a file reproduces it byte for byte when it was
//! written compactly.

use std::fmt::Write as _;

use serde_json::Value;

use super::model::{Input, Number, Row, Trace};

/// Appends one row as a JSON object (no newline) to `out`.
pub fn write_row(out: &mut String, row: &Row, hash_ids: &[u64]) {
    let mut obj = ObjectWriter { out, first: true };
    if let Some(t) = row.timestamp {
        obj.key("timestamp");
        write_number(obj.out, t);
    }
    if let Some(s) = &row.session_id {
        obj.key("session_id");
        write_str(obj.out, s);
    }
    if let Some(c) = row.conversation_id() {
        obj.key("conversation_id");
        write_str(obj.out, c);
    }
    if let Some(d) = row.delay {
        obj.key("delay");
        write_number(obj.out, d);
    }
    match &row.input {
        Input::Length(n) => {
            obj.key("input_length");
            write_int(obj.out, *n);
        }
        Input::Text(t) => {
            obj.key("text_input");
            write_str(obj.out, t);
        }
        Input::Messages(m) => {
            obj.key("messages");
            write_json_seq(obj.out, m);
        }
        Input::Payload(p) => {
            obj.key("payload");
            write_json(obj.out, &Value::Object((**p).clone()));
        }
    }
    if let Some(o) = row.output_length {
        obj.key("output_length");
        write_int(obj.out, o);
    }
    if matches!(row.input, Input::Length(_)) && !hash_ids.is_empty() {
        obj.key("hash_ids");
        obj.out.push('[');
        for (i, id) in hash_ids.iter().enumerate() {
            if i > 0 {
                obj.out.push(',');
            }
            write_int(obj.out, *id);
        }
        obj.out.push(']');
    }
    if let Some(tools) = row.tools() {
        obj.key("tools");
        write_json_seq(obj.out, tools);
    }
    if let Some(extra) = row.extra() {
        obj.key("extra");
        write_json(obj.out, &Value::Object(extra.clone()));
    }
    for (k, v) in row.unknown_fields() {
        obj.key(k);
        write_json(obj.out, v);
    }
    obj.out.push('}');
}

/// One row as a JSON string.
pub fn row_to_string(row: &Row, hash_ids: &[u64]) -> String {
    let mut s = String::with_capacity(64 + hash_ids.len() * 8);
    write_row(&mut s, row, hash_ids);
    s
}

/// The whole trace as JSONL (one row per line, each line ending in `\n`).
pub fn write_trace(trace: &Trace) -> String {
    let mut s = String::new();
    write_rows(&mut s, trace, 0..trace.len());
    s
}

/// Appends the rows of `trace` at positions `rows`, in that order, as JSONL (each line ending in
/// `\n`) to `out`: a part of [`write_trace`]'s text (a range of positions), so that parts can be
/// written on several threads and joined in order, or the rows in another order (a list of
/// positions). Positions past the end are skipped.
pub fn write_rows(out: &mut String, trace: &Trace, rows: impl Iterator<Item = usize> + Clone) {
    let all = trace.rows();
    let ids: usize = rows.clone().filter_map(|k| all.get(k)).map(|r| trace.hash_ids_range(r).len()).sum();
    out.reserve(rows.size_hint().0 * 64 + ids * 8);
    for row in rows.filter_map(|k| all.get(k)) {
        write_row(out, row, trace.hash_ids(row));
        out.push('\n');
    }
}

/// A whole number in decimal.
pub(crate) fn write_int(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// A JSON string: as is between quotes when nothing in it needs escaping (the usual case).
pub(crate) fn write_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        // Serializing a string cannot fail.
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

struct ObjectWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl ObjectWriter<'_> {
    fn key(&mut self, k: &str) {
        self.out.push(if self.first { '{' } else { ',' });
        self.first = false;
        write_str(self.out, k);
        self.out.push(':');
    }
}

impl Drop for ObjectWriter<'_> {
    fn drop(&mut self) {
        // An empty object still needs its opening brace (the closing one is written by the caller).
        if self.first {
            self.out.push('{');
        }
    }
}

pub(crate) fn write_number(out: &mut String, n: Number) {
    match n {
        Number::Int(i) => write_int(out, i),
        Number::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => {
                let _ = write!(out, "{n}");
            }
            // NaN and infinities cannot be parsed from JSON, so they never reach a Row from a file.
            None => out.push_str("null"),
        },
    }
}

fn write_json(out: &mut String, v: &Value) {
    // Serializing a Value into a String cannot fail.
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
}

fn write_json_seq(out: &mut String, items: &[Value]) {
    out.push_str(&serde_json::to_string(items).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::super::{ParseOptions, parse_str};
    use super::*;

    #[test]
    fn compact_mooncake_rows_round_trip_byte_for_byte() {
        let text = "{\"timestamp\":0,\"input_length\":6755,\"output_length\":500,\"hash_ids\":[0,1,2]}\n\
                    {\"timestamp\":1.5,\"session_id\":\"s\\\"1\",\"delay\":2,\"text_input\":\"hi\",\"output_length\":4,\"x\":{\"b\":1,\"a\":[true,null]}}\n\
                    {\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\"}],\"extra\":{\"k\":1}}\n\
                    {\"payload\":{\"prompt\":\"Hello\",\"max_tokens\":50}}\n";
        let trace = parse_str(text, ParseOptions::default()).unwrap().trace;
        assert_eq!(write_trace(&trace), text);
    }

    #[test]
    fn parts_of_rows_join_to_the_whole_text_and_positions_past_the_end_are_skipped() {
        let text = "{\"timestamp\":0,\"input_length\":5,\"hash_ids\":[0]}\n{\"session_id\":\"a\\tb\",\"input_length\":1}\n\
                    {\"text_input\":\"\\u0001\",\"output_length\":2}\n";
        let trace = parse_str(text, ParseOptions::default()).unwrap().trace;
        let mut joined = String::new();
        for start in (0..5).step_by(2) {
            write_rows(&mut joined, &trace, start..start + 2);
        }
        assert_eq!(joined, text);
        let mut none = String::new();
        write_rows(&mut none, &trace, 7..9);
        #[allow(clippy::reversed_empty_ranges)]
        write_rows(&mut none, &trace, 2..1);
        assert_eq!(none, "");
        let mut reordered = String::new();
        write_rows(&mut reordered, &trace, [2, 9, 0].into_iter());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(reordered, format!("{}\n{}\n", lines[2], lines[0]));
    }
}
