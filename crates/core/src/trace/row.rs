//! One row of a Mooncake trace: the fast path first, then serde with the row visitor of
//! [`super::visit`], and the rules across fields ([`RawRow::into_row`]: one input mode, lengths,
//! hash ids, timestamps and delays) that make the fields a [`Row`]; errors name the field and show
//! its value as the row wrote it.

use std::sync::Arc;

use serde::de::Deserializer;
use serde_json::{Map, Value};

use super::visit::{Ctx, RowVisitor, describe};
use super::{Input, Number, RareFields, Row, Trace};

pub(super) type FieldError = (Option<String>, String);

/// Parses one non-blank line into `trace`; on error nothing is added.
pub(super) fn parse_row(text: &str, line: u64, trace: &mut Trace) -> Result<(), FieldError> {
    let start = trace.arena_mut().len();
    if let Some(row) = super::fast::parse(text, trace.arena_mut(), line) {
        trace.push_with_arena_tail(row, start);
        return Ok(());
    }
    trace.arena_mut().truncate(start);
    parse_row_serde(text, line, trace)
}

/// The general path: any row shape, with exact error messages.
pub(super) fn parse_row_serde(text: &str, line: u64, trace: &mut Trace) -> Result<(), FieldError> {
    if !text.trim_start().starts_with('{') {
        let snippet: String = text.trim().chars().take(30).collect();
        let more = if snippet.len() < text.trim().len() { "…" } else { "" };
        return Err((None, format!("expected a JSON object, found `{snippet}{more}`")));
    }
    let start = trace.arena_mut().len();
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let result = (&mut de)
        .deserialize_any(RowVisitor { ctx: &ctx, ids: trace.arena_mut() })
        .and_then(|raw| de.end().map(|()| raw));
    let raw = match result {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            trace.arena_mut().truncate(start);
            return Err((None, "expected a JSON object".into()));
        }
        Err(e) => {
            trace.arena_mut().truncate(start);
            return Err(match ctx.failure.into_inner() {
                Some(failure) => as_written(text, failure),
                None => (None, format!("invalid JSON: {}", json_error_text(&e))),
            });
        }
    };
    let had_ids = trace.arena_mut().len() > start || raw.hash_ids_present;
    match raw.into_row(had_ids, line) {
        Ok(row) => {
            trace.push_with_arena_tail(row, start);
            Ok(())
        }
        Err(e) => {
            trace.arena_mut().truncate(start);
            Err(e)
        }
    }
}

/// Shows a number in `failure` as the row wrote it: serde_json hands over integers past 64 bits
/// as floats, whose digits would be printed rounded (`99999999999999999999` as `100000000000000000000`).
fn as_written(text: &str, failure: FieldError) -> FieldError {
    let (Some(field), reason) = &failure else { return failure };
    let Some((head, shown)) = reason.rsplit_once("found ") else { return failure };
    let Ok(value) = shown.parse::<f64>() else { return failure };
    match raw_number(text, field) {
        Some(raw) if raw != shown && raw.parse::<f64>() == Ok(value) => {
            (Some(field.clone()), format!("{head}found {raw}"))
        }
        _ => failure,
    }
}

/// The number token of `field` (`input_length`, or a list element like `hash_ids[3]`) in a row.
/// Only used for messages, after the element's predecessors parsed as plain numbers.
fn raw_number<'t>(text: &'t str, field: &str) -> Option<&'t str> {
    let (name, index) = match field.split_once('[') {
        Some((name, i)) => (name, Some(i.strip_suffix(']')?.parse::<usize>().ok()?)),
        None => (field, None),
    };
    let key = format!("\"{name}\"");
    let after_key = &text[text.find(&key)? + key.len()..];
    let mut rest = after_key.trim_start().strip_prefix(':')?.trim_start();
    if let Some(index) = index {
        rest = rest.strip_prefix('[')?;
        for _ in 0..index {
            rest = &rest[rest.find(',')? + 1..];
        }
        rest = rest.trim_start();
    }
    let end =
        rest.find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// serde_json's message without its " at line 1 column N" suffix, with the column kept.
