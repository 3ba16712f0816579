//! `aiperf-cli mock-server`: an OpenAI-compatible server (chat and completions, streaming or not)
//! with programmable TTFT, inter-token latency, output length policy, usage reporting and faults.
//!
//! It serves the tests and the benchmark, and lets a user measure the client's own overhead before
//! a real run: responses carry `x-aiperf-mock-ttft-ms`, and `profile` prints the programmed TTFT
//! beside the one it measured. Faults are chosen deterministically from the request number, so a
//! rate of 0.1 fails exactly every tenth request.
//!
//! It is bounded like a real server: a request may ask for at most `--max-output-tokens` tokens
//! (HTTP 400 beyond) and send at most `--max-request-bytes` (HTTP 413 beyond); a stream is produced
//! in pieces of at most [`STREAM_PIECE_BYTES`](handle::reply::STREAM_PIECE_BYTES) as the client reads it; keep-alive connections idle
//! for `--idle-timeout-seconds` are closed; when the process runs out of file descriptors, accepting
//! backs off instead of spinning. With `--tls-cert`/`--tls-key` it serves HTTPS (rustls).
//!
//! Like vLLM it serves `/metrics` (Prometheus text, vLLM's names) and the cache-reset endpoints of
//! vLLM (`POST /reset_prefix_cache`), SGLang (`POST /flush_cache`) and llama.cpp (`GET /slots`,
//! `POST /slots/{id}?action=erase`); each reset is logged to `--arrivals-file` as
//! `{"reset": path}` so a test can see that it came before the first completion. Its prefix cache
//! is a simple block-hash model ([`PrefixCache`](cache::PrefixCache)): the prompt's words, in
//! blocks of [`CACHE_BLOCK_WORDS`](cache::CACHE_BLOCK_WORDS), chain-hashed; a request hits the leading blocks already seen.
//! With `--block-size`, `--tokenizer` or `--kv-blocks` the [`kv`] model replaces it: whole token
//! blocks chain-hashed into the simulator's own cache and admission (finite capacity, blocks pinned
//! while their request runs, `--policy` eviction), so a replay over mocks and `aiperf-cli
//! simulate` of the same trace hit alike; `--prefill-per-token-ms` adds prefill time per uncached
//! prompt token to the TTFT (with either cache). With `--engine step` the KV model runs in engine
//! steps ([`steps`]: the simulator's step engine, chunked prefill and preemption, on the mock's
//! clock), and `/metrics` counts preemptions as vLLM does (`vllm:num_preemptions_total`).
//!
//! Its load model (`--slots N`) makes its capacity known: at most N requests are served at once,
//! each holding its slot from the start of its TTFT to its last token; the others wait in a FIFO
//! queue, so TTFT grows with load. A request asking for `t` tokens holds a slot for
//! `ttft + (t − 1)·itl` (tokens are paced on absolute deadlines, so the time does not drift), and
//! N slots serve [`capacity`](load::capacity) requests per second.
//!
//! [`run`] binds and accepts (plain or [`tls`]); [`handle`] answers each request in phases, over
//! the [`state`] every connection shares, from its [`args`], with the text of [`answer`], the
//! [`load`] model, the [`cache`] or [`kv`] (or [`steps`]) and the counters of [`metrics`].

mod answer;
mod args;
mod cache;
mod handle;
mod kv;
mod load;
mod metrics;
mod state;
mod steps;
mod tls;

use std::io::BufWriter;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

pub use args::Args;
use cache::PrefixCache;
use kv::{Kv, Model, Tokens};
use load::{Slots, capacity};
use metrics::Counters;
use state::State;
use steps::StepKv;

