//! Writing rows back as compact JSONL.
//!
//! Fields come out in one fixed order (`timestamp, session_id, conversation_id, delay, <input>, output_length,
//! hash_ids, tools, extra`, then unknown fields as read), which is the Mooncake order for plain
//! Mooncake rows, so reading and writing such a file reproduces it byte for byte when it was
//! written compactly.

use std::fmt::Write as _;

use serde_json::Value;

use super::{Input, Number, Row, Trace};

/// Appends one row as a JSON object (no newline) to `out`.
pub fn write_row(out: &mut String, row: &Row, hash_ids: &[u64]) {
    let mut obj = ObjectWriter { out, first: true };
    if let Some(t) = row.timestamp {
        obj.key("timestamp");
        write_number(obj.out, t);
    }
    if let Some(s) = &row.session_id {
        obj.key("session_id");
        write_json(obj.out, &Value::String(s.to_string()));
    }
    if let Some(c) = row.conversation_id() {
        obj.key("conversation_id");
        write_json(obj.out, &Value::String(c.to_string()));
    }
    if let Some(d) = row.delay {
        obj.key("delay");
        write_number(obj.out, d);
    }
    match &row.input {
        Input::Length(n) => {
            obj.key("input_length");
            let _ = write!(obj.out, "{n}");
        }
        Input::Text(t) => {
            obj.key("text_input");
            write_json(obj.out, &Value::String(t.to_string()));
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
        let _ = write!(obj.out, "{o}");
    }
    if matches!(row.input, Input::Length(_)) && !hash_ids.is_empty() {
        obj.key("hash_ids");
        obj.out.push('[');
        for (i, id) in hash_ids.iter().enumerate() {
            if i > 0 {
                obj.out.push(',');
            }
            let _ = write!(obj.out, "{id}");
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
    let mut s = String::with_capacity(trace.len() * 64 + trace.total_hash_ids() * 8);
    for (row, ids) in trace.iter() {
        write_row(&mut s, row, ids);
        s.push('\n');
    }
    s
}

struct ObjectWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl ObjectWriter<'_> {
    fn key(&mut self, k: &str) {
        self.out.push(if self.first { '{' } else { ',' });
        self.first = false;
        if k.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.out.push('"');
            self.out.push_str(k);
            self.out.push('"');
        } else {
            write_json(self.out, &Value::String(k.to_owned()));
        }
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

fn write_number(out: &mut String, n: Number) {
    match n {
        Number::Int(i) => {
            let _ = write!(out, "{i}");
        }
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
}
