//! AIPerf 0.13.0's own `dag_jsonl` loader judges ours: the same fixture
//! (`tests/fixtures/dag/agents.dag.jsonl`) read by both gives the same conversations, turns
//! (delay, max_tokens, model, messages), branches (children, the turn that joins them) and roots.
//! Needs AIPerf's venv (`scripts/aiperf-venv.sh`), so it is ignored by default.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::*;
use serde_json::{Value, json};

/// AIPerf's loader on the file `argv[1]` (`argv[2]`, if given, the `--inter-turn-delay-cap-seconds`
/// its `DelayCapTracker` clamps with), printed as the graph the test compares.
const READ: &str = r#"
import json, sys
from aiperf.dataset.loader.dag_jsonl import DagJsonlLoader
loader = DagJsonlLoader(sys.argv[1])
if len(sys.argv) > 2:
    from aiperf.dataset.loader._delay_cap import DelayCapTracker
    loader._delay_cap_tracker = DelayCapTracker(cap_seconds=float(sys.argv[2]))
out = {}
for c in loader.load():
    join_of = {}
    for i, t in enumerate(c.turns):
        for p in t.prerequisites:
            join_of[p.branch_id] = i
    by_id = {b.branch_id: b for b in c.branches}
    turns = []
    for t in c.turns:
        branches = [[list(by_id[b].child_conversation_ids), join_of.get(b)] for b in t.branch_ids]
        turns.append({"delay": float(t.delay or 0.0), "max_tokens": t.max_tokens, "model": t.model,
                      "messages": len(t.raw_messages or []), "branches": branches})
    out[c.session_id] = turns
print(json.dumps({"conversations": out, "roots": sorted(loader.root_session_ids())}))
"#;

/// Ours: the core's reader, and the roots the replay runs (sessions no turn starts).
fn ours(text: &str) -> Value {
    ours_capped(text, None)
}

/// [`ours`] with the delays capped at `cap` seconds.
fn ours_capped(text: &str, cap: Option<f64>) -> Value {
    let mut trace = aiperf_core::formats::dag_jsonl::parse(text).unwrap();
    if let Some(cap) = cap {
        aiperf_core::trace::delay_cap::cap_delays(&mut trace, cap);
    }
    let mut conversations: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in trace.rows() {
        let branches: Vec<Value> = r.branches().iter().map(|b| json!([b.children, b.join_at])).collect();
        let messages = match &r.input {
            aiperf_core::trace::Input::Messages(m) => m.len(),
            _ => 0,
        };
        conversations.entry(r.session_id.as_deref().unwrap().to_string()).or_default().push(json!({
            "delay": r.delay.map_or(0.0, |d| d.as_f64()),
            "max_tokens": r.output_length,
            "model": r.extra().and_then(|e| e.get("model")).cloned(),
            "messages": messages,
            "branches": branches,
        }));
    }
    let sessions = aiperf_core::replay::schedule::sessions(&trace).unwrap();
    let mut roots: Vec<String> = sessions.iter().filter_map(|s| s.id.as_deref().map(String::from)).collect();
    roots.sort();
    json!({"conversations": conversations, "roots": roots})
}

