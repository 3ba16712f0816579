//! The server's side of a run against `aiperf-cli mock-server`: its `/metrics` scraped and exported
//! over the profiling window, the three prefix-cache hit rates side by side, `--wait-for-server`
//! and `--reset-prefix-cache`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Mock, profile_on, read_json, read_jsonl, tokenizer};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(240);

/// The first `n` rows of the real conversation trace (shared prefixes, so the cache hits).
fn trace(dir: &Path, n: usize) -> std::path::PathBuf {
    let text = std::fs::read_to_string(common::root().join("tests/fixtures/traces/conversation_trace.jsonl")).unwrap();
    let lines: Vec<String> = text.lines().take(n).map(str::to_owned).collect();
    common::write_trace(dir, &lines)
}

fn stat(m: &Value, name: &str, key: &str) -> f64 {
    m["metrics"][name]["series"][0]["stats"][key].as_f64().unwrap_or_else(|| panic!("{name}.{key} in {m}"))
}

const RUN: &[&str] =
    &["--concurrency", "4", "--no-fixed-schedule", "--ui-type", "none", "--extra-inputs", "ignore_eos:true"];

#[test]
fn exported_counter_deltas_equal_what_the_mock_served_and_the_three_hit_rates_are_printed() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 30), dir.path().join("art"));
    // Warm-up requests come before the reference scrape: they are not in the deltas.
    let out = profile_on(&mock.url, &t, &art, &[RUN, &["--warmup-request-count", "3"]].concat(), LIMIT);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 30);
    let sum = |f: &str| records.iter().map(|r| r["metadata"]["usage"][f].as_f64().unwrap()).sum::<f64>();
    let m = read_json(&art.join("server_metrics_export.json"));
    assert_eq!(stat(&m, "vllm:request_success", "total"), 30.0);
    assert_eq!(stat(&m, "vllm:prompt_tokens", "total"), sum("prompt_tokens"));
    assert_eq!(stat(&m, "vllm:generation_tokens", "total"), sum("completion_tokens"));
    assert_eq!(stat(&m, "vllm:prefix_cache_hits", "total"), sum("cached_tokens"));
    assert!(sum("cached_tokens") > 0.0, "the conversation trace shares prefixes");
    assert!(stat(&m, "vllm:request_success", "rate") > 0.0);
    assert_eq!(stat(&m, "vllm:e2e_request_latency_seconds", "count"), 30.0);
    assert!(m["metrics"]["vllm:e2e_request_latency_seconds"]["series"][0]["buckets"]["+Inf"].as_f64() == Some(30.0));
    // Gauges have their statistics over the scrapes, and a time series to draw.
    for k in ["avg", "min", "max", "std", "p50", "p99"] {
        stat(&m, "vllm:kv_cache_usage_perc", k);
    }
    assert!(stat(&m, "vllm:kv_cache_usage_perc", "max") > 0.0);
    let url = format!("{}/metrics", mock.url);
    let offsets = m["summary"]["endpoint_info"][&url]["scrape_offsets_s"].as_array().unwrap();
    let timeline = m["metrics"]["vllm:request_success"]["series"][0]["timeline"].as_array().unwrap();
    assert_eq!(offsets.len(), timeline.len());
    assert_eq!(timeline.last().unwrap().as_f64(), Some(30.0));
    let csv = std::fs::read_to_string(art.join("server_metrics_export.csv")).unwrap();
    assert!(csv.contains(&format!("{url},counter,vllm:request_success,,30,")), "{csv}");
    // The comparison, in the console and in profile_export_aiperf.json.
    let line = stdout.lines().find(|l| l.starts_with("Prefix-cache hit rate:")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("trace (theoretical)")
            && line.contains("| server metrics ")
            && line.contains("| usage cached_tokens ")
    );
    assert!(line.contains("(vllm:prefix_cache_hits / vllm:prefix_cache_queries)"), "{line}");
    assert!(stdout.contains("Server: KV-cache usage avg"), "{stdout}");
    let c = &read_json(&art.join("profile_export_aiperf.json"))["prefix_cache_comparison"];
    let (trace_rate, server, usage) =
        (c["trace_theoretical"].as_f64(), c["server_metrics"].as_f64(), c["usage_cached_tokens"].as_f64());
    assert!(trace_rate.is_some() && server.is_some(), "{c}");
    // The mock's cache answers usage from the same counts it exports.
    assert_eq!(server, usage);
    assert!(c["server_kv_cache_usage"]["max"].as_f64().unwrap() > 0.0);
    assert_eq!(c["server_queue_depth"]["source"], "vllm:num_requests_waiting");
}

