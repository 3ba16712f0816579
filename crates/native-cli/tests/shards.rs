//! Sharded replay end to end: three `profile --shard K/3` processes with a common `--start-at`
//! against one mock server, then `aiperf-cli merge`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::record::RequestRecord;
use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);
/// The tests of this file run one at a time: five replay processes at once would only slow each
/// other down.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// Rows of the conversation trace's head replayed.
const ROWS: usize = 90;
/// Sessions the rows are grouped into (row i joins session i mod 12).
const SESSIONS: usize = 12;

/// The head of the conversation trace, grouped into multi-turn sessions, timestamps ÷ 10 (the
/// first 90 rows span 30 s; the replay takes 3 s).
fn conversation_head(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("tests/fixtures/traces/conversation_head500.jsonl")).unwrap();
    let lines: Vec<String> = text
        .lines()
        .take(ROWS)
        .enumerate()
        .map(|(i, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["timestamp"] = Value::from(v["timestamp"].as_u64().unwrap() / 10);
            v["session_id"] = Value::from(format!("s{:02}", i % SESSIONS));
            // Short answers keep the run short; the mock answers with output_length tokens.
            v["output_length"] = Value::from(v["output_length"].as_u64().unwrap().min(40));
            // Short prompts (the first block of each) keep three debug builds on two cores punctual:
            // the test is about who sends what and when, not about building 45 KB bodies.
            v["input_length"] = Value::from(v["input_length"].as_u64().unwrap().min(512));
            let first = v["hash_ids"][0].clone();
            v["hash_ids"] = Value::from(vec![first]);
            v.to_string()
        })
        .collect();
    write_trace(dir, &lines)
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn spawn_shard(mock: &Mock, trace: &Path, art: &Path, extra: &[&str]) -> Child {
    Command::new(BIN)
        .args(["profile", "-m", "m", "-u", &mock.url, "--streaming", "--tokenizer", &tokenizer(), "--input-file"])
        .arg(trace)
        .arg("--artifact-dir")
        .arg(art)
        // The conversation trace's input_length already counts each session's history.
        .args(["--ui-type", "none", "--turn-history", "none"])
        .args(extra)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn merge(args: &[&Path], extra: &[&str]) -> std::process::Output {
    let child = Command::new(BIN)
        .arg("merge")
        .args(args)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, LIMIT)
}

fn records(dir: &Path) -> Vec<RequestRecord> {
    read_jsonl(&dir.join("profile_export.jsonl")).into_iter().map(|l| record_of(&l)).collect()
}

