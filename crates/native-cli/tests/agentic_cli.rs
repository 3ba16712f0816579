//! The real `aiperf-cli synthesize-agentic-code` binary: reproducible by seed, a manifest re-runs
//! its run, and a bad configuration names the file, the key, the value and what is accepted.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed test

mod common;

use std::path::Path;

use common::cli;
use serde_json::Value;

const FILES: [&str; 4] = ["dataset.jsonl", "manifest.json", "quality.json", "comparison.txt"];

fn run(dir: &Path, extra: &[&str]) -> Vec<Vec<u8>> {
    let mut args = vec!["synthesize-agentic-code", "--num-sessions", "40", "--output-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = cli(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Agentic Code Session Profile"));
    FILES.iter().map(|f| std::fs::read(dir.join(f)).unwrap()).collect()
}

#[test]
fn same_seed_same_bytes_other_seed_other_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let a = run(&tmp.path().join("a"), &["--seed", "9"]);
    let b = run(&tmp.path().join("b"), &["--seed", "9"]);
    let c = run(&tmp.path().join("c"), &["--seed", "10"]);
    assert_eq!(a, b);
    assert_ne!(a[0], c[0]);
    // An earlier run is not replaced unasked.
    let again =
        cli(&["synthesize-agentic-code", "--seed", "10", "--output-dir", tmp.path().join("a").to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert_eq!(run(&tmp.path().join("a"), &["--seed", "9", "--overwrite"]), a);
    assert_ne!(a[2], c[2]);
    let first: Value = serde_json::from_slice(a[0].split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["timestamp"], 0.0);
    assert!(first["session_id"].as_str().unwrap().starts_with("sess-"));
    assert!(first["group_id"].is_u64());
    let manifest: Value = serde_json::from_slice(&a[1]).unwrap();
    assert_eq!(manifest["seed"], 9);
    assert_eq!(manifest["config_name"], "default");
    assert_eq!(manifest["generation_params"]["max_prompt_tokens"], 200_000);
}

#[test]
fn a_manifest_reruns_its_run_and_limits_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let first =
        run(&tmp.path().join("a"), &["--seed", "3", "--config", "default", "--max-isl", "120000", "--max-osl", "800"]);
    let manifest: Value = serde_json::from_slice(&first[1]).unwrap();
    let params = &manifest["generation_params"];
    assert_eq!(params["max_prompt_tokens"], 120_000);
    assert_eq!(params["generation_length"]["max"], 800.0);
    assert_eq!(params["cache"]["layer1_5_tokens"], 0, "the bundled default.json");
    let again =
        run(&tmp.path().join("b"), &["--seed", "3", "--config", tmp.path().join("a/manifest.json").to_str().unwrap()]);
    assert_eq!(first[0], again[0], "a manifest re-runs its dataset");
    for line in std::str::from_utf8(&first[0]).unwrap().lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        assert!(row["output_length"].as_u64().unwrap() <= 800);
    }
}

#[test]
fn bad_configs_name_file_key_value_and_what_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let case = |name: &str, text: &str| -> String {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = cli(&[
            "synthesize-agentic-code",
            "--config",
            path.to_str().unwrap(),
            "--output-dir",
            tmp.path().join("out").to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert!(!tmp.path().join("out").exists(), "nothing is written for a bad configuration");
        String::from_utf8(out.stderr).unwrap()
    };
    let e = case("typo.json", r#"{"cache": {"layer2": {"mean": 9, "median": 5, "maxx": 3}}}"#);
    assert!(
        e.contains("typo.json") && e.contains("`cache.layer2.maxx`") && e.contains("mu, sigma, mean, median, min, max"),
        "{e}"
    );
    let e = case("range.json", r#"{"reset": {"base_probability": 1.5}}"#);
    assert!(
        e.contains("range.json")
            && e.contains("`reset.base_probability` = 1.5 is not accepted: must be between 0 and 1"),
        "{e}"
    );
    let e = case("type.json", r#"{"max_prompt_tokens": "big"}"#);
    assert!(
        e.contains("type.json")
            && e.contains("`max_prompt_tokens` = \"big\"")
            && e.contains("must be a whole number ≥ 0"),
        "{e}"
    );
    let e = case("broken.json", "{\n  \"block_size\": 5,,\n}");
    assert!(e.contains("broken.json") && e.contains("line 2"), "{e}");
}
