//! `aiperf-cli profile` end to end against `aiperf-cli mock-server` on 127.0.0.1.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);
/// Long enough that only a hang reaches it.
const GUARD: Duration = Duration::from_secs(90);

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
    // The server saw every row once, its prompt exactly input_length tokens (the mock counts
    // words; our prompts are one token per word).
    let arrivals = mock.arrivals();
    let mut isls: Vec<u64> = arrivals.iter().map(|a| a["prompt_tokens"].as_u64().unwrap()).collect();
    isls.sort_unstable();
    assert_eq!(isls, rows.iter().map(|r| r.1).collect::<Vec<_>>());
    let s = summary(&art);
    assert_eq!(s["request_count"]["avg"], 40.0);
    assert_eq!(s["was_cancelled"], false);
    // AIPerf's marker that the folder is complete, written last.
    let ready = std::fs::read_to_string(art.join(".aiperf_results_ready.json")).unwrap();
    assert_eq!(ready, r#"{"ready":true,"was_cancelled":false,"partial":false}"#);
    assert_eq!(s["output_sequence_length"]["avg"], 4.0);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 40);
    assert_times_consistent(&records);
    for r in &records {
        let m = &r["metadata"];
        assert_eq!(m["input_tokens"], m["usage"]["prompt_tokens"]);
        assert_eq!(record_of(r).chunk_ns.len(), 4);
        // Each request is due at its row's timestamp (the first row's is time zero).
        let (ts, isl) = rows[m["trace_line"].as_u64().unwrap() as usize - 1];
        assert_eq!(m["scheduled_ns"].as_u64(), Some(ts * 1_000_000), "{m}");
        assert_eq!(m["input_tokens"].as_u64(), Some(isl), "{m}");
    }
    // Handed over in the order of the schedule.
    let mut by_due: Vec<(u64, u64)> = records
        .iter()
        .map(|r| (r["metadata"]["scheduled_ns"].as_u64().unwrap(), r["metadata"]["dispatched_ns"].as_u64().unwrap()))
        .collect();
    by_due.sort_unstable();
    assert!(by_due.windows(2).all(|w| w[0].1 <= w[1].1), "{by_due:?}");
    let lateness = &s["send_lateness"];
    assert_eq!(lateness["count"], 40);
    let late_ms: Vec<f64> = records.iter().map(|r| r["metrics"]["send_lateness"]["value"].as_f64().unwrap()).collect();
    assert_eq!(lateness["max"].as_f64(), late_ms.iter().copied().reduce(f64::max));
    assert_eq!(lateness["min"].as_f64(), late_ms.iter().copied().reduce(f64::min));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Time to First Token") && stdout.contains("Calibration"), "{stdout}");
    // The console's table is kept as AIPerf keeps it.
    let table = std::fs::read_to_string(art.join("profile_export_console.txt")).unwrap();
    assert!(table.contains("Time to First Token") && stdout.contains(table.trim_end()), "{table}");
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
    assert_eq!(mock.arrivals().len(), 25);
    // Row i (its prompt 20 + i tokens) is due at i × 30 ms.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 25);
    assert_times_consistent(&records);
    assert_eq!(slots(&records, 20), (0..25).map(|i| (i, i * 30_000_000)).collect::<Vec<_>>());
    assert_eq!(summary(&art)["aiperf_cli_config"]["synthesis"]["speedup_ratio"], 4.0);
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
    // At the server: a2 waits for a1 (≥ 50 ms TTFT) plus 300 ms; a3 for a2 (≥ 50 ms).
    assert!(t[&33] >= t[&11] + 345.0, "a2 at {} after a1 at {}", t[&33], t[&11]);
    assert!(t[&55] >= t[&33] + 45.0, "a3 at {} after a2 at {}", t[&55], t[&33]);
    // The client's records: b's turns at their timestamps, a2 exactly 300 ms after a1 ended, a3
    // as a2 ended, none sent before it was due.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_times_consistent(&records);
    let rec = |isl: u64| {
        let r = records.iter().find(|r| r["metadata"]["input_tokens"] == isl).unwrap();
        let t = |f: &str| r["metadata"][f].as_u64().unwrap();
        (t("scheduled_ns"), t("end_ns"))
    };
    let ms = 1_000_000;
    let (a1, b1, a2, b2, a3) = (rec(11), rec(22), rec(33), rec(44), rec(55));
    assert_eq!(a1.0, 0);
    assert_eq!(b1.0, 100 * ms);
    assert_eq!(a2.0, a1.1 + 300 * ms);
    // A timestamp already passed when the previous turn ended means at once.
    assert_eq!(b2.0, (700 * ms).max(b1.1));
    assert_eq!(a3.0, a2.1);
    let turns: Vec<(String, u64)> = records
        .iter()
        .map(|r| {
            (
                r["metadata"]["conversation_id"].as_str().unwrap().to_owned(),
                r["metadata"]["turn_index"].as_u64().unwrap(),
            )
        })
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
    let (_dir, trace, art) = scratch(&rows(60, 10, 8));
    let out =
        profile_streaming(&mock.url, &trace, &art, &["--concurrency", "8", "--request-timeout-seconds", "2"], LIMIT);
    ok(&out);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 60);
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for r in &records {
        if let Some(e) = r.get("error") {
            *kinds.entry(e["type"].as_str().unwrap().to_owned()).or_default() += 1;
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
    let (_dir, trace, art) = scratch(&rows(5, 10, 3));
    let url = format!("http://127.0.0.1:{port}");
    // Asked to go on past the dead URL (by default the run ends before time zero: `first_hour`).
    let out = profile_on(&url, &trace, &art, &["--request-rate", "50", "--go-on-unreachable"], LIMIT);
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
        // Stopped while sending: 2,000 requests at 50 per second take 40 s.
        wait_for("the first requests", GUARD, || mock.arrivals().len() >= 10);
        kill(&child, signal);
        let out = wait_limited(child, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(130), "{signal}: {}", String::from_utf8_lossy(&out.stderr));
        let art = dir.path().join("art");
        let s = summary(&art);
        assert_eq!(s["was_cancelled"], true);
        assert!(art.join("profile_export_aiperf.csv").is_file());
        let ready = std::fs::read_to_string(art.join(".aiperf_results_ready.json")).unwrap();
        assert_eq!(ready, r#"{"ready":true,"was_cancelled":true,"partial":false}"#, "{signal}");
        let records = read_jsonl(&art.join("profile_export.jsonl"));
        assert!(!records.is_empty() && records.len() < 2000, "{signal}: {} records", records.len());
        let total = s["completed_request_count"]["avg"].as_f64().unwrap();
        assert_eq!(total as usize, records.len());
        // Every request the server saw is accounted for.
        assert_eq!(mock.arrivals().len(), records.len(), "{signal}");
    }
}

#[test]
fn a_second_signal_cancels_what_is_in_flight_at_once() {
    // 40 requests in flight, each taking 60 s: the first SIGTERM starts a grace period longer
    // than that, so only the second one can end them, each with a `cancelled` record (left alone
    // they would succeed after 60 s).
    let mock = Mock::start(&["--ttft-ms", "60000"]);
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "40", "--benchmark-grace-period", "600"];
    let child = spawn_profile(&mock, dir.path(), 100, &extra);
    wait_for("40 requests in flight", GUARD, || mock.arrivals().len() >= 40);
    kill(&child, "-TERM");
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "-TERM");
    let out = wait_limited(child, GUARD);
    assert_eq!(out.status.code(), Some(130));
    let art = dir.path().join("art");
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 40);
    assert!(records.iter().all(|r| r["error"]["type"] == "cancelled" && r["metadata"]["was_cancelled"] == true));
    assert_eq!(summary(&art)["error_request_count"]["avg"], 40.0);
}

