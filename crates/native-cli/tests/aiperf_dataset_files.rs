//! AIPerf 0.13.0 itself judges how its own dataset files are read: its `single_turn`,
//! `multi_turn` and `random_pool` loader classes load the fixtures of
//! `tests/fixtures/dataset-files`, and their conversations (turns, texts, roles, delays,
//! timestamps, max tokens; a random_pool's draws for the seed) must be ours.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use aiperf_core::trace::dataset_file::{ConversationReader, PoolReader};
use aiperf_core::trace::random_pool::sample;
use aiperf_core::trace::{Input, Number, Trace};
use serde_json::{Value, json};

/// Loads `argv[2]` with AIPerf's loader of type `argv[1]` (`argv[3]` conversations for a
/// random_pool, after `rng.init(0)`) and prints its conversations as JSON. Later arguments:
/// `cap=S`, the `--inter-turn-delay-cap-seconds` its loader's `DelayCapTracker` clamps with;
/// `osl=MEAN,STDDEV`, each turn's max tokens then set by AIPerf's composer
/// (`BaseDatasetComposer._set_max_tokens` with the dataset's `osl` normal, as `--osl` and
/// `--osl-stddev` give it) in its order, conversation by conversation.
const LOAD: &str = r#"
import json, sys
from aiperf.common import random_generator as rng
rng.init(0)
from aiperf.dataset.loader.single_turn import SingleTurnDatasetLoader
from aiperf.dataset.loader.multi_turn import MultiTurnDatasetLoader
from aiperf.dataset.loader.random_pool import RandomPoolDatasetLoader
kind, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "random_pool":
    loader = RandomPoolDatasetLoader(filename=path, num_conversations=n)
else:
    loader = {"single_turn": SingleTurnDatasetLoader, "multi_turn": MultiTurnDatasetLoader}[kind](filename=path)
opts = dict(a.split("=", 1) for a in sys.argv[4:])
if "cap" in opts:
    from aiperf.dataset.loader._delay_cap import DelayCapTracker
    loader._delay_cap_tracker = DelayCapTracker(cap_seconds=float(opts["cap"]))
convs = loader.convert_to_conversations(loader.load_dataset())
if "osl" in opts:
    from aiperf.dataset.composer.base import BaseDatasetComposer
    mean, stddev = map(float, opts["osl"].split(","))
    class Osl:
        expected_value = mean
    Osl.stddev = stddev
    class Composer:
        _seq_distribution = None
        _max_tokens_rng = rng.derive("composer.turn.max_tokens")
        def _osl_distribution(self):
            return Osl()
        def warning(self, message):
            pass
    for conv in convs:
        for turn in conv.turns:
            BaseDatasetComposer._set_max_tokens(Composer(), turn)
print(json.dumps([
    [{"texts": [c for t in turn.texts for c in t.contents], "role": turn.role, "delay": turn.delay,
      "timestamp": turn.timestamp, "max_tokens": turn.max_tokens, "extra": turn.extra_body}
     for turn in conv.turns]
    for conv in convs
]))
"#;

fn fixture(name: &str) -> PathBuf {
    common::root().join("tests/fixtures/dataset-files").join(name)
}

fn number(n: Option<Number>) -> Value {
    n.map_or(Value::Null, |n| json!(n.as_f64()))
}

/// Our conversations of `trace` in AIPerf's shape: sessions in the order of their first row.
fn ours(trace: &Trace) -> Value {
    let mut order: Vec<Option<&str>> = Vec::new();
    let mut convs: Vec<Vec<Value>> = Vec::new();
    for r in trace.rows() {
        let (texts, role) = match &r.input {
            Input::Text(t) => (vec![json!(t.to_string())], Value::Null),
            Input::Messages(m) => match &m[0]["content"] {
                Value::Array(parts) => (parts.iter().map(|p| p["text"].clone()).collect(), Value::Null),
                text => (vec![text.clone()], m[0]["role"].clone()),
            },
            other => panic!("{other:?}"),
        };
        let turn = json!({
            "texts": texts, "role": role, "delay": number(r.delay), "timestamp": number(r.timestamp),
            "max_tokens": r.output_length, "extra": r.extra(),
        });
        let id = r.session_id.as_deref();
        match order.iter().position(|o| id.is_some() && *o == id) {
            Some(k) => convs[k].push(turn),
            None => {
                order.push(id);
                convs.push(vec![turn]);
            }
        }
    }
    same(json!(convs))
}

/// AIPerf's conversations, in the shape of [`same`].
fn theirs(venv: &Path, kind: &str, path: &Path, n: usize) -> Value {
    theirs_with(venv, kind, path, n, &[])
}

