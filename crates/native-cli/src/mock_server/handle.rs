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
//! in pieces of at most [`STREAM_PIECE_BYTES`] as the client reads it; keep-alive connections idle
//! for `--idle-timeout-seconds` are closed; when the process runs out of file descriptors, accepting
//! backs off instead of spinning. With `--tls-cert`/`--tls-key` it serves HTTPS (rustls).
//!
//! Like vLLM it serves `/metrics` (Prometheus text, vLLM's names) and the cache-reset endpoints of
//! vLLM (`POST /reset_prefix_cache`), SGLang (`POST /flush_cache`) and llama.cpp (`GET /slots`,
//! `POST /slots/{id}?action=erase`); each reset is logged to `--arrivals-file` as
//! `{"reset": path}` so a test can see that it came before the first completion. Its prefix cache
//! is a simple block-hash model ([`PrefixCache`]): the prompt's words, in blocks of
//! [`CACHE_BLOCK_WORDS`], chain-hashed; a request hits the leading blocks already seen.
//!
//! Its load model (`--slots N`) makes its capacity known: at most N requests are served at once,
//! each holding its slot from the start of its TTFT to its last token; the others wait in a FIFO
//! queue, so TTFT grows with load. A request asking for `t` tokens holds a slot for
//! `ttft + (t − 1)·itl` (tokens are paced on absolute deadlines, so the time does not drift), and
//! N slots serve [`capacity`] requests per second.

use std::convert::Infallible;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// Options of the mock server.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Port on 127.0.0.1 (0 = any free port; the chosen one is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Time to first token (ms, at most a day).
    #[arg(long, default_value_t = 0.0, value_parser = millis)]
    pub ttft_ms: f64,
    /// Time between tokens (ms, at most a day).
    #[arg(long, default_value_t = 0.0, value_parser = millis)]
    pub itl_ms: f64,
    /// Output tokens when a request sets no max_tokens.
    #[arg(long, default_value_t = 16)]
    pub default_output_tokens: u64,
    /// Without `ignore_eos: true`, stop after this many tokens (like an early end of sequence).
    #[arg(long)]
    pub eos_after: Option<u64>,
    /// Fraction of requests answered with HTTP 500.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub error_rate: f64,
    /// Fraction of streams cut (connection reset) halfway.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub disconnect_rate: f64,
    /// Fraction of streams with a malformed JSON chunk.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub malformed_rate: f64,
    /// Fraction of streams that stall after the first token (until the client gives up).
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub stall_rate: f64,
    /// Fraction of requests answered with more tokens than max_tokens.
    #[arg(long, default_value_t = 0.0, value_parser = rate)]
    pub ignore_max_tokens_rate: f64,
    /// Write one JSON line per request (arrival time, tokens asked, prompt size) to this file
    /// (`-`: standard output; a FIFO is written through).
    #[arg(long)]
    pub arrivals_file: Option<PathBuf>,
    /// Most output tokens one request may ask for (`max_tokens`); more is answered with HTTP 400.
    #[arg(long, default_value_t = DEFAULT_MAX_OUTPUT_TOKENS)]
    pub max_output_tokens: u64,
    /// Largest request body accepted (bytes); a larger one is answered with HTTP 413.
    #[arg(long, default_value_t = DEFAULT_MAX_REQUEST_BYTES)]
    pub max_request_bytes: usize,
    /// Close a keep-alive connection that sends no new request for this long (seconds). The
    /// default outlasts `profile`'s own 90 s pool idle timeout, so the client closes first.
    #[arg(long, default_value = DEFAULT_IDLE_TIMEOUT_SECONDS, value_parser = positive_seconds)]
    pub idle_timeout_seconds: Duration,
    /// Exit after this many seconds (a safety net for scripts; at most 30 days).
    #[arg(long, value_parser = seconds)]
    pub exit_after_seconds: Option<Duration>,
    /// Load model: at most this many requests served at once (from their TTFT to their last
    /// token); the others wait in a FIFO queue, so TTFT grows with load.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub slots: Option<u32>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first); needs
    /// `--tls-key`.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve an HTML page at /metrics instead of Prometheus text (to test scrapers).
    #[arg(long)]
    pub metrics_garbage: bool,
    /// Answer with varied text (common words, numbers and punctuation drawn per request) instead
    /// of eight repeated words, so that a client's tokenizer meets text as from a model. A token
    /// of the answer is still one word of it.
    #[arg(long)]
    pub varied_text: bool,
}