#[test]
fn the_api_key_never_appears_in_any_output() {
    let key = "sk-test-SECRET-0123456789";
    let mock = Mock::start(&["--error-rate", "0.5"]);
    let (_dir, trace, art) = scratch(&rows(10, 10, 3));
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
    assert_eq!(summary(&art)["aiperf_cli_config"]["api_key"], "<redacted>");
}

#[test]
fn completions_non_streaming_and_goodput() {
    let mock = Mock::start(&["--ttft-ms", "1"]);
    let (_dir, trace, art) = scratch(&rows(12, 10, 5));
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
    assert!(csv.starts_with("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n"));
    assert!(csv.contains("Request Throughput (requests/sec),"));
}

#[test]
fn unsupported_aiperf_options_are_rejected_clearly() {
    let out = profile(&["-m", "m", "--input-file", "x.jsonl", "--audio-length-mean", "100"], LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--audio-length-mean") && err.contains("not supported"), "{err}");
}

#[test]
fn waits_past_thirty_days_are_refused_before_anything_is_sent() {
    // Each of these made the replay wait for ever after its first request: the guard turns such a
    // wait into a failure.
    let mock = Mock::start(&[]);
    for (name, rows, expected) in [
        (
            "far.jsonl",
            [
                r#"{"timestamp": 0, "input_length": 5, "output_length": 2}"#,
                r#"{"timestamp": 1e308, "input_length": 5, "output_length": 2}"#,
            ],
            ":2: field 'timestamp' 1e308 ms: accepted is at most 2592000000 ms, 30 days after time zero (0 ms)",
        ),
        (
            "slow.jsonl",
            [
                r#"{"session_id": "a", "timestamp": 0, "input_length": 5, "output_length": 2}"#,
                r#"{"session_id": "a", "delay": 1e300, "input_length": 5, "output_length": 2}"#,
            ],
            ":2: field 'delay' 1e300 ms: accepted is at most 2592000000 ms (30 days)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join(name);
        std::fs::write(&trace, rows.join("\n") + "\n").unwrap();
        let art = dir.path().join("art");
        let out = profile_on(&mock.url, &trace, &art, &["--ui-type", "none"], GUARD);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("error: {}{expected}", trace.display())), "{err}");
        assert!(!art.exists(), "nothing written");
    }
    assert!(mock.arrivals().is_empty(), "nothing sent");
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
    let (_dir, trace, art) = scratch(&rows(30, 10, 2));
    let out =
        profile_streaming(&mock.url, &trace, &art, &["--request-rate", "40", "--arrival-pattern", "constant"], LIMIT);
    ok(&out);
    assert_eq!(mock.arrivals().len(), 30);
    // Session k (its prompt 10 + k tokens) is due at k × 25 ms.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_times_consistent(&records);
    assert_eq!(slots(&records, 10), (0..30).map(|k| (k, k * 25_000_000)).collect::<Vec<_>>());
}

