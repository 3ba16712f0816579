//! A new user's first hour: closed pipes, repeated default runs, progress in logs, error reasons,
//! dead endpoints, settings without effect, URL joining, empty conversions, and exit statuses.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// A trace of `n` rows `gap_ms` apart.
fn timed_trace(dir: &Path, n: usize, gap_ms: u64) -> PathBuf {
    let lines: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"timestamp": {}, "input_length": 20, "output_length": 3, "hash_ids": [{i}]}}"#,
                i as u64 * gap_ms
            )
        })
        .collect();
    write_trace(dir, &lines)
}

/// Runs `aiperf-cli ARGS` in `cwd` with stdout and stderr on one pipe, reads its first line and
/// closes the pipe, as `aiperf-cli … 2>&1 | head -1` does; returns the exit status and the line.
fn through_head_1(cwd: &Path, args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::from(writer.try_clone().unwrap()))
        .stderr(Stdio::from(writer))
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(reader).read_line(&mut line).unwrap();
    // The reader is dropped here: the pipe is closed after one line, as `head -1` closes it.
    let t0 = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, line);
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("aiperf-cli {args:?} did not end within {LIMIT:?} after its output pipe closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_closed_pipe_stops_no_run_and_loses_no_export() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = timed_trace(dir.path(), 30, 20);
    let a = dir.path().join("a");
    let mut args = vec!["profile".to_owned()];
    args.extend(profile_args(&mock.url, &trace, &a));
    args.extend(["--streaming", "--progress-interval", "0.05"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, first) = through_head_1(dir.path(), &args);
    assert!(status.success(), "profile | head -1 ended with {status:?} (first line {first:?})");
    assert_eq!(read_jsonl(&a.join("profile_export.jsonl")).len(), 30, "every record written");
    for f in ["profile_export_aiperf.json", "profile_export_aiperf.csv"] {
        assert!(a.join(f).is_file(), "{f} missing after a closed pipe");
    }
    assert_eq!(summary(&a)["request_count"]["avg"], 30.0);
}

#[test]
fn every_command_finishes_its_outputs_when_its_console_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = root().join("tests/fixtures/traces/conversation_head500.jsonl");
    let t = trace.to_str().unwrap();
    let burst = root().join("tests/fixtures/traces/formats/burstgpt/BurstGPT_1.csv.head400");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["analyze-trace".into(), t.into(), "--output-file".into(), "analysis.json".into()], "analysis.json"),
        (
            vec![
                "synthesize-trace".into(),
                t.into(),
                "--output-file".into(),
                "synth.jsonl".into(),
                "--synthesis-speedup-ratio".into(),
                "2".into(),
                "--fidelity-file".into(),
                "fid.json".into(),
            ],
            "fid.json",
        ),
        (
            vec!["convert-trace".into(), burst.to_str().unwrap().into(), "--output-file".into(), "conv.jsonl".into()],
            "conv.jsonl",
        ),
        (
            vec![
                "hash-prompts".into(),
                write_prompts(d).to_str().unwrap().into(),
                "--tokenizer".into(),
                tokenizer(),
                "--output-file".into(),
                "hashed.jsonl".into(),
            ],
            "hashed.jsonl",
        ),
    ];
    for (args, file) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, _) = through_head_1(d, &args);
        assert!(status.success(), "{args:?} | head -1 ended with {status:?}");
        let written = std::fs::read(d.join(file)).unwrap();
        assert!(!written.is_empty(), "{file} is empty after {args:?} | head -1");
    }
    // `report` and `compare` of a run.
    let run = make_run(d);
    let (status, _) = through_head_1(d, &["report", run.to_str().unwrap(), "-o", "report.html"]);
    assert!(status.success());
    assert!(std::fs::read_to_string(d.join("report.html")).unwrap().contains("</html>"));
    let (status, _) = through_head_1(d, &["compare", run.to_str().unwrap(), run.to_str().unwrap()]);
    assert!(status.success(), "compare | head -1: {status:?}");
}

