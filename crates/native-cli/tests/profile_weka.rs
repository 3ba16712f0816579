//! AIPerf's `weka_trace` replay options against `aiperf-cli mock-server`: when each turn of a
//! WEKA trace is sent (`--use-think-time-only`, `--trace-idle-gap-cap-seconds`,
//! `--ignore-trace-delays`), which traces are kept (`--max-context-length`), and their refusal on
//! other input. The expected times are AIPerf's rules worked out by hand on a small trace.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);
const MS: i64 = 1_000_000;

/// A WEKA trace: the file's own requests at 0, 1, 1.5 and 40 s, and a sub-agent spawned at
/// 0.8 s whose requests are 0 and 0.45 s after it (0.8 and 1.25 s on the trace's clock; AIPerf
/// reads a sub-agent's times as relative when they are before its spawn, as these are).
const TRACE: &str = r#"{"id": "w", "block_size": 64, "hash_id_scope": "local", "models": ["m"], "requests": [
  {"t": 0.0, "type": "n", "model": "m", "in": 100, "out": 4, "hash_ids": [1], "api_time": 0.3, "think_time": null},
  {"t": 0.8, "type": "subagent", "agent_id": "a1", "subagent_type": "Explore", "status": "completed",
   "models": ["m"], "duration_ms": 700, "requests": [
    {"t": 0.0, "type": "s", "model": "m", "in": 70, "out": 4, "hash_ids": [9], "api_time": 0.1, "think_time": 0.0},
    {"t": 0.45, "type": "s", "model": "m", "in": 140, "out": 4, "hash_ids": [9, 8], "api_time": 0.1, "think_time": 0.05}
  ]},
  {"t": 1.0, "type": "n", "model": "m", "in": 200, "out": 4, "hash_ids": [1, 2, 3], "api_time": 0.2, "think_time": 0.25},
  {"t": 1.5, "type": "n", "model": "m", "in": 300, "out": 8, "hash_ids": [1, 2, 3, 4], "api_time": 0.1, "think_time": 0.1},
  {"t": 40.0, "type": "n", "model": "m", "in": 400, "out": 4, "hash_ids": [1, 2, 3, 4, 5, 6], "api_time": 0.1, "think_time": 0.3}
]}
"#;

fn weka_trace(dir: &Path) -> PathBuf {
    let p = dir.join("trace_w.json");
    std::fs::write(&p, TRACE).unwrap();
    p
}

/// The run's records by session, each session's turns in order: (scheduled, end) in ns.
fn turns(art: &Path) -> BTreeMap<String, Vec<(i64, i64)>> {
    let mut by: BTreeMap<String, Vec<(u32, i64, i64)>> = BTreeMap::new();
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_times_consistent(&records);
    for r in records.iter().map(record_of) {
        let sid = r.session_id.clone().unwrap_or_default();
        by.entry(sid).or_default().push((r.turn, r.scheduled_ns as i64, r.end_ns as i64));
    }
    by.into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v.into_iter().map(|(_, s, e)| (s, e)).collect())
        })
        .collect()
}

/// Turn `k` of `session` was due exactly `delay_ms` after turn `k - 1` ended (the dispatcher
/// times a later turn from the previous turn's recorded end).
fn assert_after(t: &BTreeMap<String, Vec<(i64, i64)>>, session: &str, k: usize, delay_ms: i64) {
    let s = &t[session];
    assert_eq!(
        s[k].0 - s[k - 1].1,
        delay_ms * MS,
        "{session} turn {k}: due {delay_ms} ms after the previous end: {t:?}"
    );
}

