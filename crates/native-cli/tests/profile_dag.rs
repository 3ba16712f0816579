//! AIPerf's `dag_jsonl` datasets replayed against `aiperf-cli mock-server`: a root conversation
//! whose first turn starts two sub-agents that its second turn joins. The expected times are
//! AIPerf's rules applied to the run's own recorded ends, so they hold exactly on any machine.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);
const MS: u64 = 1_000_000;

/// root 0 starts a (two turns, the second 10 ms after the first) and b (one short turn); root 1
/// joins both, 20 ms after root 0 by its own delay. `solo` is a plain two-turn conversation.
const DAG: &str = r#"{"session_id": "root", "turns": [{"messages": [{"role": "user", "content": "plan the work"}], "max_tokens": 2, "spawns": ["a", "b"]}, {"messages": [{"role": "user", "content": "merge the results"}], "max_tokens": 2, "delay": 20}]}
{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "explore a"}], "max_tokens": 8}, {"messages": [{"role": "user", "content": "explore a again"}], "max_tokens": 8, "delay": 10}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "explore b"}], "max_tokens": 2}]}
{"session_id": "solo", "turns": [{"messages": [{"role": "user", "content": "hello"}], "max_tokens": 2}, {"messages": [{"role": "user", "content": "again"}], "max_tokens": 2, "delay": 5}]}
"#;

/// (scheduled, sent, end) of every request by (session, turn).
type Times = BTreeMap<(String, u32), (u64, u64, u64)>;

fn run(dag: &str, extra: &[&str]) -> (std::process::Output, Option<Times>) {
    let mock = Mock::start(&["--ttft-ms", "10", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dag.jsonl");
    std::fs::write(&file, dag).unwrap();
    let art = dir.path().join("art");
    let args = [&["--custom-dataset-type", "dag_jsonl", "--dataset-sampling-strategy", "sequential"], extra].concat();
    let out = profile_streaming(&mock.url, &file, &art, &args, LIMIT);
    if !out.status.success() {
        return (out, None);
    }
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_times_consistent(&records);
    let mut times = Times::new();
    for r in records.iter().map(record_of) {
        let key = (r.session_id.clone().unwrap_or_default(), r.turn);
        assert!(times.insert(key.clone(), (r.scheduled_ns, r.sent_ns, r.end_ns)).is_none(), "{key:?} sent twice");
    }
    (out, Some(times))
}

#[test]
fn a_join_waits_for_both_sub_agents_and_sub_agents_follow_the_turn_that_starts_them() {
    // A rate gives the runs their times (as fast as allowed, a turn that follows at once takes
    // its send time as its schedule); one session run at a time.
    let (out, times) = run(DAG, &["--request-rate", "1000", "--concurrency", "1"]);
    ok(&out);
    let times = times.unwrap();
    // Five requests of the root and its sub-agents in one session run, numbered in the run's
    // order (root 0, a 0, a 1, b 0, root 1) and recorded under their own session ids; two of solo.
    let keys: Vec<(&str, u32)> = times.keys().map(|(s, t)| (s.as_str(), *t)).collect();
    assert_eq!(keys, [("a", 1), ("a", 2), ("b", 3), ("root", 0), ("root", 4), ("solo", 0), ("solo", 1)]);
    let at = |s: &str, t: u32| times[&(s.to_string(), t)];
    let (root0, a0, a1, b0, root1) = (at("root", 0), at("a", 1), at("a", 2), at("b", 3), at("root", 4));
    // Both sub-agents are due when root 0 ends; a's second turn 10 ms after its first ended.
    assert_eq!(a0.0, root0.2);
    assert_eq!(b0.0, root0.2);
    assert_eq!(a1.0, a0.2 + 10 * MS);
    // The join: by its 20 ms after root 0 if both sub-agents had ended by root 0's end, else at
    // once when the last ends (AIPerf releases a join it held back without its delay); here
    // they start after root 0, so it waits for them.
    let last = a1.2.max(b0.2);
    let due = if last <= root0.2 { root0.2 + 20 * MS } else { last };
    assert_eq!(root1.0, due, "{times:?}");
    assert!(root1.1 >= a1.2 && root1.1 >= b0.2, "the join left before a sub-agent ended: {times:?}");
    // One session run at a time: solo starts after the root's run ended (its join last).
    let solo0 = at("solo", 0);
    assert!(solo0.1 >= root1.2, "{times:?}");
    assert_eq!(at("solo", 1).0, solo0.2 + 5 * MS);
}

#[test]
fn the_inter_turn_delay_cap_shortens_the_turns_delays() {
    // DAG's delays of a minute and more (the run would wait them uncapped), capped at 30 ms; the
    // 10 ms one of a's second turn stays.
    let long = DAG.replace(r#""delay": 20}"#, r#""delay": 45000}"#).replace(r#""delay": 5}"#, r#""delay": 70000}"#);
    assert_ne!(long, DAG);
    let (out, times) =
        run(&long, &["--request-rate", "1000", "--concurrency", "1", "--inter-turn-delay-cap-seconds", "0.03"]);
    ok(&out);
    let times = times.unwrap();
    let at = |s: &str, t: u32| times[&(s.to_string(), t)];
    let (root0, a0, a1, b0, root1) = (at("root", 0), at("a", 1), at("a", 2), at("b", 3), at("root", 4));
    assert_eq!(a1.0, a0.2 + 10 * MS);
    let last = a1.2.max(b0.2);
    let due = if last <= root0.2 { root0.2 + 30 * MS } else { last };
    assert_eq!(root1.0, due, "{times:?}");
    assert_eq!(at("solo", 1).0, at("solo", 0).2 + 30 * MS, "{times:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Capped 2 inter-turn delays exceeding 0.03s (max observed: 70000.0 ms)"), "{err}");
}

#[test]
fn a_request_count_stops_after_the_first_requests_sent() {
    // Three requests, the first three sent, as AIPerf stops after a request count: root 0, then
    // a 0 and b 0 when it ends; a's second turn and the join are not sent, and the run ends.
    let (out, times) = run(DAG, &["--concurrency", "2", "--request-count", "3"]);
    ok(&out);
    let times = times.unwrap();
    let keys: Vec<(&str, u32)> = times.keys().map(|(s, t)| (s.as_str(), *t)).collect();
    assert_eq!(keys, [("a", 1), ("b", 3), ("root", 0)], "{times:?}");
}

#[test]
fn bad_dag_files_are_refused_naming_file_line_and_field() {
    let cases = [
        (
            r#"{"session_id": "r", "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": ["nope"]}]}"#,
            "line 1: session 'r' turn 0: branch target 'nope' not declared",
        ),
        (
            "{\"session_id\": \"r\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]}\n{\"session_id\": \"s\", \"turns\": [{\"messages\": [], \"max_tokens\": 2}]}",
            "line 2: turns.0.messages: a non-empty list, got []",
        ),
        (
            r#"{"session_id": "o", "orchestrator": true, "turns": [], "spawns": ["a"]}"#,
            "line 1: orchestrator: not supported here (AIPerf's request-less orchestrator conversations), got true",
        ),
    ];
    for (text, want) in cases {
        let (out, _) = run(text, &["--concurrency", "1"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("dag.jsonl: not an AIPerf dag_jsonl file"), "{err}");
        assert!(err.contains(want), "{err}");
    }
    // A trace format beside dag_jsonl is a contradiction.
    let (out, _) = run(DAG, &["--concurrency", "1", "--trace-format", "mooncake"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--custom-dataset-type dag_jsonl reads AIPerf's DAG conversations"), "{err}");
}
