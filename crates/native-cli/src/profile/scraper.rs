//! Scraping the servers' Prometheus `/metrics` during a run, off the request path: its own
//! thread, its own single-threaded runtime and its own HTTP client, so that neither its
//! connections nor its parsing ever wait in line with a request.
//!
//! A baseline scrape before warm-up, a reference scrape just before time zero, one every
//! `--server-metrics-interval` (333 ms, AIPerf's) while the run goes on, and a final one after the
//! drain; the scrapes are kept as [`EndpointSeries`] in the core, which summarizes them. An
//! endpoint that has not answered yet and fails (no `/metrics`, an error status, a body that is not
//! the format, a body over [`MAX_BODY_BYTES`]) gets one warning and is not scraped again, as is one
//! whose body stops being the format; once an endpoint has answered, a scrape that times out, finds
//! no connection or gets a 5xx or 429 is counted as failed and scraping goes on (one warning), as
//! AIPerf's collectors go on: a server busy with a long prefill can leave `/metrics` unanswered for
//! seconds, and every later scrape still counts.
//!
//! DCGM exporters (`--gpu-telemetry`) are scraped in the same rounds; their pages are not server
//! metrics: each GPU of each page is a line of `gpu_telemetry_export.jsonl`, written as it comes,
//! and its values go to the run's per-GPU summary ([`Gpu`]); a page the same as the exporter's
//! previous one is dropped, as AIPerf drops it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::io::http::chain;
use crate::io::http::proxy::{Proxies, ProxyConnector};
use aiperf_core::server::gpu::{GpuTelemetry, records_of};
use aiperf_core::server::kinds::ServerKind;
use aiperf_core::server::live::LiveServer;
use aiperf_core::server::prometheus::{DEFAULT_LIMITS, parse};
use aiperf_core::server::series::{DEFAULT_SERIES_LIMITS, EndpointSeries};
use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::Uri;
use hyper::header::{AUTHORIZATION, HeaderValue};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{mpsc, oneshot};

/// Largest `/metrics` body accepted: 8 MiB (vLLM serves about 100 KB).
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// Time limit of one scrape.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

type ScrapeClient = Client<hyper_rustls::HttpsConnector<ProxyConnector>, Empty<Bytes>>;

/// An endpoint to scrape.
#[derive(Clone, Debug)]
pub struct Target {
    /// Fetched (credentials removed).
    pub uri: Uri,
    /// Shown and exported (credentials redacted).
    pub shown: String,
    /// HTTP Basic authentication from credentials in the URL.
    pub authorization: Option<String>,
    /// `Proxy-Authorization` when the target is reached through a forwarding proxy with
    /// credentials (`HTTP_PROXY=http://user:pass@proxy`).
    pub proxy_authorization: Option<HeaderValue>,
    /// A DCGM exporter (`--gpu-telemetry`), not a server's metrics.
    pub gpu: bool,
}

/// The GPU telemetry of a run: the records file (opened at the first record) and the summary.
pub struct Gpu {
    path: PathBuf,
    out: Option<Box<dyn Write + Send>>,
    /// The first error writing the records file.
    pub error: Option<String>,
    pub telemetry: GpuTelemetry,
    /// Records written.
    pub records: u64,
}

impl Gpu {
    fn take(&mut self, records: &[aiperf_core::server::gpu::GpuRecord]) {
        self.telemetry.add(records);
        if self.error.is_some() || records.is_empty() {
            return;
        }
        if self.out.is_none() {
            let folder = self.path.parent().map(std::fs::create_dir_all).transpose();
            match folder.map_err(anyhow::Error::from).and_then(|_| crate::io::output::create_stream(&self.path)) {
                Ok(w) => self.out = Some(Box::new(std::io::BufWriter::new(w))),
                Err(e) => self.error = Some(format!("{e:#}")),
            }
        }
        if let Some(out) = self.out.as_mut() {
            for r in records {
                if let Err(e) = writeln!(out, "{}", r.jsonl_line()) {
                    self.error = Some(format!("cannot write {}: {e}", self.path.display()));
                    return;
                }
                self.records += 1;
            }
        }
    }

