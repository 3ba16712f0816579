//! AIPerf's load options that `profile` honours beyond rate and concurrency, end to end against
//! `aiperf-cli mock-server`: what each changes in what is sent and when.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use aiperf_core::replay::sampling::{Sampler, Sampling};
use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// (sent, first token, end) in ns of every record of a run, by send time.
fn prefills(art: &std::path::Path) -> Vec<(u64, u64, u64)> {
    let mut p: Vec<(u64, u64, u64)> = read_jsonl(&art.join("profile_export.jsonl"))
        .iter()
        .map(record_of)
        .map(|r| (r.sent_ns, r.chunk_ns.first().copied().unwrap_or(r.end_ns), r.end_ns))
        .collect();
    p.sort_unstable();
    p
}

/// Most requests in flight at once, from their [sent, end] intervals.
fn most_in_flight(p: &[(u64, u64, u64)]) -> usize {
    p.iter().map(|&(s, _, _)| p.iter().filter(|&&(s2, _, e2)| s2 <= s && s < e2).count()).max().unwrap_or(0)
}

/// `--prefill-concurrency 1`: a request is sent only once the one before it has its first
/// token, so no two [sent, first token] intervals overlap, while `--concurrency` still caps the
/// requests in flight (answers outlast their prefill, so several are in flight at once).
/// `--prefill-concurrency-ramp-duration`: the limit rises from 1 on AIPerf's steps.
#[test]
fn prefill_concurrency_keeps_prefills_apart_under_the_concurrency() {
    let mock = Mock::start(&["--ttft-ms", "100", "--itl-ms", "40"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = rows(8, 20, 10);
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("one");
    let out = profile_streaming(&mock.url, &trace, &art, &["--concurrency", "3", "--prefill-concurrency", "1"], LIMIT);
    ok(&out);
    let p = prefills(&art);
    assert_eq!(p.len(), 8);
    assert!(p.windows(2).all(|w| w[0].1 <= w[1].0), "prefills overlap: {p:?}");
    let most = most_in_flight(&p);
    assert!((2..=3).contains(&most), "{most} in flight: {p:?}");
    assert_times_consistent(&read_jsonl(&art.join("profile_export.jsonl")));
    let config = &summary(&art)["input_config"];
    assert_eq!(config["phases"][0]["prefill_concurrency"], 1, "{config}");
    // Without the limit the first three leave together (within the 2 s of the first's prefill).
    let slow = Mock::start(&["--ttft-ms", "2000", "--itl-ms", "1"]);
    let art = dir.path().join("none");
    ok(&profile_streaming(&slow.url, &trace, &art, &["--concurrency", "3", "--request-count", "3"], LIMIT));
    let p = prefills(&art);
    assert!(p[1].0 < p[0].1 && p[2].0 < p[0].1, "{p:?}");

    // 1 → 2 over 1 s, prefills of 2 s: the second request is due at 1 s, the third waits for
    // a first token.
    let art = dir.path().join("ramp");
    let extra = [
        "--concurrency",
        "4",
        "--prefill-concurrency",
        "2",
        "--prefill-concurrency-ramp-duration",
        "1",
        "--request-count",
        "4",
    ];
    let out = profile_streaming(&slow.url, &trace, &art, &extra[..], LIMIT);
    ok(&out);
    let p = prefills(&art);
    // The ramp's step, not a first token, lets the second one go.
    assert!(p[1].0 >= 1_000_000_000 && p[1].0 < p[0].1, "{p:?}");
    assert!(p[2].0 >= p[0].1, "{p:?}");
    assert_times_consistent(&read_jsonl(&art.join("profile_export.jsonl")));
}

/// `--user-centric-rate 10 --num-users 2` on sessions of three turns: AIPerf's steady state
/// (a fresh user at 0, a user with one turn left at 100 ms), each user's turns one turn gap
/// (2 users / 10 per second = 200 ms) apart, and each user replaced when its last turn would
/// have been due plus a gap: every request is due 100 ms after the one before.
#[test]
fn user_centric_rate_spaces_each_users_turns_and_replaces_users_on_schedule() {
    let mock = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"session_id": "s{}", "input_length": {}, "output_length": 2}}"#, i / 3, 20 + i))
        .collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("users");
    let extra = ["--user-centric-rate", "10", "--num-users", "2", "--request-count", "12"];
    let out = profile_streaming(&mock.url, &trace, &art, &extra, LIMIT);
    ok(&out);
    let records: Vec<_> = read_jsonl(&art.join("profile_export.jsonl")).iter().map(record_of).collect();
    assert_eq!(records.len(), 12);
    let mut due: Vec<(u64, u32, u32)> =
        records.iter().map(|r| (r.scheduled_ns / 1_000_000, r.session_num, r.turn)).collect();
    due.sort_unstable();
    let at: Vec<u64> = due.iter().map(|d| d.0).collect();
    assert_eq!(at, (0..12).map(|i| i * 100).collect::<Vec<u64>>(), "{due:?}");
    // Users by their runs: the fresh one sends three turns, the one with a turn left one.
    let turns_of = |run: u32| due.iter().filter(|d| d.1 == run).map(|d| d.0).collect::<Vec<u64>>();
    assert_eq!(turns_of(0), [0, 200, 400]);
    assert_eq!(turns_of(1), [100]);
    assert_eq!(turns_of(2), [300, 500, 700]);
    let config = &summary(&art)["input_config"]["phases"][0];
    assert_eq!((config["type"].as_str(), config["users"].as_u64()), (Some("user_centric"), Some(2)), "{config}");
    assert_times_consistent(&read_jsonl(&art.join("profile_export.jsonl")));
}

