//! `--system-idle-gap-cap-seconds` (AIPerf's): a replay of the trace's times stays idle at most
//! the cap, every pending time moved earlier by the same amount; end to end against
//! `aiperf-cli mock-server` on 127.0.0.1.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);
const MS: u64 = 1_000_000;

/// (scheduled, end) of each record, in trace order, ns from time zero.
fn times(art: &std::path::Path) -> Vec<(u64, u64)> {
    let mut records = read_jsonl(&art.join("profile_export.jsonl"));
    records.sort_by_key(|r| r["metadata"]["trace_line"].as_u64().unwrap());
    let ns = |r: &Value, k: &str| r["metadata"][k].as_u64().unwrap();
    records.iter().map(|r| (ns(r, "scheduled_ns"), ns(r, "end_ns"))).collect()
}

#[test]
fn the_next_request_leaves_the_cap_after_the_replay_went_idle_and_the_rest_keep_their_spacing() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let lines: Vec<String> = [0, 3000, 3100]
        .iter()
        .map(|t| format!(r#"{{"timestamp": {t}, "input_length": 20, "output_length": 2}}"#))
        .collect();
    let (dir, trace, art) = scratch(&lines);
    let out = profile_streaming(&mock.url, &trace, &art, &["--ui-type", "none"], LIMIT);
    ok(&out);
    let t = times(&art);
    assert_eq!(t.iter().map(|(s, _)| s / MS).collect::<Vec<_>>(), [0, 3000, 3100], "the trace's times");

    let capped = dir.path().join("capped");
    let out = profile_streaming(
        &mock.url,
        &trace,
        &capped,
        &["--system-idle-gap-cap-seconds", "0.2", "--ui-type", "none"],
        LIMIT,
    );
    ok(&out);
    let t = times(&capped);
    // Idle from the first request's end: the second is due 200 ms later, not at 3 s; the third
    // keeps its 100 ms after the second (the replay was idle less than the cap before it).
    assert_eq!(t[0].0, 0);
    assert_eq!(t[1].0, t[0].1 + 200 * MS, "{t:?}");
    assert_eq!(t[2].0, t[1].0 + 100 * MS, "{t:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("note: --system-idle-gap-cap-seconds 0.2: the replay skipped"), "{stdout}");
    let s = summary(&capped);
    assert_eq!(s["aiperf_cli_config"]["system_idle_gap_cap_seconds"], 0.2);
}