fn write_prompts(dir: &Path) -> PathBuf {
    let p = dir.join("prompts.jsonl");
    let lines: Vec<String> = (0..50)
        .map(|i| format!(r#"{{"prompt": "hello world number {i} with some words", "output_length": 4}}"#))
        .collect();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

/// A small finished run in `dir/run`.
fn make_run(dir: &Path) -> PathBuf {
    let mock = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let sub = dir.join("run-src");
    std::fs::create_dir_all(&sub).unwrap();
    let trace = timed_trace(&sub, 10, 5);
    let art = dir.join("run");
    ok(&profile_streaming(&mock.url, &trace, &art, &[], LIMIT));
    art
}

/// `profile` in `cwd` without `--artifact-dir`.
fn profile_in(cwd: &Path, url: &str, trace: &Path, extra: &[&str]) -> Output {
    let tok = tokenizer();
    let child = Command::new(BIN)
        .args(["profile", "-m", "org/model", "-u", url, "--tokenizer", &tok, "--input-file"])
        .arg(trace)
        .args(extra)
        .current_dir(cwd)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, LIMIT)
}

#[test]
fn default_runs_are_named_as_aiperf_names_them_and_never_replace_each_other() {
    let mock = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = timed_trace(dir.path(), 5, 5);
    for _ in 0..2 {
        ok(&profile_in(dir.path(), &mock.url, &trace, &[]));
    }
    let first = dir.path().join("artifacts/org_model-openai-chat-fixed_schedule");
    let second = dir.path().join("artifacts/org_model-openai-chat-fixed_schedule-2");
    assert_eq!(read_jsonl(&first.join("profile_export.jsonl")).len(), 5);
    assert_eq!(read_jsonl(&second.join("profile_export.jsonl")).len(), 5);
    let out = profile_in(dir.path(), &mock.url, &trace, &["--no-fixed-schedule", "--concurrency", "2"]);
    ok(&out);
    assert!(dir.path().join("artifacts/org_model-openai-chat-concurrency2/profile_export.jsonl").is_file());
    assert!(stdout(&out).contains("Exports written to artifacts/org_model-openai-chat-concurrency2"));

    // A folder named with --artifact-dir that holds a run is refused, unless --overwrite.
    let out = profile_in(dir.path(), &mock.url, &trace, &["--artifact-dir", first.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("already holds a run") && stderr(&out).contains("--overwrite"), "{}", stderr(&out));
    assert_eq!(mock.arrivals().len(), 15, "nothing sent by the refused run");
    ok(&profile_in(dir.path(), &mock.url, &trace, &["--artifact-dir", first.to_str().unwrap(), "--overwrite"]));
}

#[test]
fn progress_lines_reach_a_redirected_log() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = timed_trace(dir.path(), 40, 25);
    let art = dir.path().join("art");
    let out = profile_streaming(&mock.url, &trace, &art, &["--progress-interval", "0.2"], LIMIT);
    ok(&out);
    let log = stderr(&out);
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("progress ")).collect();
    assert!(lines.len() >= 2, "a 1 s run at one line per 0.2 s printed {} progress line(s):\n{log}", lines.len());
    for l in &lines {
        assert!(l.contains("sent ") && l.contains("done ") && l.contains("in flight") && l.contains("req/s"), "{l}");
        assert!(l.contains("of 40 request(s) left"), "{l}");
    }
    // With --benchmark-duration, what remains is time.
    let out = profile_streaming(
        &mock.url,
        &trace,
        &dir.path().join("dur"),
        &["--progress-interval", "0.2", "--benchmark-duration", "0.7"],
        LIMIT,
    );
    ok(&out);
    assert!(stderr(&out).contains("s of 0.7 s left"), "{}", stderr(&out));
    assert!(stderr(&out).contains("Replaying up to 40 request(s) for at most 0.7 s"), "{}", stderr(&out));
    // --ui-type none prints none.
    let out = profile_streaming(
        &mock.url,
        &trace,
        &dir.path().join("quiet"),
        &["--progress-interval", "0.2", "--ui-type", "none"],
        LIMIT,
    );
    ok(&out);
    assert!(!stderr(&out).contains("progress "), "{}", stderr(&out));
}

#[test]
fn errors_are_shown_with_their_reason() {
    let mock = Mock::start(&["--ttft-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = timed_trace(dir.path(), 3, 5);
    let art = dir.path().join("art");
    let out = profile_on(&mock.url, &trace, &art, &["--custom-endpoint", "/foo"], LIMIT);
    assert_eq!(out.status.code(), Some(1));
    let console = stdout(&out);
    assert!(console.contains("http_status × 3: HTTP 404"), "{console}");
    assert!(console.contains("no route /foo"), "{console}");
    let s = summary(&art);
    let e = &s["error_summary"][0];
    assert_eq!(e["count"], 3);
    assert!(e["error_details"]["message"].as_str().unwrap().contains("no route /foo"), "{e}");
    let report = dir.path().join("report.html");
    let out = Command::new(BIN).arg("report").arg(&art).arg("-o").arg(&report).output().unwrap();
    ok(&out);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("no route /foo"), "the report shows the first message of each error kind");
    assert!(!html.contains("per 0.00 s slice"));
}

#[test]
fn a_dead_url_ends_the_run_before_time_zero() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let trace = timed_trace(dir.path(), 3, 5);
    let art = dir.path().join("art");
    let out = profile_on(&url, &trace, &art, &["--no-server-metrics"], LIMIT);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("no connection could be opened to {url}")), "{err}");
    assert!(err.contains("--wait-for-server"), "{err}");
    assert!(!art.join("profile_export.jsonl").exists(), "nothing is written");
    // Asked to go on, it replays and records the failures.
    let out = profile_on(&url, &trace, &art, &["--no-server-metrics", "--go-on-unreachable"], LIMIT);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read_jsonl(&art.join("profile_export.jsonl")).len(), 3);
}

