//! The validated, typed plan of a replay: what `profile`'s flags mean, resolved in one place.
//!
//! [`ReplayPlan::from_args`] is the only function that reads clap's [`Args`]: every range check
//! and every error message about an option is here, naming the option, the value and what is
//! accepted. The rest of the replay sees only the plan.

use std::path::PathBuf;
use std::time::Duration;

use aiperf_core::campaign::search::{Search, SearchParams};
use aiperf_core::campaign::sweep::Axis;
use aiperf_core::duration;
use aiperf_core::replay::schedule::{self, ArrivalPattern, Schedule, ScheduleError, Shard, Timing};
use aiperf_core::results::metrics::{Slo, parse_goodput};
use aiperf_core::synthesis::TransformParams;
use aiperf_core::trace::Trace;
use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Map, Value, json};

use super::body::BodyTemplate;
use super::options::{Args, UiType};

/// Accepted `--request-rate` range (sessions per second).
pub const RATE_RANGE: (f64, f64) = (1e-3, 1e6);
/// Most concurrent session runs.
pub const MAX_CONCURRENCY: usize = 1_000_000;
/// Default of `--max-response-bytes`: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;
/// Default prompt size limit in tokens (`--max-prompt-tokens`): past any model's context, and a
/// generated prompt of this size is about 30 MB.
pub const DEFAULT_MAX_PROMPT_TOKENS: u64 = 1 << 22;
/// Most requests of one run (`--request-count`, `--warmup-request-count`).
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// Shortest `--slice-duration`.
pub const MIN_SLICE: Duration = Duration::from_millis(1);
/// Most runs of one value (`--num-profile-runs`, AIPerf's limit).
pub const MAX_PROFILE_RUNS: u32 = 10;
/// Most values of one sweep.
pub const MAX_SWEEP_VALUES: usize = 1000;
/// Most `--url`s of one run.
pub const MAX_URLS: usize = 1024;
/// Largest `--ssl-ca-cert` file read: 16 MiB (a full system bundle is about 200 KiB).
pub const MAX_CA_FILE_BYTES: u64 = 16 << 20;

/// Where requests go and what they look like.
#[derive(Clone, Debug)]
pub struct Target {
    /// The base URL as given (with `http://` added when it had no scheme); the first of `urls`.
    pub url: String,
    /// Every `--url`, normalized like `url`, in the order given (sessions go round robin).
    pub urls: Vec<String>,
    /// How `https://` servers are verified.
    pub tls: TlsOptions,
    /// The path called on it.
    pub path: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The header carrying the session's correlation id.
    pub session_header: String,
    pub timeout: Duration,
    /// Largest response body, SSE event or streamed text accepted.
    pub max_response_bytes: usize,
    pub body: BodyTemplate,
}

/// How `https://` servers are verified: the system's roots and the bundled Mozilla roots, plus
/// the certificates of `--ssl-ca-cert`; or nothing at all with `--insecure-skip-tls-verify`.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--ssl-ca-cert`, as given.
    pub ca_file: Option<PathBuf>,
    /// The certificates it holds (DER), each checked to be usable as a trust anchor.
    pub ca_certs: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// `--insecure-skip-tls-verify`.
    pub insecure: bool,
}

/// Reads and checks a `--ssl-ca-cert` file: PEM certificates, at least one, each a valid
/// trust anchor.
pub fn ca_certificates(path: &std::path::Path) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use std::io::Read;
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CA_FILE_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("--ssl-ca-cert {shown}: cannot read the file"))?;
    ensure!(
        bytes.len() as u64 <= MAX_CA_FILE_BYTES,
        "--ssl-ca-cert {shown}: larger than {} MiB; accepted is a PEM file of CA certificates",
        MAX_CA_FILE_BYTES >> 20
    );
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--ssl-ca-cert {shown}: not a valid PEM file ({e})"))?;
    ensure!(
        !certs.is_empty(),
        "--ssl-ca-cert {shown}: holds no certificate; accepted is a PEM file with \
         -----BEGIN CERTIFICATE----- blocks (a DER file can be converted with \
         `openssl x509 -inform der -in FILE -out FILE.pem`)"
    );
    for (i, c) in certs.iter().enumerate() {
        let mut store = rustls::RootCertStore::empty();
        store.add(c.clone()).map_err(|e| {
            anyhow::anyhow!(
                "--ssl-ca-cert {shown}: certificate {} of {} cannot be used as a CA: {e}",
                i + 1,
                certs.len()
            )
        })?;
    }
    Ok(certs)
}

/// What is replayed and how arrivals are timed.
#[derive(Clone, Debug)]
pub struct Source {
    pub input_file: PathBuf,
    pub format: crate::trace_format::TraceFormatArgs,
    pub max_line_bytes: usize,
    pub block_size: u64,
    pub seed: u64,
    /// In-memory synthesis applied to the trace before replay, when an option asks for it.
    pub synthesis: Option<TransformParams>,
    pub tokenizer: Option<String>,
    arrivals: Arrivals,
}

/// The arrival options, resolved against the trace by [`ReplayPlan::timing`].
#[derive(Clone, Copy, Debug)]
struct Arrivals {
    /// `--fixed-schedule` (true) or `--no-fixed-schedule` (false); `None` = decided by the trace.
    fixed: Option<bool>,
    start_offset_ms: Option<f64>,
    end_offset_ms: Option<f64>,
    auto_offset: bool,
    rate: Option<(f64, ArrivalPattern)>,
}

/// When sending stops and how much may be in flight.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub request_count: Option<u64>,
    pub duration: Option<Duration>,
    /// How long in-flight requests may finish after sending stopped.
    pub grace: Duration,
    /// At most this many session runs at once.
    pub concurrency: Option<usize>,
    pub warmup_requests: u64,
}

/// How this process takes part in a run split across processes.
#[derive(Clone, Copy, Debug)]
pub struct Coordination {
    /// The part of the run this process sends (the whole run by default).
    pub shard: Shard,
    /// The common time zero (Unix ns), `--start-at`.
    pub start_at_unix_ns: Option<u64>,
    /// Warn when the target's clock differs by more than this (ms).
    pub clock_warn_ms: f64,
}

impl Coordination {
    /// Whether the target's clock is probed: a shard or a common start.
    pub fn probe_clock(&self) -> bool {
        !self.shard.is_whole() || self.start_at_unix_ns.is_some()
    }
}

/// Parses `--start-at`: Unix epoch milliseconds, or an RFC 3339 time with its offset.
pub fn parse_start_at(s: &str) -> Result<u64> {
    let t = s.trim();
    let ns = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = t.parse().with_context(|| format!("--start-at {t}: too large a number of milliseconds"))?;
        i128::from(ms) * 1_000_000
    } else {
        let ts: jiff::Timestamp = t.parse().map_err(|e| {
            anyhow::anyhow!(
                "--start-at '{t}': accepted is an RFC 3339 time such as 2026-11-23T22:00:00Z or \
                 2026-11-23T23:00:00+01:00, or Unix epoch milliseconds ({e})"
            )
        })?;
        ts.as_nanosecond()
    };
    u64::try_from(ns).map_err(|_| anyhow::anyhow!("--start-at '{t}': accepted are times from 1970 to 2554"))
}

