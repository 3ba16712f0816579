//! `aiperf-cli profile`: replay a trace against an OpenAI-compatible server with precise timing,
//! and measure it the way AIPerf does.
//!
//! Data flows one way: flags → [`plan::ReplayPlan`] → trace and [`aiperf_core::replay::schedule`] →
//! [`dispatcher`] (driving [`aiperf_core::replay::dispatch`], bodies from the [`preparer`]) →
//! [`request`] over a [`transport::Transport`] → [`records`] (token counts, metrics, the JSONL
//! line) → [`export`] of one [`aiperf_core::results::summary::RunSummary`].
//!
//! A run has named phases — warm-up, measure, drain, export — driven by two cancellation tokens:
//! `stop` (no new requests: a signal or the end of `--benchmark-duration`) and `abort` (cancel
//! what is in flight: the end of the grace period or a second signal). SIGINT, SIGTERM and SIGHUP
//! all act alike, so a job stopped by Kubernetes or CI still writes every export.

pub mod artifacts;
pub mod body;
pub mod campaign;
pub mod client;
pub mod dispatcher;
pub mod export;
pub mod options;
pub mod plan;
pub mod preparer;
pub mod progress;
pub mod prompt;
pub mod proxy;
pub mod records;
pub mod request;
pub mod scraper;
pub mod server_control;
pub mod tls;
pub mod transport;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiperf_core::replay::dispatch::Dispatch;
use aiperf_core::replay::schedule::{Schedule, Starts};
use aiperf_core::replay::sharding::{ClockOffset, DateProbe, ShardRun, Sharding, estimate_offset};
use aiperf_core::results::metrics::Metric;
use aiperf_core::results::summary::{RunSummary, shell_command};
use aiperf_core::trace::Trace;
use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::exit::{self, BadInput};
use dispatcher::Dispatcher;
use plan::ReplayPlan;
use preparer::{BodySource, Preparer};
use prompt::PromptBuilder;
use records::{Collected, RecordsStage};
use request::Shared;
use transport::{Clock, Transport};

pub use options::reject_unsupported;

/// How often the drain phase looks at the clock and the tokens.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// Runs `aiperf-cli profile`; returns the process exit status.
pub fn run(args: options::Args) -> Result<u8> {
    let started = Instant::now();
    let profile = plan::ProfilePlan::from_args(args).context(BadInput)?;
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    // Signals are watched from the start: a job stopped while loading still ends with exports.
    let control = Control::default();
    rt.spawn(watch_signals(control.clone(), profile.first.limits.grace));
    if profile.is_single_run() {
        return run_one(&rt, &profile.first, &control, started).map(|o| o.status);
    }
    campaign::run(&rt, &profile, &control, started)
}

/// How one run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// The exit status a single run has.
    pub status: u8,
    pub summary: RunSummary,
    /// What `--concurrency` did to a fixed schedule, when it was given with one.
    pub ceiling_note: Option<String>,
}

/// One complete run: reads what `plan` names, replays it and writes every export into the plan's
/// artifact folder. A sweep, repeats and the capacity search call this once per sub-run.
pub fn run_one(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    control: &Control,
    started: Instant,
) -> Result<RunOutcome> {
    let dir = &plan.exports.artifact_dir;
    let slice_files = plan
        .exports
        .slice
        .map(|_| [aiperf_core::results::timeslices::TIMESLICES_JSON, aiperf_core::results::timeslices::TIMESLICES_CSV]);
    let outputs: Vec<std::path::PathBuf> = std::iter::once(aiperf_core::results::record::RECORDS_FILE)
        .chain(aiperf_core::results::export::SummaryFormat::ALL.map(|f| f.file_name()))
        .chain(slice_files.into_iter().flatten())
        .chain([aiperf_core::server::export::JSON_FILE, aiperf_core::server::export::CSV_FILE])
        .map(|f| dir.join(f))
        .collect();
    let outputs: Vec<&std::path::Path> = outputs.iter().map(std::path::PathBuf::as_path).collect();
    crate::output::refuse_same_files(&outputs, &[&plan.source.input_file]).context(BadInput)?;
    if let Some(at) = plan.coordination.start_at_unix_ns {
        check_start_ahead(at, started).context(BadInput)?;
    }
    let inputs = load(plan).context(BadInput)?;
    let transport = {
        let _guard = rt.enter();
        http_transport(plan)?
    };
    // Readiness, the baseline scrape and the cache reset come before anything is written.
    let scraper = prepare_server(rt, plan, &transport.client)?;
    replay(rt, plan, inputs, transport, control, started, scraper)
}

