//! `--tokenizer-revision` (AIPerf's): a tokenizer named by model is read at that Hugging Face
//! revision of the cache, a branch or tag through `refs/`, a commit as its snapshot; a file is
//! read whatever the revision. End to end against `aiperf-cli mock-server` on 127.0.0.1.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// A Hugging Face cache holding `org/model` at two snapshots: `main` → `aaa`, tag `v1` → `bbb`.
fn cache(root: &Path) {
    let repo = root.join("models--org--model");
    let tokenizer = std::fs::read(tokenizer()).unwrap();
    for snap in ["aaa", "bbb"] {
        std::fs::create_dir_all(repo.join("snapshots").join(snap)).unwrap();
        std::fs::write(repo.join("snapshots").join(snap).join("tokenizer.json"), &tokenizer).unwrap();
    }
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join("main"), "aaa").unwrap();
    std::fs::write(repo.join("refs").join("v1"), "bbb").unwrap();
}

/// The summary's `tokenizer` (where it came from) of a run with `extra`.
fn tokenizer_of(url: &str, hub: &Path, trace: &Path, art: &Path, extra: &[&str]) -> String {
    let (t, a) = (trace.to_str().unwrap(), art.to_str().unwrap());
    let args =
        [&["profile", "-u", url, "--input-file", t, "--artifact-dir", a, "--concurrency", "1"][..], extra].concat();
    let child = Command::new(BIN)
        .args(&args)
        .env("HF_HUB_CACHE", hub)
        .env("HF_HUB_OFFLINE", "1")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_limited(child, LIMIT);
    ok(&out);
    summary(art)["tokenizer"].as_str().unwrap().to_owned()
}

#[test]
fn the_revision_picks_the_snapshot_the_tokenizer_is_read_from() {
    let mock = Mock::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let (dir, trace, _) = scratch(&rows(2, 20, 2));
    let hub = dir.path().join("hub");
    cache(&hub);
    let snapshot = |s: &str| format!("snapshots{}{s}", std::path::MAIN_SEPARATOR);
    let runs: [(&[&str], &str); 5] = [
        (&["-m", "m", "--tokenizer", "org/model"], "aaa"),
        (&["-m", "m", "--tokenizer", "org/model", "--tokenizer-revision", "main"], "aaa"),
        (&["-m", "m", "--tokenizer", "org/model", "--tokenizer-revision", "v1"], "bbb"),
        (&["-m", "m", "--tokenizer", "org/model", "--tokenizer-revision", "bbb"], "bbb"),
        // Without --tokenizer, the model's own tokenizer at the revision.
        (&["-m", "org/model", "--tokenizer-revision", "v1"], "bbb"),
    ];
    for (i, (extra, want)) in runs.iter().enumerate() {
        let art = dir.path().join(format!("art{i}"));
        let got = tokenizer_of(&mock.url, &hub, &trace, &art, extra);
        assert!(got.starts_with("org/model ("), "{got}");
        assert!(got.contains(&snapshot(want)), "{extra:?}: {got}");
    }
    // A file is read as it is, whatever the revision.
    let art = dir.path().join("file");
    let got = tokenizer_of(
        &mock.url,
        &hub,
        &trace,
        &art,
        &["-m", "m", "--tokenizer", &tokenizer(), "--tokenizer-revision", "v9"],
    );
    assert_eq!(got, tokenizer());
}