/// Where token counts come from: the client re-tokenizes, as AIPerf does, unless
/// `--use-server-token-count`. The server's `usage` is recorded beside the client's count either
/// way (`usage_*` metrics, the console's client/server line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenCounting {
    /// The server's `usage` when reported; the client counts only when it is not
    /// (`--use-server-token-count`: the least client CPU).
    ServerOnly,
    /// The client re-tokenizes the answer text (the default, AIPerf's).
    Client,
}

impl TokenCounting {
    /// Whether metrics take the server's count first.
    pub fn server_first(self) -> bool {
        self != TokenCounting::Client
    }
}

/// What is written and shown.
#[derive(Clone, Debug)]
pub struct Exports {
    pub artifact_dir: PathBuf,
    pub slos: Vec<Slo>,
    /// How the run shows its progress.
    pub progress: super::progress::Mode,
    /// `--slice-duration`: also write the metrics per slice of this length.
    pub slice: Option<Duration>,
}

/// The server's side: metrics scraped, readiness, cache reset.
#[derive(Clone, Debug)]
pub struct ServerPlan {
    /// `/metrics` URLs scraped (credentials kept for fetching; de-duplicated); empty = off.
    pub metrics_urls: Vec<String>,
    pub metrics_interval: Duration,
    /// `--wait-for-server`.
    pub wait: Option<Duration>,
    pub reset_prefix_cache: bool,
    /// `--go-on-unreachable`: replay even when a URL took no connection before time zero.
    pub go_on_unreachable: bool,
    /// `--server-kind`.
    pub kind: Option<aiperf_core::server::kinds::ServerKind>,
}

/// Accepted `--server-metrics-interval` range (s).
pub const SCRAPE_INTERVAL_RANGE: (f64, f64) = (0.01, 3600.0);

/// Everything a replay needs to know, validated.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    pub target: Target,
    pub source: Source,
    pub limits: Limits,
    pub counting: TokenCounting,
    pub exports: Exports,
    pub coordination: Coordination,
    pub server: ServerPlan,
    /// The options as written to the exports, secrets redacted.
    input_config: Value,
}

/// Splits `key:value` at the first colon.
fn key_value(s: &str, what: &str) -> Result<(String, String)> {
    let (k, v) = s.split_once(':').with_context(|| format!("{what} '{s}' is not of the form key:value"))?;
    ensure!(!k.trim().is_empty(), "{what} '{s}' has an empty key");
    Ok((k.trim().to_owned(), v.to_owned()))
}

/// Option `name`'s number of seconds as a time span ([`duration::seconds`]).
fn seconds(v: f64, name: &str, zero_ok: bool) -> Result<Duration> {
    duration::seconds(v, zero_ok).map_err(|e| anyhow!("{name} {v:?}: {e}"))
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(v: T, name: &str, lo: T, hi: T) -> Result<T> {
    ensure!(v >= lo && v <= hi, "{name} {v}: accepted is {lo} to {hi}");
    Ok(v)
}

/// `user:password@` of a URL replaced, so that the URL can be shown and written.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://<redacted>@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// `scheme://user:password@host…` split into the URL without its credentials and the
/// `user:password` (percent-decoded), which is sent as HTTP Basic authentication, as curl and
/// aiohttp do.
pub fn split_credentials(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_owned(), None) };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => (format!("{scheme}://{}", &rest[at + 1..]), Some(percent_decode(&rest[..at]))),
        None => (url.to_owned(), None),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `Authorization` value of HTTP Basic authentication for `user:password`.
pub fn basic_auth(userinfo: &str) -> String {
    use base64::Engine as _;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(userinfo))
}

/// Whether a header carries a credential (its value is never shown or written).
pub fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["authorization", "cookie", "key", "token", "secret", "password", "credential"].iter().any(|w| n.contains(w))
}

