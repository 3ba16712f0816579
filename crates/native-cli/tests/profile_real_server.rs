//! End-to-end replay against a real llama.cpp server (`scripts/test-real-server.sh` starts one and
//! sets `AIPERF_REAL_SERVER_URL`). The tests are `#[ignore]`d so a plain `cargo test` skips them
//! visibly; the script runs them with `--ignored`, and without a server they fail.
//!
//! It replays rows of `conversation_trace.jsonl` scaled down to fit the server's context (lengths
//! and block size divided by 32, so the prefix-sharing structure is kept): twelve conversation
//! turns that continue an earlier request of the trace, each sent shortly after that earlier
//! request, with an unrelated request in between. Every request must succeed, output lengths must
//! match the trace with `ignore_eos`, and the server's `cached_tokens` must be high exactly where
//! the trace shares prefixes. The server's `/metrics` (llama.cpp `--metrics`) is scraped and
//! exported, and its counters must agree with `usage` (tokens predicted = completion tokens,
//! prompt tokens evaluated = prompt tokens − cached tokens); the first run starts cold
//! (`--reset-prefix-cache` erases the slots).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// Scale factor of lengths; blocks shrink by the same factor.
const SCALE: u64 = 32;
const PAIRS: usize = 12;

/// (earlier row, continuing row) pairs and unrelated rows, from the start of the trace.
fn pick(rows: &[Value]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let ids = |i: usize| -> Vec<u64> {
        rows[i]["hash_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
    };
    let isl = |i: usize| rows[i]["input_length"].as_u64().unwrap();
    let mut first_row: HashMap<u64, usize> = HashMap::new();
    let (mut pairs, mut unrelated, mut used) = (Vec::new(), Vec::new(), std::collections::HashSet::new());
    for i in 0..rows.len() {
        let h = ids(i);
        let k = h.iter().take_while(|id| first_row.contains_key(id)).count();
        if k >= 3 && (k as u64 * 512) * 10 >= isl(i) * 6 && isl(i) <= 40_000 {
            let a = first_row[&h[k - 1]];
            if ids(a).starts_with(&h[..k]) && isl(a) <= 40_000 && !used.contains(&a) && pairs.len() < PAIRS {
                used.insert(a);
                used.insert(i);
                pairs.push((a, i));
            }
        } else if k <= 1 && isl(i) <= 20_000 && unrelated.len() < PAIRS && i > 100 {
            unrelated.push(i);
        }
        for id in h {
            first_row.entry(id).or_insert(i);
        }
        if pairs.len() == PAIRS && unrelated.len() == PAIRS {
            break;
        }
    }
    (pairs, unrelated)
}

/// The tests share one server: they run one at a time, so that each run's server-metric deltas
/// and cache state are its own.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The server under test, which `scripts/test-real-server.sh` starts.
fn server() -> (String, String) {
    real_server("run these tests with scripts/test-real-server.sh", "tiny-random")
}

/// The picked rows as trace lines: each pair's earlier row, an unrelated row 100 ms later, the
/// continuing row 500 ms after the first; `scale` divides lengths, `time_scale` multiplies times.
fn slice(scale: u64, time_scale: u64) -> Vec<String> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/traces/conversation_trace.jsonl")).unwrap();
    let rows: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (pairs, unrelated) = pick(&rows);
    assert_eq!((pairs.len(), unrelated.len()), (PAIRS, PAIRS));
    let line = |i: usize, ts: u64| {
        let r = &rows[i];
        let isl = r["input_length"].as_u64().unwrap().div_ceil(scale);
        let osl = r["output_length"].as_u64().unwrap();
        let osl = if scale > 1 { osl.clamp(1, 16) } else { osl };
        json!({"timestamp": ts * time_scale, "input_length": isl, "output_length": osl, "hash_ids": r["hash_ids"]})
            .to_string()
    };
    let mut lines = Vec::new();
    for (p, (&(a, c), &u)) in pairs.iter().zip(&unrelated).enumerate() {
        let t = p as u64 * 900;
        lines.push(line(a, t));
        lines.push(line(u, t + 100));
        lines.push(line(c, t + 500));
    }
    lines
}

