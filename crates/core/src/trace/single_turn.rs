//! AIPerf 0.13.0's `single_turn` records (one line of its `single_turn` JSONL file, or one of a
//! config file's inline `benchmark.dataset.records`) as trace rows.
//!
//! A record's fields (AIPerf's `SingleTurn` model) map onto a Mooncake row and then go through the
//! row's own rules ([`super::raw`]): `text` (or `texts` holding one prompt) is the row's
//! `text_input`, sent as the user message, or a message of `role` when one is given;
//! `output_length` its `output_length` (AIPerf's `max_tokens`); `timestamp` and `delay`
//! (milliseconds) time it as in a trace; `session_id` makes records of one id the turns of one
//! conversation, in order (a record without one is a conversation of its own; AIPerf sends each
//! record alone, without the earlier turns, and so does `profile`); `extra` is merged
//! into the request body. AIPerf's image, audio and video fields, and several prompts in one request
//! (`texts` with more than one), are refused by name; so is a key the model does not have (AIPerf
//! ignores it), so that a misspelt key does not pass silently.

use serde_json::{Map, Value};

use super::model::{Number, Row};
use super::raw::RawRow;

/// A record that is not one of AIPerf's `single_turn` records: the key path inside it (`text`,
/// `texts[1]`; empty for the record as a whole), what is accepted and the value given.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}{expected}, got {value}", if .field.is_empty() { String::new() } else { format!("`{}`: ", .field) })]
pub struct RecordError {
    pub field: String,
    pub expected: String,
    pub value: String,
}

/// The keys of AIPerf's `SingleTurn` model.
pub const KEYS: &[&str] = &[
    "type",
    "text",
    "texts",
    "image",
    "images",
    "image_uuids",
    "audio",
    "audios",
    "video",
    "videos",
    "timestamp",
    "delay",
    "role",
    "session_id",
    "output_length",
    "extra",
];

pub(crate) fn err(field: &str, expected: impl Into<String>, value: impl Into<String>) -> RecordError {
    RecordError { field: field.to_string(), expected: expected.into(), value: value.into() }
}

/// A value as a message shows it.
pub(crate) fn show(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The row of one record (`line`: its 1-based position, kept as the row's line).
pub fn record_row(record: &Value, line: u64) -> Result<Row, RecordError> {
    let Value::Object(m) = record else {
        return Err(err("", "a record: an object with `text` (and output_length, session_id, …)", show(record)));
    };
    // A key given as null is a key not given (AIPerf's optional fields).
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        let expected = format!("a key of AIPerf's single_turn record ({})", KEYS.join(", "));
        return Err(err(k, expected, show(&m[k.as_str()])));
    }
    if let Some(t) = get("type")
        && t.as_str() != Some("single_turn")
    {
        return Err(err("type", "single_turn (the only inline record format read here)", show(t)));
    }
    for k in ["image", "images", "image_uuids", "audio", "audios", "video", "videos"] {
        if let Some(v) = get(k) {
            let expected = "no images, audio or video (AIPerf's multimodal inputs are not sent here): give `text`";
            return Err(err(k, expected, show(v)));
        }
    }
    let text = prompt(m)?;
    let mut raw = RawRow::default();
    let string = |k: &str| -> Result<Option<String>, RecordError> {
        match get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(err(k, "a string", show(other))),
        }
    };
    match string("role")? {
        Some(role) => raw.messages = Some(vec![serde_json::json!({"role": role, "content": text})]),
        None => raw.text_input = Some(text),
    }
    raw.session_id = string("session_id")?;
    let millis = |k: &str| -> Result<Option<Number>, RecordError> {
        let expected = "a number of milliseconds ≥ 0";
        match get(k) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                let v = match n.as_i64() {
                    Some(i) => Number::Int(i),
                    None => Number::Float(n.as_f64().unwrap_or(f64::NAN)),
                };
                if v.as_f64().is_finite() && v.as_f64() >= 0.0 {
                    Ok(Some(v))
                } else {
                    Err(err(k, expected, n.to_string()))
                }
            }
            Some(other) => Err(err(k, expected, show(other))),
        }
    };
    raw.timestamp = millis("timestamp")?;
    raw.delay = millis("delay")?;
    // AIPerf refuses both only when both are non-zero.
    let nonzero = |n: Option<Number>| n.is_some_and(|n| n.as_f64() != 0.0);
    if nonzero(raw.timestamp) && nonzero(raw.delay) {
        let value = get("delay").map(show).unwrap_or_default();
        return Err(err("delay", "no delay beside a timestamp (one or the other times a record)", value));
    }
    if let Some(v) = get("output_length") {
        let n =
            v.as_u64().or_else(|| v.as_f64().filter(|x| x.fract() == 0.0 && *x >= 1.0 && *x < 9e15).map(|x| x as u64));
        match n {
            Some(n) if n > 0 => raw.output_length = Some(n),
            _ => return Err(err("output_length", "a whole number of tokens > 0", show(v))),
        }
    }
    match get("extra") {
        None => {}
        Some(Value::Object(extra)) => raw.extra = Some(extra.clone()),
        Some(other) => return Err(err("extra", "an object (merged into the request body)", show(other))),
    }
    raw.into_row(false, line).map_err(|(field, reason)| err(field.as_deref().unwrap_or(""), reason, ""))
}