impl ReplayPlan {
    /// Validates the flags into a plan.
    pub fn from_args(args: Args) -> Result<ReplayPlan> {
        let a = args;
        ensure!(
            !a.url.is_empty() && a.url.len() <= MAX_URLS,
            "--url given {} times: accepted is 1 to {MAX_URLS} URLs",
            a.url.len()
        );
        let urls = a
            .url
            .iter()
            .map(|u| {
                let mut url = u.trim().to_owned();
                // AIPerf accepts `localhost:8000`; so do we.
                if !url.contains("://") {
                    url = format!("http://{url}");
                }
                ensure!(
                    url.starts_with("http://") || url.starts_with("https://"),
                    "--url {}: accepted is an http:// or https:// URL",
                    redact_url(&url)
                );
                Ok(url)
            })
            .collect::<Result<Vec<String>>>()?;
        let url = urls[0].clone();
        let tls = TlsOptions {
            ca_certs: a.ssl_ca_cert.as_deref().map(ca_certificates).transpose()?.unwrap_or_default(),
            ca_file: a.ssl_ca_cert.clone(),
            insecure: a.insecure_skip_tls_verify,
        };
        ensure!(
            a.custom_dataset_type == "mooncake_trace",
            "--custom-dataset-type {}: only mooncake_trace is supported",
            a.custom_dataset_type
        );
        let block_size = in_range(a.isl_block_size, "--isl-block-size", 1, u64::from(u32::MAX))?;
        for (name, n) in [("--request-rate", a.request_rate.len()), ("--concurrency", a.concurrency.len())] {
            ensure!(n <= 1, "{name} has {n} values: one run takes one value (a list is a sweep of sub-runs)");
        }
        if let Some((p, v)) = a.synthesis.lists().next() {
            bail!("--{} has {} values: one run takes one value (a list is a sweep of sub-runs)", p.flag(), v.len());
        }
        let concurrency =
            a.concurrency.first().map(|&c| in_range(c, "--concurrency", 1, MAX_CONCURRENCY)).transpose()?;
        let rate = a
            .request_rate
            .first()
            .copied()
            .map(|r| {
                ensure!(
                    r.is_finite() && r >= RATE_RANGE.0 && r <= RATE_RANGE.1,
                    "--request-rate {r:?}: accepted is {} to {} requests per second",
                    RATE_RANGE.0,
                    RATE_RANGE.1
                );
                Ok(r)
            })
            .transpose()?;
        let request_count = a.request_count.map(|n| in_range(n, "--request-count", 1, MAX_REQUESTS)).transpose()?;
        let warmup_requests = in_range(a.warmup_request_count, "--warmup-request-count", 0, MAX_REQUESTS)?;
        // A shard sends the whole run's sessions K, K+N, K+2N…, at the whole run's times:
        // `--request-count` stays the whole run's (the shards together send exactly it), while
        // the concurrency ceiling and the warm-up are totals divided as evenly as possible.
        let shard = match &a.shard {
            Some(s) => Shard::parse(s).map_err(|e| anyhow::anyhow!("--shard {s}: {e}"))?,
            None => Shard::WHOLE,
        };
        if let Some(c) = concurrency {
            ensure!(
                c >= shard.count as usize,
                "--concurrency {c} with --shard {shard}: the ceiling is divided across the {} shards, so it must be at least {}",
                shard.count,
                shard.count
            );
        }
        let concurrency = concurrency.map(|c| shard.part_of(c as u64) as usize);
        let warmup_requests = shard.part_of(warmup_requests);
        let start_at_unix_ns = a.start_at.as_deref().map(parse_start_at).transpose()?;
        let clock_warn_ms = a.clock_offset_warn_ms;
        ensure!(
            clock_warn_ms.is_finite() && clock_warn_ms >= 0.0,
            "--clock-offset-warn-ms {clock_warn_ms:?}: accepted is a number of milliseconds ≥ 0"
        );
        let headers = a.headers.iter().map(|h| key_value(h, "--header")).collect::<Result<Vec<_>>>()?;
        let mut extra_inputs = Map::new();
        for e in &a.extra_inputs {
            let (k, v) = key_value(e, "--extra-inputs")?;
            let value = serde_json::from_str::<Value>(v.trim()).unwrap_or(Value::String(v.trim().to_owned()));
            extra_inputs.insert(k, value);
        }
        let slos = match &a.goodput {
            Some(g) => parse_goodput(g)?,
            None => Vec::new(),
        };
        let timeout = seconds(a.request_timeout_seconds, "--request-timeout-seconds", false)?;
        let grace = seconds(a.benchmark_grace_period, "--benchmark-grace-period", true)?;
        let duration = a.benchmark_duration.map(|d| seconds(d, "--benchmark-duration", false)).transpose()?;
        let slice = a.slice_duration.map(|d| seconds(d, "--slice-duration", false)).transpose()?;
        if let Some(d) = slice {
            ensure!(d >= MIN_SLICE, "--slice-duration {}: accepted is at least 0.001 s", d.as_secs_f64());
        }
        for (name, v) in [
            ("--fixed-schedule-start-offset", a.fixed_schedule_start_offset),
            ("--fixed-schedule-end-offset", a.fixed_schedule_end_offset),
        ] {
            if let Some(v) = v {
                ensure!(v.is_finite() && v >= 0.0, "{name} {v:?}: accepted is a number of milliseconds ≥ 0");
            }
        }
        let block_u32 = u32::try_from(block_size).context("--isl-block-size is too large")?;
        let params = a.synthesis.transform_params(block_u32, a.random_seed);
        if let Err(e) = params.validate() {
            match e.param() {
                Some(p) => bail!("invalid {}: {e}", crate::synthesize::option_name(p)),
                None => return Err(e.into()),
            }
        }
        let synthesis =
            (params.synthesizes() || params.max_isl.is_some() || params.max_osl.is_some()).then_some(params);
        let path = a.custom_endpoint.clone().unwrap_or_else(|| a.endpoint_type.path().to_owned());
        let fixed = if a.fixed_schedule {
            Some(true)
        } else if a.no_fixed_schedule {
            Some(false)
        } else {
            None
        };
        let pattern = a.arrival_pattern;
        let server = {
            let mut metrics_urls = Vec::new();
            if !a.no_server_metrics {
                for u in urls.iter().chain(&a.server_metrics) {
                    let m = super::scraper::metrics_url(u);
                    if !metrics_urls.contains(&m) {
                        metrics_urls.push(m);
                    }
                }
            }
            let (lo, hi) = SCRAPE_INTERVAL_RANGE;
            let i = a.server_metrics_interval;
            ensure!(
                i.is_finite() && (lo..=hi).contains(&i),
                "--server-metrics-interval {i:?}: accepted is {lo} to {hi} seconds"
            );
            ServerPlan {
                metrics_urls,
                metrics_interval: Duration::from_secs_f64(i),
                wait: a.wait_for_server.map(|w| seconds(w, "--wait-for-server", false)).transpose()?,
                reset_prefix_cache: a.reset_prefix_cache,
                go_on_unreachable: a.go_on_unreachable,
                kind: a.server_kind,
            }
        };
        let mut input_config = json!({
            "model": a.model,
            "url": redact_url(&url),
            "endpoint_type": format!("{:?}", a.endpoint_type).to_lowercase(),
            "custom_endpoint": a.custom_endpoint,
            "streaming": a.streaming,
            "api_key": a.api_key.as_ref().map(|_| "<redacted>"),
            "headers": headers.iter().map(|(k, _)| format!("{k}:<redacted>")).collect::<Vec<_>>(),
            "session_header": a.session_header,
            "extra_inputs": extra_inputs,
            "request_timeout_seconds": a.request_timeout_seconds,
            "use_legacy_max_tokens": a.use_legacy_max_tokens,
            "turn_history": a.turn_history.name(),
            "max_prompt_tokens": a.max_prompt_tokens,
            "use_server_token_count": a.use_server_token_count,
            // Whether ISL/OSL are the client's counts (the default), as the run resolved it.
            "client_token_count": !a.use_server_token_count,
            "input_file": a.input_file.display().to_string(),
            "trace_format": format!("{:?}", a.trace_format.trace_format),
            "random_seed": a.random_seed,
            "isl_block_size": a.isl_block_size,
            "synthesis": synthesis,
            "fixed_schedule": a.fixed_schedule,
            "fixed_schedule_start_offset": a.fixed_schedule_start_offset,
            "fixed_schedule_end_offset": a.fixed_schedule_end_offset,
            "fixed_schedule_auto_offset": a.fixed_schedule_auto_offset,
            "request_rate": a.request_rate.first(),
            "arrival_pattern": format!("{:?}", a.arrival_pattern).to_lowercase(),
            "concurrency": a.concurrency.first(),
            "request_count": a.request_count,
            "warmup_request_count": a.warmup_request_count,
            "benchmark_duration": a.benchmark_duration,
            "benchmark_grace_period": a.benchmark_grace_period,
            "tokenizer": a.tokenizer,
            "goodput": a.goodput,
            "slice_duration": a.slice_duration,
            "shard": a.shard.as_ref().map(|_| shard.to_string()),
            "start_at": a.start_at,
            "clock_offset_warn_ms": a.clock_offset_warn_ms,
        });
        // The server's side (a second literal: one would pass serde_json's macro recursion limit).
        for (k, v) in [
            ("server_metrics", json!(server.metrics_urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>())),
            ("server_metrics_interval", json!(a.server_metrics_interval)),
            ("wait_for_server", json!(a.wait_for_server)),
            ("reset_prefix_cache", json!(a.reset_prefix_cache)),
            ("server_kind", json!(server.kind.map(|k| k.name()))),
        ] {
            input_config[k] = v;
        }
        if urls.len() > 1 {
            input_config["urls"] = json!(urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>());
            input_config["url_strategy"] = json!("round_robin");
        }
        if let Some(f) = &tls.ca_file {
            input_config["ssl_ca_cert"] = json!(f.display().to_string());
        }
        if tls.insecure {
            input_config["insecure_skip_tls_verify"] = json!(true);
        }
        Ok(ReplayPlan {
            target: Target {
                url,
                urls,
                tls,
                path,
                api_key: a.api_key.filter(|k| !k.is_empty()),
                headers,
                session_header: a.session_header,
                timeout,
                max_response_bytes: in_range(a.max_response_bytes, "--max-response-bytes", 1024, 1 << 40)?,
                body: BodyTemplate {
                    endpoint: a.endpoint_type,
                    model: a.model,
                    streaming: a.streaming,
                    legacy_max_tokens: a.use_legacy_max_tokens,
                    turn_history: a.turn_history,
                    max_prompt_tokens: in_range(a.max_prompt_tokens, "--max-prompt-tokens", 1, 1 << 32)?,
                    extra_inputs,
                },
            },
            source: Source {
                input_file: a.input_file,
                format: a.trace_format,
                max_line_bytes: in_range(a.max_line_bytes, "--max-line-bytes", 1, 1 << 40)?,
                block_size,
                seed: a.random_seed,
                synthesis,
                tokenizer: a.tokenizer,
                arrivals: Arrivals {
                    fixed,
                    start_offset_ms: a.fixed_schedule_start_offset,
                    end_offset_ms: a.fixed_schedule_end_offset,
                    auto_offset: a.fixed_schedule_auto_offset,
                    rate: rate.map(|r| (r, pattern)),
                },
            },
            limits: Limits { request_count, duration, grace, concurrency, warmup_requests },
            counting: if a.use_server_token_count { TokenCounting::ServerOnly } else { TokenCounting::Client },
            exports: Exports {
                artifact_dir: a.artifact_dir.unwrap_or_else(|| PathBuf::from(super::artifacts::DEFAULT_ROOT)),
                slos,
                progress: match a.ui_type {
                    UiType::None => super::progress::Mode::Off,
                    UiType::Simple => super::progress::Mode::Auto {
                        every: seconds(a.progress_interval, "--progress-interval", false)?,
                    },
                },
                slice,
            },
            coordination: Coordination { shard, start_at_unix_ns, clock_warn_ms },
            server,
            input_config,
        })
    }