/// (prompt tokens − `base`, scheduled time) of every record, in order.
fn slots(records: &[serde_json::Value], base: u64) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = records
        .iter()
        .map(|r| {
            (r["metadata"]["input_tokens"].as_u64().unwrap() - base, r["metadata"]["scheduled_ns"].as_u64().unwrap())
        })
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn benchmark_duration_stops_sending_and_the_run_ends() {
    let mock = Mock::start(&["--ttft-ms", "5"]);
    let (_dir, trace, art) = scratch(&rows(5, 10, 2));
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
    // The 5-row trace is reused in order, one session every 50 ms, and nothing due at or after
    // the end of the 1.5 s is sent: at most 30 requests (how many of them leave depends on how
    // punctual this machine is).
    let n = mock.arrivals().len();
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), n);
    assert!((1..=30).contains(&n), "{n} requests in 1.5 s at 20 req/s");
    assert_times_consistent(&records);
    let mut due: Vec<u64> = records.iter().map(|r| r["metadata"]["scheduled_ns"].as_u64().unwrap()).collect();
    due.sort_unstable();
    due.dedup();
    assert_eq!(due.len(), n, "one request per slot");
    for r in &records {
        let (isl, at) =
            (r["metadata"]["input_tokens"].as_u64().unwrap(), r["metadata"]["scheduled_ns"].as_u64().unwrap());
        let k = at / 50_000_000;
        assert!(at == k * 50_000_000 && k < 30 && isl == 10 + k % 5, "{}", r["metadata"]);
    }
    let s = summary(&art);
    assert_eq!(s["was_cancelled"], false);
    assert_eq!(s["completed_request_count"]["avg"].as_f64().unwrap() as usize, n);
}

