//! The real `aiperf-cli synthesize-trace` binary: golden output, atomic writes, clear errors.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed test

mod common;

use std::path::Path;
use std::process::Output;

use common::{cli, fixtures};
use serde_json::Value;

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn golden(name: &str) -> Vec<Value> {
    json_lines(&fixtures().join(format!("golden/aiperf-0.13.0/synthesis/conv_head500/{name}")))
}

#[test]
fn transform_writes_aiperfs_loader_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = fixtures().join("traces/conversation_head500.synth_safe.jsonl");
    let run = |name: &str, flags: &[&str]| -> (Vec<Value>, String) {
        let out = dir.join(name);
        let mut args = vec!["synthesize-trace", input.to_str().unwrap(), "--output-file", out.to_str().unwrap()];
        args.extend_from_slice(flags);
        let res = cli(&args);
        assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
        (json_lines(&out), String::from_utf8_lossy(&res.stdout).into_owned())
    };
    let (ours, stdout) = run("prm3.jsonl", &["--synthesis-prefix-root-multiplier", "3", "--random-seed", "7"]);
    assert_eq!(ours, golden("conv500.prm3.seed7.loader.jsonl"));
    assert!(stdout.contains("Cache hit rate") && stdout.contains("context_length"), "{stdout}");

    let combined = [
        "--synthesis-prefix-len-multiplier",
        "1.5",
        "--synthesis-prefix-root-multiplier",
        "3",
        "--synthesis-prompt-len-multiplier",
        "0.5",
        "--synthesis-speedup-ratio",
        "2",
        "--synthesis-max-isl",
        "8192",
        "--synthesis-max-osl",
        "512",
        "--random-seed",
        "42",
    ];
    let (ours, _) = run("combined.jsonl", &combined);
    let golden = golden("conv500.combined.seed42.loader.jsonl");
    assert_eq!(ours.len(), golden.len());
    // Rows capped at max ISL keep only the ids they need (AIPerf keeps them all); others are equal.
    for (o, g) in ours.iter().zip(&golden) {
        if o["input_length"] == 8192 {
            let n = o["hash_ids"].as_array().unwrap().len();
            assert_eq!(n, 16);
            assert_eq!(o["hash_ids"].as_array().unwrap()[..], g["hash_ids"].as_array().unwrap()[..n]);
        } else {
            assert_eq!(o, g);
        }
    }
}

#[test]
fn failure_leaves_the_previous_file_untouched_and_no_temp_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"input_length\":10,\"hash_ids\":[1]}\n{\"input_length\":\"x\"}\n").unwrap();
    let out = dir.join("out.jsonl");
    std::fs::write(&out, "previous contents\n").unwrap();
    let res = cli(&["synthesize-trace", bad.to_str().unwrap(), "--output-file", out.to_str().unwrap()]);
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("input_length"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous contents\n");
    let names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // An output folder that does not exist: error, nothing created.
    let good = fixtures().join("traces/arxiv_first20.jsonl");
    let missing = dir.join("no/such/dir/out.jsonl");
    let res = cli(&["synthesize-trace", good.to_str().unwrap(), "--output-file", missing.to_str().unwrap()]);
    assert!(!res.status.success());
    assert!(!missing.exists());
}

#[test]
fn invalid_parameters_name_the_option() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("out.jsonl");
    let input = fixtures().join("traces/arxiv_first20.jsonl");
    for (flag, value) in [
        ("--synthesis-speedup-ratio", "0"),
        ("--synthesis-speedup-ratio", "-2"),
        ("--synthesis-prefix-len-multiplier", "0"),
        ("--synthesis-prefix-root-multiplier", "0"),
        ("--synthesis-prompt-len-multiplier", "-1"),
        ("--synthesis-output-len-multiplier", "-1"),
        ("--synthesis-max-isl", "0"),
        ("--synthesis-max-osl", "0"),
        ("--block-size", "0"),
        ("--synthesis-speedup-ratio", "fast"),
        ("--synthesis-speedup-ratio", "1e-300"),
        ("--synthesis-prefix-len-multiplier", "1e30"),
        ("--synthesis-output-len-multiplier", "1e30"),
        ("--num-requests", "1e10"),
    ] {
        let res = cli(&[
            "synthesize-trace",
            input.to_str().unwrap(),
            "--output-file",
            out.to_str().unwrap(),
            &format!("{flag}={value}"),
        ]);
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success(), "{flag} {value} accepted");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(stderr.contains(value) && stderr.contains("must be a"), "{flag} {value}: {stderr}");
        assert!(!out.exists());
    }
}