/// Whom HTTPS trusts (the replay and the metrics scraper alike): the bundled roots, the system's
/// store when some URL is `https://`, `--ssl-ca-cert`, or nobody checked (`--insecure-skip-tls-verify`).
fn trust(plan: &ReplayPlan) -> tls::Trust {
    let t = &plan.target;
    tls::Trust {
        system_roots: t.urls.iter().chain(&plan.server.metrics_urls).any(|u| u.starts_with("https://")),
        extra: t.tls.ca_certs.clone(),
        insecure: t.tls.insecure,
    }
}

/// The HTTP transport of a plan: one client (TLS trust, the environment's proxies) and an
/// endpoint per `--url`.
fn http_transport(plan: &ReplayPlan) -> Result<client::HttpTransport> {
    let t = &plan.target;
    if t.tls.insecure {
        say!(
            "warning: --insecure-skip-tls-verify: the certificates of https:// servers are NOT verified; \
             anyone on the network path can read and change this run's traffic"
        );
    }
    let trust = trust(plan);
    let proxies = proxy::Proxies::from_env();
    let client = client::http_client_with(&trust, proxies.clone()).context(BadInput)?;
    let shown = plan.shown_urls();
    let mut endpoints = Vec::with_capacity(t.urls.len());
    for (i, (url, headers)) in plan.request_targets().into_iter().enumerate() {
        let mut ep = client::Endpoint::new(&url, &t.path, t.api_key.as_deref(), &headers, t.timeout)
            .context(BadInput)?
            .max_response_bytes(t.max_response_bytes)
            .session_header(&t.session_header)
            .context(BadInput)?;
        let shown = shown.get(i).map_or("", String::as_str);
        match proxies.route(&ep.uri) {
            proxy::Route::Direct => {}
            proxy::Route::Tunnel(p) => say!("{shown}: through the proxy {p} (CONNECT tunnel, from HTTPS_PROXY)"),
            proxy::Route::Forward(p) => say!("{shown}: through the proxy {p} (forwarded, from HTTP_PROXY)"),
        }
        if let Some(auth) = proxies.forward_auth(&ep.uri) {
            ep.headers.insert(hyper::header::PROXY_AUTHORIZATION, auth);
        }
        endpoints.push(ep);
    }
    Ok(client::HttpTransport { client, endpoints })
}

/// Waits for the server (`--wait-for-server`), starts scraping its metrics with a baseline scrape,
/// and empties its prefix cache (`--reset-prefix-cache`).
fn prepare_server(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    client: &client::HttpClient,
) -> Result<Option<scraper::Scraper>> {
    let (base, headers) = plan.request_target();
    let authorization = plan
        .target
        .api_key
        .as_ref()
        .map(|k| format!("Bearer {k}"))
        .or_else(|| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.clone()));
    let server = server_control::Server {
        client,
        base: base.trim_end_matches('/').to_owned(),
        shown: plan::redact_url(plan.target.url.trim_end_matches('/')),
        authorization,
    };
    if let Some(limit) = plan.server.wait {
        say!("Waiting up to {:.1} s for {} to answer", limit.as_secs_f64(), server.shown);
        let waited = rt.block_on(server.wait_until_ready(limit))?;
        say!("The server answered after {:.1} s", waited.as_secs_f64());
    }
    let scraper = if plan.server.metrics_urls.is_empty() {
        None
    } else {
        let proxies = proxy::Proxies::from_env();
        let targets = plan
            .server
            .metrics_urls
            .iter()
            .map(|u| {
                let (url, userinfo) = plan::split_credentials(u);
                let uri = url.parse().with_context(|| format!("invalid server metrics URL {}", plan::redact_url(u)))?;
                Ok(scraper::Target {
                    proxy_authorization: proxies.forward_auth(&uri),
                    uri,
                    shown: plan::redact_url(u),
                    authorization: userinfo.map(|u| plan::basic_auth(&u)),
                })
            })
            .collect::<Result<Vec<_>>>()
            .context(BadInput)?;
        let tls = tls::client_config(&trust(plan)).context(BadInput)?;
        Some(scraper::Scraper::start(targets, plan.server.metrics_interval, tls, proxies)?)
    };
    let detected = scraper.as_ref().and_then(|s| s.scrape(true));
    if plan.server.reset_prefix_cache {
        let kind = plan.server.kind.or(detected).context(
            "--reset-prefix-cache: the server's metrics do not tell its kind (vllm:, sglang:, llamacpp:, dynamo_ names); give --server-kind",
        )?;
        let calls = rt.block_on(server.reset_prefix_cache(kind))?;
        say!("Prefix cache emptied ({}): POST {}", kind.name(), calls.join(", POST "));
    }
    Ok(scraper)
}

