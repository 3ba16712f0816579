//! End-to-end replay against a real llama.cpp server (`scripts/test-real-server.sh` starts one and
//! sets `AIPERF_REAL_SERVER_URL`; without it this test does nothing).
//!
//! It replays rows of `conversation_trace.jsonl` scaled down to fit the server's context (lengths
//! and block size divided by 32, so the prefix-sharing structure is kept): twelve conversation
//! turns that continue an earlier request of the trace, each sent shortly after that earlier
//! request, with an unrelated request in between. Every request must succeed, output lengths must
//! match the trace with `ignore_eos`, and the server's `cached_tokens` must be high exactly where
//! the trace shares prefixes.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// Scale factor of lengths; blocks shrink by the same factor.
const SCALE: u64 = 32;
const PAIRS: usize = 12;

/// (earlier row, continuing row) pairs and unrelated rows, from the start of the trace.
fn pick(rows: &[Value]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let ids = |i: usize| -> Vec<u64> {
        rows[i]["hash_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
    };
    let isl = |i: usize| rows[i]["input_length"].as_u64().unwrap();
    let mut first_row: HashMap<u64, usize> = HashMap::new();
    let (mut pairs, mut unrelated, mut used) = (Vec::new(), Vec::new(), std::collections::HashSet::new());
    for i in 0..rows.len() {
        let h = ids(i);
        let k = h.iter().take_while(|id| first_row.contains_key(id)).count();
        if k >= 3 && (k as u64 * 512) * 10 >= isl(i) * 6 && isl(i) <= 40_000 {
            let a = first_row[&h[k - 1]];
            if ids(a).starts_with(&h[..k]) && isl(a) <= 40_000 && !used.contains(&a) && pairs.len() < PAIRS {
                used.insert(a);
                used.insert(i);
                pairs.push((a, i));
            }
        } else if k <= 1 && isl(i) <= 20_000 && unrelated.len() < PAIRS && i > 100 {
            unrelated.push(i);
        }
        for id in h {
            first_row.entry(id).or_insert(i);
        }
        if pairs.len() == PAIRS && unrelated.len() == PAIRS {
            break;
        }
    }
    (pairs, unrelated)
}

#[test]
fn replays_a_conversation_slice_against_llama_cpp() {
    let Ok(url) = std::env::var("AIPERF_REAL_SERVER_URL") else {
        eprintln!("AIPERF_REAL_SERVER_URL not set: skipping (run scripts/test-real-server.sh)");
        return;
    };
    let model = std::env::var("AIPERF_REAL_SERVER_MODEL").unwrap_or_else(|_| "tiny-random".into());
    let text = std::fs::read_to_string(root().join("tests/fixtures/traces/conversation_trace.jsonl")).unwrap();
    let rows: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (pairs, unrelated) = pick(&rows);
    assert_eq!((pairs.len(), unrelated.len()), (PAIRS, PAIRS));
    let scaled = |i: usize, ts: u64| {
        let r = &rows[i];
        let isl = r["input_length"].as_u64().unwrap().div_ceil(SCALE);
        let osl = r["output_length"].as_u64().unwrap().clamp(1, 16);
        json!({"timestamp": ts, "input_length": isl, "output_length": osl, "hash_ids": r["hash_ids"]}).to_string()
    };
    let mut lines = Vec::new();
    for (p, (&(a, c), &u)) in pairs.iter().zip(&unrelated).enumerate() {
        let t = p as u64 * 900;
        lines.push(scaled(a, t));
        lines.push(scaled(u, t + 100));
        lines.push(scaled(c, t + 500));
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("art");
    let out = profile(
        &[
            "-m",
            &model,
            "-u",
            &url,
            "--streaming",
            "--tokenizer",
            &tokenizer(),
            "--input-file",
            trace.to_str().unwrap(),
            "--artifact-dir",
            art.to_str().unwrap(),
            "--isl-block-size",
            &(512 / SCALE).to_string(),
            "--extra-inputs",
            "ignore_eos:true",
            "--request-timeout-seconds",
            "120",
        ],
        Duration::from_secs(600),
    );
    ok(&out);
    println!("{}", String::from_utf8_lossy(&out.stdout));
    let s = summary(&art);
    assert_eq!(s["error_request_count"]["avg"], 0.0, "errors: {}", s["error_summary"]);
    assert_eq!(s["request_count"]["avg"], (3 * PAIRS) as f64);
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let (mut deep_cached, mut deep_expected, mut deep_n) = (0u64, 0u64, 0);
    let (mut shallow_ratio, mut shallow_n) = (0.0, 0);
    let mut deep_ratio = 0.0;
    for r in &records {
        let m = &r["metadata"];
        assert_eq!(m["usage"]["completion_tokens"], m["max_tokens"], "output length differs: {m}");
        let isl = m["input_tokens"].as_u64().unwrap() as f64;
        let expected = m["expected_cached_tokens"].as_u64().unwrap_or(0);
        let cached = m["usage"]["cached_tokens"].as_u64().unwrap_or(0);
        if expected as f64 >= 0.5 * isl {
            deep_cached += cached;
            deep_expected += expected;
            deep_ratio += cached as f64 / isl;
            deep_n += 1;
        } else if (expected as f64) < 0.2 * isl {
            shallow_ratio += cached as f64 / isl;
            shallow_n += 1;
        }
    }
    println!("deep-prefix rows: {deep_n}, cached {deep_cached} of {deep_expected} expected; shallow rows: {shallow_n}");
    assert!(deep_n >= 5 && shallow_n >= 5, "window lacks contrast: {deep_n} deep, {shallow_n} shallow");
    assert!(
        deep_cached as f64 >= 0.5 * deep_expected as f64,
        "server cached {deep_cached} of {deep_expected} shareable tokens"
    );
    let (deep_mean, shallow_mean) = (deep_ratio / deep_n as f64, shallow_ratio / shallow_n as f64);
    assert!(
        deep_mean > 0.4 && shallow_mean < 0.3,
        "cache hit ratio: deep-prefix rows {deep_mean:.2}, others {shallow_mean:.2}"
    );
}
