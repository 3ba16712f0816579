//! Helpers of the profile tests: a mock server child process on 127.0.0.1 and the real CLI.
#![allow(dead_code, clippy::unwrap_used)]

mod aiperf;
pub mod baseten;
mod mock;
#[allow(unused_imports)]
pub use aiperf::{aiperf, aiperf_venv, python};
#[allow(unused_imports)]
pub use mock::{Mock, read_jsonl};

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use aiperf_core::results::record::RequestRecord;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_aiperf-cli");

/// `aiperf-cli ARGS…`, run to its end.
pub fn cli<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's test fixtures folder.
pub fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

/// A file or folder under the test fixtures.
pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

/// The real server of the opt-in tests: `AIPERF_REAL_SERVER_URL` (`how` says how to start one)
/// and `AIPERF_REAL_SERVER_MODEL`, else `default_model`.
pub fn real_server(how: &str, default_model: &str) -> (String, String) {
    let url =
        std::env::var("AIPERF_REAL_SERVER_URL").unwrap_or_else(|_| panic!("AIPERF_REAL_SERVER_URL is not set: {how}"));
    (url, std::env::var("AIPERF_REAL_SERVER_MODEL").unwrap_or_else(|_| default_model.into()))
}

/// The test tokenizer (SmolLM2-135M's `tokenizer.json`).
pub fn tokenizer_path() -> PathBuf {
    fixture("tokenizers/smollm2-135m/tokenizer.json")
}

pub fn tokenizer() -> String {
    tokenizer_path().display().to_string()
}

impl Mock {
    /// The test binary's mock server, stopping by itself after 300 s.
    pub fn start(args: &[&str]) -> Mock {
        Mock::spawn(Path::new(BIN), 300, args)
    }
}

/// `n` rows without times, the first of `first_input` prompt tokens and each next one token
/// longer, of `output` tokens each.
pub fn rows(n: u64, first_input: u64, output: u64) -> Vec<String> {
    (0..n).map(|i| format!(r#"{{"input_length": {}, "output_length": {output}}}"#, first_input + i)).collect()
}

/// A temporary folder holding a trace of `lines` (`trace.jsonl`), and the path of an artifact
/// folder in it (`art`, not created).
pub fn scratch(lines: &[String]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    scratch_named(lines, "art")
}

/// [`scratch`] with the artifact folder's name given (`art`).
pub fn scratch_named(lines: &[String], art: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), lines);
    let art = dir.path().join(art);
    (dir, trace, art)
}