#[test]
fn garbage_at_metrics_gives_one_warning_and_a_successful_run() {
    let mock = Mock::start(&["--metrics-garbage"]);
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 6), dir.path().join("art"));
    let out = profile_on(&mock.url, &t, &art, RUN, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("warning: server metrics from").count(), 1, "{stderr}");
    assert!(stderr.contains("not Prometheus text: line 1"), "{stderr}");
    assert!(!art.join("server_metrics_export.json").exists());
    assert!(art.join("profile_export_aiperf.json").exists());
    // And with scraping off, nothing is scraped or written.
    let art2 = dir.path().join("art2");
    let out = profile_on(&mock.url, &t, &art2, &[RUN, &["--no-server-metrics"]].concat(), LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("warning: server metrics"), "{stderr}");
    assert!(!art2.join("server_metrics_export.json").exists());
}

/// A port nobody listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn wait_for_server_starts_once_a_late_server_appears() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 4), dir.path().join("art"));
    let arrivals = dir.path().join("arrivals.jsonl");
    let url = format!("http://127.0.0.1:{port}");
    let tok = tokenizer();
    let mut args: Vec<&str> = vec!["profile", "-m", "m", "-u", &url, "--tokenizer", &tok, "--artifact-dir"];
    let (t_s, art_s) = (t.to_str().unwrap(), art.to_str().unwrap());
    args.extend([art_s, "--input-file", t_s, "--wait-for-server", "60"]);
    args.extend_from_slice(RUN);
    let client = Command::new(BIN).args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let mut mock = Command::new(BIN)
        .args(["mock-server", "--port", &port.to_string(), "--exit-after-seconds", "120", "--arrivals-file"])
        .arg(&arrivals)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = common::wait_limited(client, LIMIT);
    let _ = mock.kill();
    let _ = mock.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("The server answered after"), "{stderr}");
    assert!(started.elapsed() < LIMIT);
    assert_eq!(read_jsonl(&arrivals).iter().filter(|a| a.get("n").is_some()).count(), 4);
    assert_eq!(read_jsonl(&art.join("profile_export.jsonl")).len(), 4);
}

#[test]
fn wait_for_server_that_never_comes_fails_cleanly_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 2), dir.path().join("art"));
    let url = format!("http://127.0.0.1:{}", free_port());
    // The error names the option as written: ours, or AIPerf's spelling of it.
    for flag in ["--wait-for-server", "--wait-for-model-timeout"] {
        let out = profile_on(&url, &t, &art, &[RUN, &[flag, "1"]].concat(), LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("did not come up within {flag} 1 s")), "{stderr}");
        assert!(stderr.contains("/health"), "{stderr}");
        assert!(!art.exists(), "nothing is written");
    }
}

#[test]
fn reset_prefix_cache_reaches_the_right_endpoint_before_the_first_request() {
    for (extra, expected) in [
        (&[][..], &["/reset_prefix_cache"][..]),
        (&["--server-kind", "sglang"], &["/flush_cache"]),
        (&["--server-kind", "llamacpp", "--no-server-metrics"], &["/slots/0", "/slots/1"]),
    ] {
        let mock = Mock::start(&[]);
        let dir = tempfile::tempdir().unwrap();
        let (t, art) = (trace(dir.path(), 4), dir.path().join("art"));
        let args = [RUN, &["--reset-prefix-cache", "--warmup-request-count", "1"], extra].concat();
        let out = profile_on(&mock.url, &t, &art, &args, LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        assert!(stderr.contains("Prefix cache emptied"), "{stderr}");
        let log = mock.arrivals();
        let resets: Vec<&str> = log.iter().filter_map(|a| a["reset"].as_str()).collect();
        assert_eq!(resets, expected, "{extra:?}: {log:?}");
        let first_request = log.iter().position(|a| a.get("n").is_some()).unwrap();
        assert!(log[..first_request].iter().filter(|a| a.get("reset").is_some()).count() == expected.len(), "{log:?}");
        if expected[0].starts_with("/slots") {
            assert!(log.iter().filter(|a| a.get("reset").is_some()).all(|a| a["query"] == "action=erase"));
        }
    }
}

#[test]
fn reset_without_a_known_kind_is_a_clear_error() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 2), dir.path().join("art"));
    let out = profile_on(&mock.url, &t, &art, &[RUN, &["--reset-prefix-cache", "--no-server-metrics"]].concat(), LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("give --server-kind"), "{stderr}");
    assert!(!art.exists());
    assert!(mock.arrivals().is_empty(), "nothing was sent");
}

