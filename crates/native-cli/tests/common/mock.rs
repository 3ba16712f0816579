//! The `aiperf-cli mock-server` child process used by the tests and by the replay benchmark
//! (`examples/replay_bench.rs` includes this file with `#[path]`): one copy of the wrapper.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use aiperf_core::results::line::read_line;
use aiperf_core::results::record::RequestRecord;
use serde_json::Value;

/// A mock server child on 127.0.0.1, killed (by its own PID) when dropped.
pub struct Mock {
    pub child: Child,
    pub url: String,
    /// Its `--arrivals-file`: one JSON line per request received.
    pub arrivals: PathBuf,
    _dir: tempfile::TempDir,
}

impl Mock {
    /// Starts `bin mock-server` on a free port, stopping by itself after `exit_after_seconds`.
    pub fn spawn(bin: &Path, exit_after_seconds: u32, args: &[&str]) -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let arrivals = dir.path().join("arrivals.jsonl");
        let mut child = Command::new(bin)
            .args(["mock-server", "--port", "0", "--exit-after-seconds", &exit_after_seconds.to_string()])
            .arg("--arrivals-file")
            .arg(&arrivals)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the mock server {}: {e}", bin.display()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        // `http://` or, with `--tls-cert`, `https://`.
        let (scheme, addr) = line.trim().rsplit_once("://").unwrap();
        let scheme = if scheme.ends_with("https") { "https" } else { "http" };
        assert!(addr.starts_with("127.0.0.1:"), "unexpected mock output {line:?}");
        Mock { child, url: format!("{scheme}://{addr}"), arrivals, _dir: dir }
    }

    /// One JSON object per request the server received.
    pub fn arrivals(&self) -> Vec<Value> {
        read_jsonl(&self.arrivals)
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON objects of a JSONL file (none if it does not exist); a record line of ours gets back
/// in its metadata what the line leaves to its reader (`scheduled_ns`, `first_byte_ns`, `end_ns`,
/// `usage`), as the reader rebuilds them.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            complete_record(&mut v, l);
            v
        })
        .collect()
}

/// Puts into a record line's metadata the fields the line reader rebuilds.
fn complete_record(v: &mut Value, raw: &str) {
    let mut rec = RequestRecord::default();
    let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut).filter(|m| m.contains_key("sent_ns")) else {
        return;
    };
    if !matches!(read_line(raw.as_bytes(), &mut rec), Ok(true)) {
        return;
    }
    m.entry("scheduled_ns").or_insert(rec.scheduled_ns.into());
    m.entry("end_ns").or_insert(rec.end_ns.into());
    if let Some(t) = rec.first_byte_ns {
        m.entry("first_byte_ns").or_insert(t.into());
    }
    if !rec.usage.is_empty() {
        m.entry("usage").or_insert(serde_json::to_value(rec.usage).unwrap());
    }
}