/// [`theirs`] with the extra arguments of [`LOAD`].
fn theirs_with(venv: &Path, kind: &str, path: &Path, n: usize, extra: &[&str]) -> Value {
    let n = n.to_string();
    let out = common::python(venv, LOAD, &[&[kind, path.to_str().unwrap(), n.as_str()][..], extra].concat());
    assert!(out.status.success(), "AIPerf's {kind} loader: {}", String::from_utf8_lossy(&out.stderr));
    same(serde_json::from_slice(&out.stdout).unwrap())
}

/// Conversations compared: numbers as floats (AIPerf's ints and ours compare equal), the role
/// `user` as no role (the role a turn without one is sent with).
fn same(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("max_tokens", v) => (k, v),
                    ("role", Value::String(r)) if r == "user" => (k, Value::Null),
                    (_, v) => (k, same(v)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(same).collect()),
        Value::Number(n) => json!(n.as_f64().unwrap()),
        other => other,
    }
}

fn read_lines(path: &Path, mut push: impl FnMut(u64, &str)) {
    for (i, l) in std::fs::read_to_string(path).unwrap().lines().enumerate() {
        push(i as u64 + 1, l);
    }
}

/// Our trace of the single_turn or multi_turn file `path`.
fn read_conversations(kind: &str, path: &Path) -> Trace {
    let mut r = if kind == "multi_turn" { ConversationReader::multi_turn() } else { ConversationReader::single_turn() };
    read_lines(path, |line, text| r.push_line(line, text).unwrap());
    r.finish()
}

#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/aiperf-venv.sh"]
fn aiperfs_loaders_read_its_dataset_files_as_we_do() {
    let Some(venv) = common::aiperf_venv() else { return };
    for (kind, name) in [("single_turn", "single_turn.jsonl"), ("multi_turn", "multi_turn.jsonl")] {
        let path = fixture(name);
        assert_eq!(ours(&read_conversations(kind, &path)), theirs(&venv, kind, &path, 0), "{kind}");
    }
    // A pool file, and a folder of two pools (drawn in file-name order), at seed 0.
    let pool = |path: &Path| {
        let mut r = PoolReader::new();
        read_lines(path, |line, text| r.push_line(line, text).unwrap());
        r.finish(path.file_name().unwrap().to_string_lossy())
    };
    let file = fixture("random_pool.jsonl");
    assert_eq!(ours(&sample(&[pool(&file)], 12, 0).unwrap()), theirs(&venv, "random_pool", &file, 12));
    let folder = fixture("pools");
    let pools = [pool(&folder.join("passages.jsonl")), pool(&folder.join("queries.jsonl"))];
    assert_eq!(ours(&sample(&pools, 7, 0).unwrap()), theirs(&venv, "random_pool", &folder, 7));
}

/// `--inter-turn-delay-cap-seconds 0.5` on the multi_turn fixture: AIPerf's loader clamps its
/// turns' delays (1000 ms → 500, 250 kept) as ours does.
#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/aiperf-venv.sh"]
fn aiperfs_multi_turn_loader_caps_the_delays_as_we_do() {
    let Some(venv) = common::aiperf_venv() else { return };
    let path = fixture("multi_turn.jsonl");
    let mut trace = read_conversations("multi_turn", &path);
    let report = aiperf_core::trace::delay_cap::cap_delays(&mut trace, 0.5);
    assert_eq!(report.capped, 1);
    let mine = ours(&trace);
    assert_eq!(mine, theirs_with(&venv, "multi_turn", &path, 0, &["cap=0.5"]));
    assert_eq!(mine[0][1]["delay"], json!(500.0));
    assert_eq!(mine[0][2]["delay"], json!(250.0));
}

/// `--osl 200 --osl-stddev 40.7 --random-seed 0` on the single_turn and multi_turn fixtures:
/// AIPerf's composer gives the turns without an output length the max tokens ours draws, and
/// keeps the others'.
#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/aiperf-venv.sh"]
fn aiperfs_composer_draws_the_osl_of_turns_without_one_as_we_do() {
    let Some(venv) = common::aiperf_venv() else { return };
    for (kind, name) in [("single_turn", "single_turn.jsonl"), ("multi_turn", "multi_turn.jsonl")] {
        let path = fixture(name);
        let mut trace = read_conversations(kind, &path);
        let kept = trace.rows().iter().filter(|r| r.output_length.is_some()).count();
        assert!(kept > 0 && kept < trace.len(), "{kind}: the fixture has turns with and without an output length");
        aiperf_core::synthesis::synthetic::fill_output_lengths(&mut trace, 0, 200, 40.7);
        assert_eq!(ours(&trace), theirs_with(&venv, kind, &path, 0, &["osl=200,40.7"]), "{kind}");
    }
}
