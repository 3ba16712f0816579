//! AIPerf 0.13.0's own `baseten_trace` loader on the Baseten trace of the tests, against ours:
//! for each set of replay options, the conversations it builds (ids, turns, timestamps, delays,
//! max_tokens, prompts and per-turn body fields) equal the core's conversion of the same rows
//! (sessions and rows in the same order), and with the defaults equal what `convert-trace` reads
//! from the Parquet file.
//!
//! AIPerf is a 1.2 GB virtual environment (`scripts/aiperf-venv.sh`), so the test is `#[ignore]`d;
//! it passes after printing the script's SKIP line when PyPI can't be reached.
#![allow(clippy::unwrap_used)]

mod common;

use aiperf_core::formats::baseten::{BasetenReplay, convert};
use aiperf_core::trace::{Input, Trace};
use common::baseten::{records, rows, write_baseten};
use common::*;
use serde_json::{Value, json};

/// Loads argv[1] with AIPerf's loader and the FileDataset options of argv[2] (JSON; its
/// `random_seed` also seeds AIPerf's generators) and prints the conversations as JSON.
const LOAD: &str = r#"
import json, sys
from aiperf.common import random_generator as rng
from aiperf.config import BenchmarkConfig, BenchmarkRun
from aiperf.dataset.loader.baseten_trace import BasetenTraceDatasetLoader
path, opts = sys.argv[1], json.loads(sys.argv[2])
rng.init(opts["random_seed"])
cfg = BenchmarkConfig.model_validate({
    "models": ["m"],
    "endpoint": {"urls": ["http://localhost:8000/v1/completions"], "wait_for_model_timeout": 0},
    "datasets": [{"name": "default", "type": "file", "path": path, "format": "baseten_trace", **opts}],
    "phases": [{"name": "profiling", "type": "fixed_schedule"}],
    "runtime": {"ui": "simple"},
})
run = BenchmarkRun(benchmark_id="t", cfg=cfg, artifact_dir=cfg.artifacts.dir)
# No prompts are generated for Baseten rows: the loader reads only the tokenizer name off it.
loader = BasetenTraceDatasetLoader(filename=path, prompt_generator=type("G", (), {"tokenizer": None})(), run=run)
out = []
for c in loader.convert_to_conversations(loader.load_dataset()):
    for t in c.turns:
        out.append({"session": c.session_id, "turns": len(c.turns), "timestamp": t.timestamp, "delay": t.delay,
                    "max_tokens": t.max_tokens, "prompt": t.texts[0].contents[0], "extra": t.extra_body})
print(json.dumps(out))
"#;

/// Our rows as AIPerf's turns are printed (a session of one row named by its session id, or
/// none under `--open-loop-strict`, where AIPerf names it `ID#k`).
fn ours(t: &Trace) -> Vec<Value> {
    let mut count = std::collections::HashMap::new();
    for r in t.rows() {
        *count.entry(r.session_id.clone()).or_insert(0) += 1;
    }
    t.rows()
        .iter()
        .map(|r| {
            let Input::Text(p) = &r.input else { panic!("text rows") };
            json!({
                "session": r.session_id.as_deref(),
                "turns": if r.session_id.is_some() { count[&r.session_id] } else { 1 },
                "timestamp": r.timestamp.map(|n| n.as_f64()),
                "delay": r.delay.map(|n| n.as_f64()),
                "max_tokens": r.output_length,
                "prompt": p.as_ref(),
                "extra": r.extra().map(|m| Value::Object(m.clone())),
            })
        })
        .collect()
}