/// The TLS acceptor of `--tls-cert`/`--tls-key`.
fn tls_acceptor(cert: &std::path::Path, key: &std::path::Path) -> Result<tokio_rustls::TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<std::result::Result<Vec<_>, _>>())
        .with_context(|| format!("--tls-cert {}: not a readable PEM certificate file", cert.display()))?;
    anyhow::ensure!(!certs.is_empty(), "--tls-cert {}: holds no certificate", cert.display());
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("--tls-key {}: not a readable PEM private key", key.display()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("cannot set up TLS")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("--tls-cert and --tls-key do not make a usable certificate")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves HTTP/1.1 on one connection (plain or TLS).
async fn serve_connection<I>(io: I, state: Arc<State>, idle: Duration)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| handle(state.clone(), req));
    // hyper's header-read timer runs whenever the connection waits for a request head, idle
    // keep-alive included: it is the idle timeout.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

/// The `--slots` load model: a FIFO queue in front of N slots.
#[derive(Clone, Debug)]
pub struct Slots(Arc<tokio::sync::Semaphore>);

impl Slots {
    pub fn new(n: u32) -> Slots {
        Slots(Arc::new(tokio::sync::Semaphore::new(n as usize)))
    }

    /// Waits for a free slot, first come first served; the slot is held until the permit drops
    /// (also when the client goes away while waiting or being served).
    pub async fn take(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.0.clone().acquire_owned().await.ok()
    }
}

/// Requests per second that `slots` slots serve when every request asks for `tokens` tokens:
/// each holds a slot for `ttft + (tokens − 1)·itl`.
pub fn capacity(slots: u32, ttft_ms: f64, itl_ms: f64, tokens: u64) -> f64 {
    let hold_s = (ttft_ms + itl_ms * tokens.saturating_sub(1) as f64) / 1e3;
    if hold_s > 0.0 { f64::from(slots) / hold_s } else { f64::INFINITY }
}

/// Words per block of the mock's prefix cache (its "tokens" are the prompt's words).
pub const CACHE_BLOCK_WORDS: usize = 16;
/// Blocks the mock's prefix cache holds; when full it is emptied (a crude eviction).
pub const CACHE_CAPACITY_BLOCKS: usize = 1 << 16;

/// The mock's prefix cache: chained hashes of full blocks of [`CACHE_BLOCK_WORDS`] words; a
/// request's hit is the words of its leading blocks already stored (vLLM counts queries and hits
/// in tokens the same way).
#[derive(Default)]
pub struct PrefixCache {
    blocks: std::collections::HashSet<u64>,
}

impl PrefixCache {
    /// Looks `words` up and stores their blocks; returns the words hit.
    pub fn query(&mut self, words: &[&str]) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut parent = 0u64;
        let mut hit = 0u64;
        let mut prefix = true;
        for block in words.chunks_exact(CACHE_BLOCK_WORDS) {
            let mut h = DefaultHasher::new();
            (parent, block).hash(&mut h);
            parent = h.finish();
            if prefix && self.blocks.contains(&parent) {
                hit += CACHE_BLOCK_WORDS as u64;
            } else {
                prefix = false;
                if self.blocks.len() >= CACHE_CAPACITY_BLOCKS {
                    self.blocks.clear();
                }
                self.blocks.insert(parent);
            }
        }
        hit
    }

    pub fn clear(&mut self) {
        self.blocks.clear();
    }

    /// Fraction of the capacity in use.
    pub fn usage(&self) -> f64 {
        self.blocks.len() as f64 / CACHE_CAPACITY_BLOCKS as f64
    }
}

