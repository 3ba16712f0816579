//! Replay against simulation: a trace replayed with `profile --url A --url B` over two mock servers
//! with the KV model (`--tokenizer`, `--block-size`, `--kv-blocks`, `--prefill-per-token-ms`) and
//! `aiperf-cli simulate` of the same trace on the same cluster (2 replicas, session affinity, the
//! same capacity, policy, block size and timing) hit the same prefix-cache tokens on each
//! replica, and their times to first token agree.
//!
//! The conditions of exactness:
//! - every hash block of the trace is exactly `block_size` tokens of the mock's tokenizer: the
//!   prompts `profile` builds are one-token words, `--isl-block-size` words per hash id, and
//!   `input_length` is a whole number of blocks;
//! - the completions endpoint and `--turn-history none`, so the server tokenizes exactly the
//!   row's prompt (no chat template, no earlier turns before it);
//! - each replica serves its requests in the same order in both, whatever the machine's speed:
//!   here each replica gets one session, whose turns wait for each other.
//!
//! The TTFT tolerance (no wall-clock bound): every measured TTFT is at least the simulated one
//! (the mock sleeps exactly the simulated prefill, the network and the client only add), and the
//! two order the requests alike: of the pairs whose simulated TTFTs differ by two blocks' prefill
//! or more, at least 80% are in the same order when measured.
//!
//! In engine steps (`--engine step` on both sides, preemption included, and `--engine
//! step-llamacpp`), two more tests check the queries, hits and preemptions per replica, exactly,
//! under the condition they state.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{BIN, Mock, ok, profile_streaming, read_jsonl, tokenizer};
use serde_json::Value;

const BLOCK: u64 = 16;
const KV_BLOCKS: &str = "8";
const TTFT_MS: f64 = 2.0;
const PER_TOKEN_MS: f64 = 0.5;
const ITL_MS: f64 = 1.0;