/// Without `--input-file`, AIPerf's synthetic workload options generate the rows that are
/// replayed (one request at a time unless a load is given, as AIPerf): the same rows as
/// `synthesize-trace` writes for the options and seed, each turn's new prompt of the drawn
/// length, later turns carrying the conversation's history; with a trace file they are refused.
#[test]
fn aiperfs_synthetic_workload_replays_without_a_trace() {
    let mock = Mock::start(&["--ttft-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let workload = ["--isl", "60", "--isl-stddev", "10", "--osl", "4", "--num-dataset-entries", "6"];
    let workload = [&workload[..], &["--conversation-turn-mean", "2", "--random-seed", "7"]].concat();
    let trace = dir.path().join("synth.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aiperf-cli"))
        .args(["synthesize-trace", "--output-file", trace.to_str().unwrap()])
        .args(&workload)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = read_jsonl(&trace);
    assert_eq!(rows.len(), 12);

    let (art, tok) = (dir.path().join("art"), tokenizer());
    let base =
        ["-m", "m", "-u", &mock.url, "--tokenizer", &tok, "--streaming", "--artifact-dir", art.to_str().unwrap()];
    let out = profile(&[&base[..], &workload[..], &["--extra-inputs", "ignore_eos:true"]].concat(), LIMIT);
    ok(&out);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), rows.len());
    assert_eq!(mock.arrivals().len(), rows.len());
    // Turn by turn: the first prompt is the row's length; a later one adds the history (the
    // earlier prompts and the 4-token answers) to its own new tokens.
    let mut by_conversation: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in &records {
        let id = r["metadata"]["conversation_id"].as_str().unwrap().to_owned();
        by_conversation.entry(id).or_default().push(r["metrics"]["input_sequence_length"]["value"].as_f64().unwrap());
    }
    let mut want: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for row in &rows {
        let turns = want.entry(row["session_id"].as_str().unwrap().to_owned()).or_default();
        let history = turns.last().map_or(0.0, |prev| prev + 4.0);
        turns.push(history + row["input_length"].as_f64().unwrap());
    }
    assert_eq!(by_conversation, want);
    let config = &summary(&art)["aiperf_cli_config"];
    assert_eq!(config["input_file"], serde_json::Value::Null);

    let file = write_trace(dir.path(), &[r#"{"input_length": 5}"#.to_string()]);
    let out = profile_on(&mock.url, &file, &dir.path().join("art2"), &["--isl", "60"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("drop --input-file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_record_carries_aiperfs_http_breakdown_measured_on_its_connection() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let (_dir, trace, art) = scratch(&rows(12, 20, 4));
    ok(&profile_streaming(&mock.url, &trace, &art, &["--concurrency", "2"], LIMIT));
    let units = [
        ("http_req_blocked", "ms"),
        ("http_req_dns_lookup", "ms"),
        ("http_req_connecting", "ms"),
        ("http_req_sending", "ms"),
        ("http_req_waiting", "ms"),
        ("http_req_receiving", "ms"),
        ("http_req_duration", "ms"),
        ("http_req_data_sent", "KB"),
        ("http_req_data_received", "KB"),
        ("http_req_chunks_sent", "count"),
        ("http_req_chunks_received", "count"),
        ("http_req_connection_reused", "ratio"),
        ("http_req_connection_overhead", "ms"),
        ("http_req_total", "ms"),
    ];
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 12);
    for r in &records {
        let m = &r["metrics"];
        let v = |k: &str| m[k]["value"].as_f64().unwrap_or_else(|| panic!("{k} missing: {m}"));
        for (k, unit) in units {
            assert_eq!(m[k]["unit"], unit, "{k}");
        }
        // A request on a connection opened earlier (before time zero, or by an earlier request)
        // spends nothing opening it; a new one's opening is measured; 127.0.0.1 needs no name
        // lookup; the pool has no cap, so nothing waits for a slot.
        match v("http_req_connection_reused") {
            1.0 => assert_eq!(v("http_req_connecting"), 0.0),
            0.0 => assert!(v("http_req_connecting") > 0.0, "{m}"),
            other => panic!("http_req_connection_reused {other}"),
        }
        assert_eq!(v("http_req_connection_overhead"), v("http_req_connecting"));
        assert_eq!(v("http_req_dns_lookup"), 0.0);
        assert_eq!(v("http_req_blocked"), 0.0);
        assert_eq!(v("http_req_chunks_sent"), 1.0);
        assert!(v("http_req_data_sent") > 0.0 && v("http_req_data_received") > 0.0);
        // A streamed answer comes in several reads; the parts add up as AIPerf's do.
        assert!(v("http_req_chunks_received") >= 2.0);
        let parts = v("http_req_sending") + v("http_req_waiting") + v("http_req_receiving");
        assert!((v("http_req_total") - v("http_req_connection_overhead") - parts).abs() < 1e-6, "{m}");
        assert!((v("http_req_duration") - parts).abs() < 1e-3, "{m}");
        // The body's last byte arrives after the last token's chunk was read.
        assert!(v("http_req_duration") >= v("request_latency") - 1e-6, "{m}");
    }
    let s = summary(&art);
    for (k, unit) in units {
        assert_eq!(s[k]["unit"], unit, "{k}");
        assert_eq!(s[k]["count"], 12, "{k}");
    }
    // The connections opened before time zero are reused.
    assert!(s["http_req_connection_reused"]["avg"].as_f64().unwrap() > 0.0);
}

#[test]
fn export_level_summary_writes_the_summaries_without_the_records() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let (_dir, trace, art) = scratch(&rows(4, 10, 3));
    ok(&profile_streaming(&mock.url, &trace, &art, &["--concurrency", "1"], LIMIT));
    assert!(art.join("profile_export.jsonl").is_file());
    // AIPerf's spelling and level; the records of the run replaced go too.
    let summary_only = ["--concurrency", "1", "--overwrite", "--profile-export-level", "summary"];
    ok(&profile_streaming(&mock.url, &trace, &art, &summary_only, LIMIT));
    assert!(!art.join("profile_export.jsonl").exists());
    let s = summary(&art);
    assert_eq!(s["request_count"]["avg"], 4.0);
    assert_eq!(s["input_config"]["artifacts"]["records"], false);
    assert_eq!(s["aiperf_cli_config"]["export_level"], "summary");
    assert!(art.join(".aiperf_results_ready.json").is_file());
}

/// `--request-cancellation-rate`/`-delay`: the chosen share of requests reaches the server whole,
/// is abandoned the delay after its send and is recorded as AIPerf records a cancelled request
/// (`was_cancelled`, `cancellation_time_ns`, error code 499); the summary counts them as errors
/// and the console as cancelled; the same `--random-seed` cancels the same requests.
#[test]
fn request_cancellation_cancels_a_seeded_share_after_the_delay() {
    // Every answer takes 400 ms to its first token, far longer than the 30 ms delay.
    let mock = Mock::start(&["--ttft-ms", "400", "--itl-ms", "1"]);
    let (dir, trace, _) = scratch(&rows(40, 20, 3));
    let run = |name: &str, seed: &str| {
        let art = dir.path().join(name);
        let extra = [
            "--concurrency",
            "10",
            "--request-cancellation-rate",
            "50",
            "--request-cancellation-delay",
            "0.03",
            "--random-seed",
            seed,
        ];
        let out = profile_streaming(&mock.url, &trace, &art, &extra, LIMIT);
        ok(&out);
        let records = read_jsonl(&art.join("profile_export.jsonl"));
        assert_eq!(records.len(), 40);
        let mut cancelled = std::collections::BTreeSet::new();
        for r in &records {
            let m = &r["metadata"];
            let rec = record_of(r);
            if m["was_cancelled"] == true {
                assert_eq!(r["error"]["code"], 499, "{r}");
                assert!(m["cancellation_time_ns"].as_u64().unwrap() >= m["request_start_ns"].as_u64().unwrap(), "{r}");
                // Abandoned no sooner than the delay after its send, before any token came.
                assert!(rec.end_ns - rec.sent_ns >= 30_000_000, "{r}");
                assert!(rec.chunk_ns.is_empty(), "{r}");
                cancelled.insert(m["session_num"].as_u64().unwrap());
            } else {
                assert!(r.get("error").is_none(), "{r}");
                assert_eq!(rec.chunk_ns.len(), 3, "{r}");
            }
        }
        let s = summary(&art);
        assert_eq!(s["error_request_count"]["avg"], cancelled.len() as f64);
        assert_eq!(s["request_count"]["avg"], (40 - cancelled.len()) as f64);
        assert_eq!(s["aiperf_cli_config"]["request_cancellation_rate"], 50.0);
        let console = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            console.contains(&format!("{} completed, {} cancelled", 40 - cancelled.len(), cancelled.len())),
            "{console}"
        );
        cancelled
    };
    let a = run("a", "7");
    // 50 % of 40 requests: a seeded draw, far from none and from all.
    assert!((8..=32).contains(&a.len()), "{a:?}");
    assert_eq!(run("b", "7"), a, "the same seed cancels the same requests");
    let c = run("c", "8");
    assert_ne!(c, a, "another seed cancels others");
    // Every request that was not cancelled reached the server (a cancelled one does too unless
    // its connection took longer than the delay to open).
    let cancelled = 2 * a.len() + c.len();
    assert!(mock.arrivals().len() >= 120 - cancelled);
}

/// The warm-up options: a warm-up bounded by time at a constant rate sends no more than the
/// rate allows in that time, a session bound caps a request count, and every warm-up request
/// reaches the server before the run's first while none of them is recorded or summarized.
#[test]
fn warmup_runs_at_its_own_rate_and_bounds_and_is_not_measured() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let (dir, trace, _) = scratch(&rows(6, 20, 2));
    let warmup_of = |from: usize| -> (usize, usize) {
        let arrivals = mock.arrivals();
        let arrivals = &arrivals[from..];
        let is_warmup =
            |a: &serde_json::Value| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-"));
        let n = arrivals.iter().filter(|a| is_warmup(a)).count();
        // Every warm-up arrival comes before the first measured one.
        let first_measured = arrivals.iter().position(|a| !is_warmup(a)).unwrap();
        assert!(arrivals[first_measured..].iter().all(|a| !is_warmup(a)));
        (n, arrivals.len() - n)
    };
    let check = |art: &std::path::Path, out: &std::process::Output| {
        ok(out);
        assert_eq!(read_jsonl(&art.join("profile_export.jsonl")).len(), 6);
        assert_eq!(summary(art)["request_count"]["avg"], 6.0);
    };
    // 20 per second, constant, for 0.5 s: sends due at 0, 50, …, 450 ms, at most 10; a
    // closed loop would send hundreds to this mock in that time.
    let art = dir.path().join("rate");
    let extra = [
        "--concurrency",
        "2",
        "--warmup-duration",
        "0.5",
        "--warmup-request-rate",
        "20",
        "--warmup-arrival-pattern",
        "constant",
        "--warmup-grace-period",
        "10",
    ];
    let out = profile_streaming(&mock.url, &trace, &art, &extra, LIMIT);
    check(&art, &out);
    let (warm, measured) = warmup_of(0);
    assert!((1..=10).contains(&warm), "{warm} warm-up requests");
    assert_eq!(measured, 6);
    assert_eq!(summary(&art)["aiperf_cli_config"]["warmup_request_rate"], 20.0);
    // Sessions and requests: the first bound reached ends the warm-up.
    let before = mock.arrivals().len();
    let art = dir.path().join("sessions");
    let extra = ["--concurrency", "2", "--warmup-request-count", "9", "--num-warmup-sessions", "4"];
    let out = profile_streaming(&mock.url, &trace, &art, &extra, LIMIT);
    check(&art, &out);
    assert_eq!(warmup_of(before), (4, 6));
}