/// What a replay reads before it starts.
pub struct Inputs {
    pub trace: Arc<Trace>,
    pub schedule: Arc<Schedule>,
    pub prompts: Arc<PromptBuilder>,
    /// Where the tokenizer came from.
    pub tokenizer: String,
}

/// Reads the trace while the tokenizer loads, applies synthesis and builds the schedule.
fn load(plan: &ReplayPlan) -> Result<Inputs> {
    let src = &plan.source;
    let (trace, tok) = std::thread::scope(|s| {
        let tok = s.spawn(|| -> Result<_> {
            let t0 = Instant::now();
            let (tokenizer, source) =
                crate::tokenizer::load_tokenizer(src.tokenizer.as_deref(), &plan.target.body.model)?;
            let prompts = PromptBuilder::new(tokenizer, src.block_size, src.seed)?;
            Ok((prompts, source, t0.elapsed()))
        });
        let t0 = Instant::now();
        let trace = crate::trace_format::read_trace_any(&src.input_file, &src.format, false, src.max_line_bytes)
            .map(|o| (o.trace, t0.elapsed()));
        (trace, tok.join())
    });
    let (trace, read_time) = trace?;
    let mut trace = plan.filter_offsets(trace);
    if let Some(params) = &src.synthesis {
        let before = trace.len();
        trace = aiperf_core::synthesis::transform(&trace, params).context("synthesis failed")?;
        say!("Synthesis applied in memory: {before} rows → {} rows", trace.len());
    }
    let (prompts, source, tok_time) = tok.map_err(|_| anyhow::anyhow!("the tokenizer loader panicked"))??;
    if source.approximate {
        say!(
            "warning: no tokenizer for model '{}' (use --tokenizer): using the {}; token counts are approximate for this model",
            plan.target.body.model,
            source.description
        );
    }
    let schedule = plan.schedule(&trace)?;
    say!(
        "Read {} rows in {:.0} ms; tokenizer and prompt vocabulary ready in {:.0} ms (in parallel)",
        trace.len(),
        read_time.as_secs_f64() * 1e3,
        tok_time.as_secs_f64() * 1e3
    );
    Ok(Inputs {
        trace: Arc::new(trace),
        schedule: Arc::new(schedule),
        prompts: Arc::new(prompts),
        tokenizer: source.description,
    })
}

/// The two tokens of a run and what stopped it.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// No new requests.
    stop: CancellationToken,
    /// Cancel the requests in flight.
    abort: CancellationToken,
    /// A signal stopped the run.
    interrupted: Arc<AtomicBool>,
}

impl Control {
    /// The control of one sub-run: stopped by this one's signals, while its own duration timer
    /// and grace period stop only it.
    pub fn child(&self) -> Control {
        Control {
            stop: self.stop.child_token(),
            abort: self.abort.child_token(),
            interrupted: self.interrupted.clone(),
        }
    }

    /// Whether a signal stopped the run.
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Waits `d`, or less when a signal stops the run; returns whether it was stopped.
    pub async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => false,
            _ = self.stop.cancelled() => true,
        }
    }
}

/// First signal: stop sending; second: cancel what is in flight.
async fn watch_signals(control: Control, grace: Duration) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        say!("warning: cannot watch for signals; a signal will end the run without exports");
        return;
    };
    let mut seen = 0;
    loop {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        };
        seen += 1;
        control.interrupted.store(true, Ordering::SeqCst);
        if seen == 1 {
            say!(
                "\n{name}: no new requests; in-flight requests get {:.1} s to finish (signal again to cancel them now)",
                grace.as_secs_f64()
            );
            control.stop.cancel();
        } else {
            say!("\n{name} again: cancelling the requests in flight and writing the exports");
            control.stop.cancel();
            control.abort.cancel();
        }
    }
}

