//! `aiperf-cli profile` against several mock servers, over HTTPS and through proxies.
//! The TLS certificates are `tests/fixtures/tls/` (a private CA and a server certificate for
//! `localhost`, `mock.test` and `127.0.0.1`, valid until 2126).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

fn tls_file(name: &str) -> String {
    root().join("tests/fixtures/tls").join(name).display().to_string()
}

/// A mock server on HTTPS with the test certificate.
fn tls_mock(extra: &[&str]) -> Mock {
    let (cert, key) = (tls_file("server.pem"), tls_file("server-key.pem"));
    let mut args = vec!["--tls-cert", cert.as_str(), "--tls-key", key.as_str()];
    args.extend_from_slice(extra);
    Mock::start(&args)
}

/// `sessions` sessions of `turns` turns each, starting 20 ms apart; the input length tells the
/// session and turn apart.
fn session_trace(dir: &std::path::Path, sessions: usize, turns: usize) -> std::path::PathBuf {
    let mut lines = Vec::new();
    for t in 0..turns {
        for s in 0..sessions {
            let head = if t == 0 { format!("\"timestamp\": {}", s * 20) } else { "\"delay\": 5".to_owned() };
            lines.push(format!(
                "{{\"session_id\": \"s{s}\", {head}, \"input_length\": {}, \"output_length\": 3}}",
                100 + s * 10 + t
            ));
        }
    }
    write_trace(dir, &lines)
}

/// Runs `profile` with `env` set (and every proxy variable of the test's own environment
/// removed), with a time limit.
fn profile_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("profile").args(args).env_remove("OPENAI_API_KEY");
    for v in
        ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"]
    {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_limited(child, LIMIT)
}

/// The usual arguments: model, tokenizer, trace, artifacts, streaming.
fn base_args(trace: &std::path::Path, art: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        ["-m", "m", "--streaming", "--tokenizer", &tokenizer(), "--input-file"].iter().map(|s| s.to_string()).collect();
    v.push(trace.display().to_string());
    v.push("--artifact-dir".into());
    v.push(art.display().to_string());
    v
}

fn run(trace: &std::path::Path, art: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = base_args(trace, art);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    profile_env(&args, env)
}