/// Writes trace lines to a file in `dir`.
/// An AIPerf multi_turn file of `sessions` conversations `s0`, `s1`, … of `turns` turns each
/// (texts `"sS tT"`, 3 output tokens a turn).
pub fn multi_turn_lines(sessions: u32, turns: u32) -> Vec<String> {
    (0..sessions)
        .map(|s| {
            let turns: Vec<String> =
                (0..turns).map(|t| format!(r#"{{"text": "s{s} t{t}", "output_length": 3}}"#)).collect();
            format!(r#"{{"session_id": "s{s}", "turns": [{}]}}"#, turns.join(", "))
        })
        .collect()
}

pub fn write_trace(dir: &Path, lines: &[String]) -> PathBuf {
    let p = dir.join("trace.jsonl");
    let mut f = std::fs::File::create(&p).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    p
}

/// Runs `aiperf-cli profile` with a time limit; kills it (by PID) past the limit.
pub fn profile(args: &[&str], limit: Duration) -> Output {
    let child = Command::new(BIN)
        .arg("profile")
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, limit)
}

/// The arguments of `profile` (after the command's name) against `url` with model `m`, the test
/// tokenizer, `trace` and `art`.
pub fn profile_args(url: &str, trace: &Path, art: &Path) -> Vec<String> {
    let (trace, art) = (trace.to_str().unwrap(), art.to_str().unwrap());
    let tok = tokenizer();
    ["-m", "m", "-u", url, "--tokenizer", &tok, "--input-file", trace, "--artifact-dir", art]
        .map(str::to_owned)
        .to_vec()
}

/// `profile` against `url` with the test tokenizer, `trace` and `art`, then `extra`.
pub fn profile_on(url: &str, trace: &Path, art: &Path, extra: &[&str], limit: Duration) -> Output {
    let mut args = profile_args(url, trace, art);
    args.extend(extra.iter().map(|a| a.to_string()));
    profile(&args.iter().map(String::as_str).collect::<Vec<_>>(), limit)
}

/// `profile` against the real server `url` serving `model` (see [`real_server`]), each answer as
/// long as its row asks (`ignore_eos`), with the test tokenizer, `trace` and `art`, then `extra`.
pub fn profile_real(url: &str, model: &str, trace: &Path, art: &Path, extra: &[&str], limit: Duration) -> Output {
    let (trace, art, tok) = (trace.to_str().unwrap(), art.to_str().unwrap(), tokenizer());
    let mut args = vec!["-m", model, "-u", url, "--extra-inputs", "ignore_eos:true", "--tokenizer", &tok];
    args.extend(["--input-file", trace, "--artifact-dir", art]);
    args.extend_from_slice(extra);
    profile(&args, limit)
}

/// [`profile_on`] with `--streaming`.
pub fn profile_streaming(url: &str, trace: &Path, art: &Path, extra: &[&str], limit: Duration) -> Output {
    profile_on(url, trace, art, &[&["--streaming"], extra].concat(), limit)
}

pub fn wait_limited(mut child: Child, limit: Duration) -> Output {
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "aiperf-cli did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `done` until it holds; panics naming `what` past `limit` (a guard against a hang, not a
/// timing check).
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "aiperf-cli failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A command's standard error, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A command's standard output, as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON document at `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// The summary export of an artifact folder.
pub fn summary(dir: &Path) -> Value {
    read_json(&dir.join("profile_export_aiperf.json"))
}

/// A line of `profile_export.jsonl` read as the tool reads it (the core's reader).
pub fn record_of(line: &Value) -> RequestRecord {
    let raw = serde_json::to_vec(line).unwrap();
    let mut rec = RequestRecord::default();
    assert!(aiperf_core::results::line::read_line(&raw, &mut rec).unwrap(), "not a record: {line}");
    rec
}

/// What holds for the times of every record of a run that was not aborted, on any machine: nothing
/// was sent before its scheduled time nor before it was handed over, the response's times are in
/// order, and the record's send lateness is its sent minus its scheduled time.
pub fn assert_times_consistent(records: &[Value]) {
    for r in records {
        let m = &r["metadata"];
        let rec = record_of(r);
        let (scheduled, sent, end) = (rec.scheduled_ns, rec.sent_ns, rec.end_ns);
        assert!(sent >= scheduled, "sent before its scheduled time: {m}");
        if let Some(d) = rec.dispatched_ns {
            assert!(d <= sent, "sent before it was handed over: {m}");
        }
        let mut times: Vec<u64> = [Some(sent), rec.first_byte_ns].into_iter().flatten().chain(rec.chunk_ns).collect();
        times.push(end);
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "times out of order: {m}");
        if let Some(late) = r["metrics"]["send_lateness"]["value"].as_f64() {
            assert_eq!(late, (sent - scheduled) as f64 / 1e6, "{r}");
        }
    }
}

/// Arrival times (ms, relative to the first) of the mock's log.
pub fn arrival_ms(arrivals: &[Value]) -> Vec<f64> {
    let ns: Vec<u128> = arrivals.iter().map(|a| a["arrival_ns"].as_str().unwrap().parse().unwrap()).collect();
    let first = ns.iter().copied().min().unwrap_or(0);
    ns.iter().map(|t| (t - first) as f64 / 1e6).collect()
}