/// What the mock's `/metrics` reports.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    prompt_tokens: AtomicU64,
    generation_tokens: AtomicU64,
    queries: AtomicU64,
    hits: AtomicU64,
    running: AtomicU64,
    /// Requests in line for a slot (`--slots`); they count in `running` too until served.
    waiting: AtomicU64,
    /// Requests finished, by latency bucket ([`LATENCY_BUCKETS`] and +Inf), and their sum (µs).
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    latency_sum_us: AtomicU64,
    /// Failed `accept`s: each one is followed by a pause, so this counts the pauses.
    accept_errors: AtomicU64,
}

/// Upper bounds (s) of the mock's end-to-end latency histogram.
const LATENCY_BUCKETS: [f64; 6] = [0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

impl Counters {
    fn finished(&self, latency: Duration) {
        let s = latency.as_secs_f64();
        let i = LATENCY_BUCKETS.iter().position(|&b| s <= b).unwrap_or(LATENCY_BUCKETS.len());
        self.latency_buckets[i].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
        self.running.fetch_sub(1, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    fn exposition(&self, usage: f64) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{model_name=\"mock\"}} {value}\n"
            ));
        };
        let waiting = g(&self.waiting);
        let running = g(&self.running).saturating_sub(waiting);
        metric("vllm:num_requests_running", "gauge", "Requests being answered.", running.to_string());
        metric("vllm:num_requests_waiting", "gauge", "Requests in line for a slot (--slots).", waiting.to_string());
        metric("vllm:kv_cache_usage_perc", "gauge", "Fraction of the mock's prefix cache in use.", usage.to_string());
        metric("vllm:request_success_total", "counter", "Requests answered.", g(&self.requests).to_string());
        metric("vllm:prompt_tokens_total", "counter", "Prompt words received.", g(&self.prompt_tokens).to_string());
        metric("vllm:generation_tokens_total", "counter", "Tokens generated.", g(&self.generation_tokens).to_string());
        metric(
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in prompt words.",
            g(&self.queries).to_string(),
        );
        metric(
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in prompt words.",
            g(&self.hits).to_string(),
        );
        metric(
            "mock_accept_errors_total",
            "counter",
            "Failed accepts of a connection, each followed by a pause.",
            g(&self.accept_errors).to_string(),
        );
        out.push_str("# HELP vllm:e2e_request_latency_seconds End-to-end latency of answered requests.\n");
        out.push_str("# TYPE vllm:e2e_request_latency_seconds histogram\n");
        let mut cumulative = 0;
        for (i, b) in self.latency_buckets.iter().enumerate() {
            cumulative += g(b);
            let le = LATENCY_BUCKETS.get(i).map_or_else(|| "+Inf".to_owned(), |v| v.to_string());
            out.push_str(&format!(
                "vllm:e2e_request_latency_seconds_bucket{{le=\"{le}\",model_name=\"mock\"}} {cumulative}\n"
            ));
        }
        out.push_str(&format!("vllm:e2e_request_latency_seconds_count{{model_name=\"mock\"}} {cumulative}\n"));
        out.push_str(&format!(
            "vllm:e2e_request_latency_seconds_sum{{model_name=\"mock\"}} {}\n",
            g(&self.latency_sum_us) as f64 / 1e6
        ));
        out
    }
}

/// Default of `--max-output-tokens`: a million tokens (a few MB of text).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 1_000_000;
/// Default of `--max-request-bytes`: 64 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 64 << 20;
/// Default of `--idle-timeout-seconds`.
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: &str = "120";
/// A stream's bytes are handed to the connection in pieces of about this size.
pub const STREAM_PIECE_BYTES: usize = 64 << 10;

/// A number in `[lo, hi]` (`lo` excluded when `open`), described as `what` in the error.
fn number_in(s: &str, lo: f64, hi: f64, open: bool, what: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (v > lo || (!open && v == lo)) && v <= hi => Ok(v),
        _ => Err(format!(
            "expected {what} from {lo} ({}) to {hi}, found {s:?}",
            if open { "excluded" } else { "included" }
        )),
    }
}

/// A time span in seconds > 0 ([`aiperf_core::duration`]).
fn positive_seconds(s: &str) -> std::result::Result<Duration, String> {
    aiperf_core::duration::parse_seconds(s, false).map_err(|e| e.to_string())
}

