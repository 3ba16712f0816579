//! `aiperf-cli report` and `aiperf-cli compare` on runs that `profile` produced against the mock.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);

fn trace_lines(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                r#"{{"timestamp": {}, "input_length": {}, "output_length": 6, "hash_ids": [{}, {}]}}"#,
                i * 15,
                120 + i * 7,
                i % 3,
                100 + i
            )
        })
        .collect()
}

fn cli(args: &[&str]) -> Output {
    let child = Command::new(BIN)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, LIMIT)
}

/// Two runs of the same trace: one with a goodput SLO, one with --use-server-token-count.
fn two_runs(dir: &Path) -> (String, String) {
    let mock = Mock::start(&["--ttft-ms", "15", "--itl-ms", "2"]);
    let trace = write_trace(dir, &trace_lines(40));
    let a = dir.join("run-a");
    let b = dir.join("run-b");
    ok(&profile_streaming(&mock.url, &trace, &a, &["--goodput", "time_to_first_token:16"], LIMIT));
    ok(&profile_streaming(&mock.url, &trace, &b, &["--use-server-token-count", "--concurrency", "4"], LIMIT));
    (a.display().to_string(), b.display().to_string())
}

#[test]
fn report_and_compare_show_the_clis_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());

    // One run: the recomputed numbers are those `profile` wrote, to the digit.
    for run in [&a, &b] {
        let out = cli(&["compare", run, "--format", "json"]);
        ok(&out);
        let j: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let s = summary(Path::new(run));
        let row = |name: &str| {
            j["rows"].as_array().unwrap().iter().find(|r| r["metric"] == name).unwrap_or_else(|| panic!("{name}"))["values"]
                [0]
            .clone()
        };
        assert_eq!(row("Request count"), s["request_count"]["avg"]);
        assert_eq!(row("Benchmark duration"), s["benchmark_duration"]["avg"]);
        assert_eq!(row("Request throughput"), s["request_throughput"]["avg"]);
        assert_eq!(row("Output token throughput"), s["output_token_throughput"]["avg"]);
        for (name, tag) in [
            ("Time to First Token", "time_to_first_token"),
            ("Inter Token Latency", "inter_token_latency"),
            ("Request Latency", "request_latency"),
            ("Send Lateness", "send_lateness"),
        ] {
            for p in ["p50", "p90", "p99", "avg"] {
                assert_eq!(row(&format!("{name} {p}")), s[tag][p], "{name} {p} of {run}");
            }
        }
        if run == &a {
            assert_eq!(row("Goodput"), s["goodput"]["avg"]);
        }
    }

    // Two runs: labels, changes, differing settings; CSV.
    let out = cli(&["compare", &a, &b, "--label", "slo", "server", "--baseline", "2"]);
    ok(&out);
    let t = stdout(&out);
    assert!(t.contains("server (baseline)") && t.contains("slo"), "{t}");
    assert!(t.contains("Differing input_config entries:") && t.contains("use_server_token_count: false | true"), "{t}");
    assert!(t.contains('%'));
    let out = cli(&["compare", &a, &b, "--format", "csv"]);
    ok(&out);
    assert!(stdout(&out).starts_with("metric,unit,\"run-a\",\"run-b\",\"run-b change\",\"run-b change %\"\n"));

    // The report: one self-contained file with the same numbers and the charts.
    let html = dir.path().join("report.html");
    let out = cli(&["report", &a, &b, "--output", html.to_str().unwrap()]);
    ok(&out);
    let page = std::fs::read_to_string(&html).unwrap();
    let s = summary(Path::new(&a));
    let p50 = s["time_to_first_token"]["p50"].as_f64().unwrap();
    assert!(page.contains(&format!("<td>{p50:.2}</td>")), "TTFT p50 {p50:.2} not in the report");
    assert!(page.matches("<svg").count() >= 30);
    assert!(page.contains(r#"class="compare""#));
    assert!(!page.contains("<script src") && !page.contains("<link") && !page.contains("https://"));
    // The mock's /metrics were scraped during each run: the server's own timeline is drawn.
    assert_eq!(page.matches("The server's metrics (").count(), 2, "server metrics sections");
    for title in ["KV-cache usage (server)", "Requests running and waiting (server)", "Token throughput (server)"] {
        assert!(page.contains(title), "{title}");
    }
}

#[test]
fn aiperfs_session_run_is_reported_with_its_swim_lane() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("aiperf-0.13.0-runs/sessions").display().to_string();
    let html = dir.path().join("report.html");
    ok(&cli(&["report", &run, "--output", html.to_str().unwrap()]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(r#"<figure class="chart" data-chart="swim-lane">"#));
    assert!(page.contains(r#"data-chart="swim-lane-concurrency""#));
    assert!(page.contains("session s9, turn 2: sent"));
}

#[test]
fn bad_runs_are_refused_with_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("r");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("profile_export.jsonl"), "{\"metadata\": {\"turn\": 1}}\n").unwrap();
    let out = cli(&["compare", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("profile_export.jsonl:1: ") && err.contains("missing field"), "{err}");

    let out = cli(&["compare", run.to_str().unwrap(), "--baseline", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--baseline 2: accepted 1 to 1"));

    let out = cli(&["compare", dir.path().join("missing").to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));

    let out = cli(&["report", run.to_str().unwrap(), "--output", "-"]);
    assert_ne!(out.status.code(), Some(0));
}

/// A records file of many reads: its records are all counted, its last line without a newline
/// too, gzipped or not, and a bad line far into it is named by its number.
#[test]
fn a_big_records_file_is_read_whole_and_a_bad_line_in_it_named() {
    let one =
        std::fs::read_to_string(fixture("aiperf-0.13.0-runs/completions-streaming/profile_export.jsonl")).unwrap();
    let lines: Vec<&str> = one.lines().collect();
    // About 10 MB: more reads than record batches in flight.
    let copies = 200;
    let big: Vec<&str> = (0..copies).flat_map(|_| lines.iter().copied()).collect();
    assert!(big.iter().map(|l| l.len()).sum::<usize>() > 8 << 20);
    let dir = tempfile::tempdir().unwrap();
    let count = |text: &[u8]| {
        let file = dir.path().join("profile_export.jsonl");
        std::fs::write(&file, text).unwrap();
        let out = cli(&["compare", file.to_str().unwrap(), "--format", "json"]);
        ok(&out);
        let j: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let row = j["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "Request count").cloned();
        row.and_then(|r| r["values"][0].as_f64()).unwrap()
    };
    let each = count(one.as_bytes());
    assert!(each > 0.0);
    let text = big.join("\n");
    assert_eq!(count(text.as_bytes()), each * f64::from(copies));
    // Gzipped, its reads come out of the decompressor in other sizes.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    assert_eq!(count(&gz.finish().unwrap()), each * f64::from(copies));

    let mut bad = big.clone();
    bad.insert(3000, r#"{"metadata": {"turn": 1}}"#);
    let file = dir.path().join("profile_export.jsonl");
    std::fs::write(&file, bad.join("\n") + "\n").unwrap();
    let out = cli(&["report", file.to_str().unwrap(), "--output", dir.path().join("r.html").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("profile_export.jsonl:3001: ") && err.contains("missing field"), "{err}");
    assert!(!dir.path().join("r.html").exists());
}

/// A sweep's folder: `report` draws its curve (latency and throughput against the load) before its
/// sub-runs, and `compare` sets the sub-runs side by side; the numbers are the sub-runs' own.
#[test]
fn a_sweep_folder_is_drawn_as_a_curve_and_its_sub_runs_compared() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let (dir, trace, art) = scratch_named(&rows(8, 20, 4), "sweep");
    let flags = ["--concurrency", "1,2,4", "--request-count", "8", "--goodput", "time_to_first_token:1000"];
    ok(&profile_streaming(&mock.url, &trace, &art, &flags, LIMIT));
    let html_path = dir.path().join("sweep.html");
    let out = cli(&["report", art.to_str().unwrap(), "--output", html_path.to_str().unwrap()]);
    ok(&out);
    let page = std::fs::read_to_string(&html_path).unwrap();
    assert!(page.contains("Sweep of concurrency (requests)"), "{}", &page[..page.len().min(2000)]);
    for chart in ["curve-ttft", "curve-latency", "curve-throughput"] {
        assert!(page.contains(&format!(r#"data-chart="{chart}""#)), "{chart}");
    }
    // The curve's table holds each sub-run's own TTFT p99, and each sub-run has its section.
    for v in ["1", "2", "4"] {
        let s = summary(&art.join(v));
        let p99 = s["time_to_first_token"]["p99"].as_f64().unwrap();
        assert!(page.contains(&format!("<td>{}</td>", aiperf_core::view::compare::num(p99))), "TTFT p99 of {v}: {p99}");
        assert!(page.contains(&format!("sweep concurrency={v}")), "section of {v}");
    }
    assert!(page.find("curve-ttft").unwrap() < page.find(r#"class="run""#).unwrap());

    let out = cli(&["compare", art.to_str().unwrap(), "--format", "json"]);
    ok(&out);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["runs"], serde_json::json!(["sweep concurrency=1", "sweep concurrency=2", "sweep concurrency=4"]));
}

/// AIPerf's fixed-schedule run against ours made with the same options: compare reads both
/// through AIPerf's option names and lists only what really differs.
#[test]
fn an_aiperf_run_and_ours_with_the_same_options_differ_only_where_they_do() {
    let theirs = root().join("tests/fixtures/aiperf-0.13.0-runs/fixed-schedule-streaming");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("fixed-schedule-streaming");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(theirs.join("trace.jsonl"), run.join("trace.jsonl")).unwrap();
    let mock = Mock::start(&["--ttft-ms", "20", "--itl-ms", "2"]);
    let tok = tokenizer();
    // AIPerf's command line (COMMAND.txt), but for the mock's URL and the tokenizer's file.
    let child = Command::new(BIN)
        .current_dir(dir.path())
        .args(["profile", "-m", "mock", "-u", &mock.url, "--tokenizer", &tok, "--ui-type", "none"])
        .args(["--random-seed", "1", "--artifact-dir", "fixed-schedule-streaming", "--endpoint-type", "chat"])
        .args(["--streaming", "--input-file", "fixed-schedule-streaming/trace.jsonl"])
        .args(["--custom-dataset-type", "mooncake_trace", "--fixed-schedule", "--synthesis-speedup-ratio", "20"])
        .args(["--synthesis-max-osl", "32", "--prompt-input-tokens-block-size", "16"])
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    ok(&wait_limited(child, LIMIT));
    let out = cli(&["compare", "--format", "json", theirs.to_str().unwrap(), run.to_str().unwrap()]);
    ok(&out);
    let c: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let listed: Vec<String> =
        c["differing_input_config"].as_array().unwrap().iter().map(|d| d["key"].as_str().unwrap().to_owned()).collect();
    // Really different: the mock's port and the tokenizer's name; AIPerf turns GPU telemetry on
    // by default and leaves the server's metrics URL implicit where ours writes the one it
    // scraped; ours writes the dataset type only when the format is not detected.
    let expected =
        ["--custom-dataset-type", "--gpu-telemetry", "--no-gpu-telemetry", "--server-metrics", "--tokenizer", "--url"];
    assert!(listed.iter().all(|k| expected.contains(&k.as_str())), "{listed:?}");
    assert!(listed.contains(&"--url".to_owned()), "{listed:?}");
    // A fixed-schedule run of ours has AIPerf's anchored send lag and its time-weighted metrics.
    let s = summary(&run);
    for key in ["replay_sched_lag_p50", "replay_sched_lag_p99", "replay_sched_degraded", "effective_concurrency"] {
        assert!(s[key]["avg"].is_number(), "{key}: {}", s[key]);
    }
    let late = &s["send_lateness"];
    let lag = late["p99"].as_f64().unwrap() - late["min"].as_f64().unwrap();
    assert!((s["replay_sched_lag_p99"]["avg"].as_f64().unwrap() - lag).abs() < 1e-9);
}

#[test]
fn context_overflows_are_counted_and_shown_in_report_and_compare() {
    // The mock answers a prompt and max_tokens over its context as vLLM does (HTTP 400, "This
    // model's maximum context length is …"); a mock token is a word of the prompt.
    let mock = Mock::start(&["--max-model-len", "100"]);
    let lines: Vec<String> = (0..8)
        .map(|i| format!(r#"{{"input_length": {}, "output_length": 4}}"#, if i % 4 == 3 { 400 } else { 10 }))
        .collect();
    let (dir, trace, art) = scratch(&lines);
    ok(&profile_on(&mock.url, &trace, &art, &["--concurrency", "2"], LIMIT));
    let s = summary(&art);
    assert_eq!(
        (s["error_request_count"]["avg"].as_f64(), s["context_overflow_count"]["avg"].as_f64()),
        (Some(2.0), Some(2.0))
    );
    let records = std::fs::read_to_string(art.join("profile_export.jsonl")).unwrap();
    assert_eq!(records.matches("maximum context length is 100 tokens").count(), 2, "{records}");
    let run = art.to_str().unwrap();
    let out = cli(&["compare", run, "--format", "json"]);
    ok(&out);
    let j: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let row = j["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "Context overflow count").cloned();
    assert_eq!(row.map(|r| r["values"][0].clone()), Some(Value::from(2.0)));
    let html = dir.path().join("report.html");
    ok(&cli(&["report", run, "--output", html.to_str().unwrap()]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(
        r#"<tr data-metric="context_overflow_count"><td>Context Overflow Count (requests)</td><td>2</td></tr>"#
    ));
}