#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh)"]
fn aiperfs_loader_reads_the_same_graph() {
    let Some(venv) = aiperf_venv() else { return };
    let path = root().join("tests/fixtures/dag/agents.dag.jsonl");
    let out = python(&venv, READ, &[path.to_str().unwrap()]);
    assert!(out.status.success(), "AIPerf's loader failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mine = ours(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(mine, theirs);
    // The fixture exercises every kind of branch: bare spawns joined by the next turn, a spawn
    // joined later, a background fork, a terminal fork, nesting, and a conversation without any.
    assert_eq!(mine["roots"], json!(["lead", "other"]));
}

/// `--inter-turn-delay-cap-seconds 0.03`: AIPerf's loader caps the turns' delays (250, 40 and
/// 100 ms to 30; 12.5 and 5 kept) as ours does.
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh)"]
fn aiperfs_loader_caps_the_delays_as_we_do() {
    let Some(venv) = aiperf_venv() else { return };
    let path = root().join("tests/fixtures/dag/agents.dag.jsonl");
    let out = python(&venv, READ, &[path.to_str().unwrap(), "0.03"]);
    assert!(out.status.success(), "AIPerf's loader failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mine = ours_capped(&std::fs::read_to_string(&path).unwrap(), Some(0.03));
    assert_eq!(mine, theirs);
    let delays: Vec<f64> = mine["conversations"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|turns| turns.as_array().unwrap().iter().map(|t| t["delay"].as_f64().unwrap()))
        .filter(|d| *d > 0.0)
        .collect();
    assert!(delays.iter().all(|d| *d <= 30.0) && delays.contains(&30.0) && delays.contains(&12.5), "{delays:?}");
}

/// Files both loaders refuse: AIPerf's raises, ours names the line and the reason.
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh)"]
fn aiperf_refuses_what_we_refuse() {
    let Some(venv) = aiperf_venv() else { return };
    let turn = |extra: &str| format!(r#"{{"messages": [{{"role": "user", "content": "x"}}]{extra}}}"#);
    let conv = |sid: &str, turns: &[String]| format!(r#"{{"session_id": "{sid}", "turns": [{}]}}"#, turns.join(", "));
    let bad = [
        conv("a", &[turn(r#", "spawns": ["b"]"#)]) + "\n" + &conv("b", &[turn(r#", "spawns": ["a"]"#)]),
        conv("a", &[turn(r#", "forks": ["c"]"#), turn("")]) + "\n" + &conv("c", &[turn("")]),
        conv("a", &[turn(r#", "spawns": [{"children": ["c"], "join_at": 5}]"#), turn("")])
            + "\n"
            + &conv("c", &[turn("")]),
        conv("a", &[turn(r#", "max_tokens": 0"#)]),
        conv("a", &[turn(r#", "delay": -1"#)]),
        conv("a", &[turn(r#", "temperature": 1"#)]),
        conv("a", &[turn(""), r#"{"messages": [{"role": "system", "content": "s"}]}"#.to_string()]),
        conv("a", &[turn(r#", "spawns": ["nope"]"#)]),
        r#"{"session_id": "a", "turns": []}"#.to_string(),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in bad.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.dag.jsonl"));
        std::fs::write(&path, text).unwrap();
        let out = python(&venv, READ, &[path.to_str().unwrap()]);
        assert!(!out.status.success(), "AIPerf read {text}");
        let ours = aiperf_core::formats::dag_jsonl::parse(text);
        assert!(ours.is_err(), "we read {text}");
    }
}

/// (conversation, turn) → (start, end) in ns of AIPerf's records.
fn aiperf_times(art: &std::path::Path) -> BTreeMap<(String, u64), (u64, u64)> {
    read_jsonl(&art.join("profile_export.jsonl"))
        .iter()
        .map(|r| {
            let m = &r["metadata"];
            let key = (m["conversation_id"].as_str().unwrap().to_string(), m["turn_index"].as_u64().unwrap());
            (key, (m["request_start_ns"].as_u64().unwrap(), m["request_end_ns"].as_u64().unwrap()))
        })
        .collect()
}

/// A join held back for a sub-agent leaves when the sub-agent ends, without its own delay, in
/// AIPerf's replay as in ours: root 1's 30 s delay after root 0 is not waited for.
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh)"]
fn a_join_held_back_leaves_without_its_delay_in_aiperf_and_here() {
    let Some(venv) = aiperf_venv() else { return };
    const DAG: &str = r#"{"session_id": "root", "turns": [{"messages": [{"role": "user", "content": "plan"}], "max_tokens": 2, "spawns": ["b"]}, {"messages": [{"role": "user", "content": "merge"}], "max_tokens": 2, "delay": 30000}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "explore b"}], "max_tokens": 2}]}
"#;
    let limit = std::time::Duration::from_secs(300);
    let (mock, dir, file, art) = aiperf_run(&venv, DAG, limit);
    let t = aiperf_times(&art);
    let (root0, b0, root1) = (t[&("root".into(), 0)], t[&("b".into(), 0)], t[&("root".into(), 1)]);
    assert!(b0.0 >= root0.1 && root1.0 >= b0.1, "{t:?}");
    // Far sooner than the delay (30 s after root 0): it did not wait for it.
    assert!(root1.0 < root0.1 + 30_000 * 1_000_000, "{t:?}");
    // Ours, timed by a rate: the join is due exactly when b ended.
    let ours = dir.path().join("ours");
    let extra = ["--custom-dataset-type", "dag_jsonl", "--request-rate", "1000", "--concurrency", "1"];
    ok(&profile_streaming(&mock.url, &file, &ours, &extra, limit));
    let records: Vec<_> = read_jsonl(&ours.join("profile_export.jsonl")).iter().map(record_of).collect();
    let at = |sid: &str, turn: u32| {
        let r = records.iter().find(|r| r.session_id.as_deref() == Some(sid) && r.turn == turn).unwrap();
        (r.scheduled_ns, r.end_ns)
    };
    let (b0, root1) = (at("b", 1), at("root", 2));
    assert_eq!(root1.0, b0.1);
}

/// `--request-count 3` on a root that starts a (two turns) and b: AIPerf sends the first three
/// requests issued (root 0, a 0, b 0), and so do we.
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh)"]
fn a_request_count_stops_after_the_same_requests_in_aiperf_and_here() {
    let Some(venv) = aiperf_venv() else { return };
    const DAG: &str = r#"{"session_id": "root", "turns": [{"messages": [{"role": "user", "content": "plan"}], "max_tokens": 2, "spawns": ["a", "b"]}, {"messages": [{"role": "user", "content": "merge"}], "max_tokens": 2}]}
{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "a0"}], "max_tokens": 2}, {"messages": [{"role": "user", "content": "a1"}], "max_tokens": 2}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "b0"}], "max_tokens": 2}]}
"#;
    let limit = std::time::Duration::from_secs(300);
    let (mock, dir, file, art) = aiperf_run(&venv, DAG, limit);
    let theirs: Vec<(String, u64)> = aiperf_times(&art).into_keys().collect();
    // Ours: each session's turns numbered in the run; by their order within their session.
    let ours = dir.path().join("ours");
    let extra = ["--custom-dataset-type", "dag_jsonl", "--concurrency", "1", "--request-count", "3"];
    ok(&profile_streaming(&mock.url, &file, &ours, &extra, limit));
    let mut by: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for r in read_jsonl(&ours.join("profile_export.jsonl")).iter().map(record_of) {
        by.entry(r.session_id.unwrap()).or_default().push(r.turn);
    }
    let mut mine: Vec<(String, u64)> = Vec::new();
    for (sid, mut turns) in by {
        turns.sort_unstable();
        mine.extend((0..turns.len() as u64).map(|k| (sid.clone(), k)));
    }
    assert_eq!(mine, theirs);
    assert_eq!(theirs, [("a".to_string(), 0), ("b".to_string(), 0), ("root".to_string(), 0)]);
}

#[test]
fn our_reading_of_the_fixture() {
    let path = root().join("tests/fixtures/dag/agents.dag.jsonl");
    let mine = ours(&std::fs::read_to_string(&path).unwrap());
    let lead = &mine["conversations"]["lead"];
    assert_eq!(lead[0]["branches"], json!([[["search", "read"], 1]]));
    assert_eq!(lead[1]["branches"], json!([[["review"], 3]]));
    assert_eq!(lead[3]["branches"], json!([[["wrapup"], null]]));
    assert_eq!(mine["conversations"]["search"][0]["branches"], json!([[["log"], null]]));
    assert_eq!(mine["conversations"]["search"][0]["model"], "small-model");
    assert_eq!(lead[2]["delay"], 12.5);
    assert_eq!(mine["roots"], json!(["lead", "other"]));
}

/// AIPerf's run of `dag` (a dag_jsonl file) against a new mock, at concurrency 1 and
/// `--request-count 3`: the mock, the folder, the file and AIPerf's artifact folder.
fn aiperf_run(
    venv: &std::path::Path,
    dag: &str,
    limit: std::time::Duration,
) -> (Mock, tempfile::TempDir, PathBuf, PathBuf) {
    let mock = Mock::start(&["--ttft-ms", "10", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dag.jsonl");
    std::fs::write(&file, dag).unwrap();
    let art = dir.path().join("theirs");
    let args = [
        "profile",
        "-m",
        "mock",
        "-u",
        &mock.url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--custom-dataset-type",
        "dag_jsonl",
        "--input-file",
        file.to_str().unwrap(),
        "--concurrency",
        "1",
        "--request-count",
        "3",
        "--tokenizer",
        "local/smollm2",
        "--ui-type",
        "none",
        "--artifact-dir",
        art.to_str().unwrap(),
        "--workers-max",
        "2",
        "--random-seed",
        "1",
    ];
    let out = aiperf(venv, dir.path(), dir.path(), &args, limit);
    assert!(out.status.success(), "AIPerf failed:\n{}", String::from_utf8_lossy(&out.stderr));
    (mock, dir, file, art)
}