/// A time span in seconds ≥ 0.
fn seconds(s: &str) -> std::result::Result<Duration, String> {
    aiperf_core::duration::parse_seconds(s, true).map_err(|e| e.to_string())
}

/// Milliseconds >= 0, at most a day.
fn millis(s: &str) -> std::result::Result<f64, String> {
    number_in(s, 0.0, 86_400_000.0, false, "a number of milliseconds")
}

/// A fraction of requests.
fn rate(s: &str) -> std::result::Result<f64, String> {
    number_in(s, 0.0, 1.0, false, "a fraction")
}

struct State {
    args: Args,
    counter: AtomicU64,
    arrivals: Option<Mutex<BufWriter<Box<dyn Write + Send>>>>,
    slots: Option<Slots>,
    metrics: Counters,
    cache: Mutex<PrefixCache>,
}

impl State {
    fn log(&self, line: &Value) {
        if let Some(log) = &self.arrivals
            && let Ok(mut w) = log.lock()
        {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }
}

/// Counts a request as waiting for a slot while it lives (also when the client goes away).
struct InLine<'a>(&'a Counters);

impl<'a> InLine<'a> {
    fn new(c: &'a Counters) -> InLine<'a> {
        c.waiting.fetch_add(1, Ordering::Relaxed);
        InLine(c)
    }
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Ends a request's `running` count and records its latency when dropped (a stream may end early).
struct Finish {
    state: Arc<State>,
    started: std::time::Instant,
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.state.metrics.finished(self.started.elapsed());
    }
}

/// Whether request `n` gets a fault of this rate (`salt` decorrelates faults).
fn hits(n: u64, rate: f64, salt: u64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    let m = n + salt;
    ((m + 1) as f64 * rate).floor() > (m as f64 * rate).floor()
}

/// Runs the server until Ctrl-C (or `--exit-after-seconds`).
pub fn run(args: Args) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port)))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
        let addr = listener.local_addr()?;
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(c), Some(k)) => Some(tls_acceptor(c, k)?),
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
        let slots = args.slots.map(Slots::new);
        let state = Arc::new(State {
            args,
            counter: AtomicU64::new(0),
            arrivals,
            slots,
            metrics: Counters::default(),
            cache: Mutex::new(PrefixCache::default()),
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

type Body = BoxBody<Bytes, std::io::Error>;

/// A response body fed from a channel; an `Err` item aborts the connection mid-stream.
struct ChannelBody(mpsc::Receiver<std::result::Result<Bytes, std::io::Error>>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

fn full(status: StatusCode, body: Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).map_err(|e: Infallible| match e {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    r
}

const WORDS: [&str; 8] = [" the", " of", " and", " to", " in", " is", " it", " that"];

/// The words of `--varied-text` answers.
const VARIED: [&str; 64] = [
    " the", " of", " and", " to", " in", " is", " it", " that", " for", " was", " on", " are", " with", " as", " this",
    " be", " at", " by", " from", " or", " have", " an", " they", " which", " one", " you", " were", " her", " all",
    " she", " there", " would", " their", " we", " him", " been", " has", " when", " who", " will", " more", " no",
    " if", " out", " so", " said", " what", " up", " its", " about", " into", " than", " them", " can", " only",
    " other", " new", " some", " could", " time", " these", " two", " may", " then",
];

/// Word `i` of the answer to request `n`: [`WORDS`] in turn, or with `varied` a draw from
/// [`VARIED`] with numbers (1 in 16 words), a comma or a full stop (1 in 16 each) and a
/// capitalized word after a full stop.
fn answer_word(varied: bool, n: u64, i: u64) -> std::borrow::Cow<'static, str> {
    use std::borrow::Cow;
    if !varied {
        return Cow::Borrowed(WORDS[i as usize % WORDS.len()]);
    }
    let draw = |k: u64| {
        let mut z = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let r = draw(i);
    let word = VARIED[(r >> 8) as usize % VARIED.len()];
    match r % 16 {
        0 => Cow::Owned(format!(" {}", (r >> 20) % 100_000)),
        1 => Cow::Borrowed(","),
        2 => Cow::Borrowed("."),
        _ if i > 0 && draw(i - 1) % 16 == 2 => {
            let mut w = word.to_string();
            if let Some(c) = w.get_mut(1..2) {
                c.make_ascii_uppercase();
            }
            Cow::Owned(w)
        }
        _ => Cow::Borrowed(word),
    }
}

fn words_in(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.split_whitespace().count() as u64,
        Value::Array(a) => a.iter().map(|m| m.get("content").map_or(0, words_in)).sum(),
        _ => 0,
    }
}

/// The prompt's words in order (the messages' contents, or the prompt string).
fn words_of<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.extend(s.split_whitespace()),
        Value::Array(a) => a.iter().filter_map(|m| m.get("content")).for_each(|c| words_of(c, out)),
        _ => {}
    }
}

/// `/metrics`, the cache resets and `/slots`; `None` for other paths.
fn admin(state: &State, method: &hyper::Method, path: &str, query: Option<&str>) -> Option<Response<Body>> {
    let reset = |state: &State| {
        if let Ok(mut c) = state.cache.lock() {
            c.clear();
        }
        let ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        state.log(&json!({"reset": path, "query": query, "arrival_ns": ns.to_string()}));
    };
    match (method.as_str(), path) {
        ("GET", "/metrics") => {
            let body = if state.args.metrics_garbage {
                "<html><body><h1>Not metrics</h1></body></html>".to_owned()
            } else {
                let usage = state.cache.lock().map(|c| c.usage()).unwrap_or(0.0);
                state.metrics.exposition(usage)
            };
            let mut r = Response::new(Full::new(Bytes::from(body)).map_err(|e: Infallible| match e {}).boxed());
            r.headers_mut()
                .insert("content-type", hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"));
            Some(r)
        }
        ("POST", "/reset_prefix_cache" | "/flush_cache") => {
            reset(state);
            Some(full(StatusCode::OK, json!({"status": "ok"})))
        }
        ("GET", "/slots") => {
            Some(full(StatusCode::OK, json!([{"id": 0, "is_processing": false}, {"id": 1, "is_processing": false}])))
        }
        ("POST", p) if p.starts_with("/slots/") && query == Some("action=erase") => {
            reset(state);
            Some(full(StatusCode::OK, json!({"id_slot": p.trim_start_matches("/slots/"), "n_erased": 0})))
        }
        _ => None,
    }
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> std::result::Result<Response<Body>, Infallible> {
    let arrival_ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    // Let the other connections whose requests arrived at the same moment take their arrival
    // times before this one reads and parses its body: a burst of large bodies is otherwise
    // stamped one parse after another, and the stamps measure the mock, not the client.
    tokio::task::yield_now().await;
    let path = req.uri().path().to_owned();
    let auth = req.headers().contains_key("authorization");
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let ids = json!({"request_id": header("x-request-id"), "correlation_id": header("x-correlation-id"),
        "affinity": header("x-session-affinity"), "user_agent": header("user-agent")});
    if path == "/health" || path == "/v1/models" {
        return Ok(full(StatusCode::OK, json!({"status": "ok", "data": [{"id": "mock", "object": "model"}]})));
    }
    if let Some(r) = admin(&state, req.method(), &path, req.uri().query()) {
        return Ok(r);
    }
    // Only the paths a real OpenAI-compatible server (vLLM, SGLang, llama.cpp) serves, so that a
    // client joining its URL wrongly sees the 404 it would see there.
    let chat = match path.as_str() {
        "/v1/chat/completions" => true,
        "/v1/completions" => false,
        _ => {
            let message = format!(
                "no route {path}: this server answers POST /v1/chat/completions and /v1/completions, \
                 GET /v1/models, /health and /metrics"
            );
            return Ok(full(
                StatusCode::NOT_FOUND,
                json!({"error": {"message": message, "type": "not_found", "code": 404}}),
            ));
        }
    };
    let limit = state.args.max_request_bytes;
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            let message = format!("request body larger than {limit} bytes (mock-server --max-request-bytes)");
            return Ok(full(StatusCode::PAYLOAD_TOO_LARGE, json!({"error": {"message": message}})));
        }
        Err(_) => return Ok(full(StatusCode::BAD_REQUEST, json!({"error": {"message": "cannot read body"}}))),
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return Ok(full(StatusCode::BAD_REQUEST, json!({"error": {"message": "body is not JSON"}})));
    };
    let a = &state.args;
    let n = state.counter.fetch_add(1, Ordering::Relaxed);
    let max_tokens = ["max_completion_tokens", "max_tokens"].iter().find_map(|k| body.get(*k).and_then(Value::as_u64));
    if let Some(m) = max_tokens.filter(|m| *m > a.max_output_tokens) {
        let message = format!(
            "max_tokens {m} is more than this server allows ({}, mock-server --max-output-tokens)",
            a.max_output_tokens
        );
        return Ok(full(
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": message, "type": "invalid_request_error"}}),
        ));
    }
    let ignore_eos = body.get("ignore_eos").and_then(Value::as_bool).unwrap_or(false);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let prompt = body.get(if chat { "messages" } else { "prompt" }).unwrap_or(&Value::Null);
    let prompt_tokens = words_in(prompt);
    if state.arrivals.is_some() {
        let line = json!({"n": n, "arrival_ns": arrival_ns.to_string(), "path": path, "auth": auth, "stream": stream,
            "max_tokens": max_tokens, "prompt_tokens": prompt_tokens, "session_hint": body.get("user"),
            "headers": ids});
        state.log(&line);
    }
    if hits(n, a.error_rate, 0) {
        return Ok(full(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"message": "mock: injected server error", "type": "server_error", "code": 500}}),
        ));
    }
    let mut tokens = max_tokens.unwrap_or(a.default_output_tokens);
    if !ignore_eos && let Some(e) = a.eos_after {
        tokens = tokens.min(e);
    }
    if hits(n, a.ignore_max_tokens_rate, 4 * 7919) {
        tokens += 5;
    }
    let finish = if Some(tokens) == max_tokens { "length" } else { "stop" };
    let cached = {
        let mut words = Vec::new();
        words_of(prompt, &mut words);
        state.cache.lock().map(|mut c| c.query(&words)).unwrap_or(0)
    };
    let m = &state.metrics;
    m.running.fetch_add(1, Ordering::Relaxed);
    let done = Finish { state: state.clone(), started: std::time::Instant::now() };
    m.prompt_tokens.fetch_add(prompt_tokens, Ordering::Relaxed);
    m.generation_tokens.fetch_add(tokens, Ordering::Relaxed);
    m.queries.fetch_add(prompt_tokens, Ordering::Relaxed);
    m.hits.fetch_add(cached, Ordering::Relaxed);
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": tokens, "total_tokens": prompt_tokens + tokens,
        "prompt_tokens_details": {"cached_tokens": cached}});
    let ttft = Duration::from_secs_f64(a.ttft_ms.max(0.0) / 1e3);
    let itl = Duration::from_secs_f64(a.itl_ms.max(0.0) / 1e3);
    let id = format!("mock-{n}");
    let varied = a.varied_text;
    // The load model: wait in line for a slot, held until the last token.
    let slot = match &state.slots {
        Some(s) => {
            let _in_line = InLine::new(&state.metrics);
            s.take().await
        }
        None => None,
    };
    if !stream {
        tokio::time::sleep(ttft + itl * (tokens.saturating_sub(1) as u32)).await;
        drop(slot);
        let text: String = (0..tokens).map(|i| WORDS[i as usize % WORDS.len()]).collect();
        let choice = if chat {
            json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish})
        } else {
            json!({"index": 0, "text": text, "finish_reason": finish})
        };
        // AIPerf's completions parser takes only `text_completion` (or `completion`) objects.
        let object = if chat { "chat.completion" } else { "text_completion" };
        let mut r = full(StatusCode::OK, json!({"id": id, "object": object, "choices": [choice], "usage": usage}));
        r.headers_mut().insert("x-aiperf-mock-ttft-ms", hyper::header::HeaderValue::from(a.ttft_ms.round() as u64));
        return Ok(r);
    }
    let (tx, rx) = mpsc::channel(16);
    let disconnect = hits(n, a.disconnect_rate, 7919);
    let malformed = hits(n, a.malformed_rate, 2 * 7919);
    let stall = hits(n, a.stall_rate, 3 * 7919);
    tokio::spawn(async move {
        let _slot = slot;
        let _done = done;
        let ev = |v: Value| format!("data: {v}\n\n");
        let chunk = |delta: Value, finish: Value| {
            if chat {
                json!({"id": id, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            } else {
                json!({"id": id, "object": "text_completion", "choices": [{"index": 0, "text": delta.get("content").cloned().unwrap_or(json!("")), "finish_reason": finish}]})
            }
        };
        let send = |s: String| {
            let tx = tx.clone();
            async move { tx.send(Ok(Bytes::from(s))).await.is_ok() }
        };
        if chat && !send(ev(chunk(json!({"role": "assistant", "content": null}), Value::Null))).await {
            return;
        }
        tokio::time::sleep(ttft).await;
        // Token i leaves at first + i·itl: deadlines, so timer rounding does not add up.
        let first = tokio::time::Instant::now();
        let mut batch = String::new();
        for i in 0..tokens {
            if i > 0 && (!itl.is_zero() || batch.len() >= STREAM_PIECE_BYTES) {
                if !send(std::mem::take(&mut batch)).await {
                    return;
                }
                if !itl.is_zero() {
                    tokio::time::sleep_until(first + itl * u32::try_from(i).unwrap_or(u32::MAX)).await;
                }
            }
            if i == tokens / 2 && i > 0 {
                if disconnect {
                    let _ = send(std::mem::take(&mut batch)).await;
                    let _ = tx
                        .send(Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "mock: injected disconnect",
                        )))
                        .await;
                    return;
                }
                if malformed {
                    batch.push_str("data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n");
                }
                if stall {
                    let _ = send(std::mem::take(&mut batch)).await;
                    tx.closed().await;
                    return;
                }
            }
            let word = answer_word(varied, n, i);
            if i + 1 < tokens {
                // The common chunk, written directly: the mock must outpace the client it measures.
                if chat {
                    batch.push_str(&format!(
                        "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{word}\"}},\"finish_reason\":null}}]}}\n\n"
                    ));
                } else {
                    batch.push_str(&format!(
                        "data: {{\"id\":\"{id}\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"{word}\",\"finish_reason\":null}}]}}\n\n"
                    ));
                }
                continue;
            }
            let mut c = chunk(json!({"content": word}), json!(finish));
            if !chat {
                c["usage"] = usage.clone();
            }
            batch.push_str(&ev(c));
        }
        if tokens == 0 {
            batch.push_str(&ev(chunk(json!({}), json!(finish))));
        }
        if chat && include_usage {
            batch.push_str(&ev(json!({"id": id, "object": "chat.completion.chunk", "choices": [], "usage": usage})));
        }
        batch.push_str("data: [DONE]\n\n");
        let _ = send(batch).await;
    });
    let mut r = Response::new(ChannelBody(rx).boxed());
    let h = r.headers_mut();
    h.insert("content-type", hyper::header::HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", hyper::header::HeaderValue::from_static("no-cache"));
    h.insert(
        "x-aiperf-mock-ttft-ms",
        hyper::header::HeaderValue::from_str(&a.ttft_ms.to_string())
            .unwrap_or(hyper::header::HeaderValue::from_static("0")),
    );
    Ok(r)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn varied_answers_differ_between_requests_and_repeat_for_one() {
        let answer = |n: u64| (0..200).map(|i| answer_word(true, n, i).into_owned()).collect::<String>();
        assert_eq!(answer(7), answer(7));
        assert_ne!(answer(7), answer(8));
        let a = answer(7);
        assert!(a.contains(',') && a.contains(". ") && a.chars().any(|c| c.is_ascii_digit()), "{a}");
        assert!(a.chars().any(|c| c.is_ascii_uppercase()), "{a}");
        assert_eq!(answer_word(false, 7, 9), WORDS[1]);
    }

    #[test]
    fn capacity_is_slots_over_the_time_a_request_holds_one() {
        // 50 ms + 31 gaps of 5 ms = 205 ms per request: 8 slots serve 39.0 requests per second.
        assert!((capacity(8, 50.0, 5.0, 32) - 8.0 / 0.205).abs() < 1e-9);
        assert_eq!(capacity(1, 100.0, 0.0, 1), 10.0);
        assert_eq!(capacity(4, 0.0, 0.0, 10), f64::INFINITY);
    }

    #[test]
    fn slots_admit_at_most_n_at_once_in_arrival_order() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let slots = Slots::new(2);
            let held = (slots.take().await.unwrap(), slots.take().await.unwrap());
            let order = Arc::new(Mutex::new(Vec::new()));
            let busy = Arc::new(AtomicU64::new(0));
            let most = Arc::new(AtomicU64::new(0));
            let mut tasks = Vec::new();
            for k in 0..6u64 {
                let (slots, order, busy, most) = (slots.clone(), order.clone(), busy.clone(), most.clone());
                tasks.push(tokio::spawn(async move {
                    let _slot = slots.take().await.unwrap();
                    order.lock().unwrap().push(k);
                    let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    busy.fetch_sub(1, Ordering::SeqCst);
                }));
                // Each waiter is queued before the next arrives.
                tokio::task::yield_now().await;
            }
            assert!(order.lock().unwrap().is_empty(), "nobody is served while both slots are held");
            drop(held);
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
            assert_eq!(most.load(Ordering::SeqCst), 2);
        });
    }

    #[test]
    fn the_prefix_cache_hits_leading_blocks_already_seen() {
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let a: Vec<&str> = words.iter().map(String::as_str).collect();
        let mut c = PrefixCache::default();
        assert_eq!(c.query(&a), 0);
        // Same first 2 blocks (32 words), then different: 32 words hit; a partial block never hits.
        let mut b = a[..35].to_vec();
        b[33] = "other";
        assert_eq!(c.query(&b), 32);
        // A different first block: nothing after it counts, even if later blocks match.
        let mut d = a.clone();
        d[0] = "changed";
        assert_eq!(c.query(&d), 0);
        c.clear();
        assert_eq!(c.query(&a), 0);
        assert!(c.usage() > 0.0);
    }

    #[test]
    fn the_exposition_is_prometheus_text_the_core_parses() {
        let m = Counters::default();
        m.running.fetch_add(1, Ordering::Relaxed);
        m.finished(Duration::from_millis(30));
        m.hits.fetch_add(16, Ordering::Relaxed);
        let families =
            aiperf_core::server::prometheus::parse(&m.exposition(0.5), aiperf_core::server::prometheus::DEFAULT_LIMITS)
                .unwrap();
        let get = |n: &str| families.iter().find(|f| f.name == n).unwrap();
        assert_eq!(get("vllm:request_success").samples[0].value, 1.0);
        assert_eq!(get("vllm:prefix_cache_hits").samples[0].value, 16.0);
        assert_eq!(get("vllm:num_requests_running").samples[0].value, 0.0);
        assert_eq!(get("vllm:kv_cache_usage_perc").samples[0].value, 0.5);
        assert_eq!(get("mock_accept_errors").samples[0].value, 0.0);
        // Two requests in, one of them in line for a slot: one running, one waiting.
        m.running.fetch_add(2, Ordering::Relaxed);
        let in_line = InLine::new(&m);
        let families =
            aiperf_core::server::prometheus::parse(&m.exposition(0.5), aiperf_core::server::prometheus::DEFAULT_LIMITS)
                .unwrap();
        let value = |n: &str| families.iter().find(|f| f.name == n).unwrap().samples[0].value;
        assert_eq!((value("vllm:num_requests_running"), value("vllm:num_requests_waiting")), (1.0, 1.0));
        drop(in_line);
        assert_eq!(m.waiting.load(Ordering::Relaxed), 0);
        let h = get("vllm:e2e_request_latency_seconds");
        assert_eq!(h.kind, aiperf_core::server::prometheus::Kind::Histogram);
        // 30 ms falls in the 0.05 bucket: cumulative 0 at 0.01, 1 from 0.05 on.
        let buckets: Vec<f64> = h.samples.iter().filter(|s| s.name.ends_with("_bucket")).map(|s| s.value).collect();
        assert_eq!(buckets, vec![0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    }
}