fn run(extra: &[&str]) -> (serde_json::Value, BTreeMap<String, Vec<(i64, i64)>>) {
    let mock = Mock::start(&["--ttft-ms", "10", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = weka_trace(dir.path());
    let art = dir.path().join("art");
    let out = profile_streaming(&mock.url, &trace, &art, extra, LIMIT);
    ok(&out);
    let t = turns(&art);
    (summary(&art), t)
}

/// `--use-think-time-only`: a later turn waits its recorded think_time after the previous turn
/// of its conversation ended. The sub-agent starts, as AIPerf starts it, when the turn before its
/// entry (turn 0) returns, and turn 2 (at 1.5 s, when the sub-agent's 700 ms ended) waits for it.
#[test]
fn think_time_only_waits_the_recorded_think_time() {
    let (summary, t) = run(&["--use-think-time-only"]);
    assert_eq!(summary["input_config"]["datasets"][0]["use_think_time_only"], true, "{summary}");
    assert_eq!(summary["aiperf_cli_config"]["use_think_time_only"], true);
    assert_eq!(summary["aiperf_cli_config"]["turn_history"], "none");
    assert_eq!(t.keys().collect::<Vec<_>>(), ["w", "w/a1"]);
    assert_eq!(t["w"].len(), 4);
    assert_eq!(t["w/a1"].len(), 2);
    assert_eq!(t["w/a1"][0].0, t["w"][0].1, "{t:?}");
    assert_after(&t, "w", 1, 250);
    // Due 100 ms after turn 1 ended, or when the sub-agent ended if later.
    assert_eq!(t["w"][2].0, (t["w"][1].1 + 100 * MS).max(t["w/a1"][1].1), "{t:?}");
    assert_after(&t, "w", 3, 300);
    assert_after(&t, "w/a1", 1, 50);
}

/// `--trace-idle-gap-cap-seconds 1`: the 38.5 s gap before the last request is cut to 1 s, and the
/// delays are AIPerf's idle times on that timeline (t - previous t - previous api_time); think
/// time is not used.
#[test]
fn idle_gaps_are_capped_and_turns_wait_the_idle_time() {
    let (_, t) = run(&["--trace-idle-gap-cap-seconds", "1", "--use-think-time-only"]);
    assert_after(&t, "w", 1, 700); // 1.0 - 0 - 0.3
    assert_after(&t, "w", 2, 300); // 1.5 - 1.0 - 0.2
    assert_after(&t, "w", 3, 900); // (1.5 + 1) - 1.5 - 0.1
    assert_after(&t, "w/a1", 1, 350); // 1.25 - 0.8 - 0.1
}

/// `--inter-turn-delay-cap-seconds 0.5` alone (the trace detected as WEKA): each conversation
/// replayed as a session, its idle-time delays at most 500 ms (the 38.4 s one too); with
/// `--use-think-time-only` the think times capped; under `--trace-idle-gap-cap-seconds` the
/// delays are not capped (AIPerf's idle-gap cap takes precedence).
#[test]
fn the_inter_turn_delay_cap_shortens_the_delays_unless_idle_gaps_are_capped() {
    let (summary, t) = run(&["--inter-turn-delay-cap-seconds", "0.5"]);
    assert_eq!(summary["input_config"]["datasets"][0]["inter_turn_delay_cap_seconds"], 0.5, "{summary}");
    assert_eq!(summary["aiperf_cli_config"]["turn_history"], "none");
    assert_eq!(t.keys().collect::<Vec<_>>(), ["w", "w/a1"]);
    assert_after(&t, "w", 1, 500); // 700 capped
    assert_after(&t, "w", 2, 300);
    assert_after(&t, "w", 3, 500); // 38400 capped
    assert_after(&t, "w/a1", 1, 350);
    let (_, t) = run(&["--inter-turn-delay-cap-seconds", "0.2", "--use-think-time-only"]);
    assert_after(&t, "w", 1, 200); // 250 capped
    assert_after(&t, "w", 2, 100);
    assert_after(&t, "w", 3, 200); // 300 capped
    assert_after(&t, "w/a1", 1, 50);
    let (_, t) = run(&["--inter-turn-delay-cap-seconds", "0.2", "--trace-idle-gap-cap-seconds", "1"]);
    assert_after(&t, "w", 1, 700);
    assert_after(&t, "w", 3, 900);
    assert_after(&t, "w/a1", 1, 350);
}

/// `--ignore-trace-delays`: no times and no delays, every turn right after the previous one
/// (AIPerf needs a concurrency for this too).
#[test]
fn ignored_delays_send_turns_back_to_back() {
    let (_, t) = run(&["--ignore-trace-delays", "--concurrency", "2"]);
    assert_eq!(t.values().map(Vec::len).sum::<usize>(), 6);
    // Each later turn goes when the previous one ended, never before, and without the recorded
    // idle time it would wait otherwise (300 ms at the least on this trace).
    for (session, k) in [("w", 1), ("w", 2), ("w", 3), ("w/a1", 1)] {
        let s = &t[session];
        let wait = s[k].0 - s[k - 1].1;
        assert!((0..300 * MS).contains(&wait), "{session} turn {k} waited {wait} ns after the previous end: {t:?}");
    }
    // The sub-agent goes when turn 0 ended (as soon as a slot allows: it is sent, not scheduled).
    let wait = t["w/a1"][0].0 - t["w"][0].1;
    assert!((0..300 * MS).contains(&wait), "the sub-agent starts when turn 0 ends: {t:?}");
}

/// `--max-context-length`: the trace's peak prompt + output is 404 tokens (the last request);
/// below it AIPerf finds no eligible trace and says what would admit one.
#[test]
fn max_context_length_keeps_or_drops_the_whole_trace() {
    let (_, t) = run(&["--max-context-length", "404", "--ignore-trace-delays", "--concurrency", "1"]);
    assert_eq!(t.values().map(Vec::len).sum::<usize>(), 6);
    let dir = tempfile::tempdir().unwrap();
    let trace = weka_trace(dir.path());
    let out =
        profile_on("http://127.0.0.1:9", &trace, &dir.path().join("art"), &["--max-context-length", "403"], LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("No eligible traces in weka_trace after filter-then-cap (scanned 1, --max-context-length=403, --num-dataset-entries=None). Smallest trace requires 404 tokens"),
        "{err}"
    );
}

/// On a Mooncake trace, where AIPerf's loaders ignore them, the options are refused by name.
#[test]
fn the_options_are_refused_on_other_input() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &[r#"{"timestamp": 0, "input_length": 10, "output_length": 2}"#.to_string()]);
    let art = dir.path().join("art");
    for (args, says) in [
        (&["--use-think-time-only"][..], "--use-think-time-only applies to WEKA traces only"),
        (&["--trace-idle-gap-cap-seconds", "5"], "--trace-idle-gap-cap-seconds applies to WEKA traces only"),
        (&["--ignore-trace-delays", "--concurrency", "1"], "--ignore-trace-delays applies to WEKA traces only"),
        (&["--max-context-length", "10"], "--max-context-length only applies to Weka trace replay"),
        (&["--use-think-time-only", "--trace-format", "mooncake"], "the input is a mooncake trace"),
        (&["--ignore-trace-delays", "--use-think-time-only"], "are mutually exclusive"),
    ] {
        let out = profile_on("http://127.0.0.1:9", &trace, &art, args, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{args:?}: {err}");
    }
}

/// AIPerf 0.13.0's own `WekaTraceLoader` on the trace (driven from its virtual environment, with a
/// stand-in prompt generator: the turns' text does not change their timing): each conversation's
/// first-turn timestamp and every later turn's delay, as JSON.
const AIPERF_TIMINGS: &str = r#"
import json, sys
from types import SimpleNamespace
from unittest.mock import MagicMock
from aiperf.dataset.loader.weka_trace import WekaTraceLoader

class Rng:
    def set_trace_id(self, t): pass
    def reseed_for_hash_id(self, h): self.h = h
    def randrange(self, n): return (getattr(self, 'h', 0) * 7919) % n

class Tok:
    resolved_name = "stand-in"
    def decode(self, tokens, **k): return " ".join("w%d" % t for t in tokens)
    def encode(self, text, **k): return [1] * len(text.split())

def generator():
    return SimpleNamespace(tokenizer=Tok(), _hash_id_corpus_rng=Rng(), _tokenized_corpus=list(range(5000)),
        _corpus_size=5000, _cache={}, _bpe_stable_terminator_tokens=[])

opts = json.loads(sys.argv[2])
dataset = SimpleNamespace(ignore_trace_delays=opts.get("ignore", False), use_think_time_only=opts.get("think", False),
    max_context_length=None, inter_turn_delay_cap_seconds=opts.get("turn_cap"), trace_idle_gap_cap_seconds=opts.get("cap"),
    synthesis=None, prompts=None, entries=None, model_fields_set=set())
cfg = MagicMock()
cfg.get_default_dataset.return_value = dataset
cfg.get_model_names.return_value = []
cfg.tokenizer = None
cfg.phases = []
run = MagicMock()
run.cfg = cfg
loader = WekaTraceLoader(filename=sys.argv[1], run=run, prompt_generator=generator())
conversations = loader.convert_to_conversations(loader.load_dataset())
print(json.dumps([[c.turns[0].timestamp] + [t.delay for t in c.turns[1:]] for c in conversations]))
"#;

/// The core's WEKA reader's trace of the file at `path`, under `timing`.
fn read_weka(path: &Path, timing: aiperf_core::formats::WekaTiming) -> aiperf_core::trace::Trace {
    use aiperf_core::formats::{ConvertOptions, Converter, FileOptions, Format};
    let mut c = Converter::new(ConvertOptions { weka: Some(timing), ..ConvertOptions::default() }).unwrap();
    c.start_file(FileOptions {
        source: path.display().to_string().into(),
        format: Format::Weka,
        start_offset_ms: 0,
        conversation_prefix: String::new(),
    })
    .unwrap();
    c.push_document(&std::fs::read_to_string(path).unwrap()).unwrap();
    c.finish().unwrap().trace
}

/// Ours: the same, from the core's WEKA reader with the options (conversations in order of their
/// first turn, as AIPerf lists them here).
fn our_timings(path: &Path, timing: aiperf_core::formats::WekaTiming) -> Vec<Vec<Option<f64>>> {
    let mut trace = read_weka(path, timing);
    aiperf_core::formats::time_turns(&mut trace, timing.ignore_delays);
    let mut by: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for row in trace.rows() {
        let sid = row.session_id.as_deref().unwrap().to_owned();
        match by.iter_mut().find(|(s, _)| *s == sid) {
            Some((_, turns)) => turns.push(row.delay.map(|d| d.as_f64())),
            None => by.push((sid, vec![row.timestamp.map(|t| t.as_f64())])),
        }
    }
    by.into_iter().map(|(_, t)| t).collect()
}

/// AIPerf's loader and ours give every conversation the same first-turn time and every later
/// turn the same delay, for each option.
#[test]
#[ignore = "needs AIPerf 0.13.0's virtual environment (scripts/aiperf-venv.sh)"]
fn aiperf_weka_loader_times_turns_as_ours() {
    use aiperf_core::formats::WekaTiming;
    let Some(venv) = aiperf_venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace = weka_trace(dir.path());
    for (opts, timing) in [
        ("{}", WekaTiming::default()),
        (r#"{"think": true}"#, WekaTiming { think_time_only: true, ..WekaTiming::default() }),
        (r#"{"cap": 1.0}"#, WekaTiming { idle_gap_cap_s: Some(1.0), ..WekaTiming::default() }),
        (
            r#"{"cap": 1.0, "think": true}"#,
            WekaTiming { idle_gap_cap_s: Some(1.0), think_time_only: true, ..WekaTiming::default() },
        ),
        (r#"{"ignore": true}"#, WekaTiming { ignore_delays: true, ..WekaTiming::default() }),
        (r#"{"turn_cap": 0.5}"#, WekaTiming { inter_turn_delay_cap_s: Some(0.5), ..WekaTiming::default() }),
        (
            r#"{"turn_cap": 0.2, "think": true}"#,
            WekaTiming { inter_turn_delay_cap_s: Some(0.2), think_time_only: true, ..WekaTiming::default() },
        ),
        (
            r#"{"turn_cap": 0.2, "cap": 1.0}"#,
            WekaTiming { inter_turn_delay_cap_s: Some(0.2), idle_gap_cap_s: Some(1.0), ..WekaTiming::default() },
        ),
    ] {
        let out = python(&venv, AIPERF_TIMINGS, &[trace.to_str().unwrap(), opts]);
        assert!(out.status.success(), "{opts}: {}", String::from_utf8_lossy(&out.stderr));
        let theirs: Vec<Vec<Option<f64>>> = serde_json::from_slice(&out.stdout).unwrap();
        let ours = our_timings(&trace, timing);
        println!("{opts}: AIPerf {theirs:?}, ours {ours:?}");
        assert_eq!(theirs.len(), ours.len(), "{opts}");
        for (a, b) in theirs.iter().zip(&ours) {
            assert_eq!(a.len(), b.len(), "{opts}: {theirs:?} {ours:?}");
            for (x, y) in a.iter().zip(b) {
                let same = match (x, y) {
                    (Some(x), Some(y)) => (x - y).abs() < 1e-3,
                    (None, None) => true,
                    _ => false,
                };
                assert!(same, "{opts}: AIPerf {theirs:?}, ours {ours:?}");
            }
        }
    }
}

/// A WEKA trace whose file records several agents flat, and a sub-agent that did the same: the
/// main agent (`[1, 2]` → `[1, 2, 3]` → `[1, 2, 3, 10]`) fans out three agents at 4.0, 4.2 and
/// 4.4 s that run at once (each extends its own fork of `[1, 2, 3]`), a one-shot on another model
/// at 4.6 s, carries on at 9 s and, at 11 s, after a compaction (`[1, 2, 5]`, sharing only
/// `[1, 2]`), continues as the same agent. The sub-agent `s1` (10.5 s, 3 s long) forks a one-shot
/// off its own context at 1.2 s.
const CHAINS: &str = r#"{"id": "c", "block_size": 64, "hash_id_scope": "local", "models": ["m", "h"], "requests": [
  {"t": 0.0, "type": "n", "model": "m", "in": 133, "out": 20, "hash_ids": [1, 2], "api_time": 1.0},
  {"t": 2.0, "type": "n", "model": "m", "in": 197, "out": 20, "hash_ids": [1, 2, 3], "api_time": 1.0},
  {"t": 3.5, "type": "n", "model": "m", "in": 261, "out": 20, "hash_ids": [1, 2, 3, 10], "api_time": 4.0},
  {"t": 4.0, "type": "n", "model": "m", "in": 261, "out": 20, "hash_ids": [1, 2, 3, 20], "api_time": 2.0},
  {"t": 4.2, "type": "n", "model": "m", "in": 261, "out": 20, "hash_ids": [1, 2, 3, 30], "api_time": 2.0},
  {"t": 4.4, "type": "n", "model": "m", "in": 261, "out": 20, "hash_ids": [1, 2, 3, 40], "api_time": 2.0},
  {"t": 4.6, "type": "n", "model": "h", "in": 69, "out": 20, "hash_ids": [90], "api_time": 0.5},
  {"t": 6.5, "type": "n", "model": "m", "in": 325, "out": 20, "hash_ids": [1, 2, 3, 20, 21], "api_time": 1.0},
  {"t": 6.7, "type": "n", "model": "m", "in": 325, "out": 20, "hash_ids": [1, 2, 3, 30, 31], "api_time": 1.0},
  {"t": 6.9, "type": "n", "model": "m", "in": 325, "out": 20, "hash_ids": [1, 2, 3, 40, 41], "api_time": 1.0},
  {"t": 9.0, "type": "n", "model": "m", "in": 325, "out": 20, "hash_ids": [1, 2, 3, 10, 11], "api_time": 1.0},
  {"t": 10.5, "type": "subagent", "agent_id": "s1", "subagent_type": "Explore", "status": "completed", "models": ["m"], "duration_ms": 3000, "requests": [
    {"t": 0.0, "type": "s", "model": "m", "in": 133, "out": 20, "hash_ids": [100, 101], "api_time": 0.5},
    {"t": 1.0, "type": "s", "model": "m", "in": 197, "out": 20, "hash_ids": [100, 101, 102], "api_time": 0.5},
    {"t": 1.2, "type": "s", "model": "m", "in": 133, "out": 20, "hash_ids": [100, 105], "api_time": 0.5}
  ]},
  {"t": 11.0, "type": "n", "model": "m", "in": 197, "out": 20, "hash_ids": [1, 2, 5], "api_time": 1.0},
  {"t": 12.0, "type": "n", "model": "m", "in": 261, "out": 20, "hash_ids": [1, 2, 5, 6], "api_time": 1.0},
  {"t": 14.0, "type": "n", "model": "m", "in": 325, "out": 20, "hash_ids": [1, 2, 5, 6, 7], "api_time": 1.0},
  {"t": 30.0, "type": "n", "model": "m", "in": 389, "out": 20, "hash_ids": [1, 2, 5, 6, 7, 8], "api_time": 1.0}
]}
"#;

/// AIPerf 0.13.0's `WekaTraceLoader` on a file (the stand-ins of [`AIPERF_TIMINGS`]): every
/// conversation's id, its turns' timestamps and delays, and its branches (the turn that starts
/// each, its children, the turn that joins them).
const AIPERF_SESSIONS: &str = r#"
import json, sys
exec(open(sys.argv[3]).read().split("conversations = loader")[0])
conversations = loader.convert_to_conversations(loader.load_dataset())
first = {c.session_id: c.turns[0].timestamp for c in conversations if c.turns}
out = {}
for c in conversations:
    joins = {p.branch_id: k for k, t in enumerate(c.turns) for p in t.prerequisites}
    branches = {b.branch_id: b for b in c.branches}
    spawned = []
    for k, t in enumerate(c.turns):
        for i in t.branch_ids:
            b = branches[i]
            # BranchOrchestrator: a branch that starts before the turn's recorded end starts from
            # the turn's send (on_credit_issued), any other from its return; each child at its
            # first turn's time after that origin.
            start, api = b.start_timestamp_ms, t.api_time_ms
            from_send = None not in (start, t.timestamp, api) and api > 0 and start < t.timestamp + api
            origin = t.timestamp if from_send else start
            offsets = [max(0.0, first[ch] - origin) if None not in (origin, first[ch]) else 0.0
                for ch in b.child_conversation_ids]
            spawned.append([k, b.child_conversation_ids, joins.get(i), from_send, offsets])
    out[c.session_id] = [[[t.timestamp, t.delay] for t in c.turns], spawned]
print(json.dumps(out))
"#;

/// A conversation as both loaders give it: each turn's (timestamp, delay) in ms and its branches
/// (turn, children, join turn, each child's dispatch offset in ms).
type Sessions = BTreeMap<String, (Vec<(Option<f64>, Option<f64>)>, Vec<Branch>)>;
type Branch = (u32, Vec<String>, Option<u32>, Vec<f64>);

/// AIPerf's session ids as ours: `c::sa:s1` is `c/s1`, `c::wg:000_000` is `c/wg:000_000`.
fn our_name(aiperf: &str) -> String {
    aiperf.replace("::sa:", "/").replace("::", "/")
}

/// Ours: the core's WEKA reader's rows (before the replay drops later turns' times).
fn our_sessions(path: &Path, timing: aiperf_core::formats::WekaTiming) -> Sessions {
    let trace = read_weka(path, timing);
    let mut out = Sessions::new();
    for row in trace.rows() {
        let (turns, branches) = out.entry(row.session_id.as_deref().unwrap().to_owned()).or_default();
        for b in row.branches() {
            let children = b.children.iter().map(|c| c.to_string()).collect();
            branches.push((turns.len() as u32, children, b.join_at, b.offsets_ms.clone()));
        }
        turns.push((row.timestamp.map(|t| t.as_f64()), row.delay.map(|d| d.as_f64())));
    }
    out
}

/// AIPerf's loader and ours split the trace into the same agents, each a session with the same
/// turns, times and delays, started and joined by the same turns of the main agent.
#[test]
#[ignore = "needs AIPerf 0.13.0's virtual environment (scripts/aiperf-venv.sh)"]
fn aiperf_weka_loader_finds_the_same_agent_chains() {
    use aiperf_core::formats::WekaTiming;
    let Some(venv) = aiperf_venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace_c.json");
    std::fs::write(&trace, CHAINS).unwrap();
    let helper = dir.path().join("timings.py");
    std::fs::write(&helper, AIPERF_TIMINGS).unwrap();
    for (opts, timing) in [
        ("{}", WekaTiming::default()),
        (r#"{"think": true}"#, WekaTiming { think_time_only: true, ..WekaTiming::default() }),
        (r#"{"cap": 1.0}"#, WekaTiming { idle_gap_cap_s: Some(1.0), ..WekaTiming::default() }),
    ] {
        let out = python(&venv, AIPERF_SESSIONS, &[trace.to_str().unwrap(), opts, helper.to_str().unwrap()]);
        assert!(out.status.success(), "{opts}: {}", String::from_utf8_lossy(&out.stderr));
        type Their = (u32, Vec<String>, Option<u32>, bool, Vec<f64>);
        type Theirs = BTreeMap<String, (Vec<(Option<f64>, Option<f64>)>, Vec<Their>)>;
        let theirs: Theirs = serde_json::from_slice(&out.stdout).unwrap();
        // AIPerf starts a branch that overlapped its turn from the turn's send; the replay here
        // starts it when the turn ends, at once.
        let theirs: Sessions = theirs
            .into_iter()
            .map(|(id, (turns, branches))| {
                let branches = branches
                    .into_iter()
                    .map(|(k, c, j, from_send, offsets)| {
                        let offsets = if from_send { vec![0.0; offsets.len()] } else { offsets };
                        (k, c.iter().map(|c| our_name(c)).collect(), j, offsets)
                    })
                    .collect();
                (our_name(&id), (turns, branches))
            })
            .collect();
        let ours = our_sessions(&trace, timing);
        println!("{opts}: AIPerf {theirs:?}\nours {ours:?}");
        assert_eq!(theirs.keys().collect::<Vec<_>>(), ours.keys().collect::<Vec<_>>(), "{opts}");
        assert_eq!(theirs.len(), 7, "{opts}: the main agent, 4 chains, the sub-agent and its chain");
        for (id, (turns, branches)) in &theirs {
            let (our_turns, our_branches) = &ours[id];
            assert_eq!(branches.len(), our_branches.len(), "{opts}: {id}'s branches");
            for (a, b) in branches.iter().zip(our_branches) {
                assert_eq!((a.0, &a.1, a.2), (b.0, &b.1, b.2), "{opts}: {id}'s branches");
                assert!(a.3.iter().zip(&b.3).all(|(x, y)| (x - y).abs() < 1e-3), "{opts}: {id}: offsets {a:?} {b:?}");
                assert_eq!(a.3.len(), b.3.len(), "{opts}: {id}: offsets {a:?} {b:?}");
            }
            assert_eq!(turns.len(), our_turns.len(), "{opts}: {id}");
            for (a, b) in turns.iter().zip(our_turns) {
                let close = |x: Option<f64>, y: Option<f64>| match (x, y) {
                    (Some(x), Some(y)) => (x - y).abs() < 1e-3,
                    (x, y) => x.is_none() && y.is_none(),
                };
                assert!(close(a.0, b.0) && close(a.1, b.1), "{opts}: {id}: AIPerf {turns:?}, ours {our_turns:?}");
            }
        }
    }
}

/// The agents of [`CHAINS`] replayed against the mock (idle gaps cut to 1 s, where AIPerf's delays
/// on the main agent are 0 but for 500 ms before its turn 4): the chains start when the main
/// agent's turn 2 ends and its turn 3 waits for all of them; the sub-agent and its one-shot start
/// after turn 3 and turn 6 waits for them.
#[test]
fn agent_chains_start_after_their_turn_and_are_joined() {
    let mock = Mock::start(&["--ttft-ms", "10", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace_c.json");
    std::fs::write(&trace, CHAINS).unwrap();
    let art = dir.path().join("art");
    ok(&profile_streaming(&mock.url, &trace, &art, &["--trace-idle-gap-cap-seconds", "1"], LIMIT));
    let t = turns(&art);
    let sizes: Vec<(&str, usize)> = t.iter().map(|(k, v)| (k.as_str(), v.len())).collect();
    assert_eq!(
        sizes,
        [
            ("c", 8),
            ("c/aux:003", 1),
            ("c/s1", 2),
            ("c/s1:aux:000", 1),
            ("c/wg:000_000", 2),
            ("c/wg:000_001", 2),
            ("c/wg:000_002", 2)
        ]
    );
    let main = &t["c"];
    let chains = ["c/wg:000_000", "c/wg:000_001", "c/wg:000_002", "c/aux:003"];
    for c in chains {
        assert_eq!(t[c][0].0, main[2].1, "{c} starts when the main agent's turn 2 ends: {t:?}");
    }
    let last_end = |names: &[&str]| names.iter().map(|c| t[*c].last().unwrap().1).max().unwrap();
    // Turn 3 waits for every chain (each ended after turn 2, which it follows with no delay).
    assert_eq!(main[3].0, last_end(&chains), "{t:?}");
    // AIPerf dispatches each child at its recorded offset from the branch's start (the sub-agent's
    // entry, 6.5 s on the capped timeline): its one-shot, recorded 1.2 s later, 1.2 s after turn 3
    // ended. The chains above started while turn 2 ran: AIPerf starts them from turn 2's send,
    // here they start when it ends.
    assert_eq!(t["c/s1"][0].0, main[3].1, "{t:?}");
    assert_eq!(t["c/s1:aux:000"][0].0, main[3].1 + 1200 * MS, "{t:?}");
    assert_after(&t, "c/s1", 1, 500);
    assert_after(&t, "c", 4, 500);
    // Turn 6 follows turn 5 with no delay and waits for the sub-agent and its one-shot.
    assert_eq!(main[6].0, main[5].1.max(last_end(&["c/s1", "c/s1:aux:000"])), "{t:?}");
    assert_after(&t, "c", 7, 0);
}
