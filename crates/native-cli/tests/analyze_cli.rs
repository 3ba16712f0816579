//! `aiperf-cli analyze-trace` as a user runs it: output files, gzip, errors and exit codes.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use common::{cli, fixture};

fn analyze(trace: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&OsStr> =
        vec!["analyze-trace".as_ref(), trace.as_os_str(), "--output-file".as_ref(), out.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    cli(&args)
}

fn assert_close(golden: &serde_json::Value, ours: &serde_json::Value) {
    for (k, g) in golden.as_object().unwrap() {
        let o = &ours[k];
        match (g.as_f64(), o.as_f64()) {
            (Some(g), Some(o)) => assert!((g - o).abs() <= 1e-9 * g.abs().max(1e-300), "{k}: {g} vs {o}"),
            _ if g.is_object() => assert_close(g, o),
            _ => assert_eq!(g, o, "{k}"),
        }
    }
}

#[test]
fn writes_the_golden_json_and_prints_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("analysis.json");
    let run = analyze(&fixture("traces/arxiv_first20.jsonl"), &out, &["--block-size", "16"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8(run.stdout).unwrap();
    assert!(stdout.contains("Trace Analysis Report (block size 16)"), "{stdout}");
    assert!(stdout.contains("Theoretical Hit Rates"), "{stdout}");
    assert!(stdout.contains("Analysis report saved to"), "{stdout}");
    let ours: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let golden_text = std::fs::read_to_string(fixture("golden/aiperf-0.13.0/analyze/arxiv_first20_bs16.json")).unwrap();
    let golden: serde_json::Value = serde_json::from_str(&golden_text).unwrap();
    assert_close(&golden, &ours);
    let unique = golden["unique_prefixes"].as_u64().unwrap() as f64;
    assert!(stdout.contains(&aiperf_core::analysis::report::group_thousands(unique, 0)), "{stdout}");
}

#[test]
fn reads_gzip_traces() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gz = dir.join("trace.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(fixture("traces/arxiv_first20.jsonl")).unwrap()).unwrap();
    enc.finish().unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    assert!(analyze(&gz, &a, &[]).status.success());
    assert!(analyze(&fixture("traces/arxiv_first20.jsonl"), &b, &[]).status.success());
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn invalid_rows_fail_with_every_error_listed_and_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("analysis.json");
    let bad = fixture("golden/aiperf-0.13.0/validate/bad_rows.jsonl");
    let run = analyze(&bad, &out, &[]);
    assert!(!run.status.success());
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert!(stderr.contains("13 invalid row(s)"), "{stderr}");
    assert!(stderr.contains("bad_rows.jsonl:9: field 'input_length': expected an integer, found \"abc\""), "{stderr}");
    assert!(stderr.contains("bad_rows.jsonl:13:"), "{stderr}");
    assert!(!out.exists(), "no output file on failure");
}

#[test]
fn skip_invalid_analyzes_the_good_rows_and_reports_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mixed = dir.join("mixed.jsonl");
    let text = "{\"input_length\": 600, \"hash_ids\": [1, 2]}\n{\"input_length\": \"x\"}\n\n{\"input_length\": 700, \"hash_ids\": [1, 3]}\n";
    std::fs::write(&mixed, text).unwrap();
    let out = dir.join("a.json");
    let run = analyze(&mixed, &out, &["--skip-invalid"]);
    assert!(run.status.success());
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert!(stderr.contains("skipped 1 invalid row(s)"), "{stderr}");
    assert!(stderr.contains("mixed.jsonl:2: field 'input_length'"), "{stderr}");
    let a: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(a["total_requests"], 2);
    assert_eq!(a["num_prefix_groups"], 1);
}

#[test]
fn missing_file_and_bad_flags_are_clear_errors() {
    let run = cli(&["analyze-trace", "/nonexistent/trace.jsonl"]);
    assert!(!run.status.success());
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert!(stderr.contains("cannot open /nonexistent/trace.jsonl"), "{stderr}");
    let trace = fixture("traces/arxiv_first20.jsonl");
    let run = cli(&["analyze-trace".as_ref(), trace.as_os_str(), "--block-size".as_ref(), "0".as_ref()]);
    assert!(!run.status.success());
    assert!(String::from_utf8(run.stderr).unwrap().contains("--block-size must be at least 1"));
}

/// A trace piped in (`-`, plain or gzip) or read from a pipe path is read whole: detecting its
/// format reads its first bytes, which the analysis then still gets.
#[test]
fn piped_traces_are_detected_and_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = fixture("traces/conversation_head500.jsonl");
    let text = std::fs::read(&trace).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    let gz = gz.finish().unwrap();
    let want_path = tmp.path().join("file.json");
    assert!(analyze(&trace, &want_path, &[]).status.success());
    let want = std::fs::read(&want_path).unwrap();
    for (name, bytes) in [("plain", &text), ("gzip", &gz)] {
        let out = tmp.path().join(format!("{name}.json"));
        let mut child = Command::new(common::BIN)
            .args(["analyze-trace".as_ref(), OsStr::new("-"), "--output-file".as_ref(), out.as_os_str()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let bytes = bytes.clone();
        let writer = std::thread::spawn(move || stdin.write_all(&bytes));
        let done = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(done.status.success(), "{name}: {}", String::from_utf8_lossy(&done.stderr));
        assert!(String::from_utf8_lossy(&done.stderr).contains("detected format: mooncake"), "{name}");
        assert_eq!(std::fs::read(&out).unwrap(), want, "{name}: analysis of the piped trace differs");
    }
}

/// `validate mooncake-trace` rejects exactly the rows AIPerf 0.13.0's `validate` rejects (its
/// outputs are beside the fixtures: lines 1–10 in one run, which stops listing at ten, and lines
/// 11–13 each in a run of its own) and passes the rows it passes, adding the lint as warnings.
#[test]
fn validate_rejects_the_rows_aiperf_rejects() {
    let dir = fixture("aiperf-0.13.0-validate");
    let aiperf_failed = |file: &str| {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        text.lines().filter(|l| l.starts_with("  Line ")).count()
    };
    assert_eq!(aiperf_failed("bad_rows.validate.txt") + aiperf_failed("bad_rows_tail.validate.txt"), 13);
    let bad = dir.join("bad_rows.jsonl");
    let out = cli(&[
        "validate".as_ref(),
        "mooncake-trace".as_ref(),
        "--input".as_ref(),
        bad.as_os_str(),
        "--max-errors".as_ref(),
        "20".as_ref(),
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(stdout.starts_with("Validation failed with 13 error(s)"), "{stdout}");
    let lines: Vec<u64> =
        stdout.lines().filter_map(|l| l.strip_prefix("  Line ")?.split(':').next()?.parse().ok()).collect();
    assert_eq!(lines, (1..=13).collect::<Vec<_>>());
    // The default lists ten and counts the rest.
    let out = cli(&["validate".as_ref(), "mooncake-trace".as_ref(), bad.as_os_str()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().filter(|l| l.starts_with("  Line ")).count(), 10);
    assert!(stdout.contains("… and 3 more"), "{stdout}");

    let good = dir.join("good_rows.jsonl");
    let out = cli(&["validate".as_ref(), "mooncake-trace".as_ref(), "--input".as_ref(), good.as_os_str()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let aiperf = std::fs::read_to_string(dir.join("good_rows.validate.txt")).unwrap();
    assert_eq!(stdout.lines().next(), aiperf.lines().next(), "the verdict line is AIPerf's");
    assert!(stdout.contains("Input length < 1:     2 rows (lines 7, 8)"), "lint warnings follow: {stdout}");
}

/// A trace in seconds (the first 500 rows of the conversation trace divided by 1000: 165 "ms")
/// passes validation with the seconds warning, naming the evidence and the fix.
#[test]
fn validate_warns_about_a_trace_in_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("traces/conversation_head500.jsonl")).unwrap();
    let mut seconds = std::fs::File::create(tmp.path().join("s.jsonl")).unwrap();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["timestamp"] = serde_json::json!(v["timestamp"].as_f64().unwrap() / 1000.0);
        writeln!(seconds, "{v}").unwrap();
    }
    let out = cli(&["validate".as_ref(), "mooncake-trace".as_ref(), tmp.path().join("s.jsonl").as_os_str()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "a warning, never a refusal: {stdout}");
    assert!(stdout.contains("500 rows within 165 ms would be 3,030 requests/s sustained; fix: multiply"), "{stdout}");
}
