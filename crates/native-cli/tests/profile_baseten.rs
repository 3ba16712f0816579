//! Baseten traces (AIPerf's `baseten_trace`, Parquet) and AIPerf's options for them against
//! `aiperf-cli mock-server`: what each request carries (the recorded prompt, `max_tokens`,
//! `min_tokens`, the KV hints) and when it is due (open loop, `--replay-speedup`,
//! `--max-idle-gap-cap-seconds`, `--no-open-loop-replay`, `--open-loop-strict`,
//! `--trace-session-sample-ratio`); the two that mean the same on any trace on a Mooncake trace,
//! and the others refused there. The expected times are AIPerf's rules worked out by hand on a
//! small trace written here (`write_baseten`, the columns of AIPerf's `BasetenTrace`).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::baseten::{records, rows, write_baseten};
use common::*;
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(120);
const MS: i64 = 1_000_000;

fn trace(dir: &Path) -> PathBuf {
    let p = dir.join("trace.parquet");
    write_baseten(&p, &rows());
    p
}

/// A run's requests: (session, turn, scheduled ns, end ns, body sent), by scheduled time.
struct Sent {
    session: String,
    turn: u32,
    scheduled: i64,
    end: i64,
    body: Value,
}

fn run(extra: &[&str]) -> (Value, Vec<Sent>) {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let art = dir.path().join("art");
    let args = [&["--endpoint-type", "completions", "--export-level", "raw"][..], extra].concat();
    let out = profile_streaming(&mock.url, &trace, &art, &args, LIMIT);
    ok(&out);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_times_consistent(&records);
    let raw = read_jsonl(&art.join("profile_export_raw.jsonl"));
    let bodies: BTreeMap<String, Value> = raw
        .iter()
        .map(|l| (l["metadata"]["x_request_id"].as_str().unwrap().to_owned(), l["payload"].clone()))
        .collect();
    let mut sent: Vec<Sent> = records
        .iter()
        .map(|l| {
            let r = record_of(l);
            Sent {
                session: r.session_id.clone().unwrap_or_default(),
                turn: r.turn,
                scheduled: r.scheduled_ns as i64,
                end: r.end_ns as i64,
                body: bodies[l["metadata"]["x_request_id"].as_str().unwrap()].clone(),
            }
        })
        .collect();
    sent.sort_by_key(|s| (s.scheduled, s.session.clone(), s.turn));
    (summary(&art), sent)
}

/// The prompts sent, by session and turn.
fn prompts(sent: &[Sent]) -> Vec<&str> {
    let mut by: Vec<(&str, u32, &str)> =
        sent.iter().map(|s| (s.session.as_str(), s.turn, s.body["prompt"].as_str().unwrap())).collect();
    by.sort_unstable();
    by.into_iter().map(|b| b.2).collect()
}

/// The request that sent `prompt`.
fn by_prompt<'a>(sent: &'a [Sent], prompt: &str) -> &'a Sent {
    sent.iter().find(|s| s.body["prompt"] == prompt).unwrap()
}

/// The first turns' scheduled times, in ms after the first.
fn first_turns_ms(sent: &[Sent]) -> Vec<f64> {
    let firsts: Vec<i64> = sent.iter().filter(|s| s.turn == 0).map(|s| s.scheduled).collect();
    firsts.iter().map(|t| (t - firsts[0]) as f64 / MS as f64).collect()
}

/// The turn after `first` in its session.
fn next_of<'a>(sent: &'a [Sent], first: &Sent) -> &'a Sent {
    sent.iter().find(|s| s.session == first.session && s.turn == first.turn + 1).unwrap()
}