/// The warm-up sends whole conversations, as AIPerf 0.13.0's: each later turn carries the
/// conversation so far (the server's reply included) on the session's correlation id, a request
/// count ends the sessions in progress, and none of it is recorded; the run then takes the
/// sessions after those the warm-up drew. Against AIPerf itself on sessions of three turns:
/// `--concurrency 2 --warmup-request-count 4` sends two turns of s0 and s1 and its run begins at
/// s3; `--concurrency 1` sends s0's three turns and s1's first, and its run begins at s2
/// (`aiperf_load.rs` compares the two clients).
#[test]
fn the_warmup_sends_whole_conversations_with_their_history_unrecorded() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1", "--log-bodies"]);
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(dir.path(), &multi_turn_lines(6, 3));
    for (concurrency, warm_turns, run_sessions) in
        [("2", &[("s0", 2), ("s1", 2)][..], ["s3", "s4"]), ("1", &[("s0", 3), ("s1", 1)][..], ["s2", "s3"])]
    {
        let before = mock.arrivals().len();
        let art = dir.path().join(format!("c{concurrency}"));
        let extra = [
            "--custom-dataset-type",
            "multi_turn",
            "--concurrency",
            concurrency,
            "--warmup-request-count",
            "4",
            "--request-count",
            "4",
        ];
        ok(&profile_streaming(&mock.url, &file, &art, &extra, LIMIT));
        let arrivals = mock.arrivals();
        let is_warmup =
            |a: &serde_json::Value| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-"));
        let (warm, run): (Vec<_>, Vec<_>) = arrivals[before..].iter().partition(|a| is_warmup(a));
        assert_eq!((warm.len(), run.len()), (4, 4));
        assert!(arrivals[before..before + 4].iter().all(is_warmup), "the warm-up comes first");
        // (session, turn) of a request: its last message's text; the turns before it as the
        // conversation, each followed by the server's non-empty reply.
        let turn_of = |a: &serde_json::Value| -> (String, u32) {
            let messages = a["body"]["messages"].as_array().unwrap();
            let text = messages.last().unwrap()["content"].as_str().unwrap();
            let (session, turn) = text.split_once(" t").unwrap();
            let turn: u32 = turn.parse().unwrap();
            assert_eq!(messages.len(), 2 * turn as usize + 1, "{messages:?}");
            for (k, m) in messages.iter().enumerate() {
                if k % 2 == 0 {
                    assert_eq!(m["content"], format!("{session} t{}", k / 2), "{messages:?}");
                } else {
                    assert_eq!(m["role"], "assistant");
                    assert!(!m["content"].as_str().unwrap().is_empty(), "{messages:?}");
                }
            }
            (session.to_owned(), turn)
        };
        let mut per_session: BTreeMap<String, (Vec<u32>, Vec<String>)> = BTreeMap::new();
        for a in &warm {
            let (session, turn) = turn_of(a);
            let e = per_session.entry(session).or_default();
            e.0.push(turn);
            e.1.push(a["headers"]["correlation_id"].as_str().unwrap().to_owned());
        }
        let counts: Vec<(&str, usize)> = per_session.iter().map(|(s, (t, _))| (s.as_str(), t.len())).collect();
        assert_eq!(counts, warm_turns, "concurrency {concurrency}");
        for (turns, ids) in per_session.values() {
            assert_eq!(*turns, (0..turns.len() as u32).collect::<Vec<_>>(), "turns in order");
            assert!(ids.iter().all(|id| id == &ids[0]), "one correlation id a session: {ids:?}");
        }
        // Recorded: the run's four requests only, of the sessions after the warm-up's draws.
        let records = read_jsonl(&art.join("profile_export.jsonl"));
        assert_eq!(records.len(), 4);
        let mut sessions: Vec<&str> =
            records.iter().map(|r| r["metadata"]["conversation_id"].as_str().unwrap()).collect();
        sessions.sort_unstable();
        sessions.dedup();
        assert_eq!(sessions, run_sessions, "concurrency {concurrency}");
        for a in &run {
            turn_of(a);
        }
        assert_eq!(summary(&art)["request_count"]["avg"], 4.0);
    }
}

