//! AIPerf's prompt options `--system-prompt` and `--system-prompt-file`: what is sent and what
//! is recorded, end to end against `aiperf-cli mock-server` on 127.0.0.1.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(120);

/// Two sessions of two turns each, and a row carrying its own system message.
fn trace(dir: &Path) -> std::path::PathBuf {
    let lines = [
        r#"{"session_id": "a", "timestamp": 0, "input_length": 20, "output_length": 3}"#,
        r#"{"session_id": "b", "timestamp": 10, "input_length": 25, "output_length": 3}"#,
        r#"{"session_id": "a", "delay": 10, "input_length": 30, "output_length": 3}"#,
        r#"{"session_id": "b", "delay": 10, "input_length": 35, "output_length": 3}"#,
        r#"{"session_id": "c", "timestamp": 20, "messages": [{"role": "system", "content": "Own rules."}, {"role": "user", "content": "hello"}], "output_length": 3}"#,
    ];
    write_trace(dir, &lines.map(str::to_owned))
}

fn run(url: &str, trace: &Path, art: &Path, extra: &[&str]) -> Output {
    profile_streaming(url, trace, art, &[&["--export-level", "raw", "--ui-type", "none"], extra].concat(), LIMIT)
}

/// Each request's messages as sent, and its recorded input tokens, in the order of their last
/// message's text (the row's own prompt, the same in every run).
fn sent(art: &Path) -> Vec<(Value, u64)> {
    let mut raw = read_jsonl(&art.join("profile_export_raw.jsonl"));
    let last = |r: &Value| r["payload"]["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    raw.sort_by_key(last);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    raw.iter()
        .map(|r| {
            let id = &r["metadata"]["x_request_id"];
            let rec = records.iter().find(|x| &x["metadata"]["x_request_id"] == id).unwrap();
            let isl = rec["metrics"]["input_sequence_length"]["value"].as_u64().unwrap();
            (r["payload"]["messages"].clone(), isl)
        })
        .collect()
}

#[test]
fn the_system_prompt_leads_every_turn_merges_into_a_rows_own_and_counts_as_input() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let plain = dir.path().join("plain");
    ok(&run(&mock.url, &trace, &plain, &[]));
    let text = "You are a terse assistant.";
    let file = dir.path().join("system.txt");
    std::fs::write(&file, text).unwrap();
    let with = dir.path().join("with");
    ok(&run(&mock.url, &trace, &with, &["--system-prompt", text]));
    let from_file = dir.path().join("file");
    ok(&run(&mock.url, &trace, &from_file, &["--system-prompt-file", file.to_str().unwrap()]));

    let (plain, with, from_file) = (sent(&plain), sent(&with), sent(&from_file));
    assert_eq!(plain.len(), 5);
    assert_eq!(with, from_file, "the file's text is the option's");
    let system = json!({"role": "system", "content": text});
    let mut added = Vec::new();
    for ((p, p_isl), (w, w_isl)) in plain.iter().zip(&with) {
        let (p, w) = (p.as_array().unwrap(), w.as_array().unwrap());
        if p[0]["role"] == "system" {
            // The row's own system message: the text, a blank line, then its own.
            assert_eq!(w.len(), p.len());
            assert_eq!(w[0]["content"], format!("{text}\n\nOwn rules."));
            assert_eq!(w[1..], p[1..]);
        } else {
            // Every turn, a later one's conversation included, starts with the system message.
            assert_eq!(w[0], system, "{w:?}");
            assert_eq!(w.len(), p.len() + 1);
            assert_eq!(
                w[1..].iter().filter(|m| m["role"] == "user").count(),
                p.iter().filter(|m| m["role"] == "user").count()
            );
        }
        added.push(w_isl - p_isl);
    }
    // Its tokens add to every request's input tokens: the same for each generated prompt.
    let generated: Vec<u64> =
        added.iter().zip(&plain).filter(|(_, (p, _))| p[0]["role"] != "system").map(|(a, _)| *a).collect();
    assert!(generated[0] > 0 && generated.iter().all(|a| *a == generated[0]), "{added:?}");
}