#[test]
fn generative_mode_is_reproducible_and_reports_fidelity() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = fixtures().join("traces/conversation_head500.jsonl");
    let run = |name: &str, seed: &str| -> Output {
        let out = dir.join(name);
        let fidelity = dir.join(format!("{name}.fidelity.json"));
        cli(&[
            "synthesize-trace",
            input.to_str().unwrap(),
            "--output-file",
            out.to_str().unwrap(),
            "--num-requests",
            "2000",
            "--random-seed",
            seed,
            "--fidelity-file",
            fidelity.to_str().unwrap(),
        ])
    };
    let a = run("a.jsonl", "5");
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(String::from_utf8_lossy(&a.stdout).contains("Learned from 500 rows"));
    assert!(run("b.jsonl", "5").status.success());
    assert!(run("c.jsonl", "6").status.success());
    let bytes = |n: &str| std::fs::read(dir.join(n)).unwrap();
    assert_eq!(bytes("a.jsonl"), bytes("b.jsonl"));
    assert_ne!(bytes("a.jsonl"), bytes("c.jsonl"));
    assert_eq!(json_lines(&dir.join("a.jsonl")).len(), 2000);
    let report: Value = serde_json::from_slice(&bytes("a.jsonl.fidelity.json")).unwrap();
    assert_eq!(report["synthesized_requests"], 2000);
    let metrics: Vec<&str> =
        report["metrics"].as_array().unwrap().iter().map(|m| m["metric"].as_str().unwrap()).collect();
    assert_eq!(metrics, ["isl", "osl", "context_length", "hit_rate", "requests_per_second"]);
}

#[test]
fn generative_filter_rejecting_everything_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("out.jsonl");
    let input = fixtures().join("traces/arxiv_first20.jsonl");
    let res = cli(&[
        "synthesize-trace",
        input.to_str().unwrap(),
        "--output-file",
        out.to_str().unwrap(),
        "--num-requests",
        "100",
        "--synthesis-max-isl",
        "10",
    ]);
    assert!(!res.status.success());
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(stderr.contains("passed only") && stderr.contains("--synthesis-max-isl"), "{stderr}");
    assert!(!out.exists());
    // Generative-only options need --num-requests.
    let res = cli(&[
        "synthesize-trace",
        input.to_str().unwrap(),
        "--output-file",
        out.to_str().unwrap(),
        "--synthesis-min-isl",
        "5",
    ]);
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("--num-requests"));
}

/// `synthesize-trace` without an input trace: AIPerf's synthetic workload options.
fn synthetic(out: &Path, flags: &[&str]) -> Output {
    let mut args = vec!["synthesize-trace", "--output-file", out.to_str().unwrap()];
    args.extend_from_slice(flags);
    cli(&args)
}

#[test]
fn synthetic_workloads_are_reproducible_and_analyze_as_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let flags = [
        "--isl",
        "300",
        "--isl-stddev",
        "30",
        "--osl",
        "128",
        "--num-dataset-entries",
        "400",
        "--conversation-turn-mean",
        "2",
        "--conversation-turn-delay-mean",
        "500",
        "--prompt-prefix-pool-size",
        "4",
        "--prompt-prefix-length",
        "128",
        "--block-size",
        "64",
        "--random-seed",
        "9",
    ];
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    for out in [&a, &b] {
        let run = synthetic(out, &flags);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(stdout.contains("Generated 800 rows in 400 conversations"), "{stdout}");
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "same seed, same bytes");
    let rows = json_lines(&a);
    assert_eq!(rows[0]["session_id"], "session_000000");
    assert!(rows[1]["delay"].as_u64().unwrap() > 0 && rows[0].get("delay").is_none());

    let analysis = dir.join("analysis.json");
    let run =
        cli(&["analyze-trace", a.to_str().unwrap(), "--block-size", "64", "--output-file", analysis.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&analysis).unwrap()).unwrap();
    // First turns carry the 128-token prefix on top of the ISL: mean 300.5 + 64.
    let isl = v["isl_stats"]["mean"].as_f64().unwrap();
    assert!((isl - 364.5).abs() < 5.0, "{isl}");
    assert_eq!(v["osl_stats"]["mean"].as_f64().unwrap(), 128.0);
    assert!(v["cache_hit_rate"].as_f64().unwrap() > 0.1, "the pool's blocks are shared: {v}");

    // Without sharing options, nothing is shared; another seed gives other lengths.
    let c = dir.join("c.jsonl");
    let run = synthetic(&c, &["--isl", "300", "--isl-stddev", "30", "--block-size", "64", "--random-seed", "10"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(String::from_utf8_lossy(&run.stdout).contains("cache hit rate 0.0%"));
    assert_ne!(json_lines(&c)[0]["input_length"], rows[0]["input_length"]);
}

#[test]
fn synthetic_options_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t.jsonl");
    let err = |flags: &[&str]| {
        let run = synthetic(&out, flags);
        assert!(!run.status.success());
        String::from_utf8_lossy(&run.stderr).into_owned()
    };
    let e = err(&["--shared-system-prompt-length", "10", "--prefix-prompt-length", "5"]);
    assert!(e.contains("--prompt-prefix-length and --shared-system-prompt-length are mutually exclusive"), "{e}");
    let e = err(&["--seq-dist", "100,10:60"]);
    assert!(e.contains("--seq-dist must be probabilities (percent) that sum to 100, got 60"), "{e}");
    let e = err(&["--synthesis-speedup-ratio", "2"]);
    assert!(e.contains("need an input trace FILE"), "{e}");
    let input = fixtures().join("traces/conversation_head500.synth_safe.jsonl");
    let run = cli(&["synthesize-trace", input.to_str().unwrap(), "--output-file", out.to_str().unwrap(), "--isl", "5"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("generate a trace of their own"));
    assert!(!out.exists());
}
