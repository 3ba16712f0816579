//! `aiperf-cli profile` end to end against `aiperf-cli mock-server` on 127.0.0.1.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// Rows with distinct input lengths, so the mock's logged prompt size identifies the row.
fn timed_rows(n: usize) -> Vec<(u64, u64)> {
    (0..n).map(|i| ((i as u64) * 45 + (i as u64 % 4) * 11, 100 + i as u64 * 13)).collect()
}

#[test]
fn fixed_schedule_is_kept_and_prompts_are_exact() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let rows = timed_rows(40);
    let lines: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, (ts, isl))| {
            format!(
                r#"{{"timestamp": {ts}, "input_length": {isl}, "output_length": 4, "hash_ids": [{}, {}]}}"#,
                i % 3,
                100 + i
            )
        })
        .collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out = profile_streaming(&mock.url, &trace, &art, &[], LIMIT);
    ok(&out);
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), rows.len());
    let at = arrival_ms(&arrivals);
    let by_isl: HashMap<u64, u64> = rows.iter().map(|(ts, isl)| (*isl, *ts)).collect();
    // The mock counts words; our prompts are one token per word, so this is input_length.
    let offsets: Vec<f64> = arrivals
        .iter()
        .zip(&at)
        .map(|(a, t)| {
            let isl = a["prompt_tokens"].as_u64().unwrap();
            let ts = by_isl.get(&isl).unwrap_or_else(|| panic!("prompt of {isl} tokens matches no row"));
            t - *ts as f64
        })
        .collect();
    let zero = offsets.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = offsets.iter().map(|o| o - zero).fold(0.0, f64::max);
    assert!(worst < 50.0, "arrival times deviate from the trace by up to {worst:.2} ms");
    let s = summary(&art);
    assert_eq!(s["request_count"]["avg"], 40.0);
    assert_eq!(s["was_cancelled"], false);
    assert!(s["send_lateness"]["p50"].as_f64().unwrap() < 20.0);
    assert_eq!(s["output_sequence_length"]["avg"], 4.0);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 40);
    for r in &records {
        let m = &r["metadata"];
        assert_eq!(m["input_tokens"], m["usage"]["prompt_tokens"]);
        assert_eq!(m["chunk_ns"].as_array().unwrap().len(), 4);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Time to First Token") && stdout.contains("Calibration"), "{stdout}");
    // AIPerf's headers: a unique request id, the session's correlation id twice, our user agent.
    let mut request_ids: Vec<&str> = arrivals.iter().map(|a| a["headers"]["request_id"].as_str().unwrap()).collect();
    request_ids.sort_unstable();
    request_ids.dedup();
    assert_eq!(request_ids.len(), 40);
    for a in &arrivals {
        let h = &a["headers"];
        assert!(h["correlation_id"].as_str().unwrap().starts_with("fixed-schedule-session_"), "{h}");
        assert_eq!(h["affinity"], h["correlation_id"]);
        assert!(h["user_agent"].as_str().unwrap().starts_with("aiperf-cli/"));
    }
}

#[test]
fn synthesis_speedup_ratio_compresses_the_schedule() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    // 25 rows, 120 ms apart in the trace: 30 ms apart at speed-up 4.
    let lines: Vec<String> = (0..25)
        .map(|i| {
            format!(
                r#"{{"timestamp": {}, "input_length": {}, "output_length": 2, "hash_ids": [{i}]}}"#,
                i * 120,
                20 + i
            )
        })
        .collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out = profile_streaming(&mock.url, &trace, &art, &["--synthesis-speedup-ratio", "4"], LIMIT);
    ok(&out);
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), 25);
    // Offsets from the schedule, with the most punctual request as time zero.
    let offsets: Vec<(u64, f64)> = arrivals
        .iter()
        .zip(arrival_ms(&arrivals))
        .map(|(a, t)| {
            let i = a["prompt_tokens"].as_u64().unwrap() - 20;
            (i, t - i as f64 * 30.0)
        })
        .collect();
    let zero = offsets.iter().map(|o| o.1).fold(f64::INFINITY, f64::min);
    for (i, o) in offsets {
        assert!(o - zero < 50.0, "row {i} arrived {:.1} ms late for a 4x faster schedule", o - zero);
    }
    assert_eq!(summary(&art)["input_config"]["synthesis"]["speedup_ratio"], 4.0);
}

