//! Replay benchmark: `aiperf-cli profile` against `aiperf-cli mock-server` on 127.0.0.1.
//!
//! Usage: `cargo build --release -p aiperf-cli && cargo run --release -p aiperf-cli --example
//! replay_bench -- [SCENARIO…]` with scenarios `lateness`, `max-rate`, `startup`, `streams`,
//! `burst`, `shards`, `scraping` (`SHARDS=1,2,4` picks the shard counts) (default: all). With `AIPERF_BIN=/path/to/aiperf` the
//! `lateness`, `max-rate` and `startup`
//! scenarios also run AIPerf on the same traces against the same mock server.
//!
//! Send lateness is measured at the server, the same way for both tools: for request i scheduled at
//! `s_i` and arriving at `a_i`, lateness = `(a_i − s_i) − min_j (a_j − s_j)` (the earliest request
//! defines time zero). Our own report's `send_lateness` (actual − scheduled send, measured in the
//! client) is printed beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiperf_core::stats::{percentile_sorted, sorted};
use serde_json::Value;

fn bin() -> PathBuf {
    std::env::var_os("AIPERF_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/aiperf-cli"))
}

fn tokenizer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/tokenizers/smollm2-135m")
}

#[path = "../tests/common/mock.rs"]
mod mock;
use mock::Mock;

/// The release binary's mock server (build with `--release` first).
fn start_mock(args: &[&str]) -> Mock {
    Mock::spawn(&bin(), 3600, args)
}

/// Arrival times (ns since the epoch) and prompt sizes of the requests the mock received.
fn arrivals(mock: &Mock) -> Vec<(u128, u64)> {
    mock.arrivals()
        .iter()
        .map(|v| (v["arrival_ns"].as_str().unwrap().parse().unwrap(), v["prompt_tokens"].as_u64().unwrap_or(0)))
        .collect()
}

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// Rows `i` at `i / rate` seconds with a unique 512-token block each and 64 output tokens.
fn rate_trace(path: &Path, rate: f64, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        let ts = (i as f64 * 1000.0 / rate).round() as u64;
        writeln!(f, r#"{{"timestamp": {ts}, "input_length": 512, "output_length": 64, "hash_ids": [{i}]}}"#).unwrap();
    }
}

/// Lateness percentiles at the server, ms: p50, p99, max.
fn server_lateness(arrivals: &[(u128, u64)], rate: f64) -> (f64, f64, f64) {
    let mut a: Vec<u128> = arrivals.iter().map(|x| x.0).collect();
    a.sort_unstable();
    // Rows are identical except for their time, so the k-th arrival is the k-th scheduled row.
    let diffs: Vec<f64> = a.iter().enumerate().map(|(i, &t)| t as f64 / 1e6 - i as f64 * 1000.0 / rate).collect();
    let min = diffs.iter().copied().fold(f64::INFINITY, f64::min);
    let late = sorted(&diffs.iter().map(|d| d - min).collect::<Vec<_>>());
    (percentile_sorted(&late, 50.0).unwrap(), percentile_sorted(&late, 99.0).unwrap(), *late.last().unwrap())
}

fn summary(art: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(art.join("profile_export_aiperf.json")).unwrap()).unwrap()
}

/// Runs a command, returning (wall seconds, user+sys CPU seconds of it and its children).
fn timed(cmd: &mut Command) -> (f64, f64) {
    let t0 = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "CPU %U %S"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    let cpu = err
        .lines()
        .rev()
        .find_map(|l| {
            let f: Vec<&str> = l.strip_prefix("CPU ")?.split(' ').collect();
            Some(f[0].parse::<f64>().ok()? + f[1].parse::<f64>().ok()?)
        })
        .unwrap_or(f64::NAN);
    if !out.status.success() {
        let so = String::from_utf8_lossy(&out.stdout);
        eprintln!("command failed:\n{}\n{}", so.lines().rev().take(30).collect::<Vec<_>>().join("\n"), err);
    }
    (wall, cpu)
}