/// Correlation ids a mock saw.
fn sessions_of(mock: &Mock) -> BTreeSet<String> {
    mock.arrivals().iter().map(|a| a["headers"]["correlation_id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn two_urls_share_the_sessions_and_no_session_crosses() {
    let (m0, m1) = (Mock::start(&["--ttft-ms", "2"]), Mock::start(&["--ttft-ms", "2"]));
    let dir = tempfile::tempdir().unwrap();
    let trace = session_trace(dir.path(), 10, 3);
    let art = dir.path().join("art");
    let out = run(&trace, &art, &["--url", &m0.url, "--url", &m1.url], &[]);
    ok(&out);
    // A burst of one: still one connection per URL opened before time zero.
    assert!(stderr(&out).contains("Opened 2 of 2 connection(s)"), "{}", stderr(&out));
    let (a0, a1) = (m0.arrivals(), m1.arrivals());
    assert_eq!((a0.len(), a1.len()), (15, 15), "five sessions of three turns each");
    let (s0, s1) = (sessions_of(&m0), sessions_of(&m1));
    assert_eq!((s0.len(), s1.len()), (5, 5));
    assert!(s0.is_disjoint(&s1), "a session crossed: {s0:?} {s1:?}");
    // Every turn of a session on one server.
    let mut turns: BTreeMap<String, usize> = BTreeMap::new();
    for a in &a0 {
        *turns.entry(a["headers"]["correlation_id"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert!(turns.values().all(|&n| n == 3), "{turns:?}");

    // Each record says where it went; the summary counts per URL.
    let records = read_jsonl(&art.join("profile_export.jsonl"));
    let mut by_url: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for r in &records {
        let m = &r["metadata"];
        by_url
            .entry(m["url_index"].as_u64().unwrap())
            .or_default()
            .insert(m["conversation_id"].as_str().unwrap().into());
    }
    assert_eq!(by_url.len(), 2);
    assert!(by_url[&0].is_disjoint(&by_url[&1]));
    let s = summary(&art);
    let per_url = s["per_url"].as_array().unwrap();
    assert_eq!(per_url.len(), 2);
    for (i, (u, m)) in per_url.iter().zip([&m0, &m1]).enumerate() {
        assert_eq!(u["index"], i as u64);
        assert_eq!(u["url"], m.url.as_str());
        assert_eq!(u["request_count"], 15);
        assert_eq!(u["error_request_count"], 0);
        assert_eq!(u["request_latency"]["count"], 15);
        assert_eq!(u["time_to_first_token"]["count"], 15);
    }
    assert_eq!(s["aiperf_cli_config"]["urls"].as_array().unwrap().len(), 2);
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(console.contains("Per URL") && console.contains(&m1.url), "{console}");

    // A rate schedule (sessions generated, no trace timestamps) with a warm-up of two sessions
    // (three turns each): spread the same way, warm-up included; AIPerf's spelling of several
    // URLs after one flag works.
    let (m2, m3) = (Mock::start(&[]), Mock::start(&[]));
    let art2 = dir.path().join("art2");
    let out = run(
        &trace,
        &art2,
        &["--url", &m2.url, &m3.url, "--request-rate", "200", "--no-fixed-schedule", "--num-warmup-sessions", "2"],
        &[],
    );
    ok(&out);
    assert_eq!((m2.arrivals().len(), m3.arrivals().len()), (18, 18), "15 + a warm-up session each");
    let (s2, s3) = (sessions_of(&m2), sessions_of(&m3));
    assert!(s2.is_disjoint(&s3), "a session crossed: {s2:?} {s3:?}");

    // Conversation ids (converted formats: every row its own request at its own time): each
    // conversation stays on the URL of its first row.
    let (m4, m5) = (Mock::start(&[]), Mock::start(&[]));
    let conv: Vec<String> = (0..12)
        .map(|i| {
            format!(
                r#"{{"conversation_id": "c{}", "timestamp": {}, "input_length": 50, "output_length": 2}}"#,
                i % 4,
                i * 5
            )
        })
        .collect();
    let conv_dir = tempfile::tempdir().unwrap();
    let conv_trace = write_trace(conv_dir.path(), &conv);
    let out = run(&conv_trace, &dir.path().join("art3"), &["--url", &m4.url, "--url", &m5.url], &[]);
    ok(&out);
    let (s4, s5) = (sessions_of(&m4), sessions_of(&m5));
    assert_eq!(m4.arrivals().len(), 6);
    assert_eq!(s4, BTreeSet::from(["fixed-schedule-c0".to_owned(), "fixed-schedule-c2".to_owned()]));
    assert_eq!(s5, BTreeSet::from(["fixed-schedule-c1".to_owned(), "fixed-schedule-c3".to_owned()]));
}

#[test]
fn a_private_ca_is_refused_by_default_and_accepted_with_its_ca_file() {
    let mock = tls_mock(&[]);
    let dir = tempfile::tempdir().unwrap();
    let trace = session_trace(dir.path(), 4, 1);

    // Refused: every request fails with a TLS error naming the way out, the run exits 1.
    let art = dir.path().join("refused");
    let out = run(&trace, &art, &["--url", &mock.url], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("certificate is not trusted") && err.contains("--ssl-ca-cert"), "{err}");
    assert!(mock.arrivals().is_empty(), "no request may reach an untrusted server");
    let s = summary(&art);
    assert_eq!(s["error_summary"][0]["error_details"]["type"], "tls_error");

    // Accepted with the CA file, by IP address and by name.
    let ca = tls_file("ca.pem");
    let by_name = mock.url.replace("127.0.0.1", "localhost");
    for (i, url) in [&mock.url, &by_name].into_iter().enumerate() {
        let art = dir.path().join(format!("ca{i}"));
        let out = run(&trace, &art, &["--url", url, "--ssl-ca-cert", &ca], &[]);
        ok(&out);
        assert_eq!(summary(&art)["request_count"]["avg"], 4.0);
        assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    }

    // Accepted without verification, warned.
    let art = dir.path().join("insecure");
    let out = run(&trace, &art, &["--url", &mock.url, "--insecure-skip-tls-verify"], &[]);
    ok(&out);
    assert!(stderr(&out).contains("warning: --insecure-skip-tls-verify"), "{}", stderr(&out));
    assert_eq!(summary(&art)["aiperf_cli_config"]["insecure_skip_tls_verify"], true);
    assert_eq!(mock.arrivals().len(), 12);
}

#[test]
fn a_bad_ca_file_stops_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let trace = session_trace(dir.path(), 1, 1);
    let bad = dir.path().join("ca.pem");
    std::fs::write(&bad, "not a certificate\n").unwrap();
    let art = dir.path().join("art");
    let out = run(&trace, &art, &["--url", "https://127.0.0.1:9", "--ssl-ca-cert", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--ssl-ca-cert") && stderr(&out).contains("holds no certificate"));
    assert!(!art.exists());
}

#[test]
fn https_replays_like_plain_http_with_handshakes_before_time_zero() {
    let (plain, tls) = (Mock::start(&["--ttft-ms", "2"]), tls_mock(&["--ttft-ms", "2"]));
    let dir = tempfile::tempdir().unwrap();
    let trace = session_trace(dir.path(), 20, 1);
    let ca = tls_file("ca.pem");
    for (name, url) in [("plain", &plain.url), ("tls", &tls.url)] {
        let art = dir.path().join(name);
        let out = run(&trace, &art, &["--url", url, "--ssl-ca-cert", &ca], &[]);
        ok(&out);
        // The connections of the first burst were opened (TLS handshakes included) before time
        // zero; lateness is measured and reported either way (its size is in BENCHMARKS.md).
        assert!(stderr(&out).contains("Opened 1 of 1 connection(s)"), "{name}: {}", stderr(&out));
        let s = summary(&art);
        assert_eq!(s["request_count"]["avg"], 20.0, "{name}");
        assert_eq!(s["send_lateness"]["count"], 20, "{name}");
    }
    // Warm-up GET /v1/models is not logged by the mock; every POST arrived.
    assert_eq!((plain.arrivals().len(), tls.arrivals().len()), (20, 20));
}

/// A small HTTP proxy on 127.0.0.1: `CONNECT host:port` tunnels and absolute-form requests
/// (`POST http://host:port/…`), both to 127.0.0.1:port whatever the host (so names that only the
/// proxy knows, like `mock.test`, work only through it). Logs each connection's first line.
struct Proxy {
    url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let l = l.clone();
                std::thread::spawn(move || Proxy::serve(conn, &l));
            }
        });
        Proxy { url, log }
    }

    fn serve(client: TcpStream, log: &Mutex<Vec<String>>) {
        let mut reader = BufReader::new(client.try_clone().unwrap());
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let end = line == "\r\n";
            head.push(line);
            if end {
                break;
            }
        }
        let first = head[0].trim().to_owned();
        log.lock().unwrap().push(first.clone());
        let mut parts = first.split(' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let authority = if method == "CONNECT" {
            target.to_owned()
        } else {
            target.trim_start_matches("http://").split('/').next().unwrap_or("").to_owned()
        };
        let port = authority.rsplit(':').next().unwrap_or("80");
        let Ok(mut server) = TcpStream::connect(format!("127.0.0.1:{port}")) else { return };
        let mut client = client;
        if method == "CONNECT" {
            client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").unwrap();
        } else {
            server.write_all(head.concat().as_bytes()).unwrap();
        }
        // Bytes already buffered after the head go first.
        let buffered = reader.buffer().to_vec();
        server.write_all(&buffered).unwrap();
        let mut up_from = reader.into_inner();
        let mut up_to = server.try_clone().unwrap();
        let up = std::thread::spawn(move || {
            let _ = std::io::copy(&mut up_from, &mut up_to);
            let _ = up_to.shutdown(Shutdown::Write);
        });
        let mut buf = [0u8; 16 << 10];
        while let Ok(n) = server.read(&mut buf) {
            if n == 0 || client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = client.shutdown(Shutdown::Both);
        let _ = up.join();
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[test]
fn proxies_from_the_environment_tunnel_https_and_forward_http() {
    let proxy = Proxy::start();
    let (plain, tls) = (Mock::start(&[]), tls_mock(&[]));
    let dir = tempfile::tempdir().unwrap();
    let trace = session_trace(dir.path(), 3, 2);
    let ca = tls_file("ca.pem");
    // `mock.test` resolves only at the proxy: success proves the proxy carried the requests.
    let https_url = tls.url.replace("127.0.0.1", "mock.test");
    let http_url = plain.url.replace("127.0.0.1", "mock.test");
    let tls_port = tls.url.rsplit(':').next().unwrap().to_owned();
    let plain_port = plain.url.rsplit(':').next().unwrap().to_owned();

    let art = dir.path().join("tunnel");
    let out = run(&trace, &art, &["--url", &https_url, "--ssl-ca-cert", &ca], &[("HTTPS_PROXY", &proxy.url)]);
    ok(&out);
    assert!(stderr(&out).contains("through the proxy"), "{}", stderr(&out));
    assert_eq!(tls.arrivals().len(), 6);
    let log = proxy.log();
    assert!(!log.is_empty() && log.iter().all(|l| l == &format!("CONNECT mock.test:{tls_port} HTTP/1.1")), "{log:?}");
    // The server's metrics are scraped through the same proxy (the scrapes succeeded).
    let metrics = std::fs::read_to_string(art.join("server_metrics_export.csv")).unwrap();
    assert!(metrics.contains("vllm:request_success"), "{metrics}");
    assert!(!stderr(&out).contains("cannot fetch"), "{}", stderr(&out));

    // Lower-case variable, forwarded plain HTTP (absolute-form request line).
    let art = dir.path().join("forward");
    let out = run(&trace, &art, &["--url", &http_url], &[("http_proxy", &proxy.url)]);
    ok(&out);
    assert_eq!(plain.arrivals().len(), 6);
    let forwarded: Vec<String> = proxy.log().into_iter().filter(|l| !l.starts_with("CONNECT")).collect();
    assert!(
        !forwarded.is_empty() && forwarded.iter().all(|l| l.contains(&format!(" http://mock.test:{plain_port}/"))),
        "{forwarded:?}"
    );
    assert!(forwarded.contains(&format!("GET http://mock.test:{plain_port}/metrics HTTP/1.1")), "{forwarded:?}");

    // NO_PROXY covers the name: sent directly, where mock.test does not resolve; the proxy
    // sees nothing more.
    let seen = proxy.log().len();
    let art = dir.path().join("no_proxy");
    let out = run(
        &trace,
        &art,
        &["--url", &http_url, "--request-timeout-seconds", "10"],
        &[("HTTP_PROXY", &proxy.url), ("NO_PROXY", "example.org,mock.test")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(proxy.log().len(), seen);
    assert_eq!(plain.arrivals().len(), 6);

    // Loopback URLs never use the proxy, whatever the variables say.
    let art = dir.path().join("loopback");
    let out = run(&trace, &art, &["--url", &plain.url], &[("HTTP_PROXY", "http://127.0.0.1:9")]);
    ok(&out);
    assert_eq!(summary(&art)["request_count"]["avg"], 6.0);
    assert_eq!(proxy.log().len(), seen);
}

#[test]
fn one_url_down_fails_only_its_own_sessions() {
    let up = Mock::start(&[]);
    // A port nothing listens on: bind one, note it, close it.
    let down = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = session_trace(dir.path(), 4, 2);
    let art = dir.path().join("art");
    let out = run(&trace, &art, &["--url", &up.url, "--url", &down], &[]);
    ok(&out);
    assert!(stderr(&out).contains(&format!("warning: cannot open a connection to {down}")), "{}", stderr(&out));
    assert_eq!(up.arrivals().len(), 4);
    let s = summary(&art);
    let counts: Vec<(u64, u64)> = s["per_url"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["request_count"].as_u64().unwrap(), u["error_request_count"].as_u64().unwrap()))
        .collect();
    assert_eq!(counts, [(4, 0), (0, 4)]);
    assert_eq!(s["per_url"][1]["url"], down.as_str());
}
