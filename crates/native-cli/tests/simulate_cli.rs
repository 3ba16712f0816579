//! `aiperf-cli simulate` as a user runs it: a sweep's folders open with `report` and `compare`,
//! the summary table, bad options.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aiperf-cli")).args(args).output().unwrap()
}

#[test]
fn a_sweep_writes_run_folders_that_report_and_compare_open() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sim");
    let trace = fixture("traces/conversation_head500.jsonl");
    let o = cli(&[
        "simulate",
        trace.to_str().unwrap(),
        "--replicas",
        "1,2",
        "--kv-blocks",
        "200,unbounded",
        "--router",
        "kv-aware,round-robin",
        "--max-running",
        "16",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{stdout}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("r2_kv200_kv-aware_lru"), "{stdout}");

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("simulate_summary.json")).unwrap()).unwrap();
    let runs = summary.as_array().unwrap();
    assert_eq!(runs.len(), 8);
    let hit = |name: &str| runs.iter().find(|r| r["run"] == name).unwrap()["row_hit_rate"].as_f64().unwrap();
    // One replica with an unbounded cache hits what the analysis calls the theoretical rate,
    // less what concurrency hides (none: a block is cached when its request starts).
    let a =
        cli(&["analyze-trace", trace.to_str().unwrap(), "--output-file", tmp.path().join("a.json").to_str().unwrap()]);
    assert!(a.status.success());
    let analysis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("a.json")).unwrap()).unwrap();
    let theory = analysis["cache_hit_rate"].as_f64().unwrap();
    assert!((hit("r1_kvunbounded_kv-aware_lru") - theory).abs() < 1e-9, "{theory}");
    // Splitting the trace blindly over two replicas loses hits; the KV-aware router keeps more.
    assert!(hit("r2_kvunbounded_round-robin_lru") < hit("r2_kvunbounded_kv-aware_lru"));
    let records = std::fs::read_to_string(out.join("r2_kv200_kv-aware_lru/profile_export.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 500);

    let html = tmp.path().join("report.html");
    let run = out.join("r2_kv200_kv-aware_lru");
    let r = cli(&["report", run.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::metadata(&html).unwrap().len() > 1000);
    let other = out.join("r2_kv200_round-robin_lru");
    let c = cli(&["compare", run.to_str().unwrap(), other.to_str().unwrap()]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
}

#[test]
fn bad_capacity_names_the_value_and_what_is_accepted() {
    let trace = fixture("traces/conversation_head500.jsonl");
    let o = cli(&["simulate", trace.to_str().unwrap(), "--kv-blocks", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("'lots' is not a block count: a whole number ≥ 1, or `unbounded`"), "{e}");
}

/// An earlier simulation is not replaced unasked, the input trace is never an output, and more
/// replicas than the bound are refused before the trace is read.
#[test]
fn earlier_results_and_the_input_are_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sim");
    let trace = tmp.path().join("t.jsonl");
    std::fs::copy(fixture("traces/arxiv_first20.jsonl"), &trace).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", trace.to_str().unwrap(), "--output-dir", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        cli(&args)
    };
    assert!(run(&[]).status.success());
    let summary = std::fs::read(out.join("simulate_summary.json")).unwrap();
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("holds an earlier simulation"));
    assert_eq!(std::fs::read(out.join("simulate_summary.json")).unwrap(), summary);
    assert!(run(&["--overwrite"]).status.success());

    // The trace where a run's records would go.
    let inside = out.join("r1_kvunbounded_kv-aware_lru/profile_export.jsonl");
    std::fs::copy(&trace, &inside).unwrap();
    let o = cli(&["simulate", inside.to_str().unwrap(), "--output-dir", out.to_str().unwrap(), "--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&inside).unwrap(), std::fs::read(&trace).unwrap(), "the input is untouched");

    let o = run(&["--replicas", "4097", "--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("a whole number from 1 to 4096"));
}
