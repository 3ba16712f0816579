//! A row's fields as read, and the rules across them ([`RawRow::into_row`]: one input mode,
//! lengths, hash ids, timestamps and delays) that make them a [`Row`].

use std::sync::Arc;

use serde_json::{Map, Value};

use super::model::{Input, Number, RareFields, Row};

/// The field a row's error is about (when one), and the message.
pub(super) type FieldError = (Option<String>, String);

/// A short description of a JSON value for error messages.
pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let mut shown: String = s.chars().take(40).collect();
            if shown.len() < s.len() {
                shown.push('…');
            }
            format!("{:?}", shown)
        }
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
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
        let rare = (self.tools.is_some() || self.extra.is_some() || !self.unknown.is_empty()).then(|| {
            Box::new(RareFields { tools: self.tools, extra: self.extra, unknown: self.unknown, branches: Vec::new() })
        });
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