    /// The options as written to the exports (secrets redacted).
    pub fn input_config(&self) -> &Value {
        &self.input_config
    }

    /// The URL requests go to (credentials removed) and the headers they carry: the user's,
    /// plus HTTP Basic authentication from URL credentials when no API key is given.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn request_target(&self) -> (String, Vec<(String, String)>) {
        self.target_of(&self.target.url)
    }

    /// [`Self::request_target`] of every `--url`, in order.
    pub fn request_targets(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.target.urls.iter().map(|u| self.target_of(u)).collect()
    }

    fn target_of(&self, url: &str) -> (String, Vec<(String, String)>) {
        let (url, userinfo) = split_credentials(url);
        let mut headers = self.target.headers.clone();
        if let (Some(u), None) = (userinfo, &self.target.api_key) {
            headers.insert(0, ("Authorization".to_owned(), basic_auth(&u)));
        }
        (url, headers)
    }

    /// Every `--url` as it may be shown (credentials redacted), in order.
    pub fn shown_urls(&self) -> Vec<String> {
        self.target.urls.iter().map(|u| redact_url(u.trim_end_matches('/'))).collect()
    }

    /// The URL as it may be shown (credentials redacted).
    pub fn shown_url(&self) -> String {
        super::client::join_url(&redact_url(&self.target.url), &self.target.path)
    }

    /// Every secret of the run (API key, credential header values, URL password): masked in
    /// whatever a server echoes back before it is written.
    pub fn secrets(&self) -> Vec<String> {
        let mut s: Vec<String> = self.target.api_key.iter().cloned().collect();
        s.extend(self.target.headers.iter().filter(|(k, _)| is_credential_header(k)).map(|(_, v)| v.trim().to_owned()));
        for url in &self.target.urls {
            if let (_, Some(userinfo)) = split_credentials(url) {
                s.push(userinfo.split_once(':').map_or(userinfo.as_str(), |(_, p)| p).to_owned());
                // What a server echoing the Authorization header would show.
                s.push(basic_auth(&userinfo).trim_start_matches("Basic ").to_owned());
                s.push(userinfo);
            }
        }
        s.retain(|v| v.len() >= 4);
        s
    }

    /// The timing mode: the trace's timestamps when asked, or when the trace has them and no
    /// request rate was chosen. As in AIPerf, `--concurrency` then caps concurrent sessions and
    /// keeps the timestamps (each request leaves at the later of its time and a free slot).
    pub fn timing(&self, trace_has_timestamps: bool) -> Result<Timing> {
        let a = &self.source.arrivals;
        let fixed = a.fixed.unwrap_or(trace_has_timestamps && a.rate.is_none());
        if fixed {
            ensure!(
                a.rate.is_none(),
                "--request-rate cannot be combined with a fixed schedule (add --no-fixed-schedule)"
            );
            // The offsets are raw trace ms (AIPerf's meaning); sessions were already filtered on
            // the raw timestamps (`filter_offsets`), so on sped-up timestamps (`floor(ts / r)`)
            // the floored offsets keep exactly those sessions, and time zero is the start offset
            // sped up too (AIPerf leaves it unscaled, so its early requests fire together).
            let r = self.source.synthesis.as_ref().map_or(1.0, |p| p.speedup_ratio);
            let scaled = |ms: Option<f64>| ms.map(|v| if r == 1.0 { v } else { (v / r).floor() });
            return Ok(Timing::Fixed {
                start_offset_ms: scaled(a.start_offset_ms),
                end_offset_ms: scaled(a.end_offset_ms),
                auto_offset: a.auto_offset || a.start_offset_ms.is_none(),
            });
        }
        ensure!(
            a.start_offset_ms.is_none() && a.end_offset_ms.is_none(),
            "--fixed-schedule-start/end-offset need a fixed schedule"
        );
        Ok(match a.rate {
            Some((per_second, pattern)) => Timing::Rate { per_second, pattern, seed: self.source.seed },
            None => {
                ensure!(
                    self.limits.concurrency.is_some(),
                    "this trace has no timestamps: choose --request-rate or --concurrency"
                );
                Timing::AsFastAsAllowed
            }
        })
    }

    /// Before synthesis: with a speed-up and `--fixed-schedule-start/end-offset`, drops the
    /// sessions whose first turn's raw timestamp is outside the offsets (inclusive), so that the
    /// offsets mean trace milliseconds before the speed-up, as in AIPerf.
    pub fn filter_offsets(&self, trace: Trace) -> Trace {
        let a = &self.source.arrivals;
        let sped_up = self.source.synthesis.as_ref().is_some_and(|p| p.speedup_ratio != 1.0);
        if !sped_up || (a.start_offset_ms.is_none() && a.end_offset_ms.is_none()) || a.fixed == Some(false) {
            return trace;
        }
        let outside = |ts: Option<f64>| {
            ts.is_some_and(|t| a.start_offset_ms.is_some_and(|s| t < s) || a.end_offset_ms.is_some_and(|e| t > e))
        };
        let mut dropped: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut keep = Vec::with_capacity(trace.len());
        for row in trace.rows() {
            let ts = row.timestamp.map(|n| n.as_f64());
            keep.push(match row.session_id.as_deref() {
                None => !outside(ts),
                Some(id) if seen.insert(id) => {
                    if outside(ts) {
                        dropped.insert(id);
                    }
                    !dropped.contains(id)
                }
                Some(id) => !dropped.contains(id),
            });
        }
        trace.iter().zip(keep).filter(|(_, k)| *k).map(|((r, ids), _)| (r.clone(), ids.to_vec())).collect()
    }

    /// The schedule of `trace`: with a benchmark duration and no request count, rate and
    /// concurrency runs reuse the trace until time is up (as AIPerf does), generated lazily.
    pub fn schedule(&self, trace: &Trace) -> Result<Schedule> {
        let has_timestamps = trace.rows().first().is_some_and(|r| r.timestamp.is_some());
        let timing = self.timing(has_timestamps)?;
        let s = schedule::build(trace, timing, self.limits.request_count).map_err(|e| match e {
            ScheduleError::Row { line, problem } => anyhow!("{}:{line}: {problem}", self.source.input_file.display()),
            e => anyhow!(e).context("cannot schedule the trace"),
        })?;
        let shard = self.coordination.shard;
        ensure!(
            (shard.count as usize) <= s.sessions.len(),
            "--shard {shard}: the trace has {} session(s) and whole sessions are dealt to shards, so at most {} shards can each get one",
            s.sessions.len(),
            s.sessions.len()
        );
        let s = s.sharded(shard);
        Ok(if self.limits.duration.is_some() && self.limits.request_count.is_none() { schedule::endless(s) } else { s })
    }
}