/// Two sessions of turns that share a system prompt (blocks 100, 101) and grow a context in
/// groups of three turns (2, 3, 4 blocks); a group seen before comes back, hitting what
/// eviction left of it (8 blocks hold the system prompt and one and a half groups).
fn trace_lines() -> Vec<String> {
    let sessions: [(&str, &[u64]); 2] = [("s0", &[0, 1, 0, 2, 0]), ("s1", &[0, 1, 2, 1, 3, 3])];
    let mut lines = Vec::new();
    for (s, (name, groups)) in sessions.iter().enumerate() {
        let mut first = true;
        for &g in *groups {
            for len in 2..=4u64 {
                let mut ids = vec![100, 101];
                ids.extend((0..len).map(|j| 1000 * (s as u64 + 1) + 10 * g + j));
                let timing = if first { format!(r#""timestamp": {s}"#) } else { r#""delay": 2"#.to_owned() };
                first = false;
                lines.push(format!(
                    r#"{{"session_id": "{name}", {timing}, "input_length": {}, "output_length": 2, "hash_ids": {ids:?}}}"#,
                    ids.len() as u64 * BLOCK
                ));
            }
        }
    }
    lines
}

/// A mock's `/metrics` sample of `name`.
fn metric(url: &str, name: &str) -> f64 {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let line = text.lines().find(|l| l.starts_with(&format!("{name}{{"))).unwrap_or_else(|| panic!("{name}: {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// (session run, turn) → (cached tokens, TTFT ms) of a run folder's records.
fn by_request(dir: &Path) -> HashMap<(u64, u64), (u64, f64)> {
    read_jsonl(&dir.join("profile_export.jsonl"))
        .iter()
        .map(|r| {
            let rec = common::record_of(r);
            let ttft = r["metrics"]["time_to_first_token"]["value"].as_f64().unwrap_or_else(|| panic!("{r}"));
            ((u64::from(rec.session_num), u64::from(rec.turn)), (rec.usage.cached_tokens.unwrap(), ttft))
        })
        .collect()
}

/// `profile` replays `trace` over the two mocks (a session's URL by its run index), as the
/// exactness conditions ask: the completions endpoint, no turn history, one-token words.
fn replay(mocks: &[Mock; 2], trace: &Path, art: &Path) {
    let block = BLOCK.to_string();
    let extra = [
        "--url",
        &mocks[1].url,
        "--endpoint-type",
        "completions",
        "--turn-history",
        "none",
        "--isl-block-size",
        &block,
        "--extra-inputs",
        "ignore_eos:true",
        "--ui-type",
        "none",
    ];
    ok(&profile_streaming(&mocks[0].url, trace, art, &extra, Duration::from_secs(240)));
}

/// `aiperf-cli simulate` of `trace` on two replicas with session affinity and the options
/// `args`, into `dir/sim`: the run folder and its `simulation.json`.
fn simulate(dir: &Path, trace: &Path, args: &[&[&str]]) -> (std::path::PathBuf, Value) {
    let sim = dir.join("sim");
    let mut cmd = Command::new(BIN);
    cmd.args(["simulate", trace.to_str().unwrap(), "--replicas", "2", "--router", "session-affinity"]);
    for a in args {
        cmd.args(*a);
    }
    let o = cmd.args(["--output-dir", sim.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_dir(&sim).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    let simulated = serde_json::from_slice(&std::fs::read(run.join("simulation.json")).unwrap()).unwrap();
    (run, simulated)
}

#[test]
fn replay_over_two_mocks_hits_what_the_simulation_hits_per_replica() {
    let dir = tempfile::tempdir().unwrap();
    let trace = common::write_trace(dir.path(), &trace_lines());
    let rows = trace_lines().len();
    let tok = tokenizer();
    let (ttft, per_token, itl) = (TTFT_MS.to_string(), PER_TOKEN_MS.to_string(), ITL_MS.to_string());
    let block = BLOCK.to_string();
    let mock_args = [
        "--tokenizer",
        &tok,
        "--block-size",
        &block,
        "--kv-blocks",
        KV_BLOCKS,
        "--policy",
        "lru",
        "--ttft-ms",
        &ttft,
        "--prefill-per-token-ms",
        &per_token,
        "--itl-ms",
        &itl,
    ];
    let mocks = [Mock::start(&mock_args), Mock::start(&mock_args)];

    let art = dir.path().join("replay");
    replay(&mocks, &trace, &art);
    assert_eq!(mocks.iter().map(|m| m.arrivals().len()).sum::<usize>(), rows);

    let (run, simulated) = simulate(
        dir.path(),
        &trace,
        &[
            &["--kv-blocks", KV_BLOCKS, "--policy", "lru", "--block-size", &block],
            &["--prefill-fixed-ms", &ttft, "--prefill-per-token-ms", &per_token],
            &["--decode-fixed-ms", &itl, "--decode-per-running-ms", "0"],
        ],
    );

    // Per replica: the mock's vLLM counters are the simulation's token counts, exactly.
    let mut hits = Vec::new();
    for (i, m) in mocks.iter().enumerate() {
        let r = &simulated["replicas"][i];
        let (queries, hit) =
            (metric(&m.url, "vllm:prefix_cache_queries_total"), metric(&m.url, "vllm:prefix_cache_hits_total"));
        assert_eq!(queries, r["input_tokens"].as_f64().unwrap(), "replica {i}: {r}");
        assert_eq!(hit, r["cached_tokens"].as_f64().unwrap(), "replica {i}: {r}");
        assert_eq!(metric(&m.url, "vllm:kv_cache_usage_perc"), 0.0, "nothing runs: nothing is pinned");
        hits.push(hit);
    }
    // `profile`'s scraper read the same counters from each mock over the run.
    let exported: Value =
        serde_json::from_slice(&std::fs::read(art.join("server_metrics_export.json")).unwrap()).unwrap();
    let series = exported["metrics"]["vllm:prefix_cache_hits"]["series"].as_array().unwrap();
    for (m, hit) in mocks.iter().zip(&hits) {
        let s = series.iter().find(|s| s["endpoint_url"].as_str().unwrap().starts_with(&m.url)).unwrap();
        assert_eq!(s["stats"]["total"].as_f64(), Some(*hit), "{s}");
    }
    // The trace is built so that both replicas hit, differently, and eviction costs hits.
    assert!(hits[0] > 0.0 && hits[1] > 0.0 && hits[0] != hits[1], "{hits:?}");
    assert!(simulated["replicas"][0]["evictions"].as_u64().unwrap() > 0, "{simulated}");

    // Per request: the same cached tokens, and TTFTs within the stated tolerance.
    let measured = by_request(&art);
    let simulated = by_request(&run);
    assert_eq!(measured.len(), rows);
    let mut pairs = Vec::new();
    for (key, &(cached, sim_ttft)) in &simulated {
        let &(m_cached, m_ttft) = measured.get(key).unwrap_or_else(|| panic!("request {key:?} not replayed"));
        assert_eq!(m_cached, cached, "request {key:?}");
        assert!(m_ttft >= sim_ttft - 1e-3, "request {key:?}: measured {m_ttft} ms < simulated {sim_ttft} ms");
        pairs.push((sim_ttft, m_ttft));
    }
    let gap = 2.0 * BLOCK as f64 * PER_TOKEN_MS;
    let (mut apart, mut agree) = (0, 0);
    for (i, a) in pairs.iter().enumerate() {
        for b in &pairs[i + 1..] {
            if (a.0 - b.0).abs() >= gap {
                apart += 1;
                agree += usize::from((a.0 < b.0) == (a.1 < b.1));
            }
        }
    }
    let excess: Vec<f64> = aiperf_core::stats::sorted(&pairs.iter().map(|(s, m)| m - s).collect::<Vec<_>>());
    eprintln!(
        "hits per replica {hits:?}; TTFT measured − simulated: min {:.2} ms, p50 {:.2} ms, max {:.2} ms; {agree} of {apart} pairs agree",
        excess[0],
        excess[excess.len() / 2],
        excess[excess.len() - 1]
    );
    assert!(apart > 50, "{apart} pairs");
    assert!(agree * 5 >= apart * 4, "{agree} of {apart} pairs in the simulated order: {pairs:?}");
}

/// A burst on each replica for the step engine: a first request (8 blocks, one output token)
/// alone at time 0, then, while its prompt is computed, requests alike (7 blocks, 6 of them the
/// first one's, and 40 output tokens), 4 on replica 0 and 3 on replica 1. Their output blocks
/// overflow the 12-block capacity: running requests are preempted.
fn burst_lines() -> Vec<String> {
    let row = |t: u64, ids: &[u64], output: u64| {
        format!(
            r#"{{"timestamp": {t}, "input_length": {}, "output_length": {output}, "hash_ids": {ids:?}}}"#,
            ids.len() as u64 * BLOCK
        )
    };
    let first = |r: u64| (0..8).map(|j| 100 * (r + 1) + j).collect::<Vec<u64>>();
    let mut lines = vec![row(0, &first(0), 1), row(10, &first(1), 1)];
    // Runs 2, 4, 6, 8 go to replica 0 and runs 3, 5, 7 to replica 1 (session affinity).
    for k in 0..7u64 {
        let r = k % 2;
        let mut ids = first(r)[..6].to_vec();
        ids.push(10_000 + k);
        lines.push(row(BURST_AT_MS + 10 * k, &ids, 40));
    }
    lines
}

/// When the burst is sent (ms), and the engine's step times: the first request's prompt of 128
/// tokens takes 2 ms + 128 × 20 ms = 2.56 s, so the burst arrives during it.
const BURST_AT_MS: u64 = 600;
const STEP_MS: &str = "2";
const STEP_PER_PROMPT_TOKEN_MS: &str = "20";

/// Replay against simulation in engine steps with preemption: the same prefix-cache queries
/// and hits and the same preemptions per replica, exactly.
///
/// The condition of exactness, beside the first test's (whole token blocks, the completions
/// endpoint, `--turn-history none`): each replica's requests arrive between the same engine
/// steps in both. Here each replica's first request arrives alone (the burst is sent 0.6 s
/// later) and the burst arrives during its first step (2.56 s long); after that nothing arrives,
/// and the steps are a function of the requests alone, whatever the machine's speed. The burst's
/// requests are alike (lengths, shared prefix, one block of their own), so the order in which
/// they reach the mock changes no count.
#[test]
fn replay_in_engine_steps_preempts_and_hits_what_the_simulation_does_per_replica() {
    let preempted = replay_and_simulate_in_steps("step");
    // The burst is built so that both replicas preempt, differently.
    assert!(preempted[0] > 0.0 && preempted[1] > 0.0 && preempted[0] != preempted[1], "{preempted:?}");
}

/// The same in llama.cpp's step order (`--engine step-llamacpp` on both sides): the same
/// queries and hits per replica, exactly, and nothing preempted (a decode token without a block
/// goes on uncached).
#[test]
fn replay_in_llamacpp_steps_hits_what_the_simulation_does_per_replica() {
    assert_eq!(replay_and_simulate_in_steps("step-llamacpp"), [0.0, 0.0]);
}

/// Replays the burst over two mocks in engine steps of `engine` and simulates it: each replica's
/// prefix-cache queries, hits and preemptions equal, every request answered in full. Returns
/// the preemptions per replica.
fn replay_and_simulate_in_steps(engine: &str) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let lines = burst_lines();
    let trace = common::write_trace(dir.path(), &lines);
    let tok = tokenizer();
    let block = BLOCK.to_string();
    let common_args = ["--block-size", &block, "--kv-blocks", "12", "--policy", "lru"];
    let engine = ["--engine", engine, "--max-batch-tokens", "2048", "--prefill-per-token-ms", STEP_PER_PROMPT_TOKEN_MS];
    let mut mock_args = vec!["--tokenizer", &tok, "--itl-ms", STEP_MS];
    mock_args.extend(common_args);
    mock_args.extend(engine);
    let mocks = [Mock::start(&mock_args), Mock::start(&mock_args)];

    let art = dir.path().join("replay");
    replay(&mocks, &trace, &art);
    let arrived: Vec<usize> = mocks.iter().map(|m| m.arrivals().len()).collect();
    assert_eq!(arrived, [5, 4]);

    let (_, simulated) = simulate(
        dir.path(),
        &trace,
        &[&common_args, &engine, &["--decode-fixed-ms", STEP_MS, "--decode-per-running-ms", "0"]],
    );

    let mut preempted = Vec::new();
    for (i, m) in mocks.iter().enumerate() {
        let r = &simulated["replicas"][i];
        let measured = [
            metric(&m.url, "vllm:prefix_cache_queries_total"),
            metric(&m.url, "vllm:prefix_cache_hits_total"),
            metric(&m.url, "vllm:num_preemptions_total"),
        ];
        let expected = [r["input_tokens"].as_f64(), r["cached_tokens"].as_f64(), r["preemptions"].as_f64()];
        assert_eq!(measured.map(Some), expected, "replica {i} (queries, hits, preemptions): {r}");
        assert_eq!(metric(&m.url, "vllm:kv_cache_usage_perc"), 0.0, "nothing runs: nothing is pinned");
        preempted.push(measured[2]);
    }
    // Every request was answered in full.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), lines.len());
    for r in &records {
        let rec = common::record_of(r);
        assert!(rec.error.is_none(), "{r}");
        assert_eq!(rec.usage.completion_tokens, rec.max_tokens, "{r}");
    }
    preempted
}