/// The warm-up takes the run's `--prefill-concurrency` (or its own
/// `--warmup-prefill-concurrency`), as AIPerf's: with a limit of 1 and a 100 ms TTFT its
/// requests reach the server at least 100 ms apart, though four may be in flight.
#[test]
fn the_warmup_keeps_its_prefill_limit() {
    let mock = Mock::start(&["--ttft-ms", "100", "--itl-ms", "20"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = rows(4, 20, 10);
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("warm");
    let extra = ["--concurrency", "4", "--warmup-request-count", "4", "--warmup-prefill-concurrency", "1"];
    ok(&profile_streaming(&mock.url, &trace, &art, &extra, LIMIT));
    let warm: Vec<_> = mock
        .arrivals()
        .into_iter()
        .filter(|a| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-")))
        .collect();
    assert_eq!(warm.len(), 4);
    let at = arrival_ms(&warm);
    assert!(at.windows(2).all(|w| w[1] - w[0] >= 100.0), "{at:?}");
}

/// AIPerf's warm-up takes its sessions from the sampler that its profiling phase then continues:
/// a warm-up of two requests sends sessions 0 and 1, and a rate or concurrency run begins at
/// session 3 (AIPerf's warm-up drew session 2 ahead of a send that never came), and so on in
/// any sampling's walk;
/// a fixed schedule replays every session at its timestamp whatever the warm-up sent.
#[test]
fn the_warmup_consumes_its_sessions_and_the_run_takes_the_next_ones() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..8).map(|i| format!(r#"{{"input_length": {}, "output_length": 2}}"#, 100 + 20 * i)).collect();
    let trace = write_trace(dir.path(), &lines);
    let session = |a: &serde_json::Value| (a["prompt_tokens"].as_u64().unwrap() - 100) / 20;
    let is_warmup =
        |a: &serde_json::Value| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-"));
    let phases = |from: usize| -> (Vec<u64>, Vec<u64>) {
        let arrivals = mock.arrivals();
        let (warm, run): (Vec<_>, Vec<_>) = arrivals[from..].iter().partition(|a| is_warmup(a));
        (warm.into_iter().map(session).collect(), run.into_iter().map(session).collect())
    };
    let warmup = ["--warmup-request-count", "2"];
    for sampling in [Sampling::Sequential, Sampling::Shuffle, Sampling::Random] {
        // The core's walk, AIPerf's own (`replay::sampling`'s tests), at `--random-seed 0`.
        let mut walk = Sampler::new(sampling, 0);
        let order: Vec<u64> = (0..8).map(|_| walk.next(8) as u64).collect();
        let before = mock.arrivals().len();
        let art = dir.path().join(sampling.name());
        let args = ["--concurrency", "1", "--request-count", "5", "--dataset-sampling-strategy", sampling.name()];
        ok(&profile_on(&mock.url, &trace, &art, &[&args[..], &warmup, &["--random-seed", "0"]].concat(), LIMIT));
        assert_eq!(phases(before), (order[..2].to_vec(), order[3..].to_vec()), "{sampling:?}");
        assert_eq!(summary(&art)["request_count"]["avg"], 5.0);
    }
    let timed: Vec<String> = (0..4)
        .map(|i| format!(r#"{{"timestamp": {}, "input_length": {}, "output_length": 2}}"#, i * 10, 100 + 20 * i))
        .collect();
    let timed = write_trace(dir.path(), &timed);
    let before = mock.arrivals().len();
    ok(&profile_on(&mock.url, &timed, &dir.path().join("fixed"), &warmup, LIMIT));
    assert_eq!(phases(before), (vec![0, 1], vec![0, 1, 2, 3]));
}
