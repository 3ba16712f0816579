//! AIPerf's output options that `profile` honours, end to end against `aiperf-cli mock-server`:
//! which files each run writes, under which names, and what they hold.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// The names of the files in `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// `profile --streaming --concurrency 2` against `url`, then `extra`.
fn run(url: &str, trace: &Path, art: &Path, extra: &[&str]) -> std::process::Output {
    profile_streaming(url, trace, art, &[&["--concurrency", "2"], extra].concat(), LIMIT)
}

fn trace(dir: &Path) -> std::path::PathBuf {
    let lines: Vec<String> = (0..4).map(|i| format!(r#"{{"input_length": {}, "output_length": 5}}"#, 20 + i)).collect();
    write_trace(dir, &lines)
}

/// `--profile-export-prefix run1`: every file of the run (summaries, console table, records, time
/// slices, server metrics) is named on `run1` as AIPerf names them, and nothing under AIPerf's
/// default names is written; a known suffix or an absolute path gives the same base; a folder
/// holding a prefixed run is refused without --overwrite; a prefix naming a folder is refused.
#[test]
fn profile_export_prefix_names_every_file() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let art = dir.path().join("a");
    let out = run(&mock.url, &t, &art, &["--profile-export-prefix", "run1", "--slice-duration", "1"]);
    ok(&out);
    assert_eq!(
        files(&art),
        [
            ".aiperf_results_ready.json",
            "run1.csv",
            "run1.json",
            "run1.jsonl",
            "run1_console.txt",
            "run1_server_metrics.csv",
            "run1_server_metrics.json",
            "run1_timeslices.csv",
            "run1_timeslices.json",
        ]
    );
    assert_eq!(read_jsonl(&art.join("run1.jsonl")).len(), 4);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(art.join("run1.json")).unwrap()).unwrap();
    assert_eq!(s["request_count"]["avg"], 4.0, "{s}");
    assert_eq!(s["input_config"]["artifacts"]["prefix"], "run1");
    assert_eq!(s["aiperf_cli_config"]["profile_export_prefix"], "run1");

    // AIPerf's spelling from GenAI-Perf, a suffix to strip and an absolute path.
    let art = dir.path().join("b");
    let abs = dir.path().join("elsewhere").join("base_raw.jsonl");
    let extra = ["--profile-export-file", abs.to_str().unwrap(), "--export-level", "summary", "--no-server-metrics"];
    let out = run(&mock.url, &t, &art, &extra);
    ok(&out);
    assert_eq!(files(&art), [".aiperf_results_ready.json", "base.csv", "base.json", "base_console.txt"]);

    // The folder now holds a run under the prefix: refused without --overwrite, replaced with it.
    let again = run(&mock.url, &t, &art, &["--profile-export-prefix", "base.json"]);
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("already holds a run") && err.contains("base.csv"), "{err}");
    let out = run(&mock.url, &t, &art, &["--profile-export-prefix", "base.json", "--overwrite"]);
    ok(&out);
    assert_eq!(read_jsonl(&art.join("base.jsonl")).len(), 4);

    for bad in ["sub/run", "", ".json"] {
        let out = run(&mock.url, &t, &dir.path().join("c"), &["--profile-export-prefix", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--profile-export-prefix") && err.contains("accepted is a file name"), "{bad:?}: {err}");
    }
    assert!(!dir.path().join("c").exists());
}