#[test]
fn three_shards_send_the_whole_run_once_and_merge_into_one_run() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = conversation_head(dir.path());
    // Far enough ahead for three debug builds to load on a busy two-core machine.
    let start_at = unix_ms() + 8000;
    let arts: Vec<PathBuf> = (0..3).map(|k| dir.path().join(format!("shard-{k}"))).collect();
    let children: Vec<Child> = arts
        .iter()
        .enumerate()
        .map(|(k, art)| {
            let shard = format!("{k}/3");
            spawn_shard(&mock, &trace, art, &["--shard", &shard, "--start-at", &start_at.to_string()])
        })
        .collect();
    for c in children {
        ok(&wait_limited(c, LIMIT));
    }

    // Every request was sent exactly once across the shards: the mock saw each (session, turn)
    // of the trace once, and nothing else.
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), ROWS);
    let mut seen: BTreeMap<(String, u32), u32> = BTreeMap::new();
    for a in &arrivals {
        let h = &a["headers"];
        let session = h["correlation_id"].as_str().unwrap().trim_start_matches("fixed-schedule-").to_owned();
        let turn: u32 = h["request_id"].as_str().unwrap().rsplit('-').next().unwrap().parse().unwrap();
        *seen.entry((session, turn)).or_default() += 1;
    }
    let expected: BTreeSet<(String, u32)> =
        (0..ROWS).map(|i| (format!("s{:02}", i % SESSIONS), (i / SESSIONS) as u32)).collect();
    assert_eq!(seen.keys().cloned().collect::<BTreeSet<_>>(), expected);
    assert!(seen.values().all(|&n| n == 1), "{seen:?}");

    // Each session stayed in one shard, and the shards' records are the whole run.
    let per_shard: Vec<Vec<RequestRecord>> = arts.iter().map(|a| records(a)).collect();
    let mut owner: HashMap<String, usize> = HashMap::new();
    for (k, recs) in per_shard.iter().enumerate() {
        for r in recs {
            let s = r.session_id.clone().unwrap();
            assert_eq!(*owner.entry(s.clone()).or_insert(k), k, "session {s} crossed shards");
            assert!(r.error.is_none(), "{r:?}");
        }
        let sum = summary(&arts[k]);
        assert_eq!(sum["sharding"]["shard"]["index"], k);
        assert_eq!(sum["sharding"]["shard"]["start_unix_ns"].as_u64(), Some(start_at * 1_000_000));
        assert!(sum["sharding"]["shard"]["clock"]["offset_ms"].is_number(), "{}", sum["sharding"]);
        assert_eq!(sum["aiperf_cli_config"]["shard"], format!("{k}/3"));
    }
    assert_eq!(owner.len(), SESSIONS);
    assert_eq!(per_shard.iter().map(Vec::len).sum::<usize>(), ROWS);

    // Against the common time zero: no request reached the server before its scheduled time (the
    // shards' clocks are this machine's), and each shard's records are consistent.
    let scheduled: HashMap<(String, u32), u64> =
        per_shard.iter().flatten().map(|r| ((r.session_id.clone().unwrap(), r.turn), r.scheduled_ns)).collect();
    for a in &arrivals {
        let h = &a["headers"];
        let session = h["correlation_id"].as_str().unwrap().trim_start_matches("fixed-schedule-").to_owned();
        let turn: u32 = h["request_id"].as_str().unwrap().rsplit('-').next().unwrap().parse().unwrap();
        let arrival: u128 = a["arrival_ns"].as_str().unwrap().parse().unwrap();
        let due = u128::from(start_at) * 1_000_000 + u128::from(scheduled[&(session, turn)]);
        let early_ms = (due as f64 - arrival as f64) / 1e6;
        assert!(early_ms < 1.0, "arrived {early_ms:.3} ms before its time");
    }
    for art in &arts {
        assert_times_consistent(&read_jsonl(&art.join("profile_export.jsonl")));
    }

    // Merge: one record per request, the summary computed from the union of the records.
    let merged = dir.path().join("merged");
    let out = merge(&[&arts[2], &arts[0], &arts[1]], &["--output", merged.to_str().unwrap()]);
    ok(&out);
    let merged_records = records(&merged);
    assert_eq!(merged_records.len(), ROWS);
    // A common start: nothing is shifted, the merged records are the shards' records.
    let key = |r: &RequestRecord| serde_json::to_string(r).unwrap();
    let mut union: Vec<String> = per_shard.iter().flatten().map(key).collect();
    let mut got: Vec<String> = merged_records.iter().map(key).collect();
    union.sort();
    got.sort();
    assert_eq!(union, got);
    let mut agg = Aggregate::default();
    for r in &merged_records {
        agg.add(r, true, &[]);
    }
    let report = agg.report(false);
    let s = summary(&merged);
    assert_eq!(s["request_count"]["avg"], ROWS as f64);
    assert_eq!(s["benchmark_duration"]["avg"], report.benchmark_duration_s);
    assert_eq!(s["request_throughput"]["avg"], report.request_throughput);
    assert_eq!(s["output_token_throughput"]["avg"], report.output_token_throughput);
    assert!(!report.metrics.is_empty());
    for (metric, d) in &report.metrics {
        let m = &s[metric.tag()];
        assert_eq!(m["count"].as_u64(), Some(d.count as u64), "{}", metric.tag());
        for (field, v) in [("avg", d.avg), ("min", d.min), ("max", d.max), ("std", d.std)] {
            assert_eq!(m[field].as_f64(), Some(v), "{} {field}", metric.tag());
        }
        assert_eq!(m["p99"].as_f64(), d.percentile(99.0), "{} p99", metric.tag());
    }
    assert_eq!(s["sharding"]["merged"]["count"], 3);
    assert_eq!(s["sharding"]["merged"]["partial"], false);
    assert_eq!(s["was_cancelled"], false);
    assert!(merged.join("profile_export_aiperf.csv").is_file());
    assert_eq!(s["send_lateness"]["count"], ROWS);

    // Two shards are not the run.
    let out = merge(&[&arts[0], &arts[2]], &["--output", dir.path().join("m2").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shard(s) K = 1 of N = 3 missing") && err.contains("--allow-partial"), "{err}");
}

#[test]
fn a_sigterm_leaves_a_shard_complete_and_merge_reports_it() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mock = Mock::start(&["--ttft-ms", "20", "--itl-ms", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..2000).map(|i| format!(r#"{{"input_length": {}, "output_length": 20}}"#, 10 + i % 50)).collect();
    let trace = write_trace(dir.path(), &lines);
    let rate = ["--request-rate", "50", "--arrival-pattern", "constant", "--benchmark-grace-period", "5"];
    let arts: Vec<PathBuf> = (0..2).map(|k| dir.path().join(format!("shard-{k}"))).collect();
    let children: Vec<Child> = (0..2)
        .map(|k| {
            let shard = format!("{k}/2");
            spawn_shard(&mock, &trace, &arts[k], &[&rate[..], &["--shard", &shard]].concat())
        })
        .collect();
    // Stopped once both shards are sending (loading and clock probes take a while here): shard k
    // sends the rows of index k modulo 2, whose prompts are 10 + k modulo 2 tokens long.
    wait_for("both shards sending", LIMIT, || {
        let arrivals = mock.arrivals();
        (0..2).all(|k| arrivals.iter().filter(|a| a["prompt_tokens"].as_u64().unwrap() % 2 == k).count() >= 10)
    });
    for c in &children {
        let status = Command::new("kill").args(["-TERM", &c.id().to_string()]).status().unwrap();
        assert!(status.success());
    }
    let mut total_records = 0;
    for (k, c) in children.into_iter().enumerate() {
        let out = wait_limited(c, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
        // The stopped shard's records are whole: one valid line per request its summary counts.
        let s = summary(&arts[k]);
        assert_eq!(s["was_cancelled"], true);
        let recs = read_jsonl(&arts[k].join("profile_export.jsonl"));
        let total = s["completed_request_count"]["avg"].as_f64().unwrap();
        assert!(!recs.is_empty());
        assert_eq!(total as usize, recs.len());
        assert!(std::fs::read(arts[k].join("profile_export.jsonl")).unwrap().ends_with(b"\n"));
        // Single-turn sessions: shard k has the rows whose index is k modulo 2 (lines k+1, k+3…).
        assert!(recs.iter().all(|r| (r["metadata"]["trace_line"].as_u64().unwrap() - 1) % 2 == k as u64));
        total_records += recs.len();
    }
    // Every request the server saw is in a shard's records.
    assert_eq!(mock.arrivals().len(), total_records);

    let merged = dir.path().join("merged");
    let out = merge(&[&arts[0], &arts[1]], &["--output", merged.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shard 0/2) was interrupted") && err.contains("shard 1/2) was interrupted"), "{err}");
    assert!(!merged.join("profile_export.jsonl").exists());
    let out = merge(&[&arts[0], &arts[1]], &["--output", merged.to_str().unwrap(), "--allow-partial"]);
    ok(&out);
    let s = summary(&merged);
    assert_eq!(s["sharding"]["merged"]["partial"], true);
    assert_eq!(s["was_cancelled"], true);
    assert_eq!(read_jsonl(&merged.join("profile_export.jsonl")).len(), total_records);
}

#[test]
fn a_past_start_and_more_shards_than_sessions_are_refused_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..3).map(|i| format!(r#"{{"timestamp": {i}, "input_length": 10, "output_length": 2}}"#)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    // Nothing listens on port 9: nothing may be sent anyway.
    let url = "http://127.0.0.1:9";
    let out = profile_on(url, &trace, &art, &["--start-at", "2020-01-01T00:00:00Z"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--start-at 2020-01-01T00:00:00.000000Z is") && err.contains("s in the past"), "{err}");
    let out = profile_on(url, &trace, &art, &["--shard", "3/4"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--shard 3/4: the trace has 3 session(s)"), "{err}");
    assert!(!art.join("profile_export.jsonl").exists());
}

/// Shards written with `--profile-export-prefix` (each its own base name) merge like AIPerf-named
/// ones: merge finds each folder's `NAME.jsonl` and `NAME.json`, says which files it read, and
/// the merged run holds every request once.
#[test]
fn shards_written_with_an_export_prefix_merge() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = conversation_head(dir.path());
    let start_at = unix_ms() + 6000;
    let arts: Vec<PathBuf> = (0..2).map(|k| dir.path().join(format!("shard-{k}"))).collect();
    let children: Vec<Child> = arts
        .iter()
        .enumerate()
        .map(|(k, art)| {
            let (shard, prefix) = (format!("{k}/2"), format!("part{k}"));
            let extra = ["--shard", &shard, "--start-at", &start_at.to_string(), "--profile-export-prefix", &prefix];
            spawn_shard(&mock, &trace, art, &extra)
        })
        .collect();
    for c in children {
        ok(&wait_limited(c, LIMIT));
    }
    for (k, art) in arts.iter().enumerate() {
        assert!(art.join(format!("part{k}.jsonl")).is_file() && !art.join("profile_export.jsonl").exists());
    }
    let merged = dir.path().join("merged");
    let out = merge(&[&arts[0], &arts[1]], &["--output", merged.to_str().unwrap()]);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    for k in 0..2 {
        let said = format!("read part{k}.jsonl and part{k}.json (a run written with --profile-export-prefix part{k})");
        assert!(err.contains(&said), "{err}");
    }
    assert_eq!(records(&merged).len(), ROWS);
    let s = summary(&merged);
    assert_eq!(s["sharding"]["merged"]["count"], 2);
    // The merged run's files have AIPerf's names, and its options say no prefix.
    assert!(s["aiperf_cli_config"]["profile_export_prefix"].is_null(), "{}", s["aiperf_cli_config"]);
    assert!(s["input_config"]["artifacts"].get("prefix").is_none(), "{}", s["input_config"]["artifacts"]);
}