/// The scheduled times (ms from time zero) of a run's records, in order.
fn scheduled_ms(art: &std::path::Path) -> Vec<f64> {
    let mut t: Vec<f64> =
        read_jsonl(&art.join("profile_export.jsonl")).iter().map(|r| record_of(r).scheduled_ns as f64 / 1e6).collect();
    t.sort_by(f64::total_cmp);
    t
}

/// `--concurrency-ramp-duration`: the ceiling rises from 1 to `--concurrency` one step at a
/// time (AIPerf's linear ramp), so the starts of a closed loop whose answers outlast the ramp
/// are due at the ramp's steps instead of all at once; `--request-rate-ramp-duration`: the
/// gaps of constant arrivals shrink as AIPerf's rate rises every 0.1 s, from 1/10 of the
/// rate to the rate.
#[test]
fn ramps_raise_the_concurrency_and_the_rate_on_aiperfs_steps() {
    let mock = Mock::start(&["--ttft-ms", "2000", "--itl-ms", "1"]);
    let (dir, trace, _) = scratch(&rows(4, 20, 1));
    // 1 → 4 over 1.5 s: 2 at 0.5 s, 3 at 1 s, 4 at 1.5 s; no answer comes before 2 s.
    let art = dir.path().join("concurrency");
    let out = profile_streaming(
        &mock.url,
        &trace,
        &art,
        &["--concurrency", "4", "--concurrency-ramp-duration", "1.5"],
        LIMIT,
    );
    ok(&out);
    let t = scheduled_ms(&art);
    assert_eq!(t.len(), 4);
    assert_eq!(t[1..], [500.0, 1000.0, 1500.0], "{t:?}");
    assert_times_consistent(&read_jsonl(&art.join("profile_export.jsonl")));

    // 20 per second, ramped over 1 s: 2/s at first (a 500 ms gap), 11/s from 0.5 s, …, 20/s
    // (50 ms gaps) from 1 s on.
    let fast = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let art = dir.path().join("rate");
    let extra = [
        "--request-rate",
        "20",
        "--arrival-pattern",
        "constant",
        "--request-rate-ramp-duration",
        "1",
        "--request-count",
        "16",
    ];
    let out = profile_streaming(&fast.url, &trace, &art, &extra, LIMIT);
    ok(&out);
    let t = scheduled_ms(&art);
    assert_eq!(t.len(), 16);
    let gaps: Vec<f64> = t.windows(2).map(|w| ((w[1] - w[0]) * 1e3).round() / 1e3).collect();
    assert_eq!(gaps[..2], [500.0, 90.909], "{gaps:?}");
    assert!(gaps.windows(2).all(|w| w[1] <= w[0]), "{gaps:?}");
    assert_eq!(gaps[gaps.len() - 1], 50.0, "{gaps:?}");
}