/// Replays `lines` and checks: no errors, exact output lengths, and server-side cached tokens that
/// follow the trace's shared prefixes. Returns (cached, expected) per request.
fn replay_and_check(lines: &[String], extra: &[&str]) -> Vec<(f64, u64, u64)> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (url, model) = server();
    let (_dir, trace, art) = scratch(lines);
    let args = [&["--streaming", "--request-timeout-seconds", "120"], extra].concat();
    let out = profile_real(&url, &model, &trace, &art, &args, Duration::from_secs(600));
    ok(&out);
    println!("{}", String::from_utf8_lossy(&out.stdout));
    let s = summary(&art);
    assert_eq!(s["error_request_count"]["avg"].as_f64().unwrap_or(0.0), 0.0, "errors: {}", s["error_summary"]);
    assert_eq!(s["request_count"]["avg"], (3 * PAIRS) as f64);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let mut out = Vec::new();
    let (mut cached_sum, mut expected_sum) = (0, 0);
    for r in &records {
        let m = &r["metadata"];
        assert_eq!(m["usage"]["completion_tokens"], m["max_tokens"], "output length differs: {m}");
        // As in AIPerf, the output token count is the client's (re-tokenized text); the server's
        // usage stays beside it as usage_completion_tokens.
        assert_eq!(r["metrics"]["output_sequence_length"]["value"].as_f64(), m["output_tokens"].as_f64(), "{r}");
        assert_eq!(
            r["metrics"]["usage_completion_tokens"]["value"].as_f64(),
            m["usage"]["completion_tokens"].as_f64(),
            "{r}"
        );
        let isl = m["input_tokens"].as_u64().unwrap() as f64;
        let expected = m["expected_cached_tokens"].as_u64().unwrap_or(0);
        let cached = m["usage"]["cached_tokens"].as_u64().unwrap_or(0);
        // The chat template adds a few tokens every prompt shares; nothing beyond the trace's
        // shared prefix can be reused.
        assert!(cached <= expected + 64, "cached {cached} > shareable {expected}: {m}");
        cached_sum += cached;
        expected_sum += expected;
        out.push((isl, expected, cached));
    }
    println!("server cached {cached_sum} tokens of {expected_sum} the trace makes shareable");
    assert!(
        cached_sum as f64 >= 0.5 * expected_sum as f64,
        "server cached {cached_sum} of {expected_sum} shareable tokens"
    );
    check_server_metrics(&art, &records);
    out
}

/// llama.cpp's `/metrics` (started with `--metrics`) was scraped and exported over the profiling
/// window, and its counters agree with `usage`: `tokens_predicted` is the completion tokens, and
/// `prompt_tokens` counts the prompt tokens it evaluated, i.e. those it did not take from its cache.
fn check_server_metrics(art: &std::path::Path, records: &[Value]) {
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(art.join("server_metrics_export.json")).unwrap()).unwrap();
    let total = |name: &str| -> f64 {
        m["metrics"][name]["series"][0]["stats"]["total"].as_f64().unwrap_or_else(|| panic!("{name} not exported"))
    };
    let usage = |f: &str| records.iter().map(|r| r["metadata"]["usage"][f].as_f64().unwrap_or(0.0)).sum::<f64>();
    let n = records.len() as f64;
    let (prompt, cached, completion) = (usage("prompt_tokens"), usage("cached_tokens"), usage("completion_tokens"));
    let (evaluated, predicted) = (total("llamacpp:prompt_tokens"), total("llamacpp:tokens_predicted"));
    println!(
        "llama.cpp metrics: prompt tokens evaluated {evaluated} (usage: {prompt} sent, {cached} cached, {} to evaluate); tokens predicted {predicted} (usage: {completion})",
        prompt - cached
    );
    assert!((predicted - completion).abs() <= n, "tokens_predicted {predicted} vs usage {completion}");
    // llama.cpp re-evaluates the last prompt token of a cached prompt: allow a token or two per request.
    assert!(
        evaluated >= prompt - cached - 2.0 * n && evaluated <= prompt + 2.0 * n,
        "prompt tokens evaluated {evaluated}, usage: {prompt} sent, {cached} cached"
    );
    let s = summary(art);
    let c = &s["prefix_cache_comparison"];
    assert!(c["server_metrics"].as_f64().is_some(), "{c}");
    assert!(c["server_metrics_source"].as_str().unwrap().contains("llamacpp:prompt_tokens"), "{c}");
}