#[test]
fn sessions_wait_for_completion_and_delays() {
    let mock = Mock::start(&["--ttft-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    // Session a: 0 ms, then 300 ms after turn 1 completes. Session b: 100 ms, then at 700 ms.
    let lines = vec![
        r#"{"session_id": "a", "timestamp": 0, "input_length": 11, "output_length": 2}"#.to_string(),
        r#"{"session_id": "b", "timestamp": 100, "input_length": 22, "output_length": 2}"#.to_string(),
        r#"{"session_id": "a", "delay": 300, "input_length": 33, "output_length": 2}"#.to_string(),
        r#"{"session_id": "b", "timestamp": 700, "input_length": 44, "output_length": 2}"#.to_string(),
        r#"{"session_id": "a", "input_length": 55, "output_length": 2}"#.to_string(),
    ];
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    // Turns are told apart by their prompt sizes, so each prompt goes alone (the conversation
    // carried by later turns is tested in `profile::tests`).
    let out = profile_streaming(&mock.url, &trace, &art, &["--turn-history", "none"], LIMIT);
    ok(&out);
    let arrivals = mock.arrivals();
    let at = arrival_ms(&arrivals);
    let t: BTreeMap<u64, f64> =
        arrivals.iter().zip(&at).map(|(a, t)| (a["prompt_tokens"].as_u64().unwrap(), *t)).collect();
    assert_eq!(t.len(), 5);
    assert!((t[&22] - 100.0).abs() < 40.0, "b1 at {}", t[&22]);
    // a2 waits for a1 (≥ 50 ms TTFT) plus 300 ms.
    assert!(t[&33] >= t[&11] + 345.0, "a2 at {} after a1 at {}", t[&33], t[&11]);
    assert!(t[&33] < t[&11] + 450.0, "a2 too late: {}", t[&33]);
    assert!((t[&44] - 700.0).abs() < 40.0, "b2 at {}", t[&44]);
    // a3 has neither timestamp nor delay: right after a2 completes.
    assert!(t[&55] >= t[&33] + 45.0 && t[&55] < t[&33] + 150.0, "a3 at {} after a2 at {}", t[&55], t[&33]);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let turns: Vec<(String, u64)> = records
        .iter()
        .map(|r| (r["metadata"]["session_id"].as_str().unwrap().to_owned(), r["metadata"]["turn"].as_u64().unwrap()))
        .collect();
    assert_eq!(turns.iter().filter(|(s, _)| s == "a").count(), 3);
}

#[test]
fn every_fault_becomes_an_error_record() {
    let mock = Mock::start(&[
        "--error-rate",
        "0.1",
        "--disconnect-rate",
        "0.1",
        "--malformed-rate",
        "0.1",
        "--stall-rate",
        "0.1",
        "--ignore-max-tokens-rate",
        "0.1",
        "--itl-ms",
        "1",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..60).map(|i| format!(r#"{{"input_length": {}, "output_length": 8}}"#, 10 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out =
        profile_streaming(&mock.url, &trace, &art, &["--concurrency", "8", "--request-timeout-seconds", "2"], LIMIT);
    ok(&out);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 60);
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for r in &records {
        if let Some(e) = r["metadata"].get("error") {
            *kinds.entry(e["kind"].as_str().unwrap().to_owned()).or_default() += 1;
            assert!(!e["message"].as_str().unwrap().is_empty());
        }
    }
    for k in ["http_status", "stream_error", "malformed_response", "timeout", "max_tokens_exceeded"] {
        assert!(kinds.contains_key(k), "no {k} error among {kinds:?}");
    }
    let s = summary(&art);
    let errors: u64 = kinds.values().sum();
    assert_eq!(s["error_request_count"]["avg"].as_f64().unwrap() as u64, errors);
    assert_eq!(s["request_count"]["avg"].as_f64().unwrap() as u64, 60 - errors);
    let summary_kinds: Vec<&str> =
        s["error_summary"].as_array().unwrap().iter().map(|e| e["error_details"]["type"].as_str().unwrap()).collect();
    assert_eq!(summary_kinds.len(), kinds.len());
}

#[test]
fn connection_refused_is_recorded_and_the_run_completes() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..5).map(|i| format!(r#"{{"input_length": {}, "output_length": 3}}"#, 10 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let url = format!("http://127.0.0.1:{port}");
    let out = profile_on(&url, &trace, &art, &["--request-rate", "50"], LIMIT);
    // No request succeeded: exit status 1 (as AIPerf), with every export written.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no request succeeded"));
    let s = summary(&art);
    assert_eq!(s["error_request_count"]["avg"], 5.0);
    assert_eq!(s["error_summary"][0]["error_details"]["type"], "connection_error");
}

/// Starts `profile` on `n` rows at `rate` requests per second with `extra` options.
fn spawn_profile(mock: &Mock, dir: &std::path::Path, n: usize, extra: &[&str]) -> std::process::Child {
    let lines: Vec<String> =
        (0..n).map(|i| format!(r#"{{"input_length": {}, "output_length": 20}}"#, 10 + i % 50)).collect();
    let trace = write_trace(dir, &lines);
    std::process::Command::new(BIN)
        .args(["profile", "-m", "m", "-u", &mock.url, "--streaming", "--tokenizer", &tokenizer(), "--input-file"])
        .arg(&trace)
        .arg("--artifact-dir")
        .arg(dir.join("art"))
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn kill(child: &std::process::Child, signal: &str) {
    let status = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

#[test]
fn sigint_sigterm_and_sighup_stop_and_export_everything_as_cancelled() {
    for signal in ["-INT", "-TERM", "-HUP"] {
        let mock = Mock::start(&["--ttft-ms", "20", "--itl-ms", "5"]);
        let dir = tempfile::tempdir().unwrap();
        let rate = ["--request-rate", "50", "--arrival-pattern", "constant", "--benchmark-grace-period", "5"];
        let child = spawn_profile(&mock, dir.path(), 2000, &rate);
        std::thread::sleep(Duration::from_millis(2500));
        kill(&child, signal);
        let out = wait_limited(child, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(130), "{signal}: {}", String::from_utf8_lossy(&out.stderr));
        let art = dir.path().join("art");
        let s = summary(&art);
        assert_eq!(s["was_cancelled"], true);
        assert!(art.join("profile_export_aiperf.csv").is_file());
        let records = read_jsonl(&art.join("profile_export.jsonl"));
        assert!(!records.is_empty() && records.len() < 2000, "{signal}: {} records", records.len());
        let total = s["request_count"]["avg"].as_f64().unwrap() + s["error_request_count"]["avg"].as_f64().unwrap();
        assert_eq!(total as usize, records.len());
        // Every request the server saw is accounted for.
        assert_eq!(mock.arrivals().len(), records.len(), "{signal}");
    }
}

#[test]
fn a_second_signal_cancels_what_is_in_flight_at_once() {
    // 40 requests in flight, each taking 20 s: the first SIGTERM starts a 60 s grace period,
    // the second one must end the run within a second with every request recorded.
    let mock = Mock::start(&["--ttft-ms", "20000"]);
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "40", "--benchmark-grace-period", "60"];
    let child = spawn_profile(&mock, dir.path(), 100, &extra);
    let t0 = std::time::Instant::now();
    while mock.arrivals().len() < 40 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the requests never reached the server");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(&child, "-TERM");
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "-TERM");
    let second = std::time::Instant::now();
    let out = wait_limited(child, Duration::from_secs(10));
    assert!(second.elapsed() < Duration::from_secs(1), "took {:?} after the second signal", second.elapsed());
    assert_eq!(out.status.code(), Some(130));
    let art = dir.path().join("art");
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 40);
    assert!(records.iter().all(|r| r["metadata"]["error"]["kind"] == "cancelled"));
    assert_eq!(summary(&art)["error_request_count"]["avg"], 40.0);
}

#[test]
fn the_api_key_never_appears_in_any_output() {
    let key = "sk-test-SECRET-0123456789";
    let mock = Mock::start(&["--error-rate", "0.5"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..10).map(|i| format!(r#"{{"input_length": {}, "output_length": 3}}"#, 10 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out = profile_on(
        &mock.url,
        &trace,
        &art,
        &["--concurrency", "2", "--api-key", key, "-H", &format!("X-Other-Key:{key}")],
        LIMIT,
    );
    ok(&out);
    assert!(mock.arrivals().iter().all(|a| a["auth"] == true), "the key must still be sent");
    for text in [String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()] {
        assert!(!text.contains(key));
    }
    for entry in std::fs::read_dir(&art).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(key), "{} contains the API key", path.display());
    }
    assert_eq!(summary(&art)["input_config"]["api_key"], "<redacted>");
}

#[test]
fn completions_non_streaming_and_goodput() {
    let mock = Mock::start(&["--ttft-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..12).map(|i| format!(r#"{{"input_length": {}, "output_length": 5}}"#, 10 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out = profile_on(
        &mock.url,
        &trace,
        &art,
        &[
            "--endpoint-type",
            "completions",
            "--concurrency",
            "3",
            "--request-count",
            "20",
            "--warmup-request-count",
            "2",
            "--goodput",
            "request_latency:10000",
            "--use-server-token-count",
        ],
        LIMIT,
    );
    ok(&out);
    let s = summary(&art);
    assert_eq!(s["request_count"]["avg"], 20.0);
    assert_eq!(s["output_sequence_length"]["avg"], 5.0);
    assert!(s.get("time_to_first_token").is_none());
    assert!(s["goodput"]["avg"].as_f64().unwrap() > 0.0);
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), 22, "20 requests + 2 warmup");
    assert!(arrivals.iter().all(|a| a["path"] == "/v1/completions" && a["stream"] == false));
    let csv = std::fs::read_to_string(art.join("profile_export_aiperf.csv")).unwrap();
    assert!(csv.starts_with("Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n"));
    assert!(csv.contains("Request Throughput (requests/sec),"));
}

#[test]
fn unsupported_aiperf_options_are_rejected_clearly() {
    let out = profile(&["-m", "m", "--input-file", "x.jsonl", "--synthetic-input-tokens-mean", "100"], LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--synthetic-input-tokens-mean") && err.contains("not supported"), "{err}");
}

#[test]
fn missing_tokenizer_name_offline_gives_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &[r#"{"input_length": 5, "output_length": 1}"#.to_string()]);
    let out = std::process::Command::new(BIN)
        .args([
            "profile",
            "-m",
            "m",
            "--concurrency",
            "1",
            "--tokenizer",
            "no-such-org/no-such-model-xyz",
            "--input-file",
        ])
        .arg(&trace)
        .env("HF_HUB_CACHE", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-org/no-such-model-xyz") && err.contains("tokenizer.json"), "{err}");
}

#[test]
fn constant_request_rate_paces_sessions() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..30).map(|i| format!(r#"{{"input_length": {}, "output_length": 2}}"#, 10 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out =
        profile_streaming(&mock.url, &trace, &art, &["--request-rate", "40", "--arrival-pattern", "constant"], LIMIT);
    ok(&out);
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), 30);
    let offsets: Vec<f64> = arrivals
        .iter()
        .zip(arrival_ms(&arrivals))
        .map(|(a, t)| t - (a["prompt_tokens"].as_u64().unwrap() - 10) as f64 * 25.0)
        .collect();
    let zero = offsets.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = offsets.iter().map(|o| o - zero).fold(0.0, f64::max);
    assert!(worst < 50.0, "constant 40 req/s: a request arrived {worst:.1} ms off its slot");
}

#[test]
fn benchmark_duration_stops_sending_and_the_run_ends() {
    let mock = Mock::start(&["--ttft-ms", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..5).map(|i| format!(r#"{{"input_length": {}, "output_length": 2}}"#, 10 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let started = std::time::Instant::now();
    let out = profile_streaming(
        &mock.url,
        &trace,
        &art,
        &[
            "--request-rate",
            "20",
            "--arrival-pattern",
            "constant",
            "--benchmark-duration",
            "1.5",
            "--benchmark-grace-period",
            "2",
        ],
        LIMIT,
    );
    ok(&out);
    // The 5-row trace is reused until the duration ends: ~30 requests at 20 req/s in 1.5 s.
    let n = mock.arrivals().len();
    assert!((20..=31).contains(&n), "{n} requests in 1.5 s at 20 req/s");
    let s = summary(&art);
    assert_eq!(s["was_cancelled"], false);
    assert_eq!(
        (s["request_count"]["avg"].as_f64().unwrap() + s["error_request_count"]["avg"].as_f64().unwrap()) as usize,
        n
    );
    assert!(started.elapsed() < Duration::from_secs(60));
}