    /// Flushes the records file; returns its first error.
    pub fn close(&mut self) -> Option<String> {
        if let Some(mut out) = self.out.take()
            && let Err(e) = out.flush()
        {
            self.error.get_or_insert(format!("cannot write {}: {e}", self.path.display()));
        }
        self.error.clone()
    }
}

/// The GPU telemetry of a run, shared with the scraping thread.
pub type GpuShared = Arc<Mutex<Gpu>>;

enum Command {
    /// Scrape every endpoint now (`pinned`: never thinned away); replies with the server kind the
    /// metric names show.
    Scrape { pinned: bool, reply: oneshot::Sender<Option<ServerKind>> },
    /// Start scraping every interval.
    Periodic,
    /// A last scrape, then the series.
    Finish { reply: oneshot::Sender<Vec<EndpointSeries>> },
}

/// The scraping thread, driven from the run's phases.
pub struct Scraper {
    commands: mpsc::UnboundedSender<Command>,
    thread: Option<std::thread::JoinHandle<()>>,
    live: Option<Live>,
    gpu: Option<GpuShared>,
}

/// The server's state at the last scrape, for the dashboard.
pub type Live = Arc<Mutex<LiveServer>>;

struct Endpoint {
    target: Target,
    series: EndpointSeries,
    disabled: bool,
    /// A scrape failed after the endpoint had answered (warned once; scraping goes on).
    warned_transient: bool,
    /// A DCGM exporter's last page: AIPerf keeps a GPU scrape only when the page changed.
    last_gpu_page: Option<String>,
}

impl Scraper {
    /// Starts the thread; nothing is fetched until [`Scraper::scrape`].
    /// `tls` is the replay's own trust (`--ssl-ca-cert`, `--insecure-skip-tls-verify`); with
    /// `live`, every scrape also updates [`Scraper::live`]; the GPU targets' records go to
    /// `gpu_file`.
    pub fn start(
        targets: Vec<Target>,
        interval: Duration,
        tls: rustls::ClientConfig,
        proxies: Proxies,
        live: bool,
        gpu_file: PathBuf,
    ) -> Result<Scraper> {
        let live = live.then(Live::default);
        let feed = live.clone();
        let gpu = targets.iter().any(|t| t.gpu).then(|| {
            Arc::new(Mutex::new(Gpu {
                path: gpu_file,
                out: None,
                error: None,
                telemetry: GpuTelemetry::default(),
                records: 0,
            }))
        });
        let gpu_feed = gpu.clone();
        let (commands, rx) = mpsc::unbounded_channel();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the server-metrics runtime")?;
        let thread = std::thread::Builder::new()
            .name("server-metrics".into())
            .spawn(move || rt.block_on(run(targets, interval, rx, tls, proxies, Taps { live: feed, gpu: gpu_feed })))
            .context("cannot start the server-metrics thread")?;
        Ok(Scraper { commands, thread: Some(thread), live, gpu })
    }

    /// The GPU telemetry, when DCGM exporters are scraped.
    pub fn gpu(&self) -> Option<GpuShared> {
        self.gpu.clone()
    }

    /// The server's state at the last scrape, when started with `live`.
    pub fn live(&self) -> Option<Live> {
        self.live.clone()
    }

    /// Scrapes every endpoint once and waits for it; returns the server kind the names show.
    pub fn scrape(&self, pinned: bool) -> Option<ServerKind> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Scrape { pinned, reply }).ok()?;
        rx.blocking_recv().ok().flatten()
    }

    /// Starts the periodic scrapes.
    pub fn periodic(&self) {
        let _ = self.commands.send(Command::Periodic);
    }

    /// The final scrape; returns every endpoint's series.
    pub fn finish(mut self) -> Vec<EndpointSeries> {
        let (reply, rx) = oneshot::channel();
        let series = match self.commands.send(Command::Finish { reply }) {
            Ok(()) => rx.blocking_recv().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        series
    }
}