#[test]
fn a_missing_file_or_a_conflict_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let art = dir.path().join("art");
    let missing = dir.path().join("no-such-prompt.txt");
    let out = run("http://127.0.0.1:9", &trace, &art, &["--system-prompt-file", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--system-prompt-file") && err.contains("no-such-prompt.txt: cannot be read"), "{err}");
    let out = run("http://127.0.0.1:9", &trace, &art, &["--system-prompt", "x", "--shared-system-prompt-length", "8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mutually exclusive"));
    assert!(!art.exists(), "nothing written");
}

/// AIPerf 0.13.0's own `build_cache_bust_marker` renders the core's markers byte for byte, for
/// every target (in AIPerf's venv: `scripts/test.sh` runs it).
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh); scripts/test.sh runs it"]
fn cache_bust_markers_are_aiperfs() {
    use aiperf_core::replay::cache_bust::{Target, marker};
    let Some(venv) = aiperf_venv() else { return };
    let code = r#"
import json
from aiperf.timing.strategies.cache_bust import build_cache_bust_marker
from aiperf.common.enums import CacheBustTarget
out = []
for bid, k, tid in [("bench", 0, "conv-1"), ("7008c36f6f22", 41, "session 9"), ("", 3, "")]:
    for t in CacheBustTarget:
        out.append([bid, k, tid, t.value, build_cache_bust_marker(bid, k, k, tid, target=t)])
print(json.dumps(out))
"#;
    let out = python(&venv, code, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cases: Vec<(String, u64, String, String, Option<String>)> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cases.len(), 21);
    for (bid, k, tid, target, want) in cases {
        let t = Target::from_name(&target).unwrap();
        assert_eq!(marker(&bid, k, k, &tid, t), want, "{bid} {k} {tid} {target}");
    }
}

/// Each request of a run by (conversation, turn): its messages as sent and its recorded input
/// tokens.
fn by_turn(art: &Path) -> std::collections::BTreeMap<(String, u64), (Value, u64)> {
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    read_jsonl(&art.join("profile_export_raw.jsonl"))
        .iter()
        .map(|r| {
            let meta = &r["metadata"];
            let id = &meta["x_request_id"];
            let rec = records.iter().find(|x| &x["metadata"]["x_request_id"] == id).unwrap();
            let isl = rec["metrics"]["input_sequence_length"]["value"].as_u64().unwrap();
            let key = (meta["conversation_id"].as_str().unwrap().to_owned(), meta["turn_index"].as_u64().unwrap());
            (key, (r["payload"]["messages"].clone(), isl))
        })
        .collect()
}

fn key(conversation: &str, turn: u64) -> (String, u64) {
    (conversation.to_owned(), turn)
}

