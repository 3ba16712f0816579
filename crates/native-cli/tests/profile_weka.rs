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
/// of its conversation ended; each conversation's first turn keeps its time (the sub-agent's
/// 800 ms after the file's).
#[test]
fn think_time_only_waits_the_recorded_think_time() {
    let (summary, t) = run(&["--use-think-time-only"]);
    assert_eq!(summary["input_config"]["datasets"][0]["use_think_time_only"], true, "{summary}");
    assert_eq!(summary["aiperf_cli_config"]["use_think_time_only"], true);
    assert_eq!(summary["aiperf_cli_config"]["turn_history"], "none");
    assert_eq!(t.keys().collect::<Vec<_>>(), ["w", "w/a1"]);
    assert_eq!(t["w"].len(), 4);
    assert_eq!(t["w/a1"].len(), 2);
    let first = t["w/a1"][0].0 - t["w"][0].0;
    assert!((first - 800 * MS).abs() <= MS, "{first}");
    assert_after(&t, "w", 1, 250);
    assert_after(&t, "w", 2, 100);
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
    // idle time it would wait otherwise (300 ms at the least on this trace); the sub-agent does
    // not wait for its recorded 800 ms.
    for (session, k) in [("w", 1), ("w", 2), ("w", 3), ("w/a1", 1)] {
        let s = &t[session];
        let wait = s[k].0 - s[k - 1].1;
        assert!((0..300 * MS).contains(&wait), "{session} turn {k} waited {wait} ns after the previous end: {t:?}");
    }
    let starts = (t["w/a1"][0].0 - t["w"][0].0).abs();
    assert!(starts < 800 * MS, "both conversations start at once: {t:?}");
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

/// Ours: the same, from the core's WEKA reader with the options (conversations in order of their
/// first turn, as AIPerf lists them here).
fn our_timings(path: &Path, timing: aiperf_core::formats::WekaTiming) -> Vec<Vec<Option<f64>>> {
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
    let mut trace = c.finish().unwrap().trace;
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