/// Open loop (AIPerf's default): each session at its first row's time, a later turn at the later
/// of its recorded time and the previous turn's end; every request the recorded prompt verbatim
/// with max_tokens = the recorded output (at least 1), min_tokens the same, and the KV hints.
#[test]
fn open_loop_sends_the_recorded_prompts_and_hints_at_the_recorded_times() {
    let (summary, sent) = run(&["--custom-dataset-type", "baseten_trace"]);
    assert_eq!(summary["input_config"]["datasets"][0]["format"], "baseten_trace", "{summary}");
    assert_eq!(summary["aiperf_cli_config"]["turn_history"], "none");
    assert_eq!(prompts(&sent), ["a one", "a two", "b one", "b two", "lone"]);
    assert_eq!(first_turns_ms(&sent), [0.0, 100.0, 2600.0]);
    let zero = by_prompt(&sent, "a one").scheduled;
    for (first, at_ms) in [("a one", 300), ("b one", 400)] {
        let first = by_prompt(&sent, first);
        let next = next_of(&sent, first);
        assert_eq!(next.scheduled, (zero + at_ms * MS).max(first.end), "{}", next.session);
    }
    let a_two = &by_prompt(&sent, "a two").body;
    assert_eq!(
        (&a_two["max_tokens"], &a_two["min_tokens"], &a_two["hash_ids"], &a_two["block_size"]),
        (&json!(5), &json!(5), &json!([1, 2, 3]), &json!(16))
    );
    // output_tokens 0 is sent as 1; an empty total_hashes sends no hash_ids.
    let lone = &by_prompt(&sent, "lone").body;
    assert_eq!((&lone["max_tokens"], &lone["min_tokens"]), (&json!(1), &json!(1)));
    assert!(lone.get("hash_ids").is_none() && lone["block_size"] == 16, "{lone}");
}

/// `--replay-speedup 4 --max-idle-gap-cap-seconds 0.5`: times divided by 4 (0, 25, 75, 100,
/// 650 ms), then the 550 ms gap before the lone row cut to 500 ms; the hints untouched.
#[test]
fn speedup_and_idle_gap_cap_retime_every_row() {
    let (summary, sent) = run(&["--replay-speedup", "4", "--max-idle-gap-cap-seconds", "0.5"]);
    let d = &summary["input_config"]["datasets"][0];
    assert_eq!((&d["replay_speedup"], &d["max_idle_gap_cap_seconds"]), (&json!(4.0), &json!(0.5)), "{d}");
    assert_eq!(first_turns_ms(&sent), [0.0, 25.0, 600.0]);
    let zero = sent.iter().map(|s| s.scheduled).min().unwrap();
    for (session, at_ms) in [("a", 75), ("b", 100)] {
        let first = sent.iter().find(|s| s.session == session && s.turn == 0).unwrap();
        assert_eq!(next_of(&sent, first).scheduled, (zero + at_ms * MS).max(first.end), "{session}");
    }
    assert_eq!(sent.iter().find(|s| s.body["prompt"] == "b two").unwrap().body["hash_ids"], json!([7, 8]));
}

/// `--no-open-loop-replay`: a later turn is due its think time after the previous turn ended:
/// the recorded gap less the previous row's recorded duration (a: 300 − 100; b: 300 − 150).
#[test]
fn closed_loop_waits_the_recorded_think_time() {
    let (_, sent) = run(&["--no-open-loop-replay"]);
    assert_eq!(first_turns_ms(&sent), [0.0, 100.0, 2600.0]);
    for (session, think_ms) in [("a", 200), ("b", 150)] {
        let first = sent.iter().find(|s| s.session == session && s.turn == 0).unwrap();
        assert_eq!(next_of(&sent, first).scheduled - first.end, think_ms * MS, "{session}");
    }
}

/// `--inter-turn-delay-cap-seconds 0.175`: the closed loop's think times at most 175 ms (a's 200
/// capped, b's 150 kept); the open loop keeps its recorded times, which are no delays.
#[test]
fn the_inter_turn_delay_cap_shortens_the_closed_loops_think_times() {
    let (summary, sent) = run(&["--no-open-loop-replay", "--inter-turn-delay-cap-seconds", "0.175"]);
    assert_eq!(first_turns_ms(&sent), [0.0, 100.0, 2600.0]);
    for (session, think_ms) in [("a", 175), ("b", 150)] {
        let first = sent.iter().find(|s| s.session == session && s.turn == 0).unwrap();
        assert_eq!(next_of(&sent, first).scheduled - first.end, think_ms * MS, "{session}");
    }
    assert_eq!(summary["input_config"]["datasets"][0]["inter_turn_delay_cap_seconds"], 0.175, "{summary}");
    let (_, open) = run(&["--inter-turn-delay-cap-seconds", "0"]);
    let zero = open.iter().map(|s| s.scheduled).min().unwrap();
    let a_two = by_prompt(&open, "a two");
    let a_one = by_prompt(&open, "a one");
    assert_eq!(a_two.scheduled, (zero + 300 * MS).max(a_one.end));
}