#[test]
fn extra_endpoints_are_scraped_beside_the_url_and_a_broken_one_is_warned_once() {
    let (served, idle, broken) = (Mock::start(&[]), Mock::start(&[]), Mock::start(&["--metrics-garbage"]));
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 6), dir.path().join("art"));
    let extra = [&served.url, &idle.url, &broken.url].map(|u| format!("{u}/metrics"));
    let args = [RUN, &["--server-metrics", &extra[0], &extra[1], &extra[2]]].concat();
    let out = profile_on(&served.url, &t, &art, &args, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("warning: server metrics from").count(), 1, "{stderr}");
    assert!(stderr.contains(&extra[2]), "{stderr}");
    let m = read_json(&art.join("server_metrics_export.json"));
    // `--url`'s own /metrics is the first extra one: de-duplicated.
    assert_eq!(m["summary"]["endpoints_configured"].as_array().map(Vec::len), Some(3));
    assert_eq!(m["summary"]["endpoints_successful"].as_array().map(Vec::len), Some(2));
    let series = m["metrics"]["vllm:request_success"]["series"].as_array().unwrap();
    let total =
        |url: &str| series.iter().find(|s| s["endpoint_url"] == url).map(|s| s["stats"]["total"].as_f64().unwrap());
    assert_eq!(total(&extra[0]), Some(6.0));
    assert_eq!(total(&extra[1]), Some(0.0));
    assert_eq!(total(&extra[2]), None);
}

/// A `/metrics` endpoint of llama.cpp's kind on a thread that answers 503 to its `fail` scrapes
/// (1-based) and the page otherwise, its counter rising at every answer; keeps connections open.
/// Returns its URL and the count of scrapes it saw.
fn flaky_metrics(fail: std::ops::RangeInclusive<usize>) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (fail, count) = (fail.clone(), count.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut out = conn;
                loop {
                    // One request: lines up to the empty one.
                    let mut line = String::new();
                    let mut first = true;
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" && !first {
                            break;
                        }
                        first = false;
                    }
                    let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                    let answer = if fail.contains(&n) {
                        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n".to_string()
                    } else {
                        let body = format!(
                            "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total {}\n",
                            100 * n
                        );
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        )
                    };
                    if out.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

/// A server busy for a while (its `/metrics` answering 503 to three scrapes in the run) is
/// scraped on: one warning, the three failures counted, and the scrapes go on to the final one
/// after the last request.
#[test]
fn failed_scrapes_of_an_endpoint_that_answered_are_counted_and_scraping_goes_on() {
    let mock = Mock::start(&["--ttft-ms", "300"]);
    let (flaky, seen) = flaky_metrics(3..=5);
    let dir = tempfile::tempdir().unwrap();
    let (t, art) = (trace(dir.path(), 8), dir.path().join("art"));
    let args = [RUN, &["--server-metrics", &flaky, "--server-metrics-interval", "0.05"]].concat();
    let out = profile_on(&mock.url, &t, &art, &args, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("warning: a scrape of server metrics from").count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("{flaky} failed: HTTP 503 Service Unavailable; scraping goes on")), "{stderr}");
    assert!(!stderr.contains("are not collected"), "{stderr}");
    let m = read_json(&art.join("server_metrics_export.json"));
    let info = &m["summary"]["endpoint_info"][&flaky];
    assert_eq!(info["failed_fetches"], 3, "{info}");
    let scrapes = seen.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(info["total_fetches"].as_u64(), Some(scrapes as u64), "{info}");
    assert!(scrapes > 8, "{scrapes} scrapes: the periodic ones went on after the failures");
    // The final scrape comes after the last request's end.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let last_end = records.iter().map(|r| r["metadata"]["request_end_ns"].as_u64().unwrap()).max().unwrap();
    assert!(info["last_fetch_ns"].as_u64().unwrap() >= last_end, "{info}");
    // The counter's total is its rise from the reference scrape (the second: the baseline, then
    // the one just before time zero) to the final one.
    assert_eq!(stat(&m, "llamacpp:prompt_tokens", "total"), 100.0 * (scrapes - 2) as f64);
}
