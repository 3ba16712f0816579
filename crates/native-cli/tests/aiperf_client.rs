//! AIPerf 0.13.0's own client against `aiperf-cli mock-server`: the mock must answer every
//! endpoint type it serves (chat and completions, streaming or not) so that AIPerf's parsers
//! count every request as a success.
//!
//! `aiperf_client_gets_no_errors_from_the_mock` needs AIPerf itself, a 1.2 GB virtual environment
//! made by `scripts/aiperf-venv.sh` (minutes the first time), so it is `#[ignore]`d and run by the
//! "AIPerf's own client against the mock server" step of `scripts/test.sh`. When that script
//! says PyPI can't be reached (exit 77) the test passes after printing the script's SKIP line.
//! The labels test below checks the same contract without AIPerf, on every `cargo test`.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Requests per AIPerf run.
const REQUESTS: u64 = 20;

/// The `"object"` values of a raw HTTP/1.1 response to `body` POSTed at `path`, in order.
fn objects_answered(url: &str, path: &str, body: &str) -> Vec<String> {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{path} {body}: {answer}");
    let key = "\"object\":\"";
    answer
        .match_indices(key)
        .map(|(i, _)| {
            let rest = &answer[i + key.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

/// AIPerf 0.13.0 reads a chat answer only when its `object` is `chat.completion` or
/// `chat.completion.chunk` (`aiperf/endpoints/openai_chat.py::extract_chat_response_data`), and a
/// completions answer only when it is `text_completion` or `completion`
/// (`aiperf/endpoints/openai_completions.py::extract_completions_response_data`); any other label
/// makes every request fail with "No responses with actual content".
#[test]
fn the_mock_labels_its_answers_as_aiperf_parsers_expect() {
    let mock = Mock::start(&[]);
    let prompt = r#""prompt": "a b c", "max_tokens": 3"#;
    let chat = r#""messages": [{"role": "user", "content": "a b c"}], "max_completion_tokens": 3"#;
    let usage = r#""stream_options": {"include_usage": true}"#;
    let cases = [
        ("/v1/completions", format!("{{{prompt}}}"), "text_completion"),
        ("/v1/completions", format!("{{{prompt}, \"stream\": true, {usage}}}"), "text_completion"),
        ("/v1/chat/completions", format!("{{{chat}}}"), "chat.completion"),
        ("/v1/chat/completions", format!("{{{chat}, \"stream\": true, {usage}}}"), "chat.completion.chunk"),
    ];
    for (path, body, want) in cases {
        let objects = objects_answered(&mock.url, path, &body);
        assert!(!objects.is_empty(), "{path} {body}: no object");
        assert!(objects.iter().all(|o| o == want), "{path} {body}: {objects:?}, want all {want}");
    }
}

/// A number of AIPerf's summary (`profile_export_aiperf.json`): `metric.stat`.
fn stat(summary: &Value, metric: &str, stat: &str) -> Option<f64> {
    summary.get(metric)?.get(stat)?.as_f64()
}

#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/test.sh runs it"]
fn aiperf_client_gets_no_errors_from_the_mock() {
    let Some(venv) = aiperf_venv() else { return };
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    for (endpoint, streaming) in [("chat", true), ("chat", false), ("completions", true), ("completions", false)] {
        let name = format!("{endpoint}-{}", if streaming { "streaming" } else { "non-streaming" });
        let art = dir.path().join(&name);
        let mut cmd = Command::new(venv.join("bin/aiperf-offline"));
        cmd.args(["profile", "-m", "mock", "-u", &mock.url, "--endpoint-type", endpoint])
            .args(["--request-count", &REQUESTS.to_string(), "--concurrency", "2", "--workers-max", "2"])
            .args(["--synthetic-input-tokens-mean", "40", "--output-tokens-mean", "8", "--random-seed", "1"])
            .args(["--tokenizer", "local/smollm2", "--ui-type", "none", "--artifact-dir"])
            .arg(&art)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if streaming {
            cmd.arg("--streaming");
        }
        let t0 = Instant::now();
        let out = wait_limited(cmd.spawn().unwrap(), Duration::from_secs(240));
        let log = format!(
            "{name}: aiperf {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{log}");
        let s = summary(&art);
        assert_eq!(s["aiperf_version"], "0.13.0", "{name}");
        assert_eq!(s["error_summary"], serde_json::json!([]), "{name}: {log}");
        assert_eq!(stat(&s, "request_count", "avg"), Some(REQUESTS as f64), "{name}");
        assert_eq!(stat(&s, "error_request_count", "avg").unwrap_or(0.0), 0.0, "{name}");
        assert_eq!(stat(&s, "request_error_rate", "avg"), Some(0.0), "{name}");
        assert_eq!(s["is_complete"], true, "{name}");
        // One record per request, none with an error, each with a measured output.
        let records = read_jsonl(&art.join("profile_export.jsonl"));
        assert_eq!(records.len() as u64, REQUESTS, "{name}");
        for r in &records {
            assert!(r.get("error").is_none_or(Value::is_null), "{name}: {r}");
            assert!(r["metrics"]["output_sequence_length"]["value"].as_f64().unwrap() > 0.0, "{name}: {r}");
        }
        // TTFT exists exactly for streaming runs.
        assert_eq!(s.get("time_to_first_token").is_some(), streaming, "{name}");
        eprintln!("{name}: {REQUESTS} requests, no errors, {:.1} s", t0.elapsed().as_secs_f64());
    }
}
