//! Hostile use of the real binary outside `profile` (issue 10): outputs that are devices, FIFOs,
//! links, standard output or the input itself; inputs that never end a line (a 2 GiB gzip bomb),
//! use CR-only line endings or carry a byte order mark; huge prompts; a mock server starved of
//! file descriptors, kept busy by idle connections or asked for a billion tokens.
//!
//! Device nodes are only ever created with `mknod` inside a temporary folder (and only when running
//! as root), so the machine's own `/dev` is never at risk even if the code under test is wrong.
//! Peak memory is measured with GNU time (`/usr/bin/time -v`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Mock, stderr};

/// Two rows in the writer's compact form (what `synthesize-trace` with no options writes back).
const TRACE: &str = "{\"timestamp\":0,\"input_length\":1024,\"output_length\":8,\"hash_ids\":[0,1]}\n\
                     {\"timestamp\":50,\"input_length\":700,\"output_length\":4,\"hash_ids\":[0,2]}\n";

fn cli(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(BIN).args(args).stdin(Stdio::null()).output().unwrap()
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

fn trace_in(dir: &Path) -> PathBuf {
    let p = dir.join("trace.jsonl");
    fs::write(&p, TRACE).unwrap();
    p
}

/// `synthesize-trace INPUT --output-file OUT` plus `extra`.
fn synthesize(input: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![os("synthesize-trace"), input.as_os_str(), os("--output-file"), out.as_os_str()];
    args.extend(extra.iter().map(|a| os(a)));
    cli(&args)
}

/// A temporary folder holding [`TRACE`] and its path, when running as root (mknod needs it).
fn root_dir_with_trace() -> Option<(tempfile::TempDir, PathBuf)> {
    let root = fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false);
    if !root {
        eprintln!("skipped: mknod needs root");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = trace_in(dir.path());
    Some((dir, input))
}

/// A character device node `name` (major, minor) made with mknod inside `dir`.
fn mknod(dir: &Path, name: &str, major: u32, minor: u32) -> PathBuf {
    let p = dir.join(name);
    let ok = Command::new("mknod").arg(&p).args(["c", &major.to_string(), &minor.to_string()]).status().unwrap();
    assert!(ok.success(), "mknod {} failed", p.display());
    p
}

/// Runs the binary under GNU time; returns its output (time's report removed) and peak RSS (kB).
fn measured(args: &[&std::ffi::OsStr]) -> (Output, u64) {
    let mut out = Command::new("/usr/bin/time").arg("-v").arg(BIN).args(args).stdin(Stdio::null()).output().unwrap();
    let text = stderr(&out);
    let line = text.lines().find(|l| l.contains("Maximum resident set size")).expect("GNU time's report");
    let kb = line.rsplit(':').next().unwrap().trim().parse().unwrap();
    let own = text.split("\tCommand being timed").next().unwrap_or("").to_owned();
    out.stderr = own.into_bytes();
    (out, kb)
}

// ---- output paths ----

#[test]
fn a_character_device_output_is_written_through_not_replaced() {
    let Some((dir, input)) = root_dir_with_trace() else { return };
    let null = mknod(dir.path(), "null", 1, 3);
    for args in [
        vec![os("analyze-trace"), input.as_os_str(), os("--output-file"), null.as_os_str()],
        vec![os("synthesize-trace"), input.as_os_str(), os("--output-file"), null.as_os_str()],
    ] {
        let out = cli(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(fs::symlink_metadata(&null).unwrap().file_type().is_char_device(), "the device node was replaced");
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left behind");
}

#[test]
fn a_failing_output_names_its_path_and_leaves_the_other_output_whole() {
    let Some((dir, input)) = root_dir_with_trace() else { return };
    // /dev/full's numbers: every write fails with "no space left on device".
    let full = mknod(dir.path(), "full", 1, 7);
    let out_file = dir.path().join("out.jsonl");
    let out = synthesize(&input, &out_file, &["--fidelity-file", full.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(&format!("cannot write {}", full.display())) && !err.contains(".full."), "{err}");
    assert_eq!(fs::read_to_string(&out_file).unwrap().lines().count(), 2, "the trace output is whole");
    assert!(fs::symlink_metadata(&full).unwrap().file_type().is_char_device());
}

#[test]
fn a_fifo_output_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace_in(dir.path());
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    let out = synthesize(&input, &fifo, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(reader.join().unwrap(), TRACE);
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn a_symlink_output_replaces_its_target_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace_in(dir.path());
    fs::create_dir(dir.path().join("results")).unwrap();
    let target = dir.path().join("results/analysis.json");
    fs::write(&target, "old").unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink("results/analysis.json", &link).unwrap();
    let out = cli(&[os("analyze-trace"), input.as_os_str(), os("--output-file"), link.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&target).unwrap()).unwrap();
    assert!(json.is_object());
}

#[test]
fn dash_and_a_link_to_the_own_stdout_write_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace_in(dir.path());
    // A link to /proc/self/fd/1 is what /dev/stdout is (made here so /dev/stdout is never at risk).
    let stdout_link = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &stdout_link).unwrap();
    for out_path in [Path::new("-"), stdout_link.as_path()] {
        let out = synthesize(&input, out_path, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), TRACE, "only the trace on stdout");
        assert!(stderr(&out).contains("Synthesized 2 rows"), "the report goes to stderr");
        assert!(fs::symlink_metadata(&stdout_link).unwrap().file_type().is_symlink());
    }
    // `-` as the input is standard input.
    let mut child = Command::new(BIN)
        .args(["analyze-trace", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(TRACE.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn an_output_that_is_the_input_is_refused_through_hard_and_symbolic_links() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace_in(dir.path());
    let hard = dir.path().join("hard.jsonl");
    fs::hard_link(&input, &hard).unwrap();
    let soft = dir.path().join("soft.jsonl");
    std::os::unix::fs::symlink(&input, &soft).unwrap();
    let tokenizer = common::tokenizer();
    for same in [&input, &hard, &soft] {
        let s = same.as_os_str();
        let runs = [
            cli(&[os("synthesize-trace"), input.as_os_str(), os("--output-file"), s]),
            cli(&[
                os("synthesize-trace"),
                input.as_os_str(),
                os("--output-file"),
                dir.path().join("o.jsonl").as_os_str(),
                os("--fidelity-file"),
                s,
            ]),
            cli(&[os("analyze-trace"), input.as_os_str(), os("--output-file"), s]),
            cli(&[os("hash-prompts"), input.as_os_str(), os("--tokenizer"), os(&tokenizer), os("--output-file"), s]),
        ];
        for out in runs {
            let err = stderr(&out);
            assert!(!out.status.success());
            assert!(
                err.contains("refusing to write")
                    && err.contains(&same.display().to_string())
                    && err.contains(&input.display().to_string()),
                "{err}"
            );
            assert_eq!(fs::read_to_string(&input).unwrap(), TRACE, "the input is untouched");
        }
    }
    assert!(!dir.path().join("o.jsonl").exists(), "nothing written once refused");
}

// ---- bounded memory on hostile inputs ----

/// A gzip stream of `total` zero bytes (no line end), built from repeated gzip members of 16 MiB.
fn gzip_bomb(path: &Path, total: u64) {
    const MEMBER: usize = 16 << 20;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![0u8; MEMBER]).unwrap();
    let member = enc.finish().unwrap();
    let mut f = std::io::BufWriter::new(fs::File::create(path).unwrap());
    for _ in 0..total / MEMBER as u64 {
        f.write_all(&member).unwrap();
    }
    f.flush().unwrap();
}

#[test]
fn a_newline_less_gzip_bomb_stops_at_the_line_limit_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.jsonl.gz");
    gzip_bomb(&bomb, 2 << 30);
    assert!(fs::metadata(&bomb).unwrap().len() < 8 << 20, "the bomb is small on disk");
    let out_file = dir.path().join("out.jsonl");
    for command in ["analyze-trace", "synthesize-trace"] {
        let mut args = vec![os(command), bomb.as_os_str()];
        if command == "synthesize-trace" {
            args.extend([os("--output-file"), out_file.as_os_str()]);
        }
        let (out, peak_kb) = measured(&args);
        let err = stderr(&out);
        assert!(!out.status.success());
        assert!(
            err.contains(&format!("{}:1: the line is longer than 67108864 bytes", bomb.display())),
            "{command}: {err}"
        );
        // The 64 MiB line buffer plus the decompressor and the program: far from 2 GiB.
        assert!(peak_kb < 200_000, "{command}: peak RSS {peak_kb} kB");
        assert!(!out_file.exists());
        eprintln!("{command}: 2 GiB newline-less gzip bomb → error, peak RSS {peak_kb} kB");
    }
    // A smaller limit is a flag away.
    let (out, peak_kb) = measured(&[os("analyze-trace"), bomb.as_os_str(), os("--max-line-bytes"), os("1000000")]);
    assert!(stderr(&out).contains(":1: the line is longer than 1000000 bytes"), "{}", stderr(&out));
    assert!(peak_kb < 60_000, "peak RSS {peak_kb} kB");
}

#[test]
fn cr_only_line_endings_and_a_byte_order_mark_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let cr = dir.path().join("cr.jsonl");
    fs::write(&cr, TRACE.replace('\n', "\r")).unwrap();
    let out = cli(&[os("analyze-trace"), cr.as_os_str()]);
    let err = stderr(&out);
    assert!(!out.status.success() && err.contains(&format!("{}:1:", cr.display())) && err.contains("CR-only"), "{err}");

    let bom = dir.path().join("bom.jsonl");
    fs::write(&bom, format!("\u{feff}{TRACE}")).unwrap();
    let out = cli(&[os("analyze-trace"), bom.as_os_str()]);
    assert!(out.status.success(), "a leading BOM is skipped: {}", stderr(&out));
    fs::write(&bom, format!("{TRACE}\u{feff}{TRACE}")).unwrap();
    let err = stderr(&cli(&[os("analyze-trace"), bom.as_os_str()]));
    assert!(err.contains(&format!("{}:3: starts with a UTF-8 byte order mark", bom.display())), "{err}");
}

#[test]
fn hash_prompts_bounds_prompt_size_and_names_the_line_of_bad_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let tok = common::tokenizer();
    let out_file = dir.path().join("out.jsonl");
    let run = |input: &Path, extra: &[&str]| {
        let mut args = vec![
            os("hash-prompts"),
            input.as_os_str(),
            os("--tokenizer"),
            os(&tok),
            os("--output-file"),
            out_file.as_os_str(),
        ];
        args.extend(extra.iter().map(|a| os(a)));
        measured(&args)
    };
    let big = dir.path().join("big.jsonl");
    let words = "lorem ipsum dolor sit amet ".repeat(200_000); // 5.4 MB
    fs::write(&big, format!("{{\"prompt\": \"hi\"}}\n{{\"prompt\": \"{words}\"}}\n")).unwrap();
    let (out, peak_kb) = run(&big, &[]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:2: the prompt holds 5400000 bytes, more than --max-prompt-bytes", big.display())),
        "{err}"
    );
    assert!(peak_kb < 300_000, "peak RSS {peak_kb} kB");
    assert!(!out_file.exists(), "no output on error");
    // Allowed, it is tokenized in pieces: ~650 MB when tokenized at once.
    let (out, peak_kb) = run(&big, &["--max-prompt-bytes", "6000000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(peak_kb < 250_000, "peak RSS {peak_kb} kB for a 5.4 MB prompt");
    eprintln!("hash-prompts: 5.4 MB prompt, peak RSS {peak_kb} kB");

    let long_line = dir.path().join("long.jsonl");
    fs::write(&long_line, format!("{{\"prompt\": \"{words}\"}}\n")).unwrap();
    let (out, _) = run(&long_line, &["--max-line-bytes", "1000"]);
    assert!(stderr(&out).contains(&format!("{}:1: the line is longer than 1000 bytes", long_line.display())));

    let bad = dir.path().join("bad.jsonl");
    fs::write(&bad, b"{\"prompt\": \"ok\"}\n\n{\"prompt\": \"caf\xe9\"}\n").unwrap();
    let (out, _) = run(&bad, &[]);
    assert!(stderr(&out).contains(&format!("{}:3: not valid UTF-8 (byte 16)", bad.display())), "{}", stderr(&out));
}

// ---- mock server ----

fn peak_rss_kb(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// One HTTP/1.1 request on a fresh connection; the whole response as text (the server closes).
fn http(url: &str, body: &str) -> String {
    request(url, "POST /v1/completions", body)
}

fn request(url: &str, line: &str, body: &str) -> String {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{line} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn mock_server_backs_off_when_out_of_file_descriptors() {
    // A mock limited to 64 descriptors, then 100 connections held open: accept fails with EMFILE.
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("limited.sh");
    fs::write(&wrapper, format!("#!/bin/sh\nulimit -n 64\nexec '{BIN}' \"$@\"\n")).unwrap();
    fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mock = Mock::spawn(&wrapper, 300, &[]);
    let addr: std::net::SocketAddr = mock.url.trim_start_matches("http://").parse().unwrap();
    let connect = || TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok();
    let t0 = Instant::now();
    let held: Vec<TcpStream> = (0..100).filter_map(|_| connect()).collect();
    assert!(held.len() > 64, "the listen backlog takes the connections the server cannot accept");
    std::thread::sleep(Duration::from_secs(2));
    drop(held);
    let reply = http(&mock.url, "{\"prompt\": \"hi\", \"max_tokens\": 3}");
    assert!(reply.starts_with("HTTP/1.1 200"), "serves again once descriptors are free: {reply}");
    // Each failed accept is followed by a pause of 100 ms, so however fast or busy this machine,
    // no more than one per 100 ms elapsed; a busy loop fails thousands of times a second.
    let metrics = request(&mock.url, "GET /metrics", "");
    let elapsed = t0.elapsed();
    let failed: u128 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("mock_accept_errors_total"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no mock_accept_errors_total in {metrics}"));
    assert!(failed >= 1, "accept never failed: the test did not exhaust the descriptors");
    let most = elapsed.as_millis() / 100 + 2;
    assert!(failed <= most, "{failed} failed accepts in {elapsed:?} while out of descriptors (at most {most})");
}

#[test]
fn mock_server_closes_idle_keep_alive_connections() {
    // Idle for 0.5 s: closed by the server. The 60 s read timeout only catches a server that
    // never closes (it would run until its --exit-after-seconds, 300 s).
    let mock = Mock::start(&["--idle-timeout-seconds", "0.5"]);
    let addr = mock.url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = "{\"prompt\": \"hi\", \"max_tokens\": 2}";
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("the idle connection was not closed: {e}"),
        }
    }
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));
    // A connection that never sends a request is closed too.
    let mut silent = TcpStream::connect(addr).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut rest = Vec::new();
    silent.read_to_end(&mut rest).expect("closed by the server, not by the read timeout");
}

#[test]
fn mock_server_refuses_huge_max_tokens_and_streams_big_answers_in_bounded_memory() {
    let mock = Mock::start(&[]);
    let reply = http(&mock.url, "{\"prompt\": \"hi\", \"max_tokens\": 1000000000, \"stream\": true}");
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    assert!(reply.contains("max_tokens 1000000000 is more than this server allows (1000000"), "{reply}");
    // The largest answer allowed, streamed without a pause between tokens (about 100 MB of SSE).
    let addr = mock.url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    let body = "{\"prompt\": \"hi\", \"max_tokens\": 1000000, \"stream\": true}";
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut total = 0usize;
    let mut chunk = vec![0u8; 1 << 16];
    let mut tail = Vec::new();
    loop {
        let n = s.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        total += n;
        // The last few hundred bytes, across reads: the end of the stream may arrive split.
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > 512 {
            tail.drain(..tail.len() - 512);
        }
    }
    assert!(total > 50_000_000 && String::from_utf8_lossy(&tail).contains("[DONE]"), "{total} bytes");
    let peak = peak_rss_kb(mock.child.id());
    assert!(peak < 100_000, "mock peak RSS {peak} kB for a {total}-byte stream");
    eprintln!("mock: {total}-byte stream, peak RSS {peak} kB");
}

// ---- messages ----

#[test]
fn generation_errors_name_the_real_cause() {
    let dir = tempfile::tempdir().unwrap();
    let input = trace_in(dir.path());
    let out_file = dir.path().join("out.jsonl");
    let err = stderr(&synthesize(&input, &out_file, &["--num-requests", "1e10"]));
    assert!(err.contains("--num-requests") && err.contains("from 1 to 268435456") && err.contains("1e10"), "{err}");
    assert!(!err.contains("multipliers"), "{err}");
    let out = synthesize(&input, &out_file, &["--num-requests", "1e1"]);
    assert!(out.status.success(), "1e1 is ten requests: {}", stderr(&out));
    assert_eq!(fs::read_to_string(&out_file).unwrap().lines().count(), 10);

    let no_ids = dir.path().join("no_ids.jsonl");
    fs::write(&no_ids, "{\"timestamp\":0,\"input_length\":10}\n{\"timestamp\":5,\"input_length\":20}\n").unwrap();
    let err = stderr(&synthesize(&no_ids, &out_file, &["--num-requests", "5"]));
    assert!(err.contains("2 row(s) with input_length but none with hash_ids"), "{err}");

    let big = dir.path().join("big.jsonl");
    fs::write(&big, "{\"input_length\": 1, \"output_length\": 99999999999999999999}\n").unwrap();
    let err = stderr(&cli(&[os("analyze-trace"), big.as_os_str()]));
    assert!(
        err.contains(":1: field 'output_length': expected a non-negative integer, found 99999999999999999999"),
        "{err}"
    );
}

#[test]
fn mock_server_options_out_of_range_are_named() {
    for (flag, value, expected) in [
        ("--ttft-ms", "1e300", "a number of milliseconds from 0 (included) to 86400000"),
        ("--itl-ms", "NaN", "a number of milliseconds"),
        ("--error-rate", "2", "a fraction from 0 (included) to 1"),
        ("--exit-after-seconds", "-1", "accepted is a number of seconds ≥ 0 and at most 2592000 (30 days)"),
        ("--exit-after-seconds", "2592001", "at most 2592000 (30 days)"),
        ("--idle-timeout-seconds", "0", "accepted is a number of seconds > 0 and at most 2592000 (30 days)"),
    ] {
        let out = cli(&[os("mock-server"), os("--port"), os("0"), os(&format!("{flag}={value}"))]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{flag} {value} accepted");
        assert!(err.contains(flag) && err.contains(value) && err.contains(expected), "{err}");
    }
}
