//! AIPerf 0.13.0's synthetic dataset against ours: AIPerf writes the dataset it sends to
//! `inputs.json`; `synthesize-trace` with the same options and `--random-seed` must give the same
//! conversations, turn counts, prompt lengths, output lengths and prefix choices; and its config-file
//! distributions' samplers draw the lengths of `--isl-distribution`/`--osl-distribution`.
//!
//! Needs AIPerf itself (`scripts/aiperf-venv.sh`, a 1.2 GB virtual environment), so it is
//! `#[ignore]`d: `cargo test -p aiperf-cli --test aiperf_synthetic -- --ignored`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// Per conversation of AIPerf's `inputs.json`, per turn: [tokens of the new user message, tokens of
/// every message of the payload, max_completion_tokens or null, first 64 tokens of the new message].
const READ_INPUTS: &str = r#"
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[2])
n = lambda t: tok.encode(t, add_special_tokens=False).ids
out = []
for conv in json.load(open(sys.argv[1]))["data"]:
    out.append([[len(n(p["messages"][-1]["content"])), sum(len(n(m["content"])) for m in p["messages"]),
                 p.get("max_completion_tokens"), n(p["messages"][-1]["content"])[:64]] for p in conv["payloads"]])
print(json.dumps(out))
"#;

#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/aiperf-venv.sh"]
fn aiperfs_synthetic_dataset_is_ours() {
    let Some(venv) = aiperf_venv() else { return };
    let options = [
        "--isl",
        "200",
        "--isl-stddev",
        "20",
        "--osl",
        "50",
        "--osl-stddev",
        "5",
        "--num-dataset-entries",
        "200",
        "--conversation-turn-mean",
        "3",
        "--conversation-turn-stddev",
        "1",
        "--prompt-prefix-pool-size",
        "4",
        "--prefix-prompt-length",
        "64",
        "--random-seed",
        "1",
    ];
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let mut args = vec!["profile", "-m", "mock", "-u", mock.url.as_str(), "--endpoint-type", "chat"];
    args.extend(["--request-count", "10", "--concurrency", "4", "--workers-max", "2"]);
    args.extend(["--tokenizer", "local/smollm2", "--ui-type", "none", "--artifact-dir", art.to_str().unwrap()]);
    args.extend(options);
    let out = aiperf(&venv, dir.path(), dir.path(), &args, Duration::from_secs(300));
    assert!(out.status.success(), "aiperf: {}", String::from_utf8_lossy(&out.stderr));
    let read = python(&venv, READ_INPUTS, &[art.join("inputs.json").to_str().unwrap(), &tokenizer()]);
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    let theirs: Vec<Vec<Value>> = serde_json::from_slice(&read.stdout).unwrap();

    let trace = dir.path().join("ours.jsonl");
    let ours = Command::new(BIN)
        .args(["synthesize-trace", "--output-file", trace.to_str().unwrap(), "--block-size", "64"])
        .args(options)
        .output()
        .unwrap();
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    let mut sessions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for row in read_jsonl(&trace) {
        sessions.entry(row["session_id"].as_str().unwrap().to_owned()).or_default().push(row);
    }
    assert_eq!(sessions.len(), theirs.len());
    // Conversations grouped by the prefix they drew: AIPerf's by the first 64 tokens, ours by the
    // first hash id (64 tokens a block).
    let (mut their_groups, mut our_groups) = (BTreeMap::new(), BTreeMap::new());
    for (i, (their, (_, our))) in theirs.iter().zip(&sessions).enumerate() {
        assert_eq!(their.len(), our.len(), "turns of conversation {i}");
        for (t, (a, b)) in their.iter().zip(our).enumerate() {
            // The first turn counts the prefix; a later turn the new message (AIPerf's history
            // comes at request time, as ours).
            let isl = if t == 0 { &a[1] } else { &a[0] };
            assert_eq!(isl, &b["input_length"], "conversation {i} turn {t}");
            assert_eq!(a[2], b["output_length"], "conversation {i} turn {t}");
        }
        their_groups.entry(their[0][3].to_string()).or_insert_with(Vec::new).push(i);
        our_groups.entry(our[0]["hash_ids"][0].as_u64().unwrap()).or_insert_with(Vec::new).push(i);
    }
    let mut a: Vec<_> = their_groups.into_values().collect();
    let mut b: Vec<_> = our_groups.into_values().collect();
    a.sort();
    b.sort();
    assert_eq!(a, b, "the same conversations share a prefix");
}

/// Draws of AIPerf's config-file distributions (`aiperf.config.distributions`) with the generators
/// its synthetic composer derives: per case `[ISL draws, OSL draws]`, `sample_int` each.
const DRAW_DISTRIBUTIONS: &str = r#"
import json, sys
from pydantic import TypeAdapter
from aiperf.common import random_generator as rg
from aiperf.config.distributions import SamplingDistribution
adapter = TypeAdapter(SamplingDistribution)
out = []
for case in json.loads(sys.argv[1]):
    rg.reset()
    rg.init(case["seed"])
    draws = []
    for key, component in (("isl", "dataset.prompt.length"), ("osl", "composer.turn.max_tokens")):
        d, r = adapter.validate_python(case[key]), rg.derive(component)
        draws.append([d.sample_int(r) for _ in range(case["n"])])
    out.append(draws)
print(json.dumps(out))
"#;

#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/aiperf-venv.sh"]
fn aiperfs_distribution_samplers_draw_our_lengths() {
    let Some(venv) = aiperf_venv() else { return };
    let n = 3000;
    let cases = serde_json::json!([
        // env_var_production's ISL peaks and OSL.
        {"seed": 42, "n": n,
         "isl": {"peaks": [{"mean": 256, "median": 214, "weight": 70}, {"mean": 2048, "median": 1891, "weight": 30}]},
         "osl": {"mean": 256, "median": 226}},
        // Equal weights (none given), a normal and a canonical-form peak; clamped points.
        {"seed": 7, "n": n,
         "isl": {"peaks": [{"mean": 100, "stddev": 30}, {"distribution": {"mean": 900, "median": 500}}, {"value": 40}], "max": 2000},
         "osl": {"points": [{"value": 16, "weight": 1}, {"value": 64, "weight": 2.5}, {"value": 512}], "min": 20}},
        // A normal with bounds and an explicit type.
        {"seed": 1, "n": n,
         "isl": {"type": "normal", "mean": 300, "stddev": 120, "min": 200, "max": 400},
         "osl": {"mean": 80, "median": 20, "min": 5}},
    ]);
    let read = python(&venv, DRAW_DISTRIBUTIONS, &[&cases.to_string()]);
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    let theirs: Vec<[Vec<u64>; 2]> = serde_json::from_slice(&read.stdout).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (case, their) in cases.as_array().unwrap().iter().zip(theirs) {
        let trace = dir.path().join("ours.jsonl");
        let ours = Command::new(BIN)
            .args(["synthesize-trace", "--output-file", trace.to_str().unwrap()])
            .args(["--isl-distribution", &case["isl"].to_string(), "--osl-distribution", &case["osl"].to_string()])
            .args(["--num-dataset-entries", &n.to_string(), "--random-seed", &case["seed"].to_string()])
            .output()
            .unwrap();
        assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
        let rows = read_jsonl(&trace);
        let isl: Vec<u64> = rows.iter().map(|r| r["input_length"].as_u64().unwrap()).collect();
        let osl: Vec<u64> = rows.iter().map(|r| r["output_length"].as_u64().unwrap()).collect();
        assert_eq!(isl, their[0], "ISL of {case}");
        assert_eq!(osl, their[1], "OSL of {case}");
    }
}
