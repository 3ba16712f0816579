//! Analysis of the real traces equals AIPerf 0.13.0's `analyze-trace` output (floats to 1e-9).

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::PathBuf;

use aiperf_core::analysis::analyze;
use aiperf_core::trace::{ParseOptions, TraceError, parse_str};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(rel: &str) -> String {
    let path = fixtures().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compares `actual` with every key of `golden`, numbers to 1e-9 relative.
fn assert_matches(golden: &Value, actual: &Value, path: &str) {
    match (golden, actual) {
        (Value::Object(g), Value::Object(a)) => {
            for (k, gv) in g {
                let av = a.get(k).unwrap_or_else(|| panic!("{path}.{k} missing"));
                assert_matches(gv, av, &format!("{path}.{k}"));
            }
        }
        (Value::Number(g), Value::Number(a)) => {
            let (g, a) = (g.as_f64().unwrap(), a.as_f64().unwrap());
            let tol = 1e-9 * g.abs().max(1e-300);
            assert!((g - a).abs() <= tol, "{path}: golden {g}, ours {a}");
        }
        _ => assert_eq!(golden, actual, "{path}"),
    }
}

fn check(trace_file: &str, block_size: u32, golden_file: &str) {
    let trace = parse_str(&read(&format!("traces/{trace_file}")), ParseOptions::new(trace_file)).unwrap().trace;
    let ours = serde_json::to_value(analyze(&trace, block_size)).unwrap();
    let golden: Value = serde_json::from_str(&read(&format!("golden/aiperf-0.13.0/analyze/{golden_file}"))).unwrap();
    assert_matches(&golden, &ours, golden_file);
    // The reference's keys come first, in the reference's order.
    let golden_keys: Vec<&String> = golden.as_object().unwrap().keys().collect();
    let our_keys: Vec<&String> = ours.as_object().unwrap().keys().take(golden_keys.len()).collect();
    assert_eq!(golden_keys, our_keys);
}

#[test]
fn arxiv_first20_block_512() {
    check("arxiv_first20.jsonl", 512, "arxiv_first20_bs512.json");
}

#[test]
fn arxiv_first20_block_16() {
    check("arxiv_first20.jsonl", 16, "arxiv_first20_bs16.json");
}

#[test]
fn synthetic_trace_block_512() {
    check("synthetic_trace.jsonl", 512, "synthetic_trace_bs512.json");
}

#[test]
fn conversation_trace_block_512() {
    check("conversation_trace.jsonl", 512, "conversation_trace_bs512.json");
}

#[test]
fn every_bad_row_is_rejected_with_file_line_and_reason() {
    let text = read("golden/aiperf-0.13.0/validate/bad_rows.jsonl");
    let Err(TraceError::InvalidRows { errors, total, .. }) = parse_str(&text, ParseOptions::new("bad_rows.jsonl"))
    else {
        panic!("bad rows were accepted");
    };
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
    assert_eq!(total, lines, "every bad row is rejected: {errors:#?}");
    let messages: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    let expected = [
        "bad_rows.jsonl:1: no input",
        "bad_rows.jsonl:2: 'input_length' and 'text_input' are mutually exclusive",
        "bad_rows.jsonl:3: field 'hash_ids': only allowed with 'input_length'",
        "bad_rows.jsonl:4: field 'messages': must be a non-empty list",
        "bad_rows.jsonl:5: field 'messages[0]': missing 'role'",
        "bad_rows.jsonl:6: field 'tools': only allowed with 'messages'",
        "bad_rows.jsonl:7: field 'tools': must be a non-empty list",
        "bad_rows.jsonl:8: field 'payload': must be a non-empty object",
        "bad_rows.jsonl:9: field 'input_length': expected an integer, found \"abc\"",
        "bad_rows.jsonl:10: expected a JSON object, found `this is not json`",
        "bad_rows.jsonl:11: field 'timestamp': expected a number of milliseconds, found \"soon\"",
        "bad_rows.jsonl:12: field 'hash_ids[1]': expected an unsigned integer, found \"a\"",
    ];
    for (m, e) in messages.iter().zip(expected) {
        assert!(m.starts_with(e), "{m:?} should start with {e:?}");
    }
    // Line 13 has two problems (negative delay, numeric session id); the first one found is named.
    assert!(messages[12].starts_with("bad_rows.jsonl:13: field '"), "{}", messages[12]);
}

#[test]
fn every_good_row_is_accepted() {
    let text = read("golden/aiperf-0.13.0/validate/good_rows.jsonl");
    let out = parse_str(&text, ParseOptions::new("good_rows.jsonl")).unwrap();
    assert_eq!(out.trace.len(), 8);
    // The reference accepts input lengths below 1; we accept them too and flag them in the lint.
    let a = analyze(&out.trace, 512);
    assert_eq!(a.lint.non_positive_input_length.first_lines, [7, 8]);
}