fn json_error_text(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let msg = full.split(" at line ").next().unwrap_or(&full);
    format!("{msg} at column {}", e.column())
}

/// A row's fields before the cross-field rules are checked.
#[derive(Default)]
pub(super) struct RawRow {
    pub(super) input_length: Option<i64>,
    pub(super) text_input: Option<String>,
    pub(super) messages: Option<Vec<Value>>,
    pub(super) payload: Option<Map<String, Value>>,
    pub(super) output_length: Option<u64>,
    pub(super) hash_ids_present: bool,
    pub(super) timestamp: Option<Number>,
    pub(super) delay: Option<Number>,
    pub(super) session_id: Option<String>,
    pub(super) conversation_id: Option<String>,
    pub(super) tools: Option<Vec<Value>>,
    pub(super) extra: Option<Map<String, Value>>,
    pub(super) unknown: Vec<(String, Value)>,
}

impl RawRow {
    pub(super) fn into_row(self, has_ids: bool, line: u64) -> Result<Row, FieldError> {
        let modes: Vec<&str> = [
            ("input_length", self.input_length.is_some()),
            ("text_input", self.text_input.is_some()),
            ("messages", self.messages.is_some()),
            ("payload", self.payload.is_some()),
        ]
        .iter()
        .filter(|(_, present)| *present)
        .map(|(name, _)| *name)
        .collect();
        if modes.is_empty() {
            return Err((
                None,
                "no input: exactly one of 'input_length', 'text_input', 'messages' or 'payload' is required".into(),
            ));
        }
        if modes.len() > 1 {
            let names = modes.iter().map(|m| format!("'{m}'")).collect::<Vec<_>>().join(" and ");
            return Err((None, format!("{names} are mutually exclusive: give exactly one input")));
        }
        if has_ids && self.input_length.is_none() {
            return Err((
                Some("hash_ids".into()),
                format!("only allowed with 'input_length', not with '{}'", modes[0]),
            ));
        }
        if let Some(messages) = &self.messages {
            if messages.is_empty() {
                return Err((Some("messages".into()), "must be a non-empty list".into()));
            }
            for (i, m) in messages.iter().enumerate() {
                match m {
                    Value::Object(o) if o.contains_key("role") => {}
                    Value::Object(_) => {
                        return Err((Some(format!("messages[{i}]")), "missing 'role'".into()));
                    }
                    other => {
                        return Err((
                            Some(format!("messages[{i}]")),
                            format!("expected an object, found {}", describe(other)),
                        ));
                    }
                }
            }
        }
        if let Some(tools) = &self.tools {
            if self.messages.is_none() {
                return Err((Some("tools".into()), "only allowed with 'messages'".into()));
            }
            if tools.is_empty() {
                return Err((Some("tools".into()), "must be a non-empty list".into()));
            }
        }
        if let Some(payload) = &self.payload
            && payload.is_empty()
        {
            return Err((Some("payload".into()), "must be a non-empty object".into()));
        }
        if let Some(d) = self.delay
            && d.as_f64() < 0.0
        {
            return Err((
                Some("delay".into()),
                format!("must be a non-negative number of milliseconds, found {}", fmt_number(d)),
            ));
        }
        let input = if let Some(n) = self.input_length {
            Input::Length(n)
        } else if let Some(t) = self.text_input {
            Input::Text(t.into_boxed_str())
        } else if let Some(m) = self.messages {
            Input::Messages(m.into_boxed_slice())
        } else if let Some(p) = self.payload {
            Input::Payload(Box::new(p))
        } else {
            unreachable!("one input mode is present")
        };
        let rare = (self.tools.is_some() || self.extra.is_some() || !self.unknown.is_empty())
            .then(|| Box::new(RareFields { tools: self.tools, extra: self.extra, unknown: self.unknown }));
        Ok(Row {
            input,
            output_length: self.output_length,
            timestamp: self.timestamp,
            delay: self.delay,
            session_id: self.session_id.map(String::into_boxed_str),
            conversation: self.conversation_id.map(Arc::from),
            rare,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            ids_start: 0,
            ids_len: 0,
        })
    }
}

fn fmt_number(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Float(f) => f.to_string(),
    }
}