async fn run(
    targets: Vec<Target>,
    interval: Duration,
    mut commands: mpsc::UnboundedReceiver<Command>,
    tls: rustls::ClientConfig,
    proxies: Proxies,
    taps: Taps,
) {
    let client = client(tls, proxies);
    let taps = &taps;
    let mut endpoints: Vec<Endpoint> = targets
        .into_iter()
        .map(|t| Endpoint {
            series: EndpointSeries::new(t.shown.clone(), DEFAULT_SERIES_LIMITS),
            target: t,
            disabled: false,
            warned_transient: false,
            last_gpu_page: None,
        })
        .collect();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut periodic = false;
    loop {
        tokio::select! {
            c = commands.recv() => match c {
                Some(Command::Scrape { pinned, reply }) => {
                    scrape_all(&client, &mut endpoints, pinned, taps).await;
                    let kind = ServerKind::detect(endpoints.iter().flat_map(|e| e.series.family_names()));
                    let _ = reply.send(kind);
                }
                Some(Command::Periodic) => {
                    periodic = true;
                    tick.reset();
                }
                Some(Command::Finish { reply }) => {
                    scrape_all(&client, &mut endpoints, true, taps).await;
                    let _ = reply.send(endpoints.into_iter().filter(|e| !e.target.gpu).map(|e| e.series).collect());
                    return;
                }
                None => return,
            },
            _ = tick.tick(), if periodic => scrape_all(&client, &mut endpoints, false, taps).await,
        }
    }
}

/// The scraping client: the replay's TLS trust and the same proxies from the environment.
fn client(tls: rustls::ClientConfig, proxies: Proxies) -> ScrapeClient {
    let mut http = HttpConnector::new_with_resolver(crate::io::http::trace::TimedResolver::default());
    http.set_nodelay(true);
    http.enforce_http(false);
    http.set_connect_timeout(Some(SCRAPE_TIMEOUT));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(ProxyConnector { http, proxies });
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(1).build(https)
}

/// Who takes the pages besides the series: the dashboard's view of the server, the GPU telemetry.
struct Taps {
    live: Option<Live>,
    gpu: Option<GpuShared>,
}

/// Scrapes the enabled endpoints concurrently; the taps take the pages too.
async fn scrape_all(client: &ScrapeClient, endpoints: &mut [Endpoint], pinned: bool, taps: &Taps) {
    let mut set = tokio::task::JoinSet::new();
    for (i, e) in endpoints.iter().enumerate().filter(|(_, e)| !e.disabled) {
        let (client, target) = (client.clone(), e.target.clone());
        set.spawn(async move { (i, fetch(&client, &target).await) });
    }
    let mut results: Vec<_> = set.join_all().await;
    results.sort_by_key(|(i, _)| *i);
    if let Some(live) = &taps.live {
        let pages: Vec<_> = results
            .iter()
            .filter(|(i, _)| !endpoints[*i].target.gpu)
            .filter_map(|(_, r)| r.as_ref().ok())
            .filter_map(|(_, _, t)| parse(t, DEFAULT_LIMITS).ok())
            .collect();
        if let Ok(mut l) = live.lock() {
            l.scrape(&pages);
        }
    }
    for (i, r) in results {
        let e = &mut endpoints[i];
        if e.target.gpu {
            let outcome = r.and_then(|(t_ns, _, text)| {
                // A page the same as the exporter's previous one is no scrape: AIPerf's DCGM
                // collector drops it (no record, not in the statistics).
                if e.last_gpu_page.as_deref() == Some(text.as_str()) {
                    return Ok(Vec::new());
                }
                let records = parse(&text, DEFAULT_LIMITS)
                    .map(|f| records_of(t_ns, &e.target.shown, &f))
                    .map_err(|err| FetchError::permanent(format!("not Prometheus text: {err}")));
                e.last_gpu_page = Some(text);
                records
            });
            match (outcome, &taps.gpu) {
                (Ok(records), Some(gpu)) => {
                    if let Ok(mut g) = gpu.lock() {
                        g.take(&records);
                    }
                }
                (Ok(_), None) => {}
                (Err(why), _) if why.transient && e.last_gpu_page.is_some() => {
                    if !std::mem::replace(&mut e.warned_transient, true) {
                        say!(
                            "warning: a GPU telemetry scrape of {} failed: {}; scraping goes on",
                            e.target.shown,
                            why.text
                        );
                    }
                }
                (Err(why), _) => {
                    let why = why.text;
                    e.disabled = true;
                    // AIPerf's default endpoints are tried quietly: most hosts run no exporter there.
                    if !aiperf_core::server::gpu::DEFAULT_ENDPOINTS.contains(&e.target.shown.as_str()) {
                        say!("warning: GPU telemetry from {} is not collected: {why}", e.target.shown);
                    }
                }
            }
            continue;
        }
        let outcome = match r {
            // A body that is not the format is counted by `add`.
            Ok((t_ns, latency, text)) => e
                .series
                .add(t_ns, latency, &text, pinned)
                .map_err(|err| FetchError::permanent(format!("not Prometheus text: {err}"))),
            Err(why) => {
                e.series.failed(why.text.clone());
                Err(why)
            }
        };
        match outcome {
            Ok(()) => {}
            Err(why) if why.transient && e.series.fetches > 0 => {
                if !std::mem::replace(&mut e.warned_transient, true) {
                    say!(
                        "warning: a scrape of server metrics from {} failed: {}; scraping goes on (failed scrapes are counted in server_metrics_export)",
                        e.target.shown,
                        why.text
                    );
                }
            }
            Err(why) => {
                e.disabled = true;
                say!(
                    "warning: server metrics from {} are not collected: {} (--no-server-metrics turns scraping off)",
                    e.target.shown,
                    why.text
                );
            }
        }
    }
}

