use super::*;
use crate::trace::error::TraceError;
use crate::trace::model::{Input, Number};

fn parse(text: &str) -> Result<ParseOutcome, TraceError> {
    parse_str(text, ParseOptions::new("t.jsonl"))
}

fn error_of(line: &str) -> String {
    match parse(line) {
        Err(TraceError::InvalidRows { errors, .. }) => errors[0].to_string(),
        other => panic!("expected an error for {line}, got {other:?}"),
    }
}

#[test]
fn parses_a_mooncake_row() {
    let out = parse(r#"{"timestamp": 27, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]}"#).unwrap();
    let (row, ids) = out.trace.iter().next().unwrap();
    assert_eq!(row.input, Input::Length(6755));
    assert_eq!(row.output_length, Some(500));
    assert_eq!(row.timestamp, Some(Number::Int(27)));
    assert_eq!(ids, &[0, 1, 2]);
    assert_eq!(row.line, 1);
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let out = parse("\n{\"input_length\": 3}\r\n\n{\"input_length\": 4}\n").unwrap();
    assert_eq!(out.trace.len(), 2);
    assert_eq!(out.trace.rows()[1].line, 4);
    assert_eq!(out.lines, 4);
}

#[test]
fn unknown_fields_are_kept_in_order() {
    let out = parse(r#"{"zeta": 1, "input_length": 3, "alpha": {"b": 2, "a": 1}}"#).unwrap();
    let row = &out.trace.rows()[0];
    let names: Vec<&str> = row.unknown_fields().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha"]);
}

#[test]
fn errors_name_file_line_and_field() {
    assert_eq!(
        error_of(r#"{"input_length": "abc"}"#),
        "t.jsonl:1: field 'input_length': expected an integer, found \"abc\""
    );
    assert_eq!(
        error_of(r#"{"input_length": 10, "hash_ids": [1, "a"]}"#),
        "t.jsonl:1: field 'hash_ids[1]': expected an unsigned integer, found \"a\""
    );
    assert_eq!(
        error_of(r#"{"input_length": 1, "output_length": -2}"#),
        "t.jsonl:1: field 'output_length': expected a non-negative integer, found -2"
    );
    assert_eq!(
        error_of(r#"{"input_length": 1, "session_id": 7}"#),
        "t.jsonl:1: field 'session_id': expected a string, found 7"
    );
    assert_eq!(
        error_of(r#"{"input_length": 1, "timestamp": "soon"}"#),
        "t.jsonl:1: field 'timestamp': expected a number of milliseconds, found \"soon\""
    );
    assert_eq!(error_of("this is not json"), "t.jsonl:1: expected a JSON object, found `this is not json`");
    assert!(error_of("{\"input_length\": 1").contains("invalid JSON"));
    assert_eq!(error_of("[1, 2]"), "t.jsonl:1: expected a JSON object, found `[1, 2]`");
    assert_eq!(error_of("{\"input_length\": 1} x"), "t.jsonl:1: invalid JSON: trailing characters at column 21");
    assert_eq!(
        error_of(r#"{"input_length": 1, "input_length": 2}"#),
        "t.jsonl:1: field 'input_length': appears twice in the row"
    );
}

#[test]
fn cross_field_rules() {
    assert!(error_of("{}").contains("no input"));
    assert!(
        error_of(r#"{"input_length": 10, "text_input": "hi"}"#)
            .contains("'input_length' and 'text_input' are mutually exclusive")
    );
    assert!(
        error_of(r#"{"text_input": "hi", "hash_ids": [1]}"#)
            .contains("field 'hash_ids': only allowed with 'input_length'")
    );
    assert!(error_of(r#"{"messages": []}"#).contains("field 'messages': must be a non-empty list"));
    assert!(error_of(r#"{"messages": [{"content": "x"}]}"#).contains("field 'messages[0]': missing 'role'"));
    assert!(
        error_of(r#"{"input_length": 5, "tools": [{"type": "function"}]}"#)
            .contains("field 'tools': only allowed with 'messages'")
    );
    assert!(
        error_of(r#"{"messages": [{"role": "user"}], "tools": []}"#)
            .contains("field 'tools': must be a non-empty list")
    );
    assert!(error_of(r#"{"payload": {}}"#).contains("field 'payload': must be a non-empty object"));
    assert!(error_of(r#"{"input_length": 10, "delay": -5}"#).contains("field 'delay': must be a non-negative"));
}

#[test]
fn whole_floats_are_integers_and_nulls_are_absent() {
    let out = parse(r#"{"input_length": 10.0, "output_length": null, "hash_ids": null, "timestamp": 1.5}"#).unwrap();
    let row = &out.trace.rows()[0];
    assert_eq!(row.input, Input::Length(10));
    assert_eq!(row.output_length, None);
    assert_eq!(row.timestamp, Some(Number::Float(1.5)));
    assert!(error_of(r#"{"input_length": 10.5}"#).contains("found 10.5"));
}

#[test]
fn all_errors_are_listed_up_to_the_limit_and_skipping_keeps_the_rest() {
    let text = "{\"input_length\": 1}\n{}\n{\"input_length\": \"x\"}\n{\"input_length\": 2}\n";
    match parse(text) {
        Err(TraceError::InvalidRows { errors, total, .. }) => {
            assert_eq!(total, 2);
            assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [2, 3]);
        }
        other => panic!("{other:?}"),
    }
    let mut opts = ParseOptions::new("t.jsonl").skip_invalid(true);
    opts.max_errors = 1;
    let out = parse_str(text, opts).unwrap();
    assert_eq!(out.trace.len(), 2);
    assert_eq!(out.skipped_total, 2);
    assert_eq!(out.skipped.len(), 1);
}

#[test]
fn a_failed_row_leaves_no_ids_behind() {
    let out = parse_str(
        "{\"input_length\": 1, \"hash_ids\": [5, 6], \"text_input\": \"x\"}\n{\"input_length\": 1, \"hash_ids\": [7]}",
        ParseOptions::default().skip_invalid(true),
    )
    .unwrap();
    assert_eq!(out.trace.all_hash_ids(), &[7]);
}

#[test]
fn cr_only_line_endings_are_named() {
    let text = "{\"input_length\": 1}\r{\"input_length\": 2}\r";
    let e = error_of(text);
    assert!(e.contains("carriage return") && e.contains("CR-only"), "{e}");
    let long = "{\"input_length\": 1}\r".repeat(4);
    match read(long.as_bytes(), ParseOptions::new("t.jsonl").max_line_bytes(40)) {
        Err(e @ TraceError::LineTooLong { cr_only: true, .. }) => assert!(e.to_string().contains("CR-only"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_leading_bom_is_skipped_and_any_other_is_named() {
    let text = "\u{feff}{\"input_length\": 1}\n{\"input_length\": 2}\n";
    assert_eq!(parse(text).unwrap().trace.len(), 2);
    assert_eq!(read(text.as_bytes(), ParseOptions::new("t.jsonl")).unwrap().trace.len(), 2);
    let e = error_of("{\"input_length\": 1}\n\u{feff}{\"input_length\": 2}\n");
    assert!(e.starts_with("t.jsonl:2: starts with a UTF-8 byte order mark"), "{e}");
}

#[test]
fn big_integers_are_shown_as_written() {
    assert_eq!(
        error_of(r#"{"input_length": 99999999999999999999}"#),
        "t.jsonl:1: field 'input_length': expected an integer, found 99999999999999999999"
    );
    assert_eq!(
        error_of(r#"{"input_length": 1, "hash_ids": [1, 2.0, 123456789012345678901234]}"#),
        "t.jsonl:1: field 'hash_ids[2]': expected an unsigned integer, found 123456789012345678901234"
    );
    assert!(error_of(r#"{"input_length": 1, "output_length": 1e30}"#).ends_with("found 1e30"));
}
