//! A JSON record's fields read by serde, with a precise error when a field is wrong: serde's
//! own message lacks the field name, so on failure the line is read again as a `Value` and the
//! first field that breaks its rule is named.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{FormatError, Line, shown};

/// A flat JSONL record: the fast path ([`super::flat::scan`] through `fast`), else serde,
/// whose failure is diagnosed field by field against `spec`; its hash ids are appended to
/// `ids`.
pub fn flat_record<R: DeserializeOwned>(
    (file, line, text): (&Arc<str>, u64, &str),
    ids: &mut Vec<u64>,
    spec: &[(&str, Kind, bool)],
    fast: fn(&str, &mut Vec<u64>) -> Option<R>,
    ids_of: fn(&R) -> &[u64],
) -> Result<R, FormatError> {
    let start = ids.len();
    if let Some(raw) = fast(text, ids) {
        return Ok(raw);
    }
    ids.truncate(start);
    let raw: R = serde_json::from_str(text).map_err(|e| diagnose(file, line, text, spec, &e))?;
    ids.extend_from_slice(ids_of(&raw));
    Ok(raw)
}

/// What a field must hold.
#[derive(Clone, Copy)]
pub enum Kind {
    Count,
    Int,
    Seconds,
    IdList,
}

impl Kind {
    fn expected(self) -> &'static str {
        match self {
            Kind::Count => "a non-negative integer",
            Kind::Int => "an integer",
            Kind::Seconds => "a non-negative number of seconds",
            Kind::IdList => "a list of non-negative integers",
        }
    }

    fn accepts(self, v: &Value) -> bool {
        match self {
            Kind::Count => v.is_u64(),
            Kind::Int => v.is_i64() || v.is_u64(),
            Kind::Seconds => v.as_f64().is_some_and(|f| f.is_finite() && f >= 0.0),
            Kind::IdList => v.as_array().is_some_and(|a| a.iter().all(Value::is_u64)),
        }
    }
}

/// The error for a line serde rejected, given the fields the format reads.
pub fn diagnose(
    file: &Arc<str>,
    line: u64,
    text: &str,
    spec: &[(&str, Kind, bool)],
    serde_error: &serde_json::Error,
) -> FormatError {
    let at = Line(Some(line));
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => {
            return FormatError::Shape { file: file.clone(), line: at, reason: format!("invalid JSON: {serde_error}") };
        }
    };
    let Some(obj) = value.as_object() else {
        return FormatError::Shape { file: file.clone(), line: at, reason: "expected a JSON object".into() };
    };
    for &(name, kind, required) in spec {
        match obj.get(name) {
            None | Some(Value::Null) if required => {
                return FormatError::Field {
                    file: file.clone(),
                    line: at,
                    field: name.into(),
                    value: "nothing".into(),
                    expected: kind.expected().into(),
                };
            }
            Some(v) if !v.is_null() && !kind.accepts(v) => {
                return FormatError::Field {
                    file: file.clone(),
                    line: at,
                    field: name.into(),
                    value: shown(&v.to_string()),
                    expected: kind.expected().into(),
                };
            }
            _ => {}
        }
    }
    FormatError::Shape { file: file.clone(), line: at, reason: serde_error.to_string() }
}
