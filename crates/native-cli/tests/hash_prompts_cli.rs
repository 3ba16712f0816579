//! The real `aiperf-cli hash-prompts` binary with the SmolLM2 tokenizer fixture.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed test

mod common;

use std::process::Command;

use aiperf_core::trace::prompt_hash::BlockHasher;
use common::tokenizer_path;
use serde_json::{Value, json};

/// Deterministic filler text of `words` words.
fn text(seed: usize, words: usize) -> String {
    const W: [&str; 12] =
        ["alpha", "beta", "cache", "delta", "token", "prefix", "block", "model", "serve", "trace", "hit", "rate"];
    (0..words).map(|i| W[(i * 7 + seed * 13 + i / 5) % W.len()]).collect::<Vec<_>>().join(" ")
}

#[test]
fn prompts_become_chained_block_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let shared = text(0, 1500);
    let rows = [
        json!({"timestamp": 0, "prompt": format!("{shared} {}", text(1, 300)), "output_length": 20, "session_id": "a"}),
        json!({"timestamp": 5.5, "text_input": format!("{shared} {}", text(2, 700))}),
        json!({"messages": [{"role": "user", "content": text(3, 50)}], "output_length": 7}),
        json!({"prompt": ""}),
    ];
    let input = dir.join("prompts.jsonl");
    std::fs::write(&input, rows.iter().map(|r| format!("{r}\n")).collect::<String>()).unwrap();
    let out = dir.join("trace.jsonl");
    let res = Command::new(common::BIN)
        .args(["hash-prompts", input.to_str().unwrap(), "--output-file", out.to_str().unwrap()])
        .args(["--block-size", "64", "--tokenizer", tokenizer_path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let got: Vec<Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(got.len(), 4);

    // Same tokenizer, same hasher: the ids and lengths the CLI must have written.
    let tok = tokenizers::Tokenizer::from_file(tokenizer_path()).unwrap();
    let mut hasher = BlockHasher::new(64);
    let texts = [
        rows[0]["prompt"].as_str().unwrap().to_string(),
        rows[1]["text_input"].as_str().unwrap().to_string(),
        rows[2]["messages"][0]["content"].as_str().unwrap().to_string(),
        String::new(),
    ];
    for (i, t) in texts.iter().enumerate() {
        let ids = tok.encode(t.as_str(), false).unwrap().get_ids().to_vec();
        assert_eq!(got[i]["input_length"], ids.len(), "row {i}");
        let expected = hasher.hash_ids(&ids);
        let written: Vec<u64> =
            got[i]["hash_ids"].as_array().map_or(vec![], |a| a.iter().map(|v| v.as_u64().unwrap()).collect());
        assert_eq!(written, expected, "row {i}");
        if !ids.is_empty() {
            assert_eq!(written.len(), ids.len().div_ceil(64));
        }
    }
    // The shared text gives the first two rows a common run of ids, then they diverge.
    let (a, b) = (got[0]["hash_ids"].as_array().unwrap(), got[1]["hash_ids"].as_array().unwrap());
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    assert!(common >= 10 && common < a.len(), "common prefix of {common} blocks");
    assert_eq!((got[0]["timestamp"].clone(), got[0]["session_id"].clone()), (json!(0), json!("a")));
    assert_eq!(got[1]["timestamp"], json!(5.5));
    assert_eq!(got[2]["output_length"], 7);
}

#[test]
fn a_hugging_face_model_name_is_read_from_the_local_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let snap = dir.join("hub/models--org--tiny/snapshots/rev1");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::copy(tokenizer_path(), snap.join("tokenizer.json")).unwrap();
    let input = dir.join("prompts.jsonl");
    std::fs::write(&input, format!("{}\n", json!({"prompt": text(4, 200)}))).unwrap();
    let hash = |tokenizer: &str, out: &str| {
        let out = dir.join(out);
        let res = Command::new(common::BIN)
            .env("HF_HUB_CACHE", dir.join("hub"))
            .args(["hash-prompts", input.to_str().unwrap(), "--output-file", out.to_str().unwrap()])
            .args(["--block-size", "16", "--tokenizer", tokenizer])
            .output()
            .unwrap();
        assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
        std::fs::read_to_string(out).unwrap()
    };
    assert_eq!(hash("org/tiny", "by-name.jsonl"), hash(tokenizer_path().to_str().unwrap(), "by-path.jsonl"));
}

#[test]
fn a_row_without_a_prompt_is_an_error_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = dir.join("prompts.jsonl");
    std::fs::write(&input, "{\"prompt\": \"hi\"}\n{\"output_length\": 3}\n").unwrap();
    let out = dir.join("trace.jsonl");
    let res = Command::new(common::BIN)
        .args(["hash-prompts", input.to_str().unwrap(), "--output-file", out.to_str().unwrap()])
        .args(["--tokenizer", tokenizer_path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!res.status.success());
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(stderr.contains("prompts.jsonl:2") && stderr.contains("prompt"), "{stderr}");
    assert!(!out.exists());
}