/// The one prompt of `text` or `texts` (strings, or AIPerf's `{name, contents: [..]}` objects).
fn prompt(m: &Map<String, Value>) -> Result<String, RecordError> {
    let mut all = texts(m)?;
    if all.len() == 1 {
        return Ok(all.remove(0));
    }
    Err(err(
        "texts",
        "one prompt (several in one request are AIPerf's batches, not sent here)",
        format!("{} prompts", all.len()),
    ))
}

/// Every prompt of `text` or `texts` (strings, or AIPerf's `{name, contents: [..]}` objects), in
/// order; at least one.
pub(crate) fn texts(m: &Map<String, Value>) -> Result<Vec<String>, RecordError> {
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let text = match get("text") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.is_empty()),
        Some(other) => return Err(err("text", "a string (the prompt)", show(other))),
    };
    let texts = match get("texts") {
        None => None,
        Some(Value::Array(items)) => {
            let mut all = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let at = format!("texts[{i}]");
                match item {
                    Value::String(s) => all.push(s.clone()),
                    Value::Object(o) => {
                        if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "name" | "contents")) {
                            let value = show(&o[k.as_str()]);
                            return Err(err(&format!("{at}.{k}"), "a key of a text (name, contents)", value));
                        }
                        match o.get("contents") {
                            Some(Value::Array(c)) => {
                                for (j, s) in c.iter().enumerate() {
                                    match s {
                                        Value::String(s) => all.push(s.clone()),
                                        other => {
                                            let at = format!("{at}.contents[{j}]");
                                            return Err(err(&at, "a string", show(other)));
                                        }
                                    }
                                }
                            }
                            other => {
                                let shown = other.map_or_else(|| "nothing".to_string(), show);
                                return Err(err(&format!("{at}.contents"), "a list of strings", shown));
                            }
                        }
                    }
                    other => return Err(err(&at, "a string or {name, contents}", show(other))),
                }
            }
            Some(all).filter(|a| !a.is_empty())
        }
        Some(other) => return Err(err("texts", "a list of strings", show(other))),
    };
    match (text, texts) {
        (Some(_), Some(_)) => {
            Err(err("texts", "`text` or `texts`, not both", get("texts").map(show).unwrap_or_default()))
        }
        (Some(t), None) => Ok(vec![t]),
        (None, Some(all)) => Ok(all),
        (None, None) => Err(err("text", "a prompt: `text` (a non-empty string) or `texts`", "nothing")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::super::Input;
    use super::*;

    fn row(v: Value) -> Row {
        record_row(&v, 1).unwrap()
    }

    fn error(v: Value) -> String {
        record_row(&v, 1).unwrap_err().to_string()
    }

    #[test]
    fn a_record_is_the_row_the_same_trace_line_gives() {
        let r = row(json!({"text": "Explain GANs.", "output_length": 200}));
        assert_eq!(r.input, Input::Text("Explain GANs.".into()));
        assert_eq!(r.output_length, Some(200));
        assert_eq!((r.session_id, r.timestamp, r.delay), (None, None, None));
        let r =
            row(json!({"texts": [{"name": "q", "contents": ["hi"]}], "session_id": "s", "delay": 1.5, "timestamp": 0}));
        assert_eq!(r.input, Input::Text("hi".into()));
        assert_eq!((r.session_id.as_deref(), r.delay), (Some("s"), Some(Number::Float(1.5))));
        let r = row(
            json!({"texts": ["hi"], "role": "system", "extra": {"temperature": 0}, "type": "single_turn", "image": null}),
        );
        assert_eq!(r.input, Input::Messages(vec![json!({"role": "system", "content": "hi"})].into_boxed_slice()));
        assert_eq!(r.rare.unwrap().extra.unwrap()["temperature"], 0);
        assert_eq!(row(json!({"text": "x", "timestamp": 250})).timestamp, Some(Number::Int(250)));
    }

    #[test]
    fn a_bad_record_names_its_field() {
        assert_eq!(error(json!({"text": 5})), "`text`: a string (the prompt), got 5");
        assert_eq!(
            error(json!({"output_length": 3})),
            "`text`: a prompt: `text` (a non-empty string) or `texts`, got nothing"
        );
        assert_eq!(
            error(json!({"text": "a", "output_length": 0})),
            "`output_length`: a whole number of tokens > 0, got 0"
        );
        assert!(
            error(json!({"text": "a", "output_lenght": 9}))
                .starts_with("`output_lenght`: a key of AIPerf's single_turn")
        );
        assert!(error(json!({"text": "a", "image": "x.png"})).starts_with("`image`: no images, audio or video"));
        assert!(error(json!({"text": "a", "texts": ["b"]})).starts_with("`texts`: `text` or `texts`, not both"));
        assert!(error(json!({"texts": ["a", "b"]})).starts_with("`texts`: one prompt"));
        assert!(error(json!({"texts": [{"contents": [1]}]})).starts_with("`texts[0].contents[0]`: a string, got 1"));
        assert!(
            error(json!({"text": "a", "timestamp": 5, "delay": 3})).starts_with("`delay`: no delay beside a timestamp")
        );
        assert!(error(json!({"text": "a", "delay": -3})).starts_with("`delay`: a number of milliseconds ≥ 0, got -3"));
        assert!(error(json!({"text": "a", "type": "multi_turn"})).starts_with("`type`: single_turn"));
        assert!(error(json!({"text": "a", "extra": [1]})).starts_with("`extra`: an object"));
        assert!(error(json!(["a"])).starts_with("a record: an object"));
    }
}