/// `--open-loop-strict --omit-kv-hints --no-force-min-tokens`: every row a session of its own at
/// its recorded time, and the bodies without the hints and min_tokens.
#[test]
fn strict_rows_are_single_turns_and_bodies_lose_the_hints() {
    let (_, sent) = run(&["--open-loop-strict", "--omit-kv-hints", "--no-force-min-tokens"]);
    assert!(sent.iter().all(|s| s.turn == 0), "every row its own session");
    assert_eq!(first_turns_ms(&sent), [0.0, 100.0, 300.0, 400.0, 2600.0]);
    for s in &sent {
        for key in ["min_tokens", "hash_ids", "block_size"] {
            assert!(s.body.get(key).is_none(), "{key} in {}", s.body);
        }
    }
}

/// `--trace-session-sample-ratio`: whole sessions, the ones AIPerf's draws keep (the core's
/// conversion of the same rows at the same seed).
#[test]
fn session_sampling_keeps_whole_sessions() {
    use aiperf_core::formats::baseten::{BasetenReplay, convert};
    let (_, sent) = run(&["--trace-session-sample-ratio", "0.5", "--random-seed", "3"]);
    let records = records(&rows());
    let opts = BasetenReplay { session_sample_ratio: Some(0.5), seed: 3, ..BasetenReplay::default() };
    let (want, _) = convert(&records, true, &opts).unwrap();
    let want: Vec<(String, String)> = want
        .rows()
        .iter()
        .map(|r| {
            let aiperf_core::trace::Input::Text(p) = &r.input else { panic!() };
            (r.session_id.as_deref().unwrap().to_owned(), p.to_string())
        })
        .collect();
    let mut got: Vec<(String, String)> =
        sent.iter().map(|s| (s.session.clone(), s.body["prompt"].as_str().unwrap().to_owned())).collect();
    let mut want_sorted = want.clone();
    got.sort();
    want_sorted.sort();
    assert_eq!(got, want_sorted);
    assert!(!got.is_empty() && got.len() < 5, "{got:?}");
}

/// The two options that mean the same on any timed trace retime a Mooncake trace; the
/// Baseten-only ones are refused there by name.
#[test]
fn on_a_mooncake_trace_speedup_is_honoured_and_baseten_only_options_refused() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let lines: Vec<String> = [0, 200, 800]
        .iter()
        .map(|t| format!(r#"{{"timestamp": {t}, "input_length": 20, "output_length": 2}}"#))
        .collect();
    let (_dir, trace, art) = scratch(&lines);
    ok(&profile_streaming(
        &mock.url,
        &trace,
        &art,
        &["--replay-speedup", "2", "--max-idle-gap-cap-seconds", "0.2"],
        LIMIT,
    ));
    let mut due: Vec<i64> =
        read_jsonl(&art.join("profile_export.jsonl")).iter().map(|l| record_of(l).scheduled_ns as i64).collect();
    due.sort_unstable();
    assert_eq!(due.iter().map(|d| (d - due[0]) / MS).collect::<Vec<_>>(), [0, 100, 300]);
    for flag in ["--open-loop-strict", "--omit-kv-hints", "--no-open-loop-replay", "--no-force-min-tokens"] {
        let out = profile_streaming(&mock.url, &trace, &art.with_extension("x"), &[flag], LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(&format!("{flag} applies to Baseten traces only")),
            "{flag}: {err}"
        );
        assert!(err.contains("a mooncake trace (detected)"), "{err}");
    }
}

/// `convert-trace` and `analyze-trace` read a Baseten trace (detected by content): the rows as
/// Mooncake JSONL, each with its recorded prompt, output length, session and body fields.
#[test]
fn convert_trace_writes_the_rows_as_mooncake_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let p = trace(dir.path());
    let out_file = dir.path().join("t.jsonl");
    let out = cli(&["convert-trace", p.to_str().unwrap(), "--output-file", out_file.to_str().unwrap()]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("detected format: baseten"));
    let rows: Vec<Value> =
        std::fs::read_to_string(&out_file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        rows[1],
        json!({"timestamp": 300, "session_id": "a", "text_input": "a two", "output_length": 5,
               "extra": {"min_tokens": 5, "hash_ids": [1, 2, 3], "block_size": 16}})
    );
    let out = cli(&["analyze-trace", p.to_str().unwrap()]);
    ok(&out);
    // A file that is no Baseten trace: the columns named.
    let bad = dir.path().join("bad.parquet");
    std::fs::copy(&p, &bad).unwrap();
    let mut bytes = std::fs::read(&bad).unwrap();
    bytes.truncate(20);
    std::fs::write(&bad, bytes).unwrap();
    let out = cli(&["analyze-trace", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a readable Parquet file"));
}