/// Runs the phases of a replay over `transport`, stopped through `control`; returns the exit
/// status and the summary.
pub fn replay<T: Transport + Clone>(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    inputs: Inputs,
    transport: T,
    control: &Control,
    started: Instant,
    scraper: Option<scraper::Scraper>,
) -> Result<RunOutcome> {
    let ready_ms = started.elapsed().as_secs_f64() * 1e3;
    let total = inputs.schedule.request_count();
    let more = match plan.target.urls.len() {
        1 => String::new(),
        n => format!(" and {} more URL(s), sessions round robin: {}", n - 1, plan.shown_urls().join(", ")),
    };
    let shard = plan.coordination.shard;
    let what = match (total, plan.limits.duration) {
        (Some(n), Some(d)) => format!("up to {n} request(s) for at most {:.1} s", d.as_secs_f64()),
        (None, Some(d)) => format!("requests for {:.1} s", d.as_secs_f64()),
        (Some(n), None) => format!("{n} request(s)"),
        (None, None) => "requests".to_owned(),
    };
    say!(
        "Replaying {what}{} to {}{more} (ready in {ready_ms:.0} ms)",
        if shard.is_whole() { String::new() } else { format!(" of shard {shard}") },
        plan.shown_url(),
    );

    // Warm-up.
    let warmup =
        (plan.limits.warmup_requests > 0).then(|| rt.block_on(warmup(&transport, &inputs, plan, &control.stop)));

    // Before time zero: the first bodies built, connections open for the first burst.
    let body_source = Arc::new(BodySource {
        template: plan.target.body.clone(),
        prompts: inputs.prompts.clone(),
        trace: inputs.trace.clone(),
    });
    let preparer = Preparer::start(body_source, inputs.schedule.clone())?;
    // Spread over the URLs like the sessions, at least one each.
    let urls = plan.target.urls.len().max(1);
    let connections = match connections_needed(&inputs.schedule, plan.limits.concurrency) {
        0 => 0,
        n => n.div_ceil(urls) * urls,
    };
    if connections > 0 && !control.stop.is_cancelled() {
        let t0 = Instant::now();
        if let Some(per_url) = rt.block_on(transport.warm(connections)) {
            say!(
                "Opened {} of {connections} connection(s) for the first burst in {:.0} ms",
                per_url.iter().map(|(ready, _)| ready).sum::<usize>(),
                t0.elapsed().as_secs_f64() * 1e3
            );
            let shown = plan.shown_urls();
            let dead: Vec<&str> = per_url
                .iter()
                .enumerate()
                .filter(|&(_, &(_, reached))| reached == 0)
                .map(|(i, _)| shown.get(i).map_or("?", String::as_str))
                .collect();
            if dead.len() == per_url.len() && !plan.server.go_on_unreachable {
                anyhow::bail!(
                    "no connection could be opened to {} before time zero (the reason is above); nothing was sent. \
                     Is the server running there? --wait-for-server SECONDS waits for it to answer; \
                     --go-on-unreachable replays anyway",
                    dead.join(", ")
                );
            }
            if !dead.is_empty() && dead.len() < per_url.len() {
                say!(
                    "warning: no connection could be opened to {} before time zero: its sessions will fail",
                    dead.join(", ")
                );
            }
        }
    }

    // Shards: the target's clock against ours, then the common time zero.
    let coord = plan.coordination;
    let clock_offset = if coord.probe_clock() && !control.stop.is_cancelled() {
        let offset = rt.block_on(probe_clock(&transport, coord.start_at_unix_ns));
        match offset {
            Some(c) => {
                say!(
                    "Clock offset against the target: {:+.1} ms ± {:.1} ms ({} Date probe(s); positive = the target is ahead)",
                    c.offset_ms,
                    c.uncertainty_ms,
                    c.probes
                );
                // Only a disagreement beyond doubt is reported as one.
                if c.offset_ms.abs() - c.uncertainty_ms > coord.clock_warn_ms {
                    say!(
                        "warning: this machine's clock and the target's disagree by {:.1} ms ± {:.1} ms (more than --clock-offset-warn-ms {}): shards on machines whose clocks disagree do not start together; synchronize the clocks (NTP, chrony)",
                        c.offset_ms.abs(),
                        c.uncertainty_ms,
                        coord.clock_warn_ms
                    );
                } else if c.uncertainty_ms > coord.clock_warn_ms {
                    say!(
                        "warning: the clock offset is known only within ± {:.1} ms ({} probe(s) before the start): cannot tell whether the clocks agree within --clock-offset-warn-ms {}; give --start-at more time ahead",
                        c.uncertainty_ms,
                        c.probes,
                        coord.clock_warn_ms
                    );
                }
            }
            None => say!(
                "warning: cannot estimate the clock offset against the target (no Date header in its answers to GET /v1/models)"
            ),
        }
        offset
    } else {
        None
    };
    // The reference scrape of the server's counters, just before time zero.
    if let Some(s) = &scraper {
        s.scrape(true);
    }
    // Time zero lies ZERO_LEAD ahead of the moment the threads below start (or of the common
    // start), so that the dispatcher is running by then and hands the first burst off early, as
    // it does every later one; the dispatcher sends nothing before it.
    let base = match coord.start_at_unix_ns {
        Some(at) => {
            check_start_ahead(at, started).context(BadInput)?;
            wait_until(at, &control.stop)
        }
        None => Instant::now() + ZERO_LEAD,
    };

    // Measure.
    let cpu_before = process_cpu_seconds();
    let clock = Clock { base };
    let start_unix_ns = coord
        .start_at_unix_ns
        .map_or_else(|| unix_now_ns() + base.saturating_duration_since(Instant::now()).as_nanos(), u128::from);
    if let Some(s) = &scraper {
        s.periodic();
    }
    let sharding = (!coord.shard.is_whole() || coord.start_at_unix_ns.is_some()).then(|| {
        Sharding::Shard(ShardRun {
            index: coord.shard.index,
            count: coord.shard.count,
            start_unix_ns: u64::try_from(start_unix_ns).unwrap_or(u64::MAX),
            common_start: coord.start_at_unix_ns.is_some(),
            clock: clock_offset,
        })
    });
    let fixed_schedule = matches!(inputs.schedule.starts, Starts::Listed(_));
    if fixed_schedule && let Some(c) = plan.limits.concurrency {
        say!(
            "note: --concurrency {c} on the trace's timestamps (a fixed schedule) is only a ceiling: a session due \
             while {c} are in flight waits for a slot and is sent late; --no-fixed-schedule runs a closed loop at \
             concurrency {c} without the timestamps"
        );
    }
    let shared = Arc::new(Shared {
        transport,
        clock,
        trace: inputs.trace.clone(),
        abort: control.abort.clone(),
        ids: request::Ids::new(fixed_schedule),
        turn_history: plan.target.body.turn_history,
        urls: u32::try_from(plan.target.urls.len()).unwrap_or(u32::MAX).max(1),
    });
    let sent_count = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let progress = progress::Progress::new(
        plan.exports.progress,
        progress::Bounds { requests: total, duration: plan.limits.duration },
        sent_count.clone(),
    );
    let (records_tx, records_rx) = mpsc::channel();
    let (collected_tx, collected_rx) = mpsc::channel::<Result<Collected>>();
    let stage = RecordsStage {
        counting: plan.counting,
        prompts: inputs.prompts.clone(),
        slos: plan.exports.slos.clone(),
        secrets: plan.secrets(),
        out: {
            std::fs::create_dir_all(&plan.exports.artifact_dir)
                .with_context(|| format!("cannot create {}", plan.exports.artifact_dir.display()))?;
            export::records_file(&plan.exports.artifact_dir)?
        },
        progress,
        slicer: plan
            .exports
            .slice
            .map(|d| aiperf_core::results::timeslices::Slicer::new(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
            .transpose()?,
    };
    std::thread::Builder::new()
        .name("records".into())
        .spawn(move || {
            let _ = collected_tx.send(stage.run(records_rx));
        })
        .context("cannot start the records thread")?;
    if let Some(d) = plan.limits.duration {
        let stop = control.stop.clone();
        rt.spawn(async move {
            tokio::time::sleep_until((clock.base + d).into()).await;
            stop.cancel();
        });
    }
    let (completions_tx, completions) = mpsc::channel();
    let dispatcher = Dispatcher {
        dispatch: Dispatch::new(
            inputs.schedule.clone(),
            plan.limits.concurrency,
            plan.limits.duration.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        ),
        preparer,
        shared: shared.clone(),
        handle: rt.handle().clone(),
        completions,
        completions_tx,
        records: records_tx,
        stop: control.stop.clone(),
        block_size: plan.source.block_size,
        sent: sent_count,
    };
    let sent = std::thread::Builder::new()
        .name("dispatcher".into())
        .spawn(move || dispatcher.run())
        .context("cannot start the dispatcher thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the dispatcher panicked"))?;
    if let Err(e) = &sent {
        // Whatever was sent still drains and is exported; the error is reported at the end.
        say!("error: {}", crate::exit::describe(e));
        control.stop.cancel();
    }
    drop(shared);

    // Drain: in-flight requests finish, within the grace period once sending was stopped.
    let collected = drain(control, plan.limits.grace, &collected_rx)?;

    // Export.
    let client_cpu_s = process_cpu_seconds().zip(cpu_before).map(|(b, a)| b - a);
    let server_metrics = scraper.map(|s| {
        let series = s.finish();
        aiperf_core::server::window::ServerMetrics::of(&series, u64::try_from(start_unix_ns).unwrap_or(u64::MAX))
    });
    let server_metrics = server_metrics.filter(|m| m.endpoints.iter().any(|e| e.fetches > 0));
    let server_written = server_metrics
        .as_ref()
        .map_or(Ok(()), |m| export::write_server_metrics(&plan.exports.artifact_dir, m, plan.input_config()));
    let with_goodput = !plan.exports.slos.is_empty();
    let report = collected.aggregate.report(with_goodput);
    let calibration = collected
        .mock_ttft_ms
        .and_then(|prog| report.get(Metric::TimeToFirstToken).and_then(|d| d.percentile(50.0)).map(|m| (prog, m)));
    let interrupted = control.interrupted.load(Ordering::SeqCst);
    let summary = RunSummary {
        report,
        benchmark_id: export::benchmark_id(start_unix_ns),
        cli_command: records::mask(&shell_command(std::env::args()), &plan.secrets()),
        incomplete_reason: None,
        input_config: {
            let mut c = plan.input_config().clone();
            // Whether the trace's timestamps were replayed, as resolved (not only as flagged).
            c["fixed_schedule"] = serde_json::Value::Bool(fixed_schedule);
            c
        },
        was_cancelled: interrupted,
        start_unix_ns,
        end_unix_ns: unix_now_ns(),
        tokenizer: inputs.tokenizer,
        warmup,
        calibration,
        client_cpu_s,
        startup_ms: ready_ms,
        urls: plan.shown_urls(),
        sharding,
        server: server_metrics
            .as_ref()
            .map(|m| aiperf_core::server::kinds::ServerView::of(m, Some(collected.aggregate.total_input_tokens))),
    };
    let mut written = export::write_summaries(&plan.exports.artifact_dir, &summary);
    if let Some(slicer) = &collected.slices {
        let slices = slicer.finish(collected.aggregate.last_end_ns.unwrap_or(0), with_goodput);
        if slices.beyond > 0 {
            say!(
                "warning: {} request(s) sent after the first {} time slices are left out of the time slices",
                slices.beyond,
                aiperf_core::results::timeslices::MAX_SLICES
            );
        }
        let w = export::write_timeslices(&plan.exports.artifact_dir, &slices, &summary);
        if let Err(e) = &w {
            say!("error: {}", crate::exit::describe(e));
        }
        written = written.and(w);
    }
    show!("{}", aiperf_core::results::export::console_table(&summary));
    let ceiling_note = match (&sent, plan.limits.concurrency) {
        (Ok(d), Some(c)) if fixed_schedule => Some(ceiling_note(c, d.ceiling, d.requests, &summary)),
        _ => None,
    };
    if let Some(n) = &ceiling_note {
        show!("note: {n}");
    }
    show!("Exports written to {}", plan.exports.artifact_dir.display());
    written?;
    server_written?;
    sent?;
    let status = if interrupted {
        exit::INTERRUPTED
    } else if summary.report.request_count == 0 {
        say!(
            "error: no request succeeded ({} failed); see the errors above and profile_export.jsonl",
            summary.report.error_request_count
        );
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    };
    Ok(RunOutcome { status, summary, ceiling_note })
}

/// What a `--concurrency` ceiling did to a fixed schedule: nothing (never reached), or how many
/// session starts it held back past their timestamps, with the lateness that cost.
fn ceiling_note(c: usize, ceiling: aiperf_core::replay::dispatch::Ceiling, sent: u64, summary: &RunSummary) -> String {
    if ceiling.held_starts == 0 {
        return format!(
            "--concurrency {c} had no effect: at most {} session(s) were in flight on the trace's timestamps",
            ceiling.peak_runs
        );
    }
    let lateness = summary
        .report
        .get(Metric::SendLateness)
        .and_then(|d| d.percentile(50.0))
        .map_or_else(String::new, |p| format!(" (send lateness p50 {p:.1} ms)"));
    format!(
        "--concurrency {c} held {} session start(s) back past their timestamps{lateness}, {sent} request(s) sent: \
         the trace's schedule was not kept; --no-fixed-schedule runs a closed loop at concurrency {c} instead",
        ceiling.held_starts
    )
}

/// Most connections opened before time zero.
const MAX_WARM_CONNECTIONS: usize = 256;
/// Starts this close together count as one burst.
const BURST_WINDOW_US: u64 = 10_000;
/// How many starts are looked at to size the first bursts.
const BURST_SCAN: usize = 10_000;

/// Connections worth opening before time zero: the largest burst among the first starts (runs
/// starting within 10 ms of each other), or the concurrency for runs without timestamps, capped
/// by the concurrency and [`MAX_WARM_CONNECTIONS`].
fn connections_needed(schedule: &Schedule, concurrency: Option<usize>) -> usize {
    let offsets: Vec<Option<u64>> = schedule.starts().take(BURST_SCAN).map(|s| s.offset_us).collect();
    let burst = if offsets.iter().any(Option::is_none) {
        concurrency.unwrap_or(1)
    } else {
        let t: Vec<u64> = offsets.into_iter().flatten().collect();
        let (mut lo, mut best) = (0usize, 0usize);
        for hi in 0..t.len() {
            while t[hi].saturating_sub(t[lo]) > BURST_WINDOW_US {
                lo += 1;
            }
            best = best.max(hi + 1 - lo);
        }
        best
    };
    burst.min(concurrency.unwrap_or(usize::MAX)).min(MAX_WARM_CONNECTIONS)
}

/// Waits for the records stage to see every request end. Once sending was stopped, in-flight
/// requests get `grace`; then (or at a second signal) they are cancelled and recorded so.
fn drain(control: &Control, grace: Duration, collected: &mpsc::Receiver<Result<Collected>>) -> Result<Collected> {
    let mut grace_end: Option<Instant> = None;
    loop {
        match collected.recv_timeout(DRAIN_POLL) {
            Ok(c) => return c,
            Err(mpsc::RecvTimeoutError::Disconnected) => anyhow::bail!("the records thread stopped unexpectedly"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if control.stop.is_cancelled() && grace_end.is_none() {
            grace_end = Some(Instant::now() + grace);
        }
        if grace_end.is_some_and(|g| Instant::now() >= g) {
            control.abort.cancel();
        }
    }
}

/// Sends warm-up requests (first turns of the schedule's sessions, in order) and waits for them;
/// returns (sent, failed).
async fn warmup<T: Transport + Clone>(
    transport: &T,
    inputs: &Inputs,
    plan: &ReplayPlan,
    stop: &CancellationToken,
) -> (u64, u64) {
    let clock = Clock::start();
    let limit = plan.limits.concurrency.unwrap_or(8).max(1);
    let count = plan.limits.warmup_requests;
    let source =
        BodySource { template: plan.target.body.clone(), prompts: inputs.prompts.clone(), trace: inputs.trace.clone() };
    let sessions = &inputs.schedule.sessions;
    let distinct = usize::try_from(count).unwrap_or(usize::MAX).min(sessions.len());
    let rows: Vec<u32> = inputs
        .schedule
        .starts()
        .take(distinct)
        .filter_map(|s| sessions.get(s.session as usize)?.turns.first().map(|t| t.row))
        .collect();
    let (mut sent, mut errors) = (0u64, 0u64);
    let mut in_flight = tokio::task::JoinSet::new();
    let run = request::Ids::new(false).run;
    let urls = (plan.target.urls.len() as u64).max(1);
    for &row in rows.iter().cycle().take(usize::try_from(count).unwrap_or(usize::MAX)) {
        if stop.is_cancelled() {
            break;
        }
        sent += 1;
        match source.build(row) {
            Ok(p) => {
                let t = transport.clone();
                let out = transport::Outgoing {
                    body: p.body,
                    request_id: format!("{run}-warmup-{sent}"),
                    correlation_id: format!("{run}-warmup-{sent}"),
                    url_index: u32::try_from((sent - 1) % urls).unwrap_or(0),
                };
                in_flight.spawn(async move { t.send(out, clock).await });
            }
            Err(_) => errors += 1,
        }
        while in_flight.len() >= limit {
            if let Some(r) = in_flight.join_next().await {
                errors += u64::from(r.map_or(true, |ex| ex.error.is_some()));
            }
        }
    }
    while let Some(r) = in_flight.join_next().await {
        errors += u64::from(r.map_or(true, |ex| ex.error.is_some()));
    }
    (sent, errors)
}

/// Date probes spread over a second narrow the offset to about 100 ms plus the round trip.
const CLOCK_PROBES: u32 = 10;
const CLOCK_PROBE_GAP: Duration = Duration::from_millis(100);
/// Probing stops this long before a common start.
const CLOCK_PROBE_MARGIN: Duration = Duration::from_millis(300);

/// Estimates the target's clock offset from its `Date` headers, probing every 100 ms while
/// time allows before `start_at`.
async fn probe_clock<T: Transport>(transport: &T, start_at_unix_ns: Option<u64>) -> Option<ClockOffset> {
    let mut probes = Vec::new();
    for i in 0..CLOCK_PROBES {
        if i > 0 {
            tokio::time::sleep(CLOCK_PROBE_GAP).await;
        }
        let margin = (CLOCK_PROBE_GAP + CLOCK_PROBE_MARGIN).as_nanos();
        if i > 0 && start_at_unix_ns.is_some_and(|at| unix_now_ns() + margin > u128::from(at)) {
            break;
        }
        let sent = unix_now_ns();
        let Some(date_unix_s) = transport.server_date().await else { break };
        let received = unix_now_ns();
        probes.push(DateProbe {
            sent_unix_ns: u64::try_from(sent).unwrap_or(u64::MAX),
            received_unix_ns: u64::try_from(received).unwrap_or(u64::MAX),
            date_unix_s,
        });
    }
    estimate_offset(&probes)
}

/// A common start that has already passed is an error: the shards would not start together.
fn check_start_ahead(at_unix_ns: u64, started: Instant) -> Result<()> {
    let now = unix_now_ns();
    anyhow::ensure!(
        u128::from(at_unix_ns) > now,
        "--start-at {} is {:.3} s in the past: give a time far enough ahead for every shard to read the trace, load the tokenizer and warm up (this one has been starting for {:.3} s)",
        aiperf_core::datetime::iso8601(u128::from(at_unix_ns)),
        (now - u128::from(at_unix_ns)) as f64 / 1e9,
        started.elapsed().as_secs_f64()
    );
    let ahead_ns = u128::from(at_unix_ns) - now;
    let max_ns = u128::from(aiperf_core::duration::MAX_SECONDS) * 1_000_000_000;
    anyhow::ensure!(
        ahead_ns <= max_ns,
        "--start-at {} is {:.1} days ahead: accepted is at most {} ahead (a run waits for it)",
        aiperf_core::datetime::iso8601(u128::from(at_unix_ns)),
        ahead_ns as f64 / 86_400e9,
        aiperf_core::duration::MAX_WORDS
    );
    Ok(())
}

/// Time zero of a run lies this far after the measuring threads start.
const ZERO_LEAD: Duration = Duration::from_millis(20);

/// Sleeps until [`ZERO_LEAD`] before the wall clock reads `at_unix_ns` (or the run is stopped)
/// and returns the instant that corresponds to `at_unix_ns`.
fn wait_until(at_unix_ns: u64, stop: &CancellationToken) -> Instant {
    let at = u128::from(at_unix_ns);
    let remaining = |now: u128| Duration::from_nanos(u64::try_from(at.saturating_sub(now)).unwrap_or(u64::MAX));
    say!(
        "Waiting {:.3} s for the common start {}",
        remaining(unix_now_ns()).as_secs_f64(),
        aiperf_core::datetime::iso8601(at)
    );
    loop {
        let left = remaining(unix_now_ns());
        if stop.is_cancelled() || left <= ZERO_LEAD {
            break;
        }
        std::thread::sleep((left - ZERO_LEAD).min(DRAIN_POLL * 10));
    }
    // The wall clock first: a pause between the two readings then moves time zero later, never
    // earlier, so no shard sends before the common start.
    let now_u = unix_now_ns();
    let now_i = Instant::now();
    if at >= now_u {
        now_i + remaining(now_u)
    } else {
        now_i.checked_sub(Duration::from_nanos(u64::try_from(now_u - at).unwrap_or(0))).unwrap_or(now_i)
    }
}

fn unix_now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// CPU time (user + system) of this process so far.
fn process_cpu_seconds() -> Option<f64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(t.tv_sec as f64 + t.tv_nsec as f64 / 1e9)
}