/// `--cache-bust`: each session's AIPerf marker (`[rid:…]` of the run's `benchmark_id`, the
/// session's place in AIPerf's count and its id) where AIPerf's worker puts it: a first-turn
/// target's on the conversation's first user message (so every later turn, which carries the
/// conversation, starts with it too), a system target's on the system message of every turn;
/// the marker's tokens add to each request's input tokens. Sessions a, b, c of a fixed schedule
/// are AIPerf's draws 0, 1, 2.
#[test]
fn cache_bust_marks_each_session_where_aiperf_does() {
    use aiperf_core::replay::cache_bust::{Target, marker};
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let plain_dir = dir.path().join("plain");
    ok(&run(&mock.url, &trace, &plain_dir, &[]));
    let plain = by_turn(&plain_dir);
    let content = |v: &Value, i: usize| v[i]["content"].as_str().unwrap().to_owned();

    let first_dir = dir.path().join("first");
    ok(&run(&mock.url, &trace, &first_dir, &["--cache-bust", "first_turn_prefix"]));
    let bid = summary(&first_dir)["benchmark_id"].as_str().unwrap().to_owned();
    let rid = |pass: u64, id: &str, t| marker(&bid, pass, pass, id, t).unwrap();
    let first = by_turn(&first_dir);
    assert_eq!(first.len(), 5);
    for (pass, id) in [(0, "a"), (1, "b")] {
        let m = rid(pass, id, Target::FirstTurnPrefix);
        let (p0, p1) = (&plain[&key(id, 0)], &plain[&key(id, 1)]);
        let (f0, f1) = (&first[&key(id, 0)], &first[&key(id, 1)]);
        assert_eq!(f0.0.as_array().unwrap().len(), 1);
        assert_eq!(content(&f0.0, 0), format!("{m}{}", content(&p0.0, 0)));
        // The later turn: the marked first prompt, the reply, the new prompt unmarked.
        assert_eq!(content(&f1.0, 0), format!("{m}{}", content(&p0.0, 0)));
        assert_eq!(f1.0[1]["role"], "assistant");
        assert_eq!(content(&f1.0, 2), content(&p1.0, 2));
        let added = f0.1 - p0.1;
        assert!(added > 0 && f1.1 - p1.1 == added, "{id}: {added} and {}", f1.1 - p1.1);
    }
    assert_ne!(rid(0, "a", Target::FirstTurnPrefix), rid(1, "b", Target::FirstTurnPrefix));
    // A row's own messages: its first user message, its system message untouched.
    let c = &first[&key("c", 0)].0;
    assert_eq!(c[0], json!({"role": "system", "content": "Own rules."}));
    assert_eq!(content(c, 1), format!("{}hello", rid(2, "c", Target::FirstTurnPrefix)));
    assert_eq!(summary(&first_dir)["input_config"]["datasets"][0]["cache_bust"]["target"], "first_turn_prefix");

    // A system target with --system-prompt: the system message of every turn, after its text.
    let text = "Be terse.";
    let sys_dir = dir.path().join("system");
    ok(&run(&mock.url, &trace, &sys_dir, &["--cache-bust", "system_suffix", "--system-prompt", text]));
    let bid = summary(&sys_dir)["benchmark_id"].as_str().unwrap().to_owned();
    let rid = |pass: u64, id: &str| marker(&bid, pass, pass, id, Target::SystemSuffix).unwrap();
    let sys = by_turn(&sys_dir);
    for (pass, id) in [(0, "a"), (1, "b")] {
        for turn in [0, 1] {
            let (s, p) = (&sys[&key(id, turn)].0, &plain[&key(id, turn)].0);
            assert_eq!(s[0], json!({"role": "system", "content": format!("{text}{}", rid(pass, id))}));
            let users = |v: &[Value]| v.iter().filter(|m| m["role"] == "user").cloned().collect::<Vec<_>>();
            assert_eq!(s.as_array().unwrap().len(), p.as_array().unwrap().len() + 1);
            assert_eq!(
                users(&s.as_array().unwrap()[1..]),
                users(p.as_array().unwrap()),
                "{id} {turn}: prompts unmarked"
            );
        }
    }
    let c = &sys[&key("c", 0)].0;
    assert_eq!(content(c, 0), format!("{text}{}\n\nOwn rules.", rid(2, "c")));
    assert_eq!(content(c, 1), "hello");

    // No system message: a system target falls back to the first user message.
    let fall_dir = dir.path().join("fallback");
    ok(&run(&mock.url, &trace, &fall_dir, &["--cache-bust", "system_prefix"]));
    let bid = summary(&fall_dir)["benchmark_id"].as_str().unwrap().to_owned();
    let fall = by_turn(&fall_dir);
    let m = marker(&bid, 0, 0, "a", Target::SystemPrefix).unwrap();
    assert_eq!(content(&fall[&key("a", 1)].0, 0), format!("{m}{}", content(&plain[&key("a", 0)].0, 0)));
    let m = marker(&bid, 2, 2, "c", Target::SystemPrefix).unwrap();
    assert_eq!(content(&fall[&key("c", 0)].0, 0), format!("{m}Own rules."));
}

