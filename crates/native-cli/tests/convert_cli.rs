//! `convert-trace` and `--trace-format` as a user runs them on the real samples: detection on
//! stderr, filters counted, files merged with offsets, and the same analysis whether a sample is
//! analysed directly or after conversion.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::cli;
use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    common::fixture("traces/formats").join(rel)
}

/// A temporary folder, removed when the returned guard is dropped (at the end of the test).
fn tmp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("aiperf-cli-convert-{name}-")).tempdir().unwrap()
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

fn rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn burstgpt_filters_are_counted_and_sessions_become_conversations() {
    let tmp = tmp_dir("burst");
    let dir = tmp.path();
    let out = dir.join("b.jsonl");
    let src = fixture("burstgpt/BurstGPT_3.csv.head400");
    let run = cli(&["convert-trace", s(&src), "--output-file", s(&out), "--drop-failed", "--model", "ChatGPT"]);
    let stderr = ok(&run);
    assert!(stderr.contains("detected format: burstgpt"), "{stderr}");
    // Independent count from the CSV: columns by name, ChatGPT rows with a response.
    let text = std::fs::read_to_string(&src).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (model, resp, sess) = (col("Model"), col("Response tokens"), col("Session ID"));
    let kept: Vec<Vec<&str>> =
        lines.map(|l| l.split(',').collect::<Vec<_>>()).filter(|f| f[model] == "ChatGPT" && f[resp] != "0").collect();
    let got = rows(&out);
    assert_eq!(got.len(), kept.len());
    let with_session = kept.iter().filter(|f| !f[sess].is_empty()).count();
    assert_eq!(got.iter().filter(|r| r.get("conversation_id").is_some()).count(), with_session);
    assert!(got.iter().all(|r| r.get("session_id").is_none() && r.get("hash_ids").is_none()));
    assert!(stderr.contains("rows of other models dropped"), "{stderr}");
}

#[test]
fn weka_files_merge_with_spacing() {
    let tmp = tmp_dir("weka");
    let dir = tmp.path();
    let out = dir.join("w.jsonl");
    let (a, b) = (fixture("weka-kv-cache-tester/trace_0291.json"), fixture("weka-kv-cache-tester/trace_0504.json"));
    ok(&cli(&["convert-trace", s(&a), s(&b), "--output-file", s(&out), "--file-spacing-ms", "45000"]));
    let got = rows(&out);
    assert_eq!(got.len(), 35);
    let first_of_second = got.iter().find(|r| r["conversation_id"].as_str().unwrap().starts_with("1:")).unwrap();
    assert_eq!(first_of_second["timestamp"], 45_000);
    let ts: Vec<i64> = got.iter().map(|r| r["timestamp"].as_i64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}

/// The analysis of a sample read directly equals the analysis of its converted JSONL.
#[test]
fn analysis_is_the_same_before_and_after_conversion() {
    let tmp = tmp_dir("same");
    let dir = tmp.path();
    for (k, rel) in [
        "azure-llm-2023/AzureLLMInferenceTrace_conv.csv.head2000",
        "burstgpt/BurstGPT_1.csv.head400",
        "servegen-offline/trace_a.jsonl.head180",
        "weka-kv-cache-tester/trace_0291.json",
        "constructed/bailian_constructed.jsonl",
    ]
    .iter()
    .enumerate()
    {
        let src = fixture(rel);
        let converted = dir.join(format!("{k}.jsonl"));
        let (direct, after) = (dir.join(format!("{k}.direct.json")), dir.join(format!("{k}.after.json")));
        ok(&cli(&["convert-trace", s(&src), "--output-file", s(&converted)]));
        let stderr = ok(&cli(&["analyze-trace", s(&src), "--output-file", s(&direct)]));
        assert!(stderr.contains("detected format"), "{stderr}");
        let stderr =
            ok(&cli(&["analyze-trace", s(&converted), "--output-file", s(&after), "--trace-format", "mooncake"]));
        assert!(!stderr.contains("detected format"), "{stderr}");
        // Lint line numbers name the source file's lines on one side and the JSONL's on the other.
        let read = |p: &Path| {
            let mut v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            for finding in v["lint"].as_object_mut().unwrap().values_mut() {
                if let Some(f) = finding.as_object_mut() {
                    f.remove("first_lines");
                }
            }
            v
        };
        let (a, b) = (read(&direct), read(&after));
        assert_eq!(a, b, "{rel}");
        let has_ids = rel.contains("servegen") || rel.contains("weka") || rel.contains("bailian");
        assert_eq!(a["prefix_information"], has_ids, "{rel}");
    }
}

#[test]
fn a_wrong_format_names_file_line_and_field() {
    let src = fixture("constructed/bailian_constructed.jsonl");
    let run = cli(&["analyze-trace", s(&src), "--trace-format", "burstgpt"]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("bailian_constructed.jsonl:1: the header has no column 'Timestamp'"), "{stderr}");
    let run = cli(&["analyze-trace", s(&src), "--trace-format", "csv"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("accepted: auto, mooncake"));
}

#[test]
fn seconds_in_a_mooncake_file_are_flagged() {
    let tmp = tmp_dir("secs");
    let dir = tmp.path();
    let path = dir.join("seconds.jsonl");
    let text: String = (0..50).map(|i| format!("{{\"timestamp\":{}.5,\"input_length\":10}}\n", i * 3)).collect();
    std::fs::write(&path, text).unwrap();
    let run = cli(&["analyze-trace", s(&path)]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("Seconds, not ms?") && stdout.contains("50 of 50 timestamps are fractional"), "{stdout}");
    assert!(stdout.contains("multiply the timestamps by 1000"), "{stdout}");
}