fn ours(url: &str, trace: &Path, art: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(["profile", "-m", "mock", "-u", url, "--streaming", "--ui-type", "none", "--tokenizer"])
        .arg(tokenizer_dir().join("tokenizer.json"))
        .arg("--input-file")
        .arg(trace)
        .arg("--artifact-dir")
        .arg(art)
        .args(["--extra-inputs", "ignore_eos:true"])
        .args(extra);
    c
}

/// AIPerf loads tokenizers through the Hugging Face cache only: lay the fixture out as one
/// (`local/smollm2`) under `dir/hf`.
fn hf_home(dir: &Path) -> PathBuf {
    let home = dir.join("hf");
    let repo = home.join("hub/models--local--smollm2");
    let snap = repo.join("snapshots/fixture");
    if !snap.exists() {
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "fixture").unwrap();
        for f in ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"] {
            std::fs::copy(tokenizer_dir().join(f), snap.join(f)).unwrap();
        }
    }
    home
}

fn aiperf(url: &str, trace: &Path, art: &Path, extra: &[&str]) -> Option<Command> {
    let bin = std::env::var_os("AIPERF_BIN")?;
    let mut c = Command::new(bin);
    c.args(["profile", "-m", "mock", "-u", url, "--endpoint-type", "chat", "--streaming", "--ui-type", "none"])
        .args(["--tokenizer", "local/smollm2"])
        .env("HF_HOME", hf_home(art.parent().unwrap()))
        .arg("--input-file")
        .arg(trace)
        .args(["--custom-dataset-type", "mooncake_trace"])
        .arg("--artifact-dir")
        .arg(art)
        .args(["--extra-inputs", "ignore_eos:true"])
        .args(extra)
        .env("HF_HUB_OFFLINE", "1");
    Some(c)
}

fn lateness(dir: &Path) {
    println!("\n## Send lateness at the server (fixed schedule, streaming, 64 output tokens)");
    println!(
        "| tool | rate (req/s) | requests | server-side lateness p50 / p99 / max (ms) | client-reported p50 / p99 (ms) | CPU µs/request |"
    );
    println!("|---|---|---|---|---|---|");
    for (rate, n) in [(10.0, 300), (100.0, 2000), (1000.0, 10000)] {
        let trace = dir.join(format!("rate{rate}.jsonl"));
        rate_trace(&trace, rate, n);
        for tool in ["aiperf-cli", "AIPerf 0.13.0"] {
            let mock = start_mock(&[]);
            let art = dir.join(format!("art-{}-{rate}", tool.replace(' ', "_")));
            let n_tool = if tool == "aiperf-cli" { n } else { n.min(3000) };
            let trace_t = if n_tool == n {
                trace.clone()
            } else {
                let t = dir.join(format!("rate{rate}-{n_tool}.jsonl"));
                rate_trace(&t, rate, n_tool);
                t
            };
            let cmd = if tool == "aiperf-cli" {
                Some(ours(&mock.url, &trace_t, &art, &["--fixed-schedule"]))
            } else {
                aiperf(&mock.url, &trace_t, &art, &["--fixed-schedule", "--fixed-schedule-auto-offset"])
            };
            let Some(mut cmd) = cmd else { continue };
            let (_, cpu) = timed(&mut cmd);
            let arr = arrivals(&mock);
            if arr.len() < 2 {
                println!("| {tool} | {rate} | {} | (no requests arrived) | | |", arr.len());
                continue;
            }
            let (p50, p99, max) = server_lateness(&arr, rate);
            let client = if tool == "aiperf-cli" {
                let s = summary(&art);
                format!(
                    "{:.3} / {:.3}",
                    s["send_lateness"]["p50"].as_f64().unwrap(),
                    s["send_lateness"]["p99"].as_f64().unwrap()
                )
            } else {
                "—".into()
            };
            println!(
                "| {tool} | {rate} | {} | {p50:.3} / {p99:.3} / {max:.3} | {client} | {:.0} |",
                arr.len(),
                cpu * 1e6 / arr.len() as f64
            );
        }
    }
}

