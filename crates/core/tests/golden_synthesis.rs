//! Transform synthesis equals AIPerf 0.13.0's output on every golden run (both manifests, the
//! `loader` and `direct` files), its random draws equal CPython's, and the full FAST'25 traces,
//! on which AIPerf aborts, synthesize under every golden parameter set.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed test

use std::path::PathBuf;

use aiperf_core::rng::{PyRandom, SYNTHESIZER_COMPONENT, derive_seed};
use aiperf_core::synthesis::{TransformParams, synthesize_direct, transform};
use aiperf_core::trace::prompt_hash::{BlockHasher, stable_hash_bytes};
use aiperf_core::trace::{ParseOptions, Trace, parse_str, write_trace};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(rel: &str) -> String {
    let path = fixtures().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn trace(rel: &str) -> Trace {
    parse_str(&read(rel), ParseOptions::new(rel)).unwrap().trace
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

const SYNTHESIS: &str = "golden/aiperf-0.13.0/synthesis";

struct Manifest {
    dir: &'static str,
    file: &'static str,
    input: &'static str,
}

const MANIFESTS: [Manifest; 2] = [
    Manifest { dir: "arxiv_first20", file: "arxiv20.manifest.json", input: "traces/arxiv_first20.jsonl" },
    Manifest {
        dir: "conv_head500",
        file: "conv500.manifest.json",
        input: "traces/conversation_head500.synth_safe.jsonl",
    },
];

/// A manifest run's parameters (its `params` use our field names) with the manifest's block size.
fn params_of(manifest: &Value, run: &Value) -> TransformParams {
    let mut obj = run["params"].as_object().unwrap().clone();
    obj.insert("block_size".into(), manifest["block_size"].clone());
    obj.insert("seed".into(), run["seed"].clone());
    serde_json::from_value(Value::Object(obj)).unwrap()
}

/// Whether `ours` is AIPerf's `golden` row with defect 2 fixed: input_length capped at max_isl
/// and only the first ceil(max_isl / bs) of AIPerf's ids kept.
fn is_trimmed_golden(golden: &Value, ours: &Value, params: &TransformParams) -> bool {
    let (Some(max_isl), Some(g_ids)) = (params.max_isl, golden["hash_ids"].as_array()) else {
        return false;
    };
    let keep = max_isl.div_ceil(u64::from(params.block_size)) as usize;
    if golden["input_length"] != max_isl || g_ids.len() <= keep {
        return false;
    }
    let mut expected = golden.clone();
    expected["hash_ids"] = Value::Array(g_ids[..keep].to_vec());
    expected == *ours
}

/// Compares our rows with a golden file; returns how many rows differ only by defect 2's fix.
fn compare(ours: &Trace, golden_file: &str, params: &TransformParams, what: &str) -> usize {
    let golden = json_lines(&read(golden_file));
    let ours = json_lines(&write_trace(ours));
    assert_eq!(ours.len(), golden.len(), "{what}: row count");
    let mut trimmed = 0;
    for (i, (o, g)) in ours.iter().zip(&golden).enumerate() {
        if o != g {
            assert!(is_trimmed_golden(g, o, params), "{what}: row {i} differs\n golden {g}\n ours   {o}");
            trimmed += 1;
        }
    }
    // Exactly the golden rows that break the block/length invariant differ.
    let bs = u64::from(params.block_size);
    let broken = golden
        .iter()
        .filter(|g| {
            let (isl, n) = (g["input_length"].as_u64().unwrap(), g["hash_ids"].as_array().map_or(0, Vec::len) as u64);
            n > 0 && !((n - 1) * bs < isl && isl <= n * bs)
        })
        .count();
    assert_eq!(trimmed, broken, "{what}");
    trimmed
}

fn check_manifest(m: &Manifest) {
    let manifest: Value = serde_json::from_str(&read(&format!("{SYNTHESIS}/{}/{}", m.dir, m.file))).unwrap();
    let input = trace(m.input);
    assert_eq!(input.len() as u64, manifest["n_input"].as_u64().unwrap());
    let runs = manifest["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for run in runs {
        let params = params_of(&manifest, run);
        let name = format!("{}/{}.seed{}", m.dir, run["name"].as_str().unwrap(), params.seed);
        for (kind, ours) in
            [("loader", transform(&input, &params).unwrap()), ("direct", synthesize_direct(&input, &params).unwrap())]
        {
            let file = format!("{SYNTHESIS}/{}/{}", m.dir, run[kind]["file"].as_str().unwrap());
            assert_eq!(ours.len() as u64, run[kind]["n_out"].as_u64().unwrap(), "{name} {kind}");
            let trimmed = compare(&ours, &file, &params, &format!("{name} {kind}"));
            // Only runs with max_isl can differ, and only where AIPerf left too many ids.
            if params.max_isl.is_none() {
                assert_eq!(trimmed, 0);
            }
            assert_invariant(&ours, params.block_size, &name);
        }
    }
}

fn assert_invariant(t: &Trace, bs: u32, what: &str) {
    let bs = i64::from(bs);
    for (row, ids) in t.iter() {
        if let (Some(isl), false) = (row.input_length(), ids.is_empty()) {
            let n = ids.len() as i64;
            assert!((n - 1) * bs < isl && isl <= n * bs, "{what}: line {}: {isl} tokens, {n} ids", row.line);
        }
    }
}

#[test]
fn arxiv_first20_every_run_matches() {
    check_manifest(&MANIFESTS[0]);
}

#[test]
fn conversation_head500_every_run_matches() {
    check_manifest(&MANIFESTS[1]);
}

#[test]
fn seeds_and_draws_match_aiperf_and_cpython() {
    let golden: Value = serde_json::from_str(&read("golden/aiperf-0.13.0/rng/rng_goldens.json")).unwrap();
    for seed in [42u64, 7] {
        let g = &golden[seed.to_string()];
        let synth = derive_seed(seed, SYNTHESIZER_COMPONENT);
        assert_eq!(synth, g["seed.dataset.synthesis.synthesizer"].as_u64().unwrap());
        assert_eq!(derive_seed(seed, "dataset.prompt.corpus"), g["seed.dataset.prompt.corpus"].as_u64().unwrap());
        let mut rng = PyRandom::new(synth);
        let draws: Vec<u64> = (0..30).map(|_| rng.randint(0, 2)).collect();
        let expected: Vec<u64> = g["first30_randint_0_2_for_prefix_root_multiplier_3"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(draws, expected, "seed {seed}");
    }
    let blocks = &golden["hash_id_blocks_root42"];
    let base = blocks["base_seed"].as_u64().unwrap();
    assert_eq!(base, derive_seed(42, "dataset.prompt.corpus"));
    for (_, v) in blocks["per_hash"].as_object().unwrap() {
        let mut rng = PyRandom::new(v["block_seed"].as_u64().unwrap());
        assert_eq!(rng.below(1_000_000), v["randrange(1_000_000)_first_draw"].as_u64().unwrap());
    }
}

/// Rows whose ids are all shared but whose last block is partial: where AIPerf aborts.
fn partial_shared_rows(t: &Trace, bs: i64) -> usize {
    let mut count = std::collections::HashMap::<u64, u32>::new();
    for id in t.all_hash_ids() {
        *count.entry(*id).or_default() += 1;
    }
    t.iter()
        .filter(|(r, ids)| {
            !ids.is_empty()
                && ids.iter().all(|id| count[id] >= 2)
                && r.input_length().is_some_and(|isl| isl < ids.len() as i64 * bs)
        })
        .count()
}

fn check_real_trace(file: &str, expected_crashing_rows: usize) {
    let input = trace(&format!("traces/{file}"));
    assert_eq!(partial_shared_rows(&input, 512), expected_crashing_rows, "{file}: rows AIPerf aborts on");
    for m in &MANIFESTS {
        let manifest: Value = serde_json::from_str(&read(&format!("{SYNTHESIS}/{}/{}", m.dir, m.file))).unwrap();
        for run in manifest["runs"].as_array().unwrap() {
            let params = params_of(&manifest, run);
            let what = format!("{file} {}", run["name"]);
            let loader = transform(&input, &params).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_invariant(&loader, params.block_size, &what);
            let direct = synthesize_direct(&input, &params).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(direct.len(), input.len());
            assert_invariant(&direct, params.block_size, &what);
        }
    }
}

#[test]
fn full_conversation_trace_synthesizes_under_every_golden_parameter_set() {
    check_real_trace("conversation_trace.jsonl", 206);
}

#[test]
fn full_synthetic_trace_synthesizes_under_every_golden_parameter_set() {
    check_real_trace("synthetic_trace.jsonl", 407);
}

#[test]
fn block_hashing_matches_aiperf_test_vectors() {
    let v: Value = serde_json::from_str(&read("golden/hashing/test_vectors.json")).unwrap();
    let stable = v["stable_hash_examples"].as_object().unwrap();
    assert_eq!(stable.len(), 5);
    for (repr, expected) in stable {
        // Tuples hash through their repr; a str hashes as its own UTF-8 bytes.
        let bytes = repr.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')).unwrap_or(repr);
        assert_eq!(stable_hash_bytes(bytes.as_bytes()), expected.as_u64().unwrap(), "{repr}");
    }
    // One hasher over all cases, in file order: ids are global across calls.
    let mut hasher = BlockHasher::new(512);
    let cases = v["aiperf_RollingHasher_hash_token_blocks"].as_object().unwrap();
    assert_eq!(cases.len(), 4);
    for (blocks, expected) in cases {
        let blocks: Vec<Vec<u32>> = serde_json::from_str(blocks).unwrap();
        let ids = hasher.hash_blocks(blocks.iter().map(Vec::as_slice));
        let expected: Vec<u64> = expected.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(ids, expected, "{blocks:?}");
    }
}