#[test]
#[ignore = "needs a real llama.cpp server: scripts/test-real-server.sh"]
fn replays_a_conversation_slice_against_llama_cpp() {
    let block = (512 / SCALE).to_string();
    // Started cold: the server's slots are erased first (the kind is told by its metric names).
    let rows = replay_and_check(&slice(SCALE, 1), &["--isl-block-size", &block, "--reset-prefix-cache"]);
    let (mut deep_ratio, mut deep_n, mut shallow_ratio, mut shallow_n) = (0.0, 0, 0.0, 0);
    for (isl, expected, cached) in rows {
        if expected as f64 >= 0.5 * isl {
            deep_ratio += cached as f64 / isl;
            deep_n += 1;
        } else if (expected as f64) < 0.2 * isl {
            shallow_ratio += cached as f64 / isl;
            shallow_n += 1;
        }
    }
    assert!(deep_n >= 5 && shallow_n >= 5, "slice lacks contrast: {deep_n} deep, {shallow_n} shallow");
    let (deep_mean, shallow_mean) = (deep_ratio / deep_n as f64, shallow_ratio / shallow_n as f64);
    assert!(
        deep_mean > 0.4 && shallow_mean < 0.3,
        "cache hit ratio: deep-prefix rows {deep_mean:.2}, others {shallow_mean:.2}"
    );
}

/// The same rows at their real lengths, fitted to the server by in-memory synthesis (as an AIPerf
/// user would): shorter shared prefixes and prompts, capped lengths, and a 4× faster clock.
#[test]
#[ignore = "needs a real llama.cpp server: scripts/test-real-server.sh"]
fn replays_with_in_memory_synthesis_against_llama_cpp() {
    replay_and_check(
        &slice(1, 4),
        &[
            "--synthesis-speedup-ratio",
            "4",
            "--synthesis-prefix-len-multiplier",
            "0.1",
            "--synthesis-prompt-len-multiplier",
            "0.05",
            "--synthesis-max-isl",
            "40000",
            "--synthesis-max-osl",
            "16",
        ],
    );
}

/// llama.cpp's completions stream (usage on the last chunk, no `choices: []` chunk), streaming
/// and not, under a request rate.
#[test]
#[ignore = "needs a real llama.cpp server: scripts/test-real-server.sh"]
fn completions_endpoint_against_llama_cpp() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (url, model) = server();
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..8).map(|i| format!(r#"{{"input_length": {}, "output_length": {}}}"#, 20 + 7 * i, 3 + i)).collect();
    let trace = write_trace(dir.path(), &lines);
    for streaming in [true, false] {
        let art = dir.path().join(format!("art-{streaming}"));
        let mut args =
            vec!["--endpoint-type", "completions", "--request-rate", "4", "--request-timeout-seconds", "120"];
        if streaming {
            args.push("--streaming");
        }
        let out = profile_real(&url, &model, &trace, &art, &args, Duration::from_secs(300));
        ok(&out);
        let s = summary(&art);
        assert_eq!(s["error_request_count"]["avg"].as_f64().unwrap_or(0.0), 0.0, "errors: {}", s["error_summary"]);
        for r in read_jsonl(&art.join("profile_export.jsonl")) {
            let m = &r["metadata"];
            assert_eq!(m["usage"]["completion_tokens"], m["max_tokens"], "{m}");
            let rec = record_of(&r);
            assert_eq!(rec.streaming, streaming, "{m}");
            if streaming {
                assert!(!rec.chunk_ns.is_empty());
            }
        }
    }
}

/// One request as it went over the wire to the server.
#[derive(Debug)]
struct Seen {
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// A transparent TCP relay in front of the server that records every request head and body it
/// forwards (HTTP/1.1 with `Content-Length`, as the client sends them), so a test can see what
/// reached the server's socket: llama.cpp does not log request headers.
fn recording_relay(upstream: &str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Seen>>>) {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let log = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else { continue };
            let (mut c_read, mut s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut s_read, mut c_write) = (server, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n @ 1..) = s_read.read(&mut buf) {
                    if c_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = c_write.shutdown(Shutdown::Write);
            });
            let log = log.clone();
            std::thread::spawn(move || {
                let (mut buf, mut pending) = ([0u8; 16384], Vec::new());
                while let Ok(n @ 1..) = c_read.read(&mut buf) {
                    if s_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    // Every complete request in what has arrived so far.
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&pending[..end]).into_owned();
                        let mut lines = head.lines();
                        let path = lines.next().unwrap_or("").split(' ').nth(1).unwrap_or("").to_owned();
                        let headers: HashMap<String, String> = lines
                            .filter_map(|l| l.split_once(':'))
                            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                            .collect();
                        let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
                        if pending.len() < end + 4 + len {
                            break;
                        }
                        let body = pending[end + 4..end + 4 + len].to_vec();
                        pending.drain(..end + 4 + len);
                        log.lock().unwrap().push(Seen { path, headers, body });
                    }
                }
                let _ = s_write.shutdown(Shutdown::Write);
            });
        }
    });
    (url, seen)
}