/// The cost of scraping the server's metrics: the same fixed-schedule run without scraping, with
/// the default 333 ms interval and with a 10 ms interval (30× more scrapes), interleaved twice.
fn scraping(dir: &Path) {
    println!("\n## Send lateness with and without server-metrics scraping (fixed schedule, streaming)");
    println!(
        "| scraping | rate (req/s) | requests | scrapes | server-side lateness p50 / p99 / max (ms) | client-reported p50 / p99 (ms) | CPU µs/request |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (rate, n) in [(100.0, 2000), (1000.0, 10000)] {
        let trace = dir.join(format!("scrape-rate{rate}.jsonl"));
        rate_trace(&trace, rate, n);
        for round in 0..2 {
            for (name, extra) in [
                ("off", &["--no-server-metrics"][..]),
                ("every 333 ms", &[][..]),
                ("every 10 ms", &["--server-metrics-interval", "0.01"][..]),
            ] {
                let mock = start_mock(&[]);
                let art = dir.join(format!("art-scrape-{rate}-{round}-{}", name.replace(' ', "_")));
                let (_, cpu) = timed(&mut ours(&mock.url, &trace, &art, &[&["--fixed-schedule"], extra].concat()));
                let arr = arrivals(&mock);
                let (p50, p99, max) = server_lateness(&arr, rate);
                let s = summary(&art);
                let scrapes = std::fs::read_to_string(art.join("server_metrics_export.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|v| v["summary"]["endpoint_info"].as_object()?.values().next()?["total_fetches"].as_u64())
                    .unwrap_or(0);
                println!(
                    "| {name} | {rate} | {} | {scrapes} | {p50:.3} / {p99:.3} / {max:.3} | {:.3} / {:.3} | {:.0} |",
                    arr.len(),
                    s["send_lateness"]["p50"].as_f64().unwrap_or(f64::NAN),
                    s["send_lateness"]["p99"].as_f64().unwrap_or(f64::NAN),
                    cpu * 1e6 / arr.len().max(1) as f64
                );
            }
        }
    }
}

fn max_rate(dir: &Path) {
    println!("\n## Maximum sustained streaming rate (concurrency 64, 64 output tokens, mock with no delays)");
    println!(
        "| tool | requests | request throughput (req/s) | errors | CPU µs/request (whole process) | CPU µs/request (replay only) |"
    );
    println!("|---|---|---|---|---|---|");
    // "varied answers": the mock answers with varied text (`--varied-text`), as a model would,
    // instead of eight repeated words that a client's token counter has seen after one answer.
    for tool in [
        "aiperf-cli",
        "aiperf-cli --use-server-token-count",
        "aiperf-cli, varied answers",
        "aiperf-cli --use-server-token-count, varied answers",
        "AIPerf 0.13.0",
    ] {
        let n = if tool.starts_with("aiperf-cli") { 30000 } else { 3000 };
        let trace = dir.join(format!("maxrate-{n}.jsonl"));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
        for i in 0..n {
            writeln!(f, r#"{{"input_length": 128, "output_length": 64, "hash_ids": [{i}]}}"#).unwrap();
        }
        drop(f);
        let mock = start_mock(if tool.ends_with("varied answers") { &["--varied-text"] } else { &[] });
        let art = dir.join(format!("art-max-{}", tool.replace([' ', ','], "_")));
        let cmd = if tool == "aiperf-cli" || tool == "aiperf-cli, varied answers" {
            Some(ours(&mock.url, &trace, &art, &["--concurrency", "64"]))
        } else if tool.starts_with("aiperf-cli") {
            Some(ours(&mock.url, &trace, &art, &["--concurrency", "64", "--use-server-token-count"]))
        } else {
            aiperf(&mock.url, &trace, &art, &["--concurrency", "64", "--request-count", &n.to_string()])
        };
        let Some(mut cmd) = cmd else { continue };
        let (wall, cpu) = timed(&mut cmd);
        let got = arrivals(&mock).len();
        let (thr, errs, replay_cpu) = match std::fs::read_to_string(art.join("profile_export_aiperf.json")) {
            Ok(t) => {
                let s: Value = serde_json::from_str(&t).unwrap();
                let replay = s["client_cpu"]["us_per_request"].as_f64().map_or("—".into(), |v| format!("{v:.0}"));
                (
                    s["request_throughput"]["avg"].as_f64().unwrap_or(f64::NAN),
                    s["error_request_count"]["avg"].as_f64().unwrap_or(0.0),
                    replay,
                )
            }
            Err(_) => (got as f64 / wall, f64::NAN, "—".into()),
        };
        println!("| {tool} | {got} | {thr:.0} | {errs} | {:.0} | {replay_cpu} |", cpu * 1e6 / got.max(1) as f64);
    }
}

/// Sharded closed-loop replay: N shard processes (`--shard K/N`, a common `--start-at`) on this
/// machine against one mock server, merged; the whole run is 30,000 requests at concurrency 64.
fn shards(dir: &Path) {
    println!(
        "\n## Shard processes on one machine (closed loop, concurrency 64 in all, 64 output tokens, 30,000 requests)"
    );
    println!(
        "| shards | merged throughput (req/s) | per shard (req/s) | errors | CPU µs/request (replay only, mean of shards) | peak RSS per shard (MB) |"
    );
    println!("|---|---|---|---|---|---|");
    let n_rows = 30000;
    let trace = dir.join("shards.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
    for i in 0..n_rows {
        writeln!(f, r#"{{"input_length": 128, "output_length": 64, "hash_ids": [{i}]}}"#).unwrap();
    }
    drop(f);
    let counts: Vec<u32> =
        std::env::var("SHARDS").ok().map_or(vec![1, 2, 3, 4], |v| v.split(',').map(|x| x.parse().unwrap()).collect());
    for n in counts {
        let mock = start_mock(&[]);
        let start_at = (now_ns() / 1_000_000 + 12_000).to_string();
        let arts: Vec<PathBuf> = (0..n).map(|k| dir.join(format!("shard-{n}-{k}"))).collect();
        let children: Vec<_> = arts
            .iter()
            .enumerate()
            .map(|(k, art)| {
                let shard = format!("{k}/{n}");
                let c =
                    ours(&mock.url, &trace, art, &["--concurrency", "64", "--shard", &shard, "--start-at", &start_at]);
                Command::new("/usr/bin/time")
                    .args(["-f", "RSS %M"])
                    .arg(c.get_program())
                    .args(c.get_args())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut rss = Vec::new();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                eprintln!("shard failed:\n{err}");
            }
            rss.extend(err.lines().rev().find_map(|l| l.strip_prefix("RSS ")?.trim().parse::<f64>().ok()));
        }
        let merged = dir.join(format!("merged-{n}"));
        let out = Command::new(bin()).arg("merge").args(&arts).arg("--output").arg(&merged).output().unwrap();
        if !out.status.success() {
            eprintln!("merge failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        let m = summary(&merged);
        let per: Vec<String> = arts
            .iter()
            .map(|a| format!("{:.0}", summary(a)["request_throughput"]["avg"].as_f64().unwrap_or(f64::NAN)))
            .collect();
        let cpu: f64 =
            arts.iter().filter_map(|a| summary(a)["client_cpu"]["us_per_request"].as_f64()).sum::<f64>() / n as f64;
        println!(
            "| {n} | {:.0} | {} | {} | {cpu:.0} | {} |",
            m["request_throughput"]["avg"].as_f64().unwrap_or(f64::NAN),
            per.join(" / "),
            m["error_request_count"]["avg"],
            rss.iter().map(|k| format!("{:.0}", k / 1024.0)).collect::<Vec<_>>().join(" / ")
        );
    }
}

fn startup(dir: &Path) {
    println!("\n## Time from process start to the first request at the server");
    println!("| tool | trace rows | time to first request (ms) |");
    println!("|---|---|---|");
    // 100,000 rows: the conversation trace repeated, shifted in time and id space.
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/conversation_trace.jsonl"),
    )
    .unwrap();
    let rows: Vec<Value> = src.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (tool, n) in [("aiperf-cli", 100_000usize), ("aiperf-cli", 500), ("AIPerf 0.13.0", 500)] {
        let trace = dir.join(format!("startup-{n}.jsonl"));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
        for i in 0..n {
            let r = &rows[i % rows.len()];
            let rep = (i / rows.len()) as u64;
            let ids: Vec<u64> =
                r["hash_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() + rep * 10_000_000).collect();
            let ts = r["timestamp"].as_u64().unwrap() + rep * 3_600_000;
            writeln!(
                f,
                r#"{{"timestamp": {ts}, "input_length": {}, "output_length": 1, "hash_ids": {:?}}}"#,
                r["input_length"], ids
            )
            .unwrap();
        }
        drop(f);
        let mock = start_mock(&[]);
        let art = dir.join(format!("art-startup-{}-{n}", tool.replace(' ', "_")));
        let cmd = if tool == "aiperf-cli" {
            Some(ours(
                &mock.url,
                &trace,
                &art,
                &["--fixed-schedule", "--benchmark-duration", "2", "--benchmark-grace-period", "0"],
            ))
        } else {
            aiperf(
                &mock.url,
                &trace,
                &art,
                &["--fixed-schedule", "--benchmark-duration", "2", "--benchmark-grace-period", "0"],
            )
        };
        let Some(mut cmd) = cmd else { continue };
        let t0 = now_ns();
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(600);
        let first = loop {
            if let Some(a) = arrivals(&mock).iter().map(|a| a.0).min() {
                break Some(a);
            }
            if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let _ = child.kill();
        let _ = child.wait();
        match first {
            Some(t) => println!("| {tool} | {n} | {:.0} |", (t - t0) as f64 / 1e6),
            None => println!("| {tool} | {n} | no request within 600 s |"),
        }
    }
}

fn streams(dir: &Path) {
    println!("\n## 10,000 concurrent streams (mock TTFT 3 s, 20 tokens 100 ms apart)");
    let n = 10_000;
    let trace = dir.join("streams.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
    for i in 0..n {
        writeln!(f, r#"{{"input_length": 32, "output_length": 20, "hash_ids": [{i}]}}"#).unwrap();
    }
    drop(f);
    let mock = start_mock(&["--ttft-ms", "3000", "--itl-ms", "100"]);
    let art = dir.join("art-streams");
    let (wall, cpu) =
        timed(&mut ours(&mock.url, &trace, &art, &["--concurrency", "10000", "--request-timeout-seconds", "60"]));
    let s = summary(&art);
    let arr = arrivals(&mock);
    let mut a: Vec<u128> = arr.iter().map(|x| x.0).collect();
    a.sort_unstable();
    let spread_ms = (a.last().unwrap_or(&0) - a.first().unwrap_or(&0)) as f64 / 1e6;
    println!(
        "requests {} ok / {} errors, all {} sent within {spread_ms:.0} ms (so all were in flight together), wall {wall:.1} s, client CPU {cpu:.1} s, TTFT p50 {:.0} ms p99 {:.0} ms",
        s["request_count"]["avg"],
        s["error_request_count"]["avg"],
        arr.len(),
        s["time_to_first_token"]["p50"].as_f64().unwrap_or(f64::NAN),
        s["time_to_first_token"]["p99"].as_f64().unwrap_or(f64::NAN)
    );
}

/// The first 200 rows of the conversation trace at 20×: bursts of up to 16 requests with ~6,700-token
/// prompts at the same timestamp. Every request is matched to its record through its
/// `X-Request-ID` (`<run id>-<session run>-<turn>`), so lateness is per request, at the client
/// (sent − scheduled, and per burst) and at the server (arrival − scheduled, zero at the earliest).
fn burst(dir: &Path) {
    println!("\n## Bursts: first 200 rows of the conversation trace at 20× (fixed schedule, streaming)");
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/conversation_trace.jsonl"),
    )
    .unwrap();
    let trace = dir.join("burst.jsonl");
    std::fs::write(&trace, src.lines().take(200).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    println!(
        "| run | requests | bursts (≥ 2 requests) | client: worst request of a burst, first burst / p50 / max over bursts (ms) | bursts entirely within 1 ms | server: arrival error p50 / p99 / max (ms) | wire: arrival error p50 / p99 / max (ms) | wire: bursts entirely within 1 ms | CPU µs/request |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // `BURST_MOCK=realistic` gives the mock a TTFT of 50 ms and 10 ms between tokens, so that the
    // answers' streams do not compete for the two cores with the bursts being sent.
    let realistic = std::env::var("BURST_MOCK").is_ok_and(|v| v == "realistic");
    let mock_args: &[&str] = if realistic { &["--ttft-ms", "50", "--itl-ms", "10"] } else { &[] };
    println!("mock-server {}", if realistic { "--ttft-ms 50 --itl-ms 10" } else { "(no delays)" });
    for run in 1..=3 {
        let mock = start_mock(mock_args);
        let art = dir.join(format!("art-burst-{run}"));
        let wire_file = dir.join(format!("wire-{run}.jsonl"));
        let capture = WireCapture::start(&mock.url, &wire_file);
        let (_, cpu) =
            timed(&mut ours(&mock.url, &trace, &art, &["--fixed-schedule", "--synthesis-speedup-ratio", "20"]));
        let wire = capture.map(WireCapture::stop).unwrap_or_default();
        let records: Vec<Value> = std::fs::read_to_string(art.join("profile_export.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["metadata"].clone())
            .collect();
        let key = |run: u64, turn: u64| format!("{run}-{turn}");
        let by_key: std::collections::HashMap<String, (u64, u64)> = records
            .iter()
            .map(|r| {
                let k = key(r["session_num"].as_u64().unwrap(), r["turn_index"].as_u64().unwrap());
                (k, (r["scheduled_ns"].as_u64().unwrap(), r["sent_ns"].as_u64().unwrap()))
            })
            .collect();
        // Client side, per burst (requests scheduled at the same instant).
        let mut bursts: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
        for &(sched, sent) in by_key.values() {
            bursts.entry(sched).or_default().push(sent.saturating_sub(sched) as f64 / 1e6);
        }
        let worst: Vec<(u64, f64)> = bursts
            .iter()
            .filter(|(_, v)| v.len() >= 2)
            .map(|(t, v)| (*t, v.iter().copied().fold(0.0, f64::max)))
            .collect();
        let first = worst.first().map_or(f64::NAN, |w| w.1);
        let sorted_worst = sorted(&worst.iter().map(|w| w.1).collect::<Vec<_>>());
        let within = worst.iter().filter(|w| w.1 <= 1.0).count();
        // Server side: arrival − scheduled, the earliest defining zero.
        let diffs: Vec<f64> = mock
            .arrivals()
            .iter()
            .filter_map(|a| {
                let id = a["headers"]["request_id"].as_str()?;
                let mut parts = id.rsplitn(3, '-');
                let turn = parts.next()?;
                let run = parts.next()?;
                let (sched, _) = by_key.get(&format!("{run}-{turn}"))?;
                let arrival: u128 = a["arrival_ns"].as_str()?.parse().ok()?;
                Some(arrival as f64 / 1e6 - *sched as f64 / 1e6)
            })
            .collect();
        let min = diffs.iter().copied().fold(f64::INFINITY, f64::min);
        let late = sorted(&diffs.iter().map(|d| d - min).collect::<Vec<_>>());
        // On the wire: when the kernel received each request's first segment on `lo`.
        let wire_diffs: Vec<(u64, f64)> = wire
            .iter()
            .filter_map(|(id, ns)| {
                let mut parts = id.rsplitn(3, '-');
                let turn = parts.next()?;
                let run = parts.next()?;
                let (sched, _) = by_key.get(&format!("{run}-{turn}"))?;
                Some((*sched, *ns as f64 / 1e6 - *sched as f64 / 1e6))
            })
            .collect();
        let wire_min = wire_diffs.iter().map(|d| d.1).fold(f64::INFINITY, f64::min);
        let wire_late = sorted(&wire_diffs.iter().map(|d| d.1 - wire_min).collect::<Vec<_>>());
        let mut wire_bursts: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
        for (sched, d) in &wire_diffs {
            wire_bursts.entry(*sched).or_default().push(d - wire_min);
        }
        let wire_within = wire_bursts.values().filter(|v| v.len() >= 2 && v.iter().all(|d| *d <= 1.0)).count();
        let wire_cols = if wire_late.is_empty() {
            "— (no capture: needs root or CAP_NET_RAW) | —".to_owned()
        } else {
            format!(
                "{:.3} / {:.3} / {:.3} | {wire_within} of {}",
                percentile_sorted(&wire_late, 50.0).unwrap_or(f64::NAN),
                percentile_sorted(&wire_late, 99.0).unwrap_or(f64::NAN),
                wire_late.last().copied().unwrap_or(f64::NAN),
                wire_bursts.values().filter(|v| v.len() >= 2).count()
            )
        };
        println!(
            "| {run} | {} | {} | {first:.3} / {:.3} / {:.3} | {within} of {} | {:.3} / {:.3} / {:.3} | {wire_cols} | {:.0} |",
            late.len(),
            worst.len(),
            percentile_sorted(&sorted_worst, 50.0).unwrap_or(f64::NAN),
            sorted_worst.last().copied().unwrap_or(f64::NAN),
            worst.len(),
            percentile_sorted(&late, 50.0).unwrap_or(f64::NAN),
            percentile_sorted(&late, 99.0).unwrap_or(f64::NAN),
            late.last().copied().unwrap_or(f64::NAN),
            cpu * 1e6 / late.len().max(1) as f64
        );
    }
}

/// `tools/wire_arrivals.py` capturing the requests to a mock on the loopback interface (kernel
/// packet timestamps: independent of the client and of the mock's own scheduling).
struct WireCapture {
    child: std::process::Child,
    out: PathBuf,
}

impl WireCapture {
    /// Starts the capture, or `None` (with a note) where raw sockets are not allowed.
    fn start(url: &str, out: &Path) -> Option<WireCapture> {
        use std::io::BufRead;
        let port = url.rsplit(':').next()?.trim_end_matches('/');
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wire_arrivals.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port)
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        let ready = child.stdout.take().map(|o| std::io::BufReader::new(o).read_line(&mut line));
        if matches!(ready, Some(Ok(n)) if n > 0) && line.trim() == "ready" {
            Some(WireCapture { child, out: out.to_owned() })
        } else {
            eprintln!("no wire capture (raw sockets need root or CAP_NET_RAW)");
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }

    /// Stops the capture; (X-Request-ID, kernel receive time in ns since the epoch) per request.
    fn stop(mut self) -> Vec<(String, u128)> {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let v: Value = serde_json::from_str(l).ok()?;
                Some((v["request_id"].as_str()?.to_owned(), u128::from(v["wire_ns"].as_u64()?)))
            })
            .collect()
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all = args.is_empty();
    let want = |s: &str| all || args.iter().any(|a| a == s);
    println!(
        "machine: {} cores; aiperf-cli: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        bin().display()
    );
    if want("lateness") {
        lateness(dir.path());
    }
    if want("max-rate") {
        max_rate(dir.path());
    }
    if want("startup") {
        startup(dir.path());
    }
    if want("streams") {
        streams(dir.path());
    }
    if want("burst") {
        burst(dir.path());
    }
    if want("shards") {
        shards(dir.path());
    }
    if want("scraping") {
        scraping(dir.path());
    }
}
