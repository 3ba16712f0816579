//! `profile` against hostile servers: an endless body, an endless SSE line, one 64 MiB event, a
//! stall, and a 500 that echoes the request headers. Each ends its request with an error record,
//! the run ends, the client's peak memory stays under the documented bound (RELIABILITY.md:
//! 512 MB), and no secret reaches any output. Peak memory is measured with GNU time.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{BIN, read_jsonl, rows, summary, tokenizer, write_trace};

const SECRET: &str = "sk-hostile-SECRET-42";
/// The documented bound on the client's peak memory against a hostile server.
const RSS_BOUND_KB: u64 = 512 * 1024;

#[derive(Clone, Copy, Debug)]
enum Mode {
    EndlessBody,
    EndlessLine,
    BigEvent,
    Stall,
    EchoHeaders,
}

/// Reads one HTTP request (headers and a Content-Length body); returns the header text.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut r = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(head)
}

fn chunk(s: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    write!(s, "{:x}\r\n", data.len())?;
    s.write_all(data)?;
    s.write_all(b"\r\n")
}

fn serve(mut s: TcpStream, mode: Mode) -> std::io::Result<()> {
    while let Some(head) = read_request(&mut s) {
        let ok = |ct: &str| format!("HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ntransfer-encoding: chunked\r\n\r\n");
        match mode {
            Mode::EndlessBody => {
                s.write_all(ok("application/json").as_bytes())?;
                let piece = vec![b' '; 64 << 10];
                loop {
                    chunk(&mut s, &piece)?;
                }
            }
            Mode::EndlessLine => {
                s.write_all(ok("text/event-stream").as_bytes())?;
                chunk(&mut s, b"data: ")?;
                let piece = vec![b'x'; 64 << 10];
                loop {
                    chunk(&mut s, &piece)?;
                }
            }
            Mode::BigEvent => {
                s.write_all(ok("text/event-stream").as_bytes())?;
                chunk(&mut s, b"data: {\"choices\":[{\"delta\":{\"content\":\"")?;
                let piece = vec![b'a'; 1 << 20];
                for _ in 0..65 {
                    chunk(&mut s, &piece)?;
                }
                chunk(&mut s, b"\"}}]}\n\ndata: [DONE]\n\n")?;
                chunk(&mut s, b"")?;
            }
            Mode::Stall => {
                s.write_all(ok("text/event-stream").as_bytes())?;
                std::thread::sleep(Duration::from_secs(30));
                return Ok(());
            }
            Mode::EchoHeaders => {
                let body = format!("{{\"error\": \"bad request\", \"you sent\": {:?}}}", head);
                write!(s, "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\n\r\n{body}", body.len())?;
            }
        }
    }
    Ok(())
}

/// A hostile server on 127.0.0.1 answering every request in `mode`; serves until the test ends.
fn hostile(mode: Mode) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s, mode));
        }
    });
    url
}

/// Runs `profile` under GNU time; returns its output and peak RSS (kB).
fn profile_measured(url: &str, dir: &Path, extra: &[&str]) -> (Output, u64) {
    let lines: Vec<String> = rows(3, 10, 4);
    let trace = write_trace(dir, &lines);
    let art = dir.join("art");
    let mut out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(BIN)
        .args(["profile", "-m", "m", "-u", url, "--streaming", "--concurrency", "3", "--tokenizer", &tokenizer()])
        .arg("--input-file")
        .arg(&trace)
        .arg("--artifact-dir")
        .arg(&art)
        .args(["--api-key", SECRET, "-H", &format!("X-Api-Key:{SECRET}"), "--ui-type", "none"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let all = String::from_utf8_lossy(&out.stderr).into_owned();
    // GNU time's report (which repeats the command line, secrets included) follows the CLI's own.
    let (err, timing) = all.split_once("\tCommand being timed").unwrap_or((&all, ""));
    let rss = timing
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS from GNU time:\n{all}"));
    out.stderr = err.as_bytes().to_vec();
    (out, rss)
}

fn error_kinds(art: &Path) -> Vec<String> {
    read_jsonl(&art.join("profile_export.jsonl"))
        .iter()
        .map(|r| r["error"]["type"].as_str().unwrap_or("none").to_owned())
        .collect()
}

#[test]
fn hostile_servers_end_requests_with_errors_in_bounded_memory_and_leak_no_secret() {
    for (mode, kind, extra) in [
        (Mode::EndlessBody, "response_too_large", &[][..]),
        (Mode::EndlessLine, "response_too_large", &[][..]),
        (Mode::BigEvent, "response_too_large", &[][..]),
        (Mode::Stall, "timeout", &["--request-timeout-seconds", "2"][..]),
        (Mode::EchoHeaders, "http_status", &[][..]),
    ] {
        let url = hostile(mode);
        let dir = tempfile::tempdir().unwrap();
        let (out, rss_kb) = profile_measured(&url, dir.path(), extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Every request failed: exit status 1, with every export written.
        assert_eq!(out.status.code(), Some(1), "{mode:?}: {stderr}");
        println!("{mode:?}: peak RSS {rss_kb} kB");
        assert!(rss_kb < RSS_BOUND_KB, "{mode:?}: peak RSS {rss_kb} kB");
        let art = dir.path().join("art");
        assert_eq!(error_kinds(&art), vec![kind; 3], "{mode:?}");
        assert_eq!(summary(&art)["error_request_count"]["avg"], 3.0);
        for entry in std::fs::read_dir(&art).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            assert!(!text.contains(SECRET), "{mode:?}: the secret leaked into an export");
        }
        assert!(!stderr.contains(SECRET) && !String::from_utf8_lossy(&out.stdout).contains(SECRET));
        eprintln!("{mode:?}: peak RSS {rss_kb} kB");
    }
}

#[test]
fn url_credentials_are_never_shown_or_written() {
    let url = hostile(Mode::EchoHeaders).replace("http://", "http://alice:pa55word-xyz@");
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = profile_measured(&url, dir.path(), &[]);
    let art = dir.path().join("art");
    let all = format!(
        "{}{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(art.join("profile_export_aiperf.json")).unwrap(),
        std::fs::read_to_string(art.join("profile_export.jsonl")).unwrap()
    );
    assert!(!all.contains("pa55word-xyz"), "{all}");
    assert!(all.contains("<redacted>@127.0.0.1"));
    // Nor their Basic-authentication form (sent when no API key is given).
    assert!(!all.contains("YWxpY2U6cGE1NXdvcmQteHl6"), "{all}");
}