/// Runs the server until Ctrl-C (or `--exit-after-seconds`).
pub fn run(args: Args) -> Result<()> {
    let tokens = match &args.tokenizer {
        Some(t) => {
            Tokens::Tokenizer(Box::new(crate::io::tokenizer::load_named(t).context("mock-server --tokenizer")?.0))
        }
        None => Tokens::Words,
    };
    args.check().map_err(|e| anyhow::anyhow!("mock-server {e}"))?;
    let block_size = args.block_size.unwrap_or(aiperf_core::analysis::DEFAULT_BLOCK_SIZE);
    let kv = args.kv_model().then(|| match args.steps() {
        Some(steps) => Model::Step(StepKv::new(steps, block_size, args.kv_blocks, args.policy, args.slots)),
        None => Model::Request(Kv::new(block_size, args.kv_blocks, args.policy, args.slots)),
    });
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port)))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
        let addr = listener.local_addr()?;
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(c), Some(k)) => Some(tls::tls_acceptor(c, k)?),
            _ => None,
        };
        show!("mock server listening on {}://{addr}", if tls.is_some() { "https" } else { "http" });
        if let Some(n) = args.slots {
            let t = args.default_output_tokens;
            say!(
                "load model: {n} slot(s); a request of {t} tokens holds one for {:.0} ms: capacity {:.1} requests/s",
                args.ttft_ms + args.itl_ms * t.saturating_sub(1) as f64,
                capacity(n, args.ttft_ms, args.itl_ms, t)
            );
        }
        let arrivals = match &args.arrivals_file {
            Some(p) => Some(Mutex::new(BufWriter::new(crate::io::output::create_stream(p)?))),
            None => None,
        };
        let idle = args.idle_timeout_seconds;
        let exit_after = args.exit_after_seconds;
        if let Some(kv) = &kv {
            say!(
                "KV model: blocks of {} {}, {} blocks ({} eviction), prefill {} ms per uncached token",
                kv.block_size(),
                if matches!(tokens, Tokens::Words) { "words" } else { "tokens" },
                args.kv_blocks.map_or_else(|| "unbounded".to_owned(), |n| n.to_string()),
                args.policy.name(),
                args.prefill_per_token_ms
            );
        }
        if let Some(Model::Step(steps)) = &kv {
            say!(
                "engine steps of at most {} tokens: {} ms + {} ms per prompt token + {} ms per decode token",
                args.max_batch_tokens,
                args.itl_ms,
                args.prefill_per_token_ms,
                args.decode_per_running_ms
            );
            tokio::spawn(steps.clone().drive());
        }
        // The KV model admits requests itself, with `--slots` as its cap on running requests.
        let slots = if kv.is_some() { None } else { args.slots.map(Slots::new) };
        let state = Arc::new(State {
            args,
            counter: AtomicU64::new(0),
            arrivals,
            slots,
            metrics: Counters::default(),
            cache: Mutex::new(PrefixCache::default()),
            kv,
            tokens,
        });
        let serve = async {
            loop {
                let (stream, _) = match listener.accept().await {
                    Ok(s) => s,
                    Err(e) => {
                        // Out of descriptors (EMFILE, ENFILE) the pending connection stays queued
                        // and `accept` fails again at once: wait for connections to close.
                        state.metrics.accept_errors.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(accept_backoff(&e)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        None => serve_connection(stream, state, idle).await,
                        // A failed handshake (an untrusting client) just closes the connection;
                        // one that never completes is dropped after the idle timeout.
                        Some(acceptor) => {
                            if let Ok(Ok(s)) = tokio::time::timeout(idle, acceptor.accept(stream)).await {
                                serve_connection(s, state, idle).await;
                            }
                        }
                    }
                });
            }
        };
        // Watched from the start: registering later can fail once connections hold every descriptor.
        let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .context("cannot watch for Ctrl-C")?;
        let stop = async {
            let deadline = async {
                match exit_after {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = deadline => {}
                _ = interrupt.recv() => {}
            }
        };
        tokio::select! {
            _ = serve => {}
            _ = stop => {}
        }
        Ok(())
    })
}

/// How long to wait after a failed `accept`: 100 ms when out of descriptors or memory (only a
/// closing connection helps), 10 ms otherwise (an aborted handshake: the next one is fine).
fn accept_backoff(e: &std::io::Error) -> Duration {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM on Linux.
    const EXHAUSTED: [i32; 4] = [24, 23, 105, 12];
    if e.raw_os_error().is_some_and(|c| EXHAUSTED.contains(&c)) {
        Duration::from_millis(100)
    } else {
        Duration::from_millis(10)
    }
}

/// Serves HTTP/1.1 on one connection (plain or TLS).
async fn serve_connection<I>(io: I, state: Arc<State>, idle: Duration)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| handle::handle(state.clone(), req));
    // hyper's header-read timer runs whenever the connection waits for a request head, idle
    // keep-alive included: it is the idle timeout.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(io), svc)
        .await;
}