/// The warm-up's sessions carry their own markers: a warm-up isolation target's `[warmup]` on
/// warm-up requests only (the run's are sent unmarked); a digest target's the warm-up's draws'
/// (0 for both turns of session a, its two requests), the run's sessions counting on after the
/// warm-up's two draws (a sent, b drawn ahead, as AIPerf's).
#[test]
fn cache_bust_warmup_markers_are_the_warmups_own() {
    use aiperf_core::replay::cache_bust::{Target, marker};
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1", "--log-bodies"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let plain_dir = dir.path().join("plain");
    ok(&run(&mock.url, &trace, &plain_dir, &[]));
    let plain = by_turn(&plain_dir);
    let warmup_bodies = |from: usize| -> Vec<Value> {
        mock.arrivals()[from..]
            .iter()
            .filter(|a| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-")))
            .map(|a| a["body"]["messages"].clone())
            .collect()
    };

    let before = mock.arrivals().len();
    let iso_dir = dir.path().join("isolation");
    ok(&run(
        &mock.url,
        &trace,
        &iso_dir,
        &["--cache-bust", "warmup_isolation_first_turn", "--warmup-request-count", "2"],
    ));
    // The warm-up sends session a whole: its second turn carries the marked first.
    let warm = warmup_bodies(before);
    assert_eq!(warm.len(), 2);
    assert_eq!(warm[1].as_array().unwrap().len(), 3, "{:?}", warm[1]);
    for w in &warm {
        let p = &plain[&key("a", 0)].0;
        assert_eq!(w[0]["content"].as_str().unwrap(), format!("[warmup]\n\n{}", p[0]["content"].as_str().unwrap()));
    }
    let iso = by_turn(&iso_dir);
    assert_eq!(iso.len(), 5);
    for (k, (messages, isl)) in &iso {
        assert_eq!((messages, isl), (&plain[k].0, &plain[k].1), "{k:?}: the run's requests unmarked");
    }

    let before = mock.arrivals().len();
    let rid_dir = dir.path().join("rid");
    ok(&run(&mock.url, &trace, &rid_dir, &["--cache-bust", "first_turn_prefix", "--warmup-request-count", "2"]));
    let bid = summary(&rid_dir)["benchmark_id"].as_str().unwrap().to_owned();
    let rid = |pass: u64, id: &str| marker(&bid, pass, pass, id, Target::FirstTurnPrefix).unwrap();
    let warm = warmup_bodies(before);
    assert_eq!(warm.len(), 2);
    for w in &warm {
        let p = &plain[&key("a", 0)].0;
        assert_eq!(w[0]["content"].as_str().unwrap(), format!("{}{}", rid(0, "a"), p[0]["content"].as_str().unwrap()));
    }
    let run = by_turn(&rid_dir);
    for (pass, id) in [(2, "a"), (3, "b")] {
        let p = plain[&key(id, 0)].0[0]["content"].as_str().unwrap().to_owned();
        for turn in [0, 1] {
            assert_eq!(run[&key(id, turn)].0[0]["content"].as_str().unwrap(), format!("{}{p}", rid(pass, id)));
        }
    }
    assert_eq!(run[&key("c", 0)].0[1]["content"].as_str().unwrap(), format!("{}hello", rid(4, "c")));
}

/// `--cache-bust` is refused where AIPerf refuses it, before anything is sent.
#[test]
fn cache_bust_is_refused_where_aiperf_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let art = dir.path().join("art");
    let out = run(
        "http://127.0.0.1:9",
        &trace,
        &art,
        &["--cache-bust", "first_turn_prefix", "--endpoint-type", "completions"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--cache-bust first_turn_prefix: not supported by --endpoint-type completions"), "{err}");
    let out = common::profile(
        &[
            "-m",
            "m",
            "-u",
            "http://127.0.0.1:9",
            "--tokenizer",
            &tokenizer(),
            "--isl",
            "50",
            "--cache-bust",
            "warmup_isolation_system",
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--cache-bust warmup_isolation_system needs a system message"), "{err}");
    let out = run("http://127.0.0.1:9", &trace, &art, &["--cache-bust", "middle"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("accepted: none, system_prefix"));
    assert!(!art.exists(), "nothing written");
}

/// AIPerf's synthetic workload gives each session's first prompt fewer tokens by the marker's
/// (AIPerf's estimate over eight markers), so that its input tokens stay as asked; a trace's
/// markers add to its prompts.
#[test]
fn cache_bust_keeps_a_synthetic_first_turn_at_its_length() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let isl = |extra: &[&str], name: &str| -> Vec<u64> {
        let art = dir.path().join(name);
        let base = ["-m", "m", "-u", &mock.url, "--tokenizer", &tokenizer(), "--artifact-dir", art.to_str().unwrap()];
        let synthetic =
            ["--isl", "200", "--osl", "2", "--request-count", "3", "--concurrency", "1", "--export-level", "raw"];
        ok(&common::profile(&[&base[..], &synthetic, extra].concat(), LIMIT));
        let mut v: Vec<u64> = read_jsonl(&art.join("profile_export.jsonl"))
            .iter()
            .map(|r| r["metrics"]["input_sequence_length"]["value"].as_u64().unwrap())
            .collect();
        v.sort_unstable();
        v
    };
    let plain = isl(&[], "plain");
    let marked = isl(&["--cache-bust", "first_turn_prefix"], "marked");
    assert_eq!(plain, [200, 200, 200]);
    // The prompt is shortened by AIPerf's estimate (the mean of eight markers' tokens, rounded);
    // each session's marker (its hash differs from run to run) adds its own tokens, and the two
    // may merge by a token where they meet.
    let tok = tokenizers::Tokenizer::from_file(tokenizer()).unwrap();
    let count = |t: &str| tok.encode(t, false).unwrap().get_ids().len() as u64;
    let samples =
        aiperf_core::replay::cache_bust::cost_samples(aiperf_core::replay::cache_bust::Target::FirstTurnPrefix);
    let shrink = (samples.iter().map(|m| count(m)).sum::<u64>() as f64 / samples.len() as f64).round() as u64;
    let raw = read_jsonl(&dir.path().join("marked").join("profile_export_raw.jsonl"));
    let mut expected: Vec<u64> = raw
        .iter()
        .map(|r| {
            let content = r["payload"]["messages"][0]["content"].as_str().unwrap();
            assert!(content.starts_with("[rid:"), "{content}");
            let end = content.find("]\n\n").unwrap() + 3;
            200 - shrink + count(&content[..end])
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(marked.len(), expected.len());
    for (n, want) in marked.iter().zip(&expected) {
        assert!(n.abs_diff(*want) <= 1, "input lengths {marked:?}, marker-counted {expected:?}");
    }
}

/// AIPerf 0.13.0's worker (`aiperf.workers.worker._apply_cache_bust`, given a session of one
/// turn of the same messages and the same `--system-prompt`) marks conversations as the core's
/// `mark`/`mark_messages` do, for every target and every shape: system messages or none, a
/// `--system-prompt` or none, contents as text or as parts.
#[test]
#[ignore = "needs AIPerf 0.13.0's venv (scripts/aiperf-venv.sh); scripts/test.sh runs it"]
fn cache_bust_placement_is_aiperfs() {
    use aiperf_core::replay::cache_bust::{Target, mark, mark_messages, marker};
    let Some(venv) = aiperf_venv() else { return };
    let code = r#"
import json, sys
from types import SimpleNamespace
from aiperf.workers import worker
from aiperf.common.enums import CacheBustTarget
from aiperf.common.models import Turn
from aiperf.timing.strategies.cache_bust import build_cache_bust_marker
out = []
for target, system, messages in json.loads(sys.argv[1]):
    t = CacheBustTarget(target)
    marker = build_cache_bust_marker("bench", 4, 4, "conv-1", target=t)
    turn = Turn(raw_messages=messages)
    session = SimpleNamespace(turn_list=[turn], parent_correlation_id=None, branch_mode=None)
    credit = SimpleNamespace(cache_bust_marker=marker, cache_bust_target=t)
    system = worker._apply_cache_bust(session, credit, system)
    out.append([target, system, turn.raw_messages])
print(json.dumps(out))
"#;
    let shapes = [
        (
            None,
            json!([{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "u2"}]),
        ),
        (None, json!([{"role": "system", "content": "own"}, {"role": "user", "content": "u1"}])),
        (Some("Be terse."), json!([{"role": "user", "content": "u1"}])),
        (Some("Be terse."), json!([{"role": "system", "content": "own"}, {"role": "user", "content": "u1"}])),
        (
            None,
            json!([{"role": "system", "content": [{"type": "text", "text": "own"}]}, {"role": "user", "content": [{"type": "text", "text": "u1"}]}]),
        ),
        (None, json!([{"role": "assistant", "content": "a"}])),
    ];
    let targets: Vec<Target> = Target::ALL.into_iter().filter(|t| *t != Target::None).collect();
    let cases: Vec<Value> =
        targets.iter().flat_map(|t| shapes.iter().map(move |(s, m)| json!([t.name(), s, m]))).collect();
    let out = python(&venv, code, &[&serde_json::to_string(&cases).unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Vec<(String, Option<String>, Value)> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got.len(), targets.len() * shapes.len());
    for ((target, aiperf_system, aiperf_messages), case) in got.into_iter().zip(&cases) {
        let t = Target::from_name(&target).unwrap();
        let m = marker("bench", 4, 4, "conv-1", t).unwrap();
        let (system, mut messages) = (case[1].as_str(), case[2].clone());
        // `profile`'s rule: a system target's marker on the `--system-prompt` when there is one.
        let ours = match system {
            Some(s) if t.wants_system() => Some(mark(s, &m, t)),
            _ => {
                mark_messages(messages.as_array_mut().unwrap(), &m, t);
                system.map(str::to_owned)
            }
        };
        assert_eq!((ours, messages), (aiperf_system, aiperf_messages), "{target}: {case}");
    }
}