/// `--arrival-pattern gamma` with `--arrival-smoothness` (`--vllm-burstiness`): the gaps
/// between arrivals keep the rate's mean while their spread follows the smoothness (1/√k),
/// as AIPerf's and vLLM's gamma arrivals.
#[test]
fn gamma_arrivals_follow_the_smoothness() {
    let mock = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let (dir, trace, _) = scratch(&rows(10, 20, 1));
    let cv = |name: &str, flag: &str, k: &str| {
        let art = dir.path().join(name);
        let extra = [
            "--request-rate",
            "400",
            "--arrival-pattern",
            "gamma",
            flag,
            k,
            "--request-count",
            "300",
            "--concurrency",
            "64",
        ];
        ok(&profile_on(&mock.url, &trace, &art, &extra, LIMIT));
        let t = scheduled_ms(&art);
        assert_eq!(t.len(), 300);
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        // The mean gap is the rate's, 2.5 ms, within the sampling error of 299 gaps.
        assert!((mean / 2.5 - 1.0).abs() < 0.5, "{name}: mean gap {mean} ms");
        (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt() / mean
    };
    let regular = cv("regular", "--arrival-smoothness", "25");
    let bursty = cv("bursty", "--vllm-burstiness", "0.2");
    // Expected 0.2 and 2.2.
    assert!(regular < 0.5 && bursty > 1.2, "regular {regular}, bursty {bursty}");
}

/// `--request-rate-series`: the rate starts at the first point's and follows the line to the
/// next, updated every 0.1 s as AIPerf's series controller does, then stays at the last.
#[test]
fn a_rate_series_shapes_the_arrivals() {
    let mock = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let (dir, trace, _) = scratch(&rows(5, 20, 1));
    let series = dir.path().join("series.json");
    std::fs::write(&series, r#"[{"time_s": 0, "qps": 10}, {"time_s": 1, "qps": 40}]"#).unwrap();
    let art = dir.path().join("art");
    let extra =
        ["--request-rate-series", series.to_str().unwrap(), "--arrival-pattern", "constant", "--request-count", "30"];
    ok(&profile_on(&mock.url, &trace, &art, &extra, LIMIT));
    let t = scheduled_ms(&art);
    assert_eq!(t.len(), 30);
    let gaps: Vec<f64> = t.windows(2).map(|w| ((w[1] - w[0]) * 1e3).round() / 1e3).collect();
    // 10 per second at first, 13 from 0.1 s (10 + 30 × 0.1), …, 40 from 1 s on.
    assert_eq!(gaps[..2], [100.0, 76.923], "{gaps:?}");
    // Offsets are whole microseconds: a gap may exceed the one before by 1 µs.
    assert!(gaps.windows(2).all(|w| w[1] <= w[0] + 0.001), "{gaps:?}");
    assert_eq!(gaps[gaps.len() - 1], 25.0, "{gaps:?}");
    assert_eq!(summary(&art)["aiperf_cli_config"]["request_rate_series"], series.to_str().unwrap());
}