/// Why a scrape failed, and whether the next one may succeed (a time-out, no connection, a 5xx or
/// 429 status) or not (any other status, a body that is not the format or is too large).
#[derive(Debug)]
struct FetchError {
    text: String,
    transient: bool,
}

impl FetchError {
    fn permanent(text: String) -> FetchError {
        FetchError { text, transient: false }
    }

    fn transient(text: String) -> FetchError {
        FetchError { text, transient: true }
    }
}

/// One GET of `/metrics`: (Unix ns at the answer, latency ns, body) or why not.
async fn fetch(client: &ScrapeClient, target: &Target) -> std::result::Result<(u64, u64, String), FetchError> {
    let t0 = Instant::now();
    let mut req = hyper::Request::get(target.uri.clone());
    if let Some(a) = &target.authorization
        && let Ok(mut v) = HeaderValue::from_str(a)
    {
        v.set_sensitive(true);
        req = req.header(AUTHORIZATION, v);
    }
    if let Some(v) = &target.proxy_authorization {
        req = req.header(hyper::header::PROXY_AUTHORIZATION, v.clone());
    }
    let req = req.body(Empty::new()).map_err(|e| FetchError::permanent(e.to_string()))?;
    let work = async {
        let resp =
            client.request(req).await.map_err(|e| FetchError::transient(format!("cannot fetch: {}", chain(&e))))?;
        let status = resp.status();
        if !status.is_success() {
            let text = format!("HTTP {status}");
            return Err(if status.is_server_error() || status == hyper::StatusCode::TOO_MANY_REQUESTS {
                FetchError::transient(text)
            } else {
                FetchError::permanent(text)
            });
        }
        let body = Limited::new(resp.into_body(), MAX_BODY_BYTES)
            .collect()
            .await
            .map_err(|e| FetchError::permanent(format!("cannot read the body (limit {MAX_BODY_BYTES} bytes): {e}")))?
            .to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| FetchError::permanent("the body is not UTF-8 text".to_owned()))
    };
    let text = tokio::time::timeout(SCRAPE_TIMEOUT, work)
        .await
        .map_err(|_| FetchError::transient(format!("no answer within {} s", SCRAPE_TIMEOUT.as_secs())))??;
    let latency = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    Ok((u64::try_from(super::clock::unix_now_ns()).unwrap_or(u64::MAX), latency, text))
}

/// AIPerf's `normalize_metrics_endpoint_url`: `http://` added without a scheme, a trailing `/`
/// removed, `/metrics` appended unless already there.
pub fn metrics_url(url: &str) -> String {
    let mut u = url.trim().to_owned();
    if !u.contains("://") {
        u = format!("http://{u}");
    }
    let u = u.trim_end_matches('/');
    if u.ends_with("/metrics") { u.to_owned() } else { format!("{u}/metrics") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_urls_follow_aiperf() {
        assert_eq!(metrics_url("http://h:8000"), "http://h:8000/metrics");
        assert_eq!(metrics_url("http://h:8000/v1/"), "http://h:8000/v1/metrics");
        assert_eq!(metrics_url("h:9/metrics"), "http://h:9/metrics");
    }
}