/// Multi-turn sessions replayed against the real server through a recording relay: every request
/// reaches the server with a unique `X-Request-ID`, its session's `X-Correlation-ID`
/// (`fixed-schedule-<session>`, AIPerf's name when timestamps are replayed) and the same value in
/// `X-Session-Affinity`, and this tool's `User-Agent`; each later turn carries the server's own
/// reply to the previous turn (live history), so the server's prompt count grows by at least that
/// reply.
#[test]
#[ignore = "needs a real llama.cpp server: scripts/test-real-server.sh"]
fn sessions_reach_llama_cpp_with_their_headers_and_live_history() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (url, model) = server();
    let (relay, seen) = recording_relay(&url);
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for s in 0..3u64 {
        for turn in 0..3u64 {
            let ts = if turn == 0 { format!(r#""timestamp": {}, "#, s * 50) } else { r#""delay": 20, "#.to_owned() };
            lines.push(format!(
                r#"{{"session_id": "s{s}", {ts}"input_length": {}, "output_length": {}, "hash_ids": [{}]}}"#,
                24 + 8 * turn,
                4 + turn,
                100 * s + turn
            ));
        }
    }
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let (tok, tr, ar) = (tokenizer(), trace.to_str().unwrap().to_owned(), art.to_str().unwrap().to_owned());
    let args = [
        "-m",
        &model,
        "-u",
        &relay,
        "--streaming",
        "--fixed-schedule",
        "--extra-inputs",
        "ignore_eos:true",
        "--request-timeout-seconds",
        "120",
        "--no-server-metrics",
        "--tokenizer",
        &tok,
        "--input-file",
        &tr,
        "--artifact-dir",
        &ar,
    ];
    let out = profile(&args, Duration::from_secs(300));
    ok(&out);
    let s = summary(&art);
    assert_eq!(s["error_request_count"]["avg"].as_f64().unwrap_or(0.0), 0.0, "errors: {}", s["error_summary"]);
    let seen = seen.lock().unwrap();
    let chats: Vec<&Seen> = seen.iter().filter(|r| r.path.ends_with("/chat/completions")).collect();
    assert_eq!(
        chats.len(),
        9,
        "requests that reached the server: {:?}",
        seen.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    let ids: std::collections::HashSet<&str> =
        chats.iter().map(|r| r.headers.get("x-request-id").map_or("", String::as_str)).collect();
    assert_eq!(ids.len(), 9, "X-Request-ID must be unique per request: {ids:?}");
    assert!(!ids.contains(""));
    let mut per_session: HashMap<String, Vec<Value>> = HashMap::new();
    for r in &chats {
        let h = &r.headers;
        let corr = h.get("x-correlation-id").cloned().unwrap_or_default();
        assert!(corr.starts_with("fixed-schedule-s"), "X-Correlation-ID {corr:?}");
        assert_eq!(h.get("x-session-affinity"), Some(&corr), "X-Session-Affinity must equal X-Correlation-ID");
        assert!(
            h.get("user-agent").is_some_and(|u| u.starts_with("aiperf-cli/")),
            "User-Agent {:?}",
            h.get("user-agent")
        );
        per_session.entry(corr).or_default().push(serde_json::from_slice(&r.body).unwrap());
    }
    assert_eq!(per_session.len(), 3);
    for bodies in per_session.values() {
        assert_eq!(bodies.len(), 3);
        for (turn, b) in bodies.iter().enumerate() {
            let msgs = b["messages"].as_array().unwrap();
            let replies: Vec<&Value> = msgs.iter().filter(|m| m["role"] == "assistant").collect();
            assert_eq!(replies.len(), turn, "turn {turn} carries the earlier replies: {b}");
            assert!(replies.iter().all(|m| !m["content"].as_str().unwrap_or("").is_empty()), "{b}");
        }
    }
    // The server saw the history: a later turn's prompt holds the previous prompt and its reply.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let mut by_turn: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
    for r in &records {
        let m = &r["metadata"];
        let key = (m["session_num"].as_u64().unwrap(), m["turn_index"].as_u64().unwrap());
        by_turn.insert(
            key,
            (m["usage"]["prompt_tokens"].as_u64().unwrap(), m["usage"]["completion_tokens"].as_u64().unwrap()),
        );
    }
    for (&(run, turn), &(prompt, _)) in &by_turn {
        if turn > 0 {
            let (prev_prompt, prev_completion) = by_turn[&(run, turn - 1)];
            assert!(
                prompt >= prev_prompt + prev_completion,
                "session run {run} turn {turn}: prompt {prompt} < previous {prev_prompt} + reply {prev_completion}"
            );
        }
    }
}
