//! Randomized robustness tests ("fuzzing" by seeded random generation, not coverage-guided):
//! hostile option values and trace rows through options → plan → schedule → dispatch, and
//! hostile bytes from a server through the HTTP/SSE client. Every case runs under a watchdog, so a
//! hang fails like a panic, and a failure names the seed that reproduces it.
//!
//! The tests run a fixed number of cases in the normal suite; `AIPERF_FUZZ_SECONDS=600` runs each
//! for that long instead (`cargo test -p aiperf-cli --release fuzz_ -- --nocapture`), and
//! `AIPERF_FUZZ_SEED` starts at another seed.
#![allow(clippy::unwrap_used)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::replay::dispatch::{Dispatch, Peek};
use aiperf_core::replay::schedule::Rng;
use aiperf_core::trace::{ParseOptions, read};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::{Endpoint, send};
use super::plan::ReplayPlan;
use super::transport::{Clock, Outgoing};
use crate::io::http::http_client;

/// How long one case may take before it counts as a hang.
const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs `case(seed)` for `cases` seeds (or for `AIPERF_FUZZ_SECONDS`), each on its own thread
/// under the watchdog; panics with the seed of the first failure.
fn campaign(name: &str, cases: u64, case: fn(u64) -> String, describe: fn(u64) -> String) {
    let budget = std::env::var("AIPERF_FUZZ_SECONDS").ok().and_then(|s| s.parse::<u64>().ok());
    let first = std::env::var("AIPERF_FUZZ_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(1);
    let t0 = Instant::now();
    let mut seed = first;
    loop {
        let done = seed - first;
        match budget {
            Some(s) if t0.elapsed() >= Duration::from_secs(s) => break,
            None if done >= cases => break,
            _ => {}
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| case(seed));
            let _ = tx.send(r.map_err(|p| {
                p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            }));
        });
        match rx.recv_timeout(WATCHDOG) {
            Ok(Ok(_)) => {
                let _ = worker.join();
            }
            Ok(Err(msg)) => panic!("{name}: seed {seed} panicked: {}\n{}", msg.unwrap_or_default(), describe(seed)),
            Err(_) => panic!("{name}: seed {seed} hung for more than {WATCHDOG:?}\n{}", describe(seed)),
        }
        seed += 1;
    }
    say!("{name}: {} cases in {:.1} s without a finding", seed - first, t0.elapsed().as_secs_f64());
}

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[(rng.next_u64() % xs.len() as u64) as usize]
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "0.5",
    "3",
    "16",
    "1000",
    "1e-300",
    "1e300",
    "1e308",
    "NaN",
    "inf",
    "-inf",
    "-0",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "abc",
    "",
    "1_000",
    "0x10",
];

/// Options with hostile values: (flag, values).
fn options(rng: &mut Rng) -> Vec<String> {
    let numeric = [
        "--request-rate",
        "--concurrency",
        "--request-count",
        "--warmup-request-count",
        "--benchmark-duration",
        "--benchmark-grace-period",
        "--request-timeout-seconds",
        "--fixed-schedule-start-offset",
        "--fixed-schedule-end-offset",
        "--isl-block-size",
        "--random-seed",
        "--max-response-bytes",
        "--max-line-bytes",
        "--synthesis-speedup-ratio",
        "--synthesis-prefix-len-multiplier",
        "--synthesis-prefix-root-multiplier",
        "--synthesis-prompt-len-multiplier",
        "--synthesis-output-len-multiplier",
        "--synthesis-max-isl",
        "--synthesis-max-osl",
    ];
    let switches = ["--fixed-schedule", "--no-fixed-schedule", "--fixed-schedule-auto-offset", "--streaming"];
    let mut argv = Vec::new();
    for _ in 0..(rng.next_u64() % 6) {
        argv.push(pick(rng, &numeric).to_owned());
        argv.push(pick(rng, NUMBERS).to_owned());
    }
    for s in switches {
        if rng.next_u64().is_multiple_of(4) {
            argv.push(s.to_owned());
        }
    }
    if rng.next_u64().is_multiple_of(4) {
        argv.push("--arrival-pattern".into());
        argv.push(pick(rng, &["poisson", "constant", "gamma"]).into());
    }
    if rng.next_u64().is_multiple_of(5) {
        argv.push("--goodput".into());
        argv.push(format!(
            "{}:{}",
            pick(rng, &["time_to_first_token", "inter_token_latency", "x"]),
            pick(rng, NUMBERS)
        ));
    }
    if rng.next_u64().is_multiple_of(6) {
        argv.push("--turn-history".into());
        argv.push(pick(rng, &["live", "none"]).into());
    }
    argv
}

