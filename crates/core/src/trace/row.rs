//! One row of a Mooncake trace: the fast path first, then serde with the row visitor of
//! [`super::visit`] into a [`super::raw::RawRow`], whose rules across fields make it a row;
//! errors name the field and show its value as the row wrote it.

use serde::de::Deserializer;

use super::model::Trace;
use super::raw::FieldError;
use super::visit::{Ctx, RowVisitor};

/// Parses one non-blank line into `trace`; on error nothing is added.
pub(super) fn parse_row(text: &str, line: u64, trace: &mut Trace) -> Result<(), FieldError> {
    if parse_plain_row(text.as_bytes(), line, trace) {
        return Ok(());
    }
    parse_row_serde(text, line, trace)
}

/// Takes `text` when it is a plain Mooncake row ([`super::fast`]), from its bytes (not checked
/// as UTF-8 first); false, and nothing taken, otherwise.
pub(super) fn parse_plain_row(text: &[u8], line: u64, trace: &mut Trace) -> bool {
    let start = trace.arena_mut().len();
    if let Some(row) = super::fast::parse(text, trace.arena_mut(), line) {
        trace.push_with_arena_tail(row, start);
        return true;
    }
    trace.arena_mut().truncate(start);
    false
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn via(text: &str, fast: bool) -> Result<Trace, FieldError> {
        let mut t = Trace::new();
        if fast { parse_row(text, 1, &mut t) } else { parse_row_serde(text, 1, &mut t) }.map(|()| t)
    }

    fn mooncake_value() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..1 << 40).prop_map(|v| v.to_string()),
            (-1000i64..1000).prop_map(|v| v.to_string()),
            Just("-0".to_string()),
            Just("007".to_string()),
            Just("1.5".to_string()),
            Just("2e3".to_string()),
            Just("null".to_string()),
            Just("99999999999999999999".to_string()),
            Just("\"s-1\"".to_string()),
            Just("\"a\\\"b\"".to_string()),
            prop::collection::vec(0u64..1 << 62, 0..6).prop_map(|v| format!("{v:?}")),
            Just("[1, -2]".to_string()),
            Just("[1.0]".to_string()),
        ]
    }

    proptest! {
        /// Whatever the fast path accepts, the serde path parses to the same row.
        #[test]
        fn fast_path_agrees_with_serde(
            fields in prop::collection::vec((prop::sample::select(vec!["timestamp", "input_length", "output_length", "hash_ids", "delay", "session_id", "conversation_id", "other"]), mooncake_value()), 0..6),
            ws in prop::sample::select(vec!["", " ", "  ", "\t"]),
        ) {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}")).collect();
            let text = format!("{ws}{{{}}}{ws}", body.join(","));
            let mut fast = Trace::new();
            if let Some(row) = super::super::fast::parse(text.as_bytes(), fast.arena_mut(), 1) {
                fast.push_with_arena_tail(row, 0);
                prop_assert_eq!(Ok(fast), via(&text, false), "{}", text);
            }
            // And the combined path always equals the serde path.
            prop_assert_eq!(via(&text, true), via(&text, false), "{}", text);
        }
    }

    #[test]
    fn fast_path_takes_plain_mooncake_rows() {
        let mut t = Trace::new();
        let row = super::super::fast::parse(
            br#"{"timestamp": 27, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]}"#,
            t.arena_mut(),
            3,
        );
        assert!(row.is_some());
        assert_eq!(t.all_hash_ids(), &[0, 1, 2]);
    }
}