/// What `profile` runs: one replay, repeats of it, a sweep over one load option, or a capacity
/// search; each sub-run is a complete [`ReplayPlan`] with its own artifact folder.
#[derive(Clone, Debug)]
pub struct ProfilePlan {
    /// The options with the swept option at its first value.
    base: Args,
    pub mode: Mode,
    /// Runs per value (`--num-profile-runs`).
    pub repeats: u32,
    /// `--confidence-level`.
    pub confidence: f64,
    /// Pause between sub-runs.
    pub cooldown: Duration,
    /// The top folder (sub-runs go below it).
    pub artifact_dir: PathBuf,
    /// The first sub-run's plan (also the single run's).
    pub first: ReplayPlan,
}

/// How the runs of a `profile` relate.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// One value (run `repeats` times).
    Single,
    /// One sub-run (or `repeats`) per value, in order.
    Sweep { axis: Axis, values: Vec<f64> },
    /// The capacity search.
    Search { axis: Axis, params: SearchParams },
}

impl ProfilePlan {
    /// Validates the flags: lists, repeats, search settings, and the sub-run of every value known
    /// in advance (so that a bad value fails before anything runs).
    pub fn from_args(args: Args) -> Result<ProfilePlan> {
        let mut lists: Vec<(Axis, Vec<f64>)> = Vec::new();
        if args.request_rate.len() > 1 {
            lists.push((Axis::RequestRate, args.request_rate.clone()));
        }
        if args.concurrency.len() > 1 {
            lists.push((Axis::Concurrency, args.concurrency.iter().map(|&c| c as f64).collect()));
        }
        if let Some(v) = args.synthesis.list(aiperf_core::synthesis::Param::SpeedupRatio) {
            let values = v
                .iter()
                .filter_map(|x| match x {
                    aiperf_core::synthesis::settings::Value::Float(f) => Some(*f),
                    _ => None,
                })
                .collect();
            lists.push((Axis::SpeedupRatio, values));
        }
        ensure!(
            lists.len() <= 1,
            "{} and {} are both lists: a sweep varies one option",
            lists[0].0.flag(),
            lists.get(1).map_or("", |l| l.0.flag())
        );
        let repeats = in_range(args.num_profile_runs, "--num-profile-runs", 1, MAX_PROFILE_RUNS)?;
        let confidence = args.confidence_level;
        ensure!(
            confidence > 0.0 && confidence < 1.0,
            "--confidence-level {confidence}: accepted is a number between 0 and 1 (excluded)"
        );
        let cooldown = seconds(args.parameter_sweep_cooldown_seconds, "--parameter-sweep-cooldown-seconds", true)?;
        let search = args.search_max;
        let mode = match (search, lists.pop()) {
            (Some(_), Some((axis, _))) => {
                bail!("{} is a list and --search-max is given: choose a sweep or a search", axis.flag())
            }
            (Some(axis), None) => {
                let params = SearchParams {
                    start: args.search_start.unwrap_or(1.0),
                    limit: args.search_limit.unwrap_or(if axis.integer() { 1024.0 } else { 1000.0 }),
                    growth: args.search_growth,
                    resolution: args.search_resolution,
                    target: args.search_goodput_fraction,
                    integer: axis.integer(),
                    repeats,
                    confidence,
                };
                Search::new(params)?;
                Mode::Search { axis, params }
            }
            (None, Some((axis, values))) => {
                ensure!(
                    values.len() <= MAX_SWEEP_VALUES,
                    "{} has {} values: accepted is at most {MAX_SWEEP_VALUES}",
                    axis.flag(),
                    values.len()
                );
                let mut seen: Vec<String> = Vec::new();
                for v in &values {
                    let name = axis.format(*v);
                    ensure!(!seen.contains(&name), "{} lists {name} twice", axis.flag());
                    seen.push(name);
                }
                Mode::Sweep { axis, values }
            }
            (None, None) => Mode::Single,
        };
        let artifact_dir = {
            use super::artifacts;
            let load = match &mode {
                Mode::Single => artifacts::load_of(&args, || artifacts::first_row_has_timestamp(&args.input_file)),
                Mode::Sweep { axis, values } => artifacts::campaign_load(*axis, Some(values)),
                Mode::Search { axis, .. } => artifacts::campaign_load(*axis, None),
            };
            let name = artifacts::folder_name(&args.model, args.endpoint_type, &load);
            artifacts::resolve(args.artifact_dir.as_deref(), &name, args.overwrite)?
        };
        let mut base = args;
        base.artifact_dir = Some(artifact_dir.clone());
        // The base holds one value of the swept option: each sub-run sets its own.
        base.request_rate.truncate(1);
        base.concurrency.truncate(1);
        let speedup = aiperf_core::synthesis::Param::SpeedupRatio;
        if let Some(&first) = base.synthesis.list(speedup).and_then(|v| v.first()) {
            base.synthesis = base.synthesis.with_value(speedup, first);
        }
        let mut plan = ProfilePlan {
            first: ReplayPlan::from_args(base.clone())?,
            base,
            mode,
            repeats,
            confidence,
            cooldown,
            artifact_dir,
        };
        match plan.mode.clone() {
            Mode::Single => {}
            Mode::Sweep { values, .. } => {
                for (i, v) in values.into_iter().enumerate() {
                    let p = plan.sub_run(Some(v), plan.artifact_dir.clone())?;
                    if i == 0 {
                        plan.first = p;
                    }
                }
            }
            Mode::Search { axis, params } => {
                plan.sub_run(Some(params.limit), plan.artifact_dir.clone())
                    .with_context(|| format!("at the search limit ({} {})", axis.flag(), axis.format(params.limit)))?;
                plan.first = plan.sub_run(Some(params.start), plan.artifact_dir.clone())?;
            }
        }
        Ok(plan)
    }