/// AIPerf's turns with numbers as floats (its int and float times compare as ours), and the
/// strict sessions' `ID#k` names dropped.
///
/// AIPerf takes a seed of 0 for no seed (`dataset.random_seed or run.random_seed`) and then names
/// rows without a session by random UUIDs; with any other seed, and here always, they are
/// `session_000000`, `session_000001`, … in order: a UUID is renamed so in order of appearance.
fn normalized(mut v: Vec<Value>, strict: bool) -> Vec<Value> {
    let mut uuids: Vec<String> = Vec::new();
    for t in &mut v {
        if let Some(name) = t["session"].as_str().filter(|n| n.len() == 36 && n.matches('-').count() == 4) {
            let k = match uuids.iter().position(|u| u == name) {
                Some(k) => k,
                None => {
                    uuids.push(name.to_string());
                    uuids.len() - 1
                }
            };
            t["session"] = json!(format!("session_{k:06}"));
        }
        for k in ["timestamp", "delay"] {
            if let Some(x) = t[k].as_f64() {
                t[k] = json!(x);
            }
        }
        if strict {
            t["session"] = Value::Null;
        }
    }
    v
}

#[test]
#[ignore = "needs AIPerf 0.13.0's virtual environment (scripts/aiperf-venv.sh)"]
fn aiperf_builds_the_same_conversations() {
    let Some(venv) = aiperf_venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    write_baseten(&path, &rows());
    let cases: Vec<(Value, BasetenReplay)> = vec![
        (json!({}), BasetenReplay::default()),
        (
            json!({"replay_speedup": 3.0, "max_idle_gap_cap_seconds": 0.25}),
            BasetenReplay { speedup: 3.0, idle_gap_cap_s: Some(0.25), ..BasetenReplay::default() },
        ),
        (json!({"open_loop_replay": false}), BasetenReplay { open_loop: false, ..BasetenReplay::default() }),
        (
            json!({"open_loop_replay": false, "replay_speedup": 2.0, "max_idle_gap_cap_seconds": 0.1}),
            BasetenReplay { open_loop: false, speedup: 2.0, idle_gap_cap_s: Some(0.1), ..BasetenReplay::default() },
        ),
        // The closed loop's think times (a: 200 ms, b: 150 ms) capped at 175 ms; the open loop's
        // recorded times are no delays.
        (
            json!({"open_loop_replay": false, "inter_turn_delay_cap_seconds": 0.175}),
            BasetenReplay { open_loop: false, inter_turn_delay_cap_s: Some(0.175), ..BasetenReplay::default() },
        ),
        (
            json!({"inter_turn_delay_cap_seconds": 0.0}),
            BasetenReplay { inter_turn_delay_cap_s: Some(0.0), ..BasetenReplay::default() },
        ),
        (
            json!({"open_loop_strict": true, "omit_kv_hints": true, "force_min_tokens": false}),
            BasetenReplay { strict: true, omit_kv_hints: true, force_min_tokens: false, ..BasetenReplay::default() },
        ),
    ];
    let mut cases = cases;
    for seed in [1u64, 2, 3, 4] {
        cases.push((
            json!({"trace_session_sample_ratio": 0.5}),
            BasetenReplay { session_sample_ratio: Some(0.5), seed, ..BasetenReplay::default() },
        ));
    }
    for (mut opts, replay) in cases {
        opts["random_seed"] = json!(replay.seed);
        let out = python(&venv, LOAD, &[path.to_str().unwrap(), &opts.to_string()]);
        assert!(out.status.success(), "{opts}: {}", String::from_utf8_lossy(&out.stderr));
        let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let (trace, _) = convert(&records(&rows()), true, &replay).unwrap();
        assert_eq!(ours(&trace), normalized(theirs, replay.strict), "{opts}");
    }
    // The CLI's Parquet reader: convert-trace gives the defaults' rows.
    let jsonl = dir.path().join("t.jsonl");
    ok(&cli(&["convert-trace", path.to_str().unwrap(), "--output-file", jsonl.to_str().unwrap()]));
    let read = aiperf_core::trace::parse_str(
        &std::fs::read_to_string(&jsonl).unwrap(),
        aiperf_core::trace::ParseOptions::default(),
    )
    .unwrap()
    .trace;
    let (want, _) = convert(&records(&rows()), true, &BasetenReplay::default()).unwrap();
    assert_eq!(ours(&read), ours(&want));
}