#[test]
fn a_concurrency_on_a_fixed_schedule_says_what_it_did() {
    let mock = Mock::start(&["--ttft-ms", "30", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    // Six sessions of one request under a ceiling of 8: it cannot be reached, however slow the machine.
    let sparse = timed_trace(dir.path(), 6, 100);
    let out = profile_streaming(&mock.url, &sparse, &dir.path().join("a"), &["--concurrency", "8"], LIMIT);
    ok(&out);
    assert!(stderr(&out).contains("--no-fixed-schedule"), "{}", stderr(&out));
    assert!(stdout(&out).contains("--concurrency 8 had no effect"), "{}", stdout(&out));
    // Dense: 12 requests at once with a ceiling of 2: starts are held back.
    let sub = dir.path().join("dense");
    std::fs::create_dir_all(&sub).unwrap();
    let dense = timed_trace(&sub, 12, 0);
    let out = profile_streaming(&mock.url, &dense, &dir.path().join("b"), &["--concurrency", "2"], LIMIT);
    ok(&out);
    assert!(stdout(&out).contains("--concurrency 2 held 10 session start(s) back"), "{}", stdout(&out));
    // A sweep says it per value.
    let out = profile_streaming(&mock.url, &sparse, &dir.path().join("c"), &["--concurrency", "1,8"], LIMIT);
    ok(&out);
    assert!(stdout(&out).contains("note (--concurrency 8): --concurrency 8 had no effect"), "{}", stdout(&out));
}

#[test]
fn urls_join_like_a_url_library_and_the_mock_refuses_unknown_paths() {
    let mock = Mock::start(&["--ttft-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = timed_trace(dir.path(), 2, 5);
    let with_v1 = format!("{}/v1", mock.url);
    ok(&profile_on(&with_v1, &trace, &dir.path().join("a"), &["--no-server-metrics"], LIMIT));
    ok(&profile_on(&mock.url, &trace, &dir.path().join("b"), &["--endpoint", "v1/chat/completions"], LIMIT));
    let paths: Vec<String> = mock.arrivals().iter().filter_map(|a| a["path"].as_str().map(str::to_owned)).collect();
    assert!(!paths.is_empty() && paths.iter().all(|p| p == "/v1/chat/completions"), "{paths:?}");
    let out = profile_on(&mock.url, &trace, &dir.path().join("c"), &["--endpoint", "/v1/v1/chat/completions"], LIMIT);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("no route /v1/v1/chat/completions"), "{}", stdout(&out));
}

#[test]
fn a_model_filter_that_keeps_nothing_lists_the_models_present() {
    let dir = tempfile::tempdir().unwrap();
    let burst = root().join("tests/fixtures/traces/formats/burstgpt/BurstGPT_1.csv.head400");
    let out_file = dir.path().join("out.jsonl");
    let run = |model: &str| {
        Command::new(BIN)
            .arg("convert-trace")
            .arg(&burst)
            .args(["--model", model, "--output-file"])
            .arg(&out_file)
            .output()
            .unwrap()
    };
    let out = run("llama");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--model llama kept none of the 400 record(s)"), "{err}");
    assert!(err.contains("GPT-4 (") && err.contains("ChatGPT ("), "{err}");
    assert!(!out_file.exists(), "no empty output");
    // Models match without regard to case.
    let out = run("gpt-4");
    ok(&out);
    assert!(!std::fs::read_to_string(&out_file).unwrap().is_empty());
}

#[test]
fn a_json_file_that_is_no_trace_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let trace = root().join("tests/fixtures/traces/arxiv_first20.jsonl");
    let analysis = dir.path().join("analysis.json");
    ok(&Command::new(BIN).arg("analyze-trace").arg(&trace).arg("--output-file").arg(&analysis).output().unwrap());
    let out = Command::new(BIN).arg("analyze-trace").arg(&analysis).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a trace (an analysis of a trace"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("detected format: weka"), "{}", stderr(&out));
}

#[test]
fn a_missing_input_is_bad_input_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let m = missing.to_str().unwrap();
    let out_file = dir.path().join("o.jsonl");
    let o = out_file.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["analyze-trace", m],
        vec!["synthesize-trace", m, "--output-file", o],
        vec!["convert-trace", m, "--output-file", o],
        vec!["profile", "-m", "m", "--input-file", m, "--artifact-dir", o],
        vec!["report", m, "-o", o],
        vec!["compare", m],
    ];
    for args in commands {
        let out = Command::new(BIN).args(&args).current_dir(dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("missing.jsonl"), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn profile_help_is_grouped_and_lists_only_what_works() {
    let out = Command::new(BIN).args(["profile", "-h"]).output().unwrap();
    ok(&out);
    let help = stdout(&out);
    for heading in ["Endpoint:", "Input:", "Load:", "Server:", "Output:"] {
        assert!(help.lines().any(|l| l == heading), "no {heading} group in:\n{help}");
    }
}

#[test]
fn compare_counts_runs_from_one_and_keeps_its_columns_aligned() {
    let dir = tempfile::tempdir().unwrap();
    let run = make_run(dir.path());
    let long = dir.path().join("a-run-with-a-rather-long-folder-name-for-the-table");
    std::fs::rename(&run, &long).unwrap();
    let out = Command::new(BIN).arg("compare").arg(&long).arg(&long).args(["--format", "json"]).output().unwrap();
    ok(&out);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["baseline"], 1);
    let out = Command::new(BIN).arg("compare").arg(&long).arg(&long).output().unwrap();
    ok(&out);
    let table = stdout(&out);
    let rows: Vec<&str> = table.lines().take_while(|l| !l.is_empty()).collect();
    let width = rows[0].chars().count();
    assert!(rows.iter().all(|r| r.chars().count() == width), "ragged table:\n{table}");
}