    /// The swept or searched option.
    pub fn axis(&self) -> Option<Axis> {
        match &self.mode {
            Mode::Single => None,
            Mode::Sweep { axis, .. } | Mode::Search { axis, .. } => Some(*axis),
        }
    }

    /// Whether this is one plain run (the historical behaviour, files directly in the folder).
    pub fn is_single_run(&self) -> bool {
        self.mode == Mode::Single && self.repeats == 1
    }

    /// The plan of one sub-run: the swept option at `value` (none: as given), exports in `dir`.
    pub fn sub_run(&self, value: Option<f64>, dir: PathBuf) -> Result<ReplayPlan> {
        let mut a = self.base.clone();
        a.artifact_dir = Some(dir);
        if let (Some(v), Some(axis)) = (value, self.axis()) {
            match axis {
                Axis::RequestRate => a.request_rate = vec![v],
                Axis::Concurrency => {
                    ensure!(v >= 1.0 && v.fract() == 0.0, "--concurrency {v}: accepted is a whole number ≥ 1");
                    a.concurrency = vec![v as usize];
                }
                Axis::SpeedupRatio => {
                    a.synthesis = a.synthesis.with_value(
                        aiperf_core::synthesis::Param::SpeedupRatio,
                        aiperf_core::synthesis::settings::Value::Float(v),
                    );
                }
            }
        }
        ReplayPlan::from_args(a)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn plan(extra: &[&str]) -> Result<ReplayPlan> {
        let mut argv = vec!["x", "-m", "m", "--input-file", "t.jsonl"];
        argv.extend_from_slice(extra);
        ReplayPlan::from_args(Cli::try_parse_from(argv)?.args)
    }

    fn err(extra: &[&str]) -> String {
        format!("{:#}", plan(extra).unwrap_err())
    }

    #[test]
    fn defaults_resolve() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.target.url, "http://localhost:8000");
        assert_eq!(p.target.path, "/v1/chat/completions");
        assert_eq!(p.target.timeout, Duration::from_secs(21_600));
        assert_eq!(p.limits.grace, Duration::from_secs(30));
        assert_eq!(p.counting, TokenCounting::Client);
        assert_eq!(plan(&["--client-token-count"]).unwrap().counting, TokenCounting::Client);
        assert_eq!(plan(&["--use-server-token-count"]).unwrap().counting, TokenCounting::ServerOnly);
        assert!(plan(&["--use-server-token-count", "--client-token-count"]).is_err());
        assert!(p.source.synthesis.is_none());
        assert!(matches!(p.timing(true).unwrap(), Timing::Fixed { auto_offset: true, .. }));
        assert!(p.timing(false).is_err());
    }

    #[test]
    fn shards_divide_the_ceiling_and_the_warm_up_and_keep_the_request_count() {
        let p = plan(&["--shard", "1/3", "--concurrency", "10", "--warmup-request-count", "4", "--request-count", "7"])
            .unwrap();
        assert_eq!(p.coordination.shard, Shard { index: 1, count: 3 });
        assert_eq!(p.limits.concurrency, Some(3));
        assert_eq!(p.limits.warmup_requests, 1);
        assert_eq!(p.limits.request_count, Some(7));
        assert_eq!(p.input_config()["shard"], "1/3");
        assert!(p.coordination.probe_clock());
        let whole = plan(&["--concurrency", "10"]).unwrap();
        assert_eq!(whole.limits.concurrency, Some(10));
        assert!(whole.input_config()["shard"].is_null());
        assert!(!whole.coordination.probe_clock());
        for (args, needle) in [
            (&["--shard", "3/3"][..], "--shard 3/3: shard 3/3: K must be from 0 to N-1"),
            (&["--shard", "a/3"], "--shard a/3: 'a/3' is not of the form K/N"),
            (&["--shard", "0/4", "--concurrency", "3"], "--concurrency 3 with --shard 0/4"),
            (&["--start-at", "tomorrow"], "--start-at 'tomorrow': accepted is an RFC 3339 time"),
            (&["--clock-offset-warn-ms", "NaN"], "--clock-offset-warn-ms NaN"),
        ] {
            let e = err(args);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn start_at_takes_rfc_3339_with_offsets_and_epoch_milliseconds() {
        assert_eq!(parse_start_at("2026-11-23T22:00:00Z").unwrap(), 1_795_471_200_000_000_000);
        assert_eq!(parse_start_at("2026-11-23T23:00:00+01:00").unwrap(), 1_795_471_200_000_000_000);
        assert_eq!(parse_start_at("2026-11-23T22:00:00.5Z").unwrap(), 1_795_471_200_500_000_000);
        assert_eq!(parse_start_at("1795471200000").unwrap(), 1_795_471_200_000_000_000);
        assert!(parse_start_at("1969-12-31T23:59:59Z").is_err());
        assert!(parse_start_at("99999999999999999999").is_err());
        let p = plan(&["--start-at", "1795471200000"]).unwrap();
        assert_eq!(p.coordination.start_at_unix_ns, Some(1_795_471_200_000_000_000));
        assert!(p.coordination.probe_clock());
    }

    #[test]
    fn extreme_values_are_rejected_with_the_option_the_value_and_the_range() {
        for (args, needle) in [
            (&["--request-timeout-seconds", "1e300"][..], "--request-timeout-seconds 1e300: accepted"),
            (&["--request-timeout-seconds", "0"], "--request-timeout-seconds 0.0"),
            (&["--request-timeout-seconds", "NaN"], "--request-timeout-seconds NaN"),
            (&["--benchmark-duration", "1e300"], "--benchmark-duration"),
            (&["--benchmark-duration=-1"], "--benchmark-duration -1.0"),
            (&["--benchmark-grace-period", "1e300"], "--benchmark-grace-period"),
            (&["--benchmark-grace-period", "inf"], "--benchmark-grace-period inf"),
            (&["--request-rate", "1e-300"], "--request-rate 1e-300: accepted is 0.001 to 1000000"),
            (&["--request-rate", "0"], "--request-rate 0.0"),
            (&["--concurrency", "0"], "--concurrency 0: accepted is 1 to 1000000"),
            (&["--request-count", "0"], "--request-count 0"),
            (&["--isl-block-size", "0"], "--isl-block-size 0"),
            (&["--fixed-schedule-start-offset=-5"], "--fixed-schedule-start-offset -5.0"),
            (&["--header", "novalue"], "--header 'novalue' is not of the form key:value"),
            (&["--goodput", "ttft:5"], "unknown metric"),
        ] {
            let e = err(args);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn timing_follows_aiperf() {
        let p = plan(&["--concurrency", "4"]).unwrap();
        assert!(matches!(p.timing(true).unwrap(), Timing::Fixed { .. }));
        assert_eq!(p.timing(false).unwrap(), Timing::AsFastAsAllowed);
        let p = plan(&["--concurrency", "4", "--no-fixed-schedule"]).unwrap();
        assert_eq!(p.timing(true).unwrap(), Timing::AsFastAsAllowed);
        let p = plan(&["--request-rate", "5", "--arrival-pattern", "constant"]).unwrap();
        assert!(matches!(p.timing(true).unwrap(), Timing::Rate { per_second: 5.0, .. }));
        let p = plan(&["--fixed-schedule", "--request-rate", "5"]).unwrap();
        assert!(p.timing(true).is_err());
        let p = plan(&["--fixed-schedule-start-offset", "10", "--no-fixed-schedule"]).unwrap();
        assert!(p.timing(true).is_err());
    }

    #[test]
    fn secrets_are_redacted_in_the_config_and_listed_for_masking() {
        let p = plan(&[
            "-u",
            "https://alice:hunter22@example.test:9/x",
            "--api-key",
            "sk-secret-1",
            "-H",
            "X-Api-Key:abcd-1234",
            "-H",
            "X-Trace:visible",
        ])
        .unwrap();
        let cfg = p.input_config().to_string();
        for s in ["hunter22", "alice", "sk-secret-1", "abcd-1234", "visible"] {
            assert!(!cfg.contains(s), "{s} leaked into {cfg}");
        }
        assert_eq!(p.shown_url(), "https://<redacted>@example.test:9/x/v1/chat/completions");
        let secrets = p.secrets();
        assert!(secrets.contains(&"sk-secret-1".to_owned()));
        assert!(secrets.contains(&"abcd-1234".to_owned()));
        assert!(secrets.contains(&"hunter22".to_owned()));
        assert!(!secrets.contains(&"visible".to_owned()));
    }

    #[test]
    fn offsets_are_raw_trace_ms_before_the_speed_up() {
        use aiperf_core::trace::{ParseOptions, read};
        let text: String = (0..7)
            .map(|i| format!("{{\"timestamp\": {}, \"input_length\": 5, \"output_length\": 1}}\n", 1000 * i + 1))
            .collect();
        let raw = read(text.as_bytes(), ParseOptions::new("t")).unwrap().trace;
        let p = plan(&[
            "--fixed-schedule",
            "--fixed-schedule-start-offset",
            "2001",
            "--fixed-schedule-end-offset",
            "4001",
            "--synthesis-speedup-ratio",
            "2",
        ])
        .unwrap();
        let kept = p.filter_offsets(raw);
        let ts: Vec<f64> = kept.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect();
        assert_eq!(ts, vec![2001.0, 3001.0, 4001.0]);
        let synthesized = aiperf_core::synthesis::transform(&kept, p.source.synthesis.as_ref().unwrap()).unwrap();
        let s = p.schedule(&synthesized).unwrap();
        // Sped up: 1000, 1500, 2000 ms; zero at the sped-up start offset (1000 ms).
        let offsets: Vec<u64> = s.starts().map(|x| x.offset_us.unwrap() / 1000).collect();
        assert_eq!(offsets, vec![0, 500, 1000]);
    }

    #[test]
    fn url_credentials_become_basic_authentication() {
        let p = plan(&["-u", "http://alice:p%40ss@h:9"]).unwrap();
        let (url, headers) = p.request_target();
        assert_eq!(url, "http://h:9");
        assert_eq!(headers, vec![("Authorization".to_owned(), "Basic YWxpY2U6cEBzcw==".to_owned())]);
        let secrets = p.secrets();
        assert!(secrets.contains(&"p@ss".to_owned()) && secrets.contains(&"YWxpY2U6cEBzcw==".to_owned()));
        // An API key wins over URL credentials.
        let p = plan(&["-u", "http://alice:p%40ss@h:9", "--api-key", "sk-123456"]).unwrap();
        assert!(p.request_target().1.is_empty());
        assert_eq!(split_credentials("http://h/a@b"), ("http://h/a@b".to_owned(), None));
    }

    fn profile(extra: &[&str]) -> Result<ProfilePlan> {
        let mut argv = vec!["x", "-m", "m", "--input-file", "t.jsonl", "--artifact-dir", "art"];
        argv.extend_from_slice(extra);
        ProfilePlan::from_args(Cli::try_parse_from(argv)?.args)
    }

    #[test]
    fn a_list_is_a_sweep_of_sub_runs_each_with_one_value() {
        let p = profile(&["--request-rate", "10,20.5"]).unwrap();
        assert_eq!(p.mode, Mode::Sweep { axis: Axis::RequestRate, values: vec![10.0, 20.5] });
        assert!(!p.is_single_run());
        let sub = p.sub_run(Some(20.5), PathBuf::from("art/20.5")).unwrap();
        assert_eq!(sub.input_config()["request_rate"], 20.5);
        assert_eq!(sub.exports.artifact_dir, PathBuf::from("art/20.5"));
        let p = profile(&["--concurrency", "1,4", "--num-profile-runs", "3"]).unwrap();
        assert_eq!(p.mode, Mode::Sweep { axis: Axis::Concurrency, values: vec![1.0, 4.0] });
        assert_eq!((p.repeats, p.first.limits.concurrency), (3, Some(1)));
        let p = profile(&["--synthesis-speedup-ratio", "1,2.5"]).unwrap();
        assert_eq!(p.mode, Mode::Sweep { axis: Axis::SpeedupRatio, values: vec![1.0, 2.5] });
        let sub = p.sub_run(Some(2.5), PathBuf::from("art/2.5")).unwrap();
        assert_eq!(sub.source.synthesis.unwrap().speedup_ratio, 2.5);
        // One value: the single run, as before.
        let p = profile(&["--request-rate", "10"]).unwrap();
        assert!(p.is_single_run());
        assert_eq!(p.first.input_config()["request_rate"], 10.0);
        // A run plan never takes a list.
        assert!(err(&["--concurrency", "1,2"]).contains("--concurrency has 2 values"));
    }

    #[test]
    fn sweep_repeat_and_search_options_are_checked() {
        let e = |extra: &[&str]| format!("{:#}", profile(extra).unwrap_err());
        assert!(e(&["--request-rate", "1,2", "--concurrency", "1,2"]).contains("both lists"));
        assert!(e(&["--request-rate", "1,2,1"]).contains("lists 1 twice"));
        assert!(e(&["--request-rate", "1,0"]).contains("--request-rate 0"));
        assert!(e(&["--num-profile-runs", "11"]).contains("--num-profile-runs 11: accepted is 1 to 10"));
        assert!(e(&["--confidence-level", "1"]).contains("--confidence-level 1"));
        assert!(e(&["--slice-duration", "0"]).contains("--slice-duration 0.0"));
        assert!(e(&["--slice-duration", "0.0001"]).contains("at least 0.001"));
        // A search needs SLOs, and is not also a sweep.
        assert!(profile(&["--search-max", "request-rate"]).is_err());
        let g = ["--goodput", "time_to_first_token:100"];
        assert!(
            e(&[&g[..], &["--search-max", "concurrency", "--concurrency", "1,2"]].concat())
                .contains("choose a sweep or a search")
        );
        assert!(
            e(&[&g[..], &["--search-max", "request-rate", "--search-goodput-fraction", "1.5"]].concat())
                .contains("target good fraction")
        );
        let p = profile(&[&g[..], &["--search-max", "concurrency", "--search-start", "2"]].concat()).unwrap();
        match p.mode {
            Mode::Search { axis, params } => {
                assert_eq!(axis, Axis::Concurrency);
                assert_eq!((params.start, params.limit, params.integer, params.target), (2.0, 1024.0, true, 0.95));
            }
            m => panic!("{m:?}"),
        }
        assert_eq!(p.first.limits.concurrency, Some(2));
    }

    #[test]
    fn several_urls_each_normalized_with_their_own_credentials() {
        let p = plan(&["-u", "h1:9", "--url", "https://bob:s3cret-pw@h2", "http://h3/v1"]).unwrap();
        assert_eq!(p.target.urls, ["http://h1:9", "https://bob:s3cret-pw@h2", "http://h3/v1"]);
        assert_eq!(p.target.url, "http://h1:9");
        let targets = p.request_targets();
        assert_eq!(targets[1].0, "https://h2");
        assert_eq!(targets[1].1[0].0, "Authorization");
        assert!(targets[0].1.is_empty() && targets[2].1.is_empty());
        assert_eq!(p.shown_urls(), ["http://h1:9", "https://<redacted>@h2", "http://h3/v1"]);
        assert!(p.secrets().contains(&"s3cret-pw".to_owned()));
        let cfg = p.input_config().to_string();
        assert!(cfg.contains("\"urls\"") && !cfg.contains("s3cret"), "{cfg}");
        assert_eq!(plan(&[]).unwrap().target.urls, ["http://localhost:8000"]);
        assert!(err(&["-u", "ftp://h"]).contains("--url ftp://h: accepted is an http:// or https:// URL"));
    }

    #[test]
    fn the_ca_file_is_checked_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        let e = err(&["--ssl-ca-cert", missing.to_str().unwrap()]);
        assert!(e.contains("none.pem: cannot read the file"), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "just text\n").unwrap();
        let e = err(&["--ssl-ca-cert", empty.to_str().unwrap()]);
        assert!(e.contains("holds no certificate") && e.contains("BEGIN CERTIFICATE"), "{e}");
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").unwrap();
        let e = err(&["--ssl-ca-cert", garbage.to_str().unwrap()]);
        assert!(
            e.contains("garbage.pem: certificate 1 of 1 cannot be used as a CA")
                || e.contains("garbage.pem: not a valid PEM"),
            "{e}"
        );
        let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tls/ca.pem");
        let p = plan(&["--ssl-ca-cert", ca, "--insecure-skip-tls-verify"]).unwrap();
        assert_eq!(p.target.tls.ca_certs.len(), 1);
        assert!(p.target.tls.insecure);
        assert_eq!(p.input_config()["insecure_skip_tls_verify"], true);
    }

    #[test]
    fn server_metrics_urls_wait_and_reset() {
        let p = plan(&["-u", "http://h:1/v1/"]).unwrap();
        assert_eq!(p.server.metrics_urls, vec!["http://h:1/v1/metrics"]);
        assert_eq!(p.server.metrics_interval, Duration::from_millis(333));
        let p = plan(&["--server-metrics", "http://a:2", "http://localhost:8000/metrics", "b:3/"]).unwrap();
        assert_eq!(
            p.server.metrics_urls,
            vec!["http://localhost:8000/metrics", "http://a:2/metrics", "http://b:3/metrics"]
        );
        assert!(plan(&["--no-server-metrics"]).unwrap().server.metrics_urls.is_empty());
        assert!(plan(&["--no-server-metrics", "--server-metrics", "http://a"]).is_err());
        assert!(
            err(&["--server-metrics-interval", "0"])
                .contains("--server-metrics-interval 0.0: accepted is 0.01 to 3600")
        );
        assert!(err(&["--wait-for-server=-1"]).contains("--wait-for-server -1.0"));
        let p = plan(&["--wait-for-server", "5", "--reset-prefix-cache", "--server-kind", "llamacpp"]).unwrap();
        assert_eq!(p.server.wait, Some(Duration::from_secs(5)));
        assert!(p.server.reset_prefix_cache);
        assert_eq!(p.server.kind, Some(aiperf_core::server::kinds::ServerKind::Llamacpp));
        let cfg = plan(&["-u", "http://u:secret99@h:1"]).unwrap().input_config().to_string();
        assert!(!cfg.contains("secret99") && cfg.contains("http://<redacted>@h:1/metrics"), "{cfg}");
    }

    #[test]
    fn url_redaction_keeps_what_is_not_a_credential() {
        assert_eq!(redact_url("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(redact_url("http://u@h"), "http://<redacted>@h");
        assert_eq!(redact_url("h:1"), "h:1");
    }
}
