//! AIPerf's output options that `profile` honours, end to end against `aiperf-cli mock-server`:
//! which files each run writes, under which names, and what they hold.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// The names of the files in `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// `profile --streaming --concurrency 2` against `url`, then `extra`.
fn run(url: &str, trace: &Path, art: &Path, extra: &[&str]) -> std::process::Output {
    profile_streaming(url, trace, art, &[&["--concurrency", "2"], extra].concat(), LIMIT)
}

fn trace(dir: &Path) -> std::path::PathBuf {
    let lines: Vec<String> = rows(4, 20, 5);
    write_trace(dir, &lines)
}

/// `--profile-export-prefix run1`: every file of the run (summaries, console table, records, time
/// slices, server metrics) is named on `run1` as AIPerf names them, and nothing under AIPerf's
/// default names is written; a known suffix or an absolute path gives the same base; a folder
/// holding a prefixed run is refused without --overwrite; a prefix naming a folder is refused.
#[test]
fn profile_export_prefix_names_every_file() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let art = dir.path().join("a");
    let out = run(&mock.url, &t, &art, &["--profile-export-prefix", "run1", "--slice-duration", "1"]);
    ok(&out);
    assert_eq!(
        files(&art),
        [
            ".aiperf_results_ready.json",
            "run1.csv",
            "run1.json",
            "run1.jsonl",
            "run1_console.txt",
            "run1_server_metrics.csv",
            "run1_server_metrics.json",
            "run1_timeslices.csv",
            "run1_timeslices.json",
        ]
    );
    assert_eq!(read_jsonl(&art.join("run1.jsonl")).len(), 4);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(art.join("run1.json")).unwrap()).unwrap();
    assert_eq!(s["request_count"]["avg"], 4.0, "{s}");
    assert_eq!(s["input_config"]["artifacts"]["prefix"], "run1");
    assert_eq!(s["aiperf_cli_config"]["profile_export_prefix"], "run1");
    // report and compare open the prefixed run, by its folder or its records file, with its
    // summary's settings and its server metrics.
    let html = dir.path().join("r.html");
    let r = cli(&["report", art.to_str().unwrap(), "--output", html.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(!String::from_utf8_lossy(&r.stderr).contains("not found"), "{}", String::from_utf8_lossy(&r.stderr));
    for path in [art.clone(), art.join("run1.jsonl")] {
        let c = cli(&["compare", path.to_str().unwrap(), "--format", "json"]);
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        assert!(!String::from_utf8_lossy(&c.stderr).contains("not found"), "{}", String::from_utf8_lossy(&c.stderr));
        let j: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
        let rows = j["rows"].as_array().unwrap();
        let count = rows.iter().find(|r| r["metric"] == "Request count").unwrap();
        assert_eq!(count["values"][0], 4.0, "{j}");
    }

    // AIPerf's spelling from GenAI-Perf, a suffix to strip and an absolute path.
    let art = dir.path().join("b");
    let abs = dir.path().join("elsewhere").join("base_raw.jsonl");
    let extra = ["--profile-export-file", abs.to_str().unwrap(), "--export-level", "summary", "--no-server-metrics"];
    let out = run(&mock.url, &t, &art, &extra);
    ok(&out);
    assert_eq!(files(&art), [".aiperf_results_ready.json", "base.csv", "base.json", "base_console.txt"]);

    // The folder now holds a run under the prefix: refused without --overwrite, replaced with it.
    let again = run(&mock.url, &t, &art, &["--profile-export-prefix", "base.json"]);
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("already holds a run") && err.contains("base.csv"), "{err}");
    let out = run(&mock.url, &t, &art, &["--profile-export-prefix", "base.json", "--overwrite"]);
    ok(&out);
    assert_eq!(read_jsonl(&art.join("base.jsonl")).len(), 4);

    for bad in ["sub/run", "", ".json"] {
        let out = run(&mock.url, &t, &dir.path().join("c"), &["--profile-export-prefix", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--profile-export-prefix") && err.contains("accepted is a file name"), "{bad:?}: {err}");
    }
    assert!(!dir.path().join("c").exists());
}

/// `--export-http-trace` with `--show-trace-timing`: the console shows the `http_req_*` table, and every line of the records has AIPerf's `trace_data` (wall-clock send
/// start on the record's own `request_start_ns`, the status, the response body's bytes and reads, k6's
/// durations adding up); a run without the option has none.
#[test]
fn export_http_trace_adds_each_requests_exchange() {
    let mock = Mock::start(&["--ttft-ms", "20", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let art = dir.path().join("traced");
    let out = run(&mock.url, &t, &art, &["--export-http-trace", "--show-trace-timing"]);
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let table = stdout.split("HTTP Trace Timing").nth(1).unwrap_or_else(|| panic!("no timing table: {stdout}"));
    for row in ["HTTP Sending (ms)", "HTTP Waiting (TTFB) (ms)", "HTTP Receiving (ms)", "HTTP Connection Reused"] {
        assert!(table.contains(row), "{row}: {table}");
    }
    let lines = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(lines.len(), 4);
    let mut reused = 0;
    for l in &lines {
        let td = &l["trace_data"];
        assert_eq!(td["trace_type"], "hyper", "{l}");
        assert_eq!(td["response_status_code"], 200, "{l}");
        let start = td["request_send_start_ns"].as_u64().unwrap();
        assert_eq!(start, l["metadata"]["request_start_ns"].as_u64().unwrap(), "{l}");
        let n = |k: &str| td[k].as_u64().unwrap_or_else(|| panic!("{k}: {td}"));
        assert!(n("request_bytes_total") > 0 && n("response_bytes_total") > 0, "{td}");
        assert!(n("response_chunks_count") >= 2, "streamed in several reads: {td}");
        assert!(n("response_receive_start_ns") >= n("request_send_end_ns"), "{td}");
        assert!(n("response_receive_end_ns") <= l["metadata"]["request_end_ns"].as_u64().unwrap(), "{td}");
        assert_eq!(n("sending_ns") + n("waiting_ns") + n("receiving_ns"), n("duration_ns"), "{td}");
        assert!(n("duration_ns") >= 20_000_000, "the mock's 20 ms to the first token: {td}");
        reused += usize::from(td.get("connection_reused_ns").is_some());
    }
    assert!(reused >= 2, "2 connections carry 4 requests: {reused} reused");
    let s = summary(&art);
    assert_eq!(s["input_config"]["artifacts"]["trace"], true);

    let art = dir.path().join("plain");
    let out = run(&mock.url, &t, &art, &[]);
    ok(&out);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("HTTP Trace Timing"));
    assert!(read_jsonl(&art.join("profile_export.jsonl")).iter().all(|l| l.get("trace_data").is_none()));
}

/// AIPerf's own record model reads our `trace_data` (run by hand or by `scripts/test.sh` with
/// the AIPerf virtual environment: `--ignored`).
#[test]
#[ignore = "needs AIPerf's virtual environment (scripts/aiperf-venv.sh)"]
fn aiperf_reads_our_http_trace() {
    let Some(venv) = aiperf_venv() else { return };
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let art = dir.path().join("traced");
    ok(&run(&mock.url, &t, &art, &["--export-http-trace"]));
    let code = r#"
import sys
from aiperf.common.models.record_models import MetricRecordInfo
n = 0
for line in open(sys.argv[1]):
    r = MetricRecordInfo.model_validate_json(line)
    assert r.trace_data is not None and r.trace_data.duration_ns > 0, line
    n += 1
print(n)
"#;
    let out = python(&venv, code, &[art.join("profile_export.jsonl").to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "4");
}

/// The secrets of [`raw_run`]: an API key, a credential header and a URL's password.
const SECRETS: [&str; 3] = ["sk-raw-key-123", "tok-raw-456", "pw-raw-789"];

/// `--export-level raw` against the mock, with an API key, a credential header, a benign header
/// and a password in the URL; `streaming` or not. Returns the artifact folder.
fn raw_run(mock: &Mock, dir: &Path, name: &str, streaming: bool) -> std::path::PathBuf {
    let t = trace(dir);
    let art = dir.join(name);
    let url = mock.url.replacen("://", "://alice:pw-raw-789@", 1);
    let mut extra = vec!["--concurrency", "2", "--export-level", "raw", "--api-key", SECRETS[0]];
    extra.extend(["-H", "X-Auth-Token:tok-raw-456", "-H", "X-Tenant:acme"]);
    if streaming {
        extra.push("--streaming");
    }
    ok(&profile_on(&url, &t, &art, &extra, LIMIT));
    art
}

/// `--export-level raw`: `profile_export_raw.jsonl` beside the records, a line per request in
/// AIPerf's `RawRecordInfo` shape — the record's metadata, the body sent, the headers (every
/// credential `<redacted>`, a benign header shown), the status, each SSE message with its time
/// (or the whole body without streaming); no secret appears anywhere in the folder. A records
/// run replacing it (`--overwrite`) takes the raw file away.
#[test]
fn export_level_raw_writes_each_requests_exchange() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let art = raw_run(&mock, dir.path(), "streamed", true);
    assert!(files(&art).contains(&"profile_export_raw.jsonl".to_owned()), "{:?}", files(&art));
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let raw = read_jsonl(&art.join("profile_export_raw.jsonl"));
    assert_eq!((records.len(), raw.len()), (4, 4));
    for l in &raw {
        let ids: Vec<&serde_json::Value> = records.iter().map(|r| &r["metadata"]["x_request_id"]).collect();
        assert!(ids.contains(&&l["metadata"]["x_request_id"]), "{l}");
        assert_eq!(l["payload"]["model"], "m", "{l}");
        assert_eq!(l["payload"]["stream"], true, "{l}");
        assert_eq!(l["status"], 200, "{l}");
        let h = &l["request_headers"];
        assert_eq!(h["authorization"], "<redacted>", "{h}");
        assert_eq!(h["x-auth-token"], "<redacted>", "{h}");
        assert_eq!(h["x-tenant"], "acme", "{h}");
        assert_eq!(h["content-type"], "application/json", "{h}");
        let responses = l["responses"].as_array().unwrap();
        assert!(responses.len() >= 3, "a first token, more chunks and [DONE]: {l}");
        let times: Vec<u64> = responses.iter().map(|r| r["perf_ns"].as_u64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]) && times[0] >= l["start_perf_ns"].as_u64().unwrap(), "{l}");
        assert_eq!(responses.last().unwrap()["packets"][0], serde_json::json!({"name": "data", "value": "[DONE]"}));
    }
    let plain = raw_run(&mock, dir.path(), "whole", false);
    for l in read_jsonl(&plain.join("profile_export_raw.jsonl")) {
        let r = &l["responses"];
        assert_eq!(r.as_array().map(Vec::len), Some(1), "{l}");
        assert_eq!(r[0]["content_type"], "application/json", "{l}");
        let body: serde_json::Value = serde_json::from_str(r[0]["text"].as_str().unwrap()).unwrap();
        assert!(body["choices"][0]["message"]["content"].is_string(), "{l}");
    }
    for folder in [&art, &plain] {
        for f in files(folder) {
            let text = std::fs::read_to_string(folder.join(&f)).unwrap();
            for s in SECRETS {
                assert!(!text.contains(s), "{s} in {f}");
            }
        }
    }
    ok(&run(&mock.url, &trace(dir.path()), &art, &["--overwrite"]));
    assert!(!art.join("profile_export_raw.jsonl").exists());
}

/// AIPerf's own `RawRecordInfo` model reads every line of our `profile_export_raw.jsonl`,
/// streamed and not (run by hand or by `scripts/test.sh`: `--ignored`).
#[test]
#[ignore = "needs AIPerf's virtual environment (scripts/aiperf-venv.sh)"]
fn aiperf_reads_our_raw_records() {
    let Some(venv) = aiperf_venv() else { return };
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let code = r#"
import sys
from aiperf.common.models.record_models import RawRecordInfo, SSEMessage, TextResponse
n = 0
for path, kind in ((sys.argv[1], SSEMessage), (sys.argv[2], TextResponse)):
    for line in open(path):
        r = RawRecordInfo.model_validate_json(line)
        assert r.payload and r.payload["model"] == "m" and r.status == 200, line
        assert r.request_headers["authorization"] == "<redacted>", line
        assert r.responses and all(isinstance(x, kind) for x in r.responses), line
        n += 1
print(n)
"#;
    let streamed = raw_run(&mock, dir.path(), "streamed", true).join("profile_export_raw.jsonl");
    let whole = raw_run(&mock, dir.path(), "whole", false).join("profile_export_raw.jsonl");
    let out = python(&venv, code, &[streamed.to_str().unwrap(), whole.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "8");
}