/// A trace of hostile but parseable-looking rows.
fn trace(rng: &mut Rng) -> String {
    let ts = ["0", "1", "5", "1000", "1e308", "-5", "18446744073709551615", "0.5", "86400000000"];
    let lens = ["0", "1", "512", "9223372036854775807", "100000000", "-1"];
    let mut out = String::new();
    for _ in 0..(1 + rng.next_u64() % 12) {
        let mut fields = Vec::new();
        match rng.next_u64() % 3 {
            0 => fields.push(format!(r#""timestamp":{}"#, pick(rng, &ts))),
            1 if rng.next_u64().is_multiple_of(2) => fields.push(format!(r#""delay":{}"#, pick(rng, &ts))),
            _ => {}
        }
        if rng.next_u64().is_multiple_of(3) {
            fields.push(format!(r#""session_id":"s{}""#, rng.next_u64() % 3));
        }
        fields.push(format!(r#""input_length":{}"#, pick(rng, &lens)));
        if !rng.next_u64().is_multiple_of(4) {
            fields.push(format!(r#""output_length":{}"#, pick(rng, &lens)));
        }
        let ids: Vec<String> = (0..rng.next_u64() % 4).map(|_| (rng.next_u64() % 8).to_string()).collect();
        fields.push(format!(r#""hash_ids":[{}]"#, ids.join(",")));
        out.push('{');
        out.push_str(&fields.join(","));
        out.push_str("}\n");
    }
    out
}

/// The command line and the trace of a case.
fn plan_input(seed: u64) -> (Vec<String>, String) {
    let mut rng = Rng::new(seed);
    let mut argv: Vec<String> = ["x", "-m", "m", "--input-file", "t.jsonl"].map(str::to_owned).to_vec();
    argv.extend(options(&mut rng));
    (argv, trace(&mut rng))
}

fn plan_describe(seed: u64) -> String {
    let (argv, text) = plan_input(seed);
    format!("options: {argv:?}\ntrace:\n{text}")
}

/// One case of options → plan → schedule → dispatch in virtual time.
fn plan_case(seed: u64) -> String {
    let (argv, text) = plan_input(seed);
    let Ok(args) = super::options::parse(&argv) else { return "rejected by the parser".into() };
    let Ok(plan) = ReplayPlan::from_args(args) else { return "rejected by the plan".into() };
    let Ok(parsed) = read(text.as_bytes(), ParseOptions::new("t.jsonl")) else { return "trace rejected".into() };
    let mut trace = plan.filter_offsets(parsed.trace);
    if let Some(p) = &plan.source.synthesis {
        // Synthesis may legitimately build up to 2^28 ids (its documented limit): seconds of work
        // that is bounded, not a finding. Keep the cases quick.
        let blocks: f64 = trace
            .rows()
            .iter()
            .filter_map(|r| r.input_length())
            .map(|n| n.max(0) as f64 * p.prompt_len_multiplier / f64::from(p.block_size))
            .sum();
        if blocks > 1e6 {
            return "skipped: a large but bounded synthesis".into();
        }
        match aiperf_core::synthesis::transform(&trace, p) {
            Ok(t) => trace = t,
            Err(_) => return "synthesis rejected".into(),
        }
    }
    let Ok(schedule) = plan.schedule(&trace) else { return "schedule rejected".into() };
    let end_ns = plan.limits.duration.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let mut d = Dispatch::new(Arc::new(schedule), plan.limits.concurrency, end_ns);
    // Requests take 1 ms; at most 3,000 steps (a rate run may be endless).
    let mut now = 0u64;
    let mut jobs = Vec::new();
    let mut in_flight: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    for _ in 0..3_000 {
        match d.peek(now) {
            Peek::Finished => break,
            Peek::AwaitCompletion => {
                let Some(Reverse((end, i))) = in_flight.pop() else {
                    panic!("the dispatch waits for a completion with nothing in flight: {argv:?}\n{text}");
                };
                now = now.max(end);
                d.complete(&jobs[i], end);
            }
            Peek::Due { deadline_ns, .. } => {
                if let Some(&Reverse((end, i))) = in_flight.peek()
                    && end <= deadline_ns
                {
                    in_flight.pop();
                    now = now.max(end);
                    d.complete(&jobs[i], end);
                    continue;
                }
                now = now.max(deadline_ns);
                if let Some(job) = d.take(now) {
                    assert!(job.turn < job.run_turns.max(1), "turn past its run: {job:?}");
                    jobs.push(job);
                    in_flight.push(Reverse((now.saturating_add(1_000_000), jobs.len() - 1)));
                }
            }
        }
    }
    format!("{} requests", jobs.len())
}

#[test]
fn fuzz_options_plan_schedule_and_dispatch_never_panic_or_hang() {
    campaign("options → plan → schedule → dispatch", 400, plan_case, plan_describe);
}

/// Pieces a hostile server's answer is made of.
fn answer(rng: &mut Rng) -> Vec<u8> {
    let heads = [
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n",
        "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 5\r\n\r\n",
        "HTTP/1.1 302 Found\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: 18446744073709551615\r\n\r\n",
        "HTTP/1.0 200\r\n\r\n",
        "HTTP/9 999 ?\r\n\r\n",
        "",
    ];
    let pieces = [
        "data: ",
        "data:",
        r#"{"choices":[{"delta":{"content":"hi"}}]}"#,
        r#"{"choices":[{"text":"x","finish_reason":null}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":18446744073709551615}}"#,
        r#"{"usage":{"completion_tokens":-3,"prompt_tokens_details":{"cached_tokens":1e300}}}"#,
        r#"{"error":{"message":"boom"}}"#,
        r#"{"choices":[{"delta":{"content":"#,
        "[DONE]",
        "event: error",
        ": keep-alive",
        "\n",
        "\n\n",
        "\r\n",
        "\r",
        "ffff\r\n",
        "0\r\n\r\n",
        "5\r\nhello\r\n",
        "zz\r\n",
        "\u{feff}",
        "\u{0}",
    ];
    let mut out = pick(rng, &heads).as_bytes().to_vec();
    for _ in 0..rng.next_u64() % 40 {
        match rng.next_u64() % 8 {
            0 => out.extend((0..rng.next_u64() % 64).map(|_| rng.next_u64() as u8)),
            1 => out.extend(std::iter::repeat_n(b'a', (rng.next_u64() % 200_000) as usize)),
            _ => out.extend_from_slice(pick(rng, &pieces).as_bytes()),
        }
    }
    out
}

/// One case: a server that reads the request, answers with hostile bytes in random pieces, and
/// closes (or stalls); the client must end with a record within its timeout, its text bounded.
fn client_case(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let bytes = answer(&mut rng);
    let stall = rng.next_u64().is_multiple_of(6);
    let split = 1 + (rng.next_u64() % 4096) as usize;
    let limit = 64 * 1024;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = Vec::new();
            // Read the request head and its (small) body.
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match tokio::time::timeout(Duration::from_secs(2), sock.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => return,
                }
            }
            for piece in bytes.chunks(split) {
                if sock.write_all(piece).await.is_err() {
                    return;
                }
            }
            if stall {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            let _ = sock.shutdown().await;
        });
        let client = http_client().unwrap();
        let ep = Endpoint::new(&format!("http://{addr}"), "/v1/chat/completions", None, &[], Duration::from_secs(1))
            .unwrap()
            .max_response_bytes(limit);
        let clock = Clock::start();
        let out = Outgoing {
            body: Bytes::from_static(br#"{"model":"m","messages":[]}"#),
            request_id: "r".into(),
            correlation_id: "c".into(),
            url_index: 0,
            last_turn: true,
            first_token: Default::default(),
        };
        let ex = tokio::time::timeout(Duration::from_secs(10), send(&client, &ep, out, &clock, false))
            .await
            .expect("the client did not give up within its timeout");
        assert!(ex.text.len() <= limit, "text of {} bytes past the {limit}-byte limit", ex.text.len());
        assert!(ex.end_ns >= ex.sent_ns, "ends before it was sent: {ex:?}");
        assert!(ex.chunk_ns.windows(2).all(|w| w[0] <= w[1]), "chunk times out of order");
        server.abort();
        ex.error.map_or_else(|| "ok".to_owned(), |e| e.kind)
    })
}

#[test]
fn fuzz_hostile_server_bytes_give_a_record_not_a_panic_or_a_hang() {
    campaign("HTTP/SSE client against hostile bytes", 150, client_case, |seed| {
        format!("answer: {:?}", String::from_utf8_lossy(&answer(&mut Rng::new(seed))))
    });
}
