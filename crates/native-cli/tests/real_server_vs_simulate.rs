//! A real llama.cpp server against the simulator (opt-in: `scripts/real-server-vs-simulate.sh
//! test` starts a fresh server, runs this with `AIPERF_REAL_SERVER_URL` and `--ignored`, and
//! stops it; the server must not have served the trace before, see below).
//!
//! The trace (`tests/fixtures/traces/conversation_prefix_groups_b16.jsonl`): 33 rows of 12
//! conversations of Mooncake's conversation trace that share prefixes beyond the common first
//! block, lengths scaled from 512 to 16 tokens a hash id, at most 4 output tokens, one row every
//! 3 s so a 2-slot server on two busy cores rarely queues. It is replayed on the server and
//! simulated with `--calibrate` on the replay, as llama.cpp with its prompt cache in host
//! memory: one replica (the prompt cache is shared by the slots), its slots as running
//! requests, unbounded capacity.
//!
//! What holds whatever the machine's speed (no wall-clock bound):
//! - the server's prefix-cache hit rate (cached tokens in `usage` over prompt tokens) is within
//!   [`HIT_TOLERANCE_POINTS`] percentage points of the simulated one. The gap comes from rules the
//!   simulator does not have: llama.cpp reuses tokens, not whole blocks (a repeated prompt hits all
//!   but its last token; the simulator whole blocks), and picks a slot by the share of the new
//!   prompt its cached prompt holds (10% at least, else the least recently used slot), so a short
//!   shared prefix can miss;
//! - the two order the requests alike: of the pairs whose simulated TTFTs differ by a factor 2 or
//!   more, at least [`ORDER_AGREEMENT`] are in the same order when measured.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{BIN, ok, profile_real, read_jsonl, real_server, root, summary};

const HIT_TOLERANCE_POINTS: f64 = 5.0;
const ORDER_AGREEMENT: f64 = 0.75;
const SLOTS: &str = "2";

fn server() -> (String, String) {
    real_server("start a server (scripts/real-server-vs-simulate.sh start PORT --parallel 2)", "smollm2-135m")
}

/// trace line → (cached tokens, prompt tokens, TTFT ms) of a run folder's records.
fn by_line(dir: &Path) -> HashMap<u64, (f64, f64, f64)> {
    read_jsonl(&dir.join("profile_export.jsonl"))
        .iter()
        .map(|r| {
            let m = &r["metrics"];
            let v = |k: &str| m[k]["value"].as_f64().unwrap_or(0.0);
            let line = r["metadata"]["trace_line"].as_u64().unwrap_or_else(|| panic!("{r}"));
            (line, (v("usage_prompt_cache_read_tokens"), v("usage_prompt_tokens"), v("time_to_first_token")))
        })
        .collect()
}

fn hit_percent(requests: &HashMap<u64, (f64, f64, f64)>) -> f64 {
    let (cached, prompt) = requests.values().fold((0.0, 0.0), |(c, p), r| (c + r.0, p + r.1));
    100.0 * cached / prompt.max(1.0)
}

#[test]
#[ignore = "needs a real llama.cpp server: scripts/real-server-vs-simulate.sh"]
fn llama_cpp_hits_and_orders_requests_as_the_simulation_does() {
    let (url, model) = server();
    let trace = root().join("tests/fixtures/traces/conversation_prefix_groups_b16.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let (run, sim) = (dir.path().join("measured"), dir.path().join("simulated"));
    let (tr, ar) = (trace.to_str().unwrap().to_owned(), run.to_str().unwrap().to_owned());
    let out = profile_real(
        &url,
        &model,
        &trace,
        &run,
        &[
            "--endpoint-type",
            "completions",
            "--streaming",
            "--request-timeout-seconds",
            "600",
            "--fixed-schedule",
            "--isl-block-size",
            "16",
            "--reset-prefix-cache",
        ],
        Duration::from_secs(1200),
    );
    ok(&out);
    assert_eq!(summary(&run)["error_request_count"]["avg"].as_f64().unwrap_or(0.0), 0.0);
    let o = Command::new(BIN)
        .args(["simulate", &tr, "--block-size", "16", "--replicas", "1", "--max-running", SLOTS])
        .args(["--calibrate", &ar, "--output-dir", sim.to_str().unwrap()])
        .output()
        .unwrap();
    ok(&o);
    println!("{}", String::from_utf8_lossy(&o.stdout));
    let measured = by_line(&run);
    let simulated = by_line(&sim.join("r1_kvunbounded_kv-aware_lru"));
    assert_eq!(measured.len(), 33);
    assert_eq!(simulated.len(), 33);

    let ttft = |dir: &Path| {
        let t = &summary(dir)["time_to_first_token"];
        (t["p50"].as_f64().unwrap_or(0.0), t["p99"].as_f64().unwrap_or(0.0))
    };
    let (m, s) = (ttft(&run), ttft(&sim.join("r1_kvunbounded_kv-aware_lru")));
    println!("TTFT p50 / p99: measured {:.1} / {:.1} ms, simulated {:.1} / {:.1} ms", m.0, m.1, s.0, s.1);
    let (hit_m, hit_s) = (hit_percent(&measured), hit_percent(&simulated));
    println!("prefix-cache hit rate: measured {hit_m:.2}%, simulated {hit_s:.2}%");
    assert!(hit_m > 0.0, "the server cached nothing: is its prompt cache on?");
    // llama.cpp's prompt cache in host memory outlives `--reset-prefix-cache` (which erases the
    // slots): a server that replayed the trace before hits more than the trace can share.
    let theoretical = 100.0 * summary(&run)["expected_cache_hit_rate"]["avg"].as_f64().unwrap_or(1.0);
    assert!(
        hit_m <= theoretical + HIT_TOLERANCE_POINTS,
        "measured {hit_m:.2}% > the trace's {theoretical:.2}%: the server kept prompts of an earlier run; start a fresh one"
    );
    assert!((hit_m - hit_s).abs() <= HIT_TOLERANCE_POINTS, "measured {hit_m:.2}% vs simulated {hit_s:.2}%");

    let (mut agree, mut apart) = (0u32, 0u32);
    for (a, sa) in &simulated {
        for (b, sb) in &simulated {
            if a < b && sa.2.max(sb.2) >= 2.0 * sa.2.min(sb.2) {
                apart += 1;
                agree += u32::from((sa.2 < sb.2) == (measured[a].2 < measured[b].2));
            }
        }
    }
    println!("TTFT order: {agree} of {apart} pairs apart by 2× or more in the simulation agree when measured");
    assert!(apart > 0 && f64::from(agree) >= ORDER_AGREEMENT * f64::from(apart), "{agree} of {apart} pairs agree");
}
