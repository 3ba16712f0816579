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
    let (dir, trace, art) = scratch_named(&rows(8, 20, 10), "one");
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
    let lines: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"session_id": "s{}", "input_length": {}, "output_length": 2}}"#, i / 3, 20 + i))
        .collect();
    let (_dir, trace, art) = scratch_named(&lines, "users");
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
    let (_dir, trace, art) = scratch_named(&rows(4, 20, 10), "warm");
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
/// session 2 (AIPerf's warm-up stops on its final credit, the start of session 1, before drawing
/// again: measured with AIPerf 0.13.0), and so on in any sampling's walk;
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
        assert_eq!(phases(before), (order[..2].to_vec(), order[2..7].to_vec()), "{sampling:?}");
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

/// AIPerf 0.13.0's warm-up against the mock sends the same turns of the same conversations as
/// ours, and its run then takes the same conversations: sessions of three turns, a request count
/// that ends the sessions in progress (two at a time, or one), a session count that lets them
/// finish.
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh); scripts/test.sh runs it"]
fn the_warmup_sends_aiperfs_turns_of_aiperfs_conversations() {
    let Some(venv) = aiperf_venv() else { return };
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1", "--log-bodies"]);
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(dir.path(), &multi_turn_lines(6, 3));
    // (conversation, turn) of every record of `phase` (AIPerf's `benchmark_phase`), sorted.
    let turns = |art: &std::path::Path, phase: &str| -> Vec<(String, u64)> {
        let mut t: Vec<(String, u64)> = read_jsonl(&art.join("profile_export.jsonl"))
            .iter()
            .map(|r| &r["metadata"])
            .filter(|m| m["benchmark_phase"].as_str().unwrap_or("profiling") == phase)
            .map(|m| (m["conversation_id"].as_str().unwrap().to_owned(), m["turn_index"].as_u64().unwrap()))
            .collect();
        t.sort_unstable();
        t
    };
    let cases: [&[&str]; 3] = [
        &["--concurrency", "2", "--warmup-request-count", "4"],
        &["--concurrency", "1", "--warmup-request-count", "4"],
        &["--concurrency", "1", "--num-warmup-sessions", "2", "--warmup-concurrency", "2"],
    ];
    for case in cases {
        let options = [&["--custom-dataset-type", "multi_turn", "--request-count", "4"], case].concat();
        let theirs = dir.path().join("aiperf");
        let _ = std::fs::remove_dir_all(&theirs);
        let mut args = vec!["profile", "-m", "mock", "-u", mock.url.as_str(), "--endpoint-type", "chat", "--streaming"];
        args.extend(["--input-file", file.to_str().unwrap(), "--tokenizer", "local/smollm2", "--workers-max", "2"]);
        args.extend(["--ui-type", "none", "--artifact-dir", theirs.to_str().unwrap()]);
        args.extend(&options);
        let out = aiperf(&venv, dir.path(), dir.path(), &args, Duration::from_secs(300));
        assert!(out.status.success(), "aiperf {case:?}: {}", String::from_utf8_lossy(&out.stderr));

        let before = mock.arrivals().len();
        let ours = dir.path().join("ours");
        let _ = std::fs::remove_dir_all(&ours);
        ok(&profile_streaming(&mock.url, &file, &ours, &options, LIMIT));
        let mut warm: Vec<(String, u64)> = mock.arrivals()[before..]
            .iter()
            .filter(|a| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-")))
            .map(|a| {
                let text = a["body"]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap();
                let (session, turn) = text.split_once(" t").unwrap();
                (session.to_owned(), turn.parse().unwrap())
            })
            .collect();
        warm.sort_unstable();
        let want = turns(&theirs, "warmup");
        assert!(!want.is_empty(), "AIPerf recorded no warm-up for {case:?}");
        assert_eq!(warm, want, "{case:?}: the warm-up's (conversation, turn)s");
        // The run takes the same conversations after the warm-up's draws. (Its turns differ
        // under `--concurrency 2`: the run's request count cuts its last session where AIPerf's
        // ends every session in progress.)
        let sessions = |art: &std::path::Path| {
            let mut s: Vec<String> = turns(art, "profiling").into_iter().map(|t| t.0).collect();
            s.dedup();
            s
        };
        assert_eq!(sessions(&ours), sessions(&theirs), "{case:?}: the run's conversations");
        eprintln!("{case:?}: warm-up {warm:?}");
    }
}
