//! `aiperf-cli profile`: replay a Mooncake trace against an OpenAI-compatible server with precise
//! timing, and measure it the way AIPerf does.
//!
//! Flow: options → validated [`options::Config`] → trace (read while the tokenizer loads) →
//! [`aiperf_core::schedule`] → optional warmup → the [`dispatcher`] thread paces requests onto the
//! async runtime → a single collector task aggregates records ([`aiperf_core::metrics`]), writes
//! the JSONL as they arrive and drives the progress bar → JSON/CSV exports and the console table.

pub mod client;
pub mod dispatcher;
pub mod export;
pub mod options;
pub mod progress;
pub mod prompt;
pub mod request;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aiperf_core::metrics::Aggregate;
use aiperf_core::schedule::{self, Schedule};
use aiperf_core::trace::{Input, Trace};
use anyhow::{Context, Result};
use tokio::sync::{Semaphore, mpsc, watch};

use client::{Clock, Endpoint, HttpClient};
use dispatcher::{Finished, Shared};
use export::{CsvExporter, Exporter, JsonExporter, JsonlExporter, RunSummary};
use options::{Args, Config, UiType};
use prompt::PromptBuilder;
use request::{BodyTemplate, prepare};

pub use options::reject_unsupported;

/// Requests scheduled for a concurrency run bounded only by `--benchmark-duration`.
const DURATION_RUN_CAP: u64 = 2_000_000;

/// Runs `aiperf-cli profile`.
pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let cfg = Config::from_args(args)?;
    // The tokenizer (a few MB of JSON) loads while the trace is read.
    let (trace, tok) = std::thread::scope(|s| {
        let tok = s.spawn(|| -> Result<_> {
            let t0 = Instant::now();
            let (tokenizer, source) = crate::tokenizer::load_tokenizer(cfg.args.tokenizer.as_deref(), &cfg.args.model)?;
            let prompts = PromptBuilder::new(tokenizer, cfg.args.isl_block_size, cfg.args.random_seed)?;
            Ok((prompts, source, t0.elapsed()))
        });
        let t0 = Instant::now();
        let trace = crate::input::read_trace(&cfg.args.input_file, false).map(|o| (o.trace, t0.elapsed()));
        (trace, tok.join())
    });
    let (mut trace, read_time) = trace?;
    if let Some(params) = &cfg.synthesis {
        let before = trace.len();
        trace = aiperf_core::synthesis::transform(&trace, params).context("synthesis failed")?;
        eprintln!("Synthesis applied in memory: {before} rows → {} rows", trace.len());
    }
    let (prompts, source, tok_time) = tok.map_err(|_| anyhow::anyhow!("the tokenizer loader panicked"))??;
    if source.approximate {
        eprintln!(
            "warning: no tokenizer for model '{}' (use --tokenizer): using the {}; token counts are approximate for this model",
            cfg.args.model, source.description
        );
    }
    let has_timestamps = trace.rows().first().is_some_and(|r| r.timestamp.is_some());
    let timing = cfg.timing(has_timestamps)?;
    let count = match (cfg.args.request_count, cfg.duration, timing) {
        // With a duration and no count, rate and concurrency runs reuse the trace until time is up
        // (as AIPerf does); the schedule holds enough session runs for that.
        (None, Some(d), schedule::Timing::Rate { per_second, .. }) => {
            Some((per_second * d.as_secs_f64()).ceil() as u64 + 1).filter(|&n| n > trace.len() as u64)
        }
        (None, Some(_), schedule::Timing::AsFastAsAllowed) => Some(DURATION_RUN_CAP.max(trace.len() as u64)),
        (c, _, _) => c,
    };
    let schedule = schedule::build(&trace, timing, count).context("cannot schedule the trace")?;
    eprintln!(
        "Read {} rows in {:.0} ms; tokenizer and prompt vocabulary ready in {:.0} ms (in parallel)",
        trace.len(),
        read_time.as_secs_f64() * 1e3,
        tok_time.as_secs_f64() * 1e3
    );
    let (trace, schedule) = (Arc::new(trace), Arc::new(schedule));
    // What a prefix cache could reuse is only needed in the exports: compute it off the start path.
    let expected = Arc::new(OnceLock::new());
    {
        let (trace, schedule, expected, block) =
            (trace.clone(), schedule.clone(), expected.clone(), cfg.args.isl_block_size);
        std::thread::spawn(move || {
            expected.get_or_init(|| expected_cached(&trace, &schedule, block));
        });
    }
    std::fs::create_dir_all(&cfg.args.artifact_dir)
        .with_context(|| format!("cannot create {}", cfg.args.artifact_dir.display()))?;
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    rt.block_on(replay(cfg, trace, schedule, prompts, expected, source.description, started))
}

/// For each row: prompt tokens whose leading hash ids were sent before it (schedule order).
fn expected_cached(trace: &Trace, schedule: &Schedule, block: u64) -> Vec<Option<u64>> {
    let mut seen: HashSet<u64> = HashSet::new();
    let mut out = vec![None; trace.len()];
    for s in &schedule.starts {
        for t in schedule.sessions[s.session as usize].turns.iter().take(s.turns as usize) {
            let row = &trace.rows()[t.row as usize];
            let Input::Length(n) = row.input else { continue };
            let ids = trace.hash_ids(row);
            let shared = ids.iter().take_while(|id| seen.contains(id)).count() as u64;
            out[t.row as usize] = Some((shared * block).min(n.max(0) as u64));
            seen.extend(ids.iter().copied());
        }
    }
    out
}

async fn replay(
    cfg: Config,
    trace: Arc<Trace>,
    schedule: Arc<Schedule>,
    prompts: PromptBuilder,
    expected: Arc<OnceLock<Vec<Option<u64>>>>,
    tokenizer: String,
    started: Instant,
) -> Result<()> {
    let ready_ms = started.elapsed().as_secs_f64() * 1e3;
    let a = &cfg.args;
    let client = client::http_client()?;
    let path = a.custom_endpoint.clone().unwrap_or_else(|| a.endpoint_type.path().to_owned());
    let endpoint = Endpoint::new(&a.url, &path, a.api_key.as_deref(), &cfg.headers, cfg.timeout)?;
    let template = BodyTemplate {
        endpoint: a.endpoint_type,
        model: a.model.clone(),
        streaming: a.streaming,
        legacy_max_tokens: a.use_legacy_max_tokens,
        extra_inputs: cfg.extra_inputs.clone(),
    };
    let total = schedule.request_count();
    eprintln!(
        "Replaying {} request(s) in {} session run(s) to {}{} (ready in {ready_ms:.0} ms)",
        total,
        schedule.starts.len(),
        a.url.trim_end_matches('/'),
        path
    );
    let warmup = if a.warmup_request_count > 0 {
        let w = run_warmup(
            &client,
            &endpoint,
            &trace,
            &schedule,
            &prompts,
            &template,
            a.warmup_request_count,
            a.concurrency,
        )
        .await;
        Some(w)
    } else {
        None
    };

    let cpu_before = process_cpu_seconds();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (hard_tx, hard_rx) = watch::channel(false);
    let clock = Clock { base: Instant::now() };
    let start_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let shared = Arc::new(Shared {
        client,
        endpoint,
        clock,
        trace,
        schedule,
        prompts,
        template,
        stop: AtomicBool::new(false),
        hard_cancel: hard_rx,
        end_ns: cfg.duration.map(|d| d.as_nanos() as u64),
        server_token_count: a.use_server_token_count,
    });
    let (rec_tx, rec_rx) = mpsc::unbounded_channel();
    let (msg_tx, msg_rx) = std::sync::mpsc::channel();
    let limit = a.concurrency.map(|c| Arc::new(Semaphore::new(c)));
    let pb = progress::bar(total, a.ui_type != UiType::None);
    let jsonl = JsonlExporter::create(&a.artifact_dir)?;
    let collector = tokio::spawn(collect(
        rec_rx,
        jsonl,
        pb.clone(),
        a.use_server_token_count,
        cfg.slos.clone(),
        a.api_key.clone(),
        expected,
    ));
    let dispatcher = {
        let (shared, handle, stop_rx) = (shared.clone(), tokio::runtime::Handle::current(), stop_rx.clone());
        std::thread::Builder::new()
            .name("dispatcher".into())
            .spawn(move || dispatcher::run(shared, handle, msg_rx, msg_tx, rec_tx, limit, stop_rx))
            .context("cannot start the dispatcher thread")?
    };
    let was_cancelled = Arc::new(AtomicBool::new(false));
    let stopper = {
        let (shared, was_cancelled, grace, duration) = (shared.clone(), was_cancelled.clone(), cfg.grace, cfg.duration);
        tokio::spawn(async move {
            let end = async {
                match duration {
                    Some(d) => tokio::time::sleep_until((clock.base + d).into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = tokio::signal::ctrl_c() => {
                    if r.is_ok() {
                        was_cancelled.store(true, Ordering::SeqCst);
                        eprintln!("\nCtrl-C: no new requests; in-flight requests get {:.1} s to finish", grace.as_secs_f64());
                    }
                }
                _ = end => {}
            }
            shared.stop.store(true, Ordering::SeqCst);
            let _ = stop_tx.send(true);
            tokio::time::sleep(grace).await;
            let _ = hard_tx.send(true);
        })
    };
    let (agg, mut jsonl, mock_ttft) = collector.await.context("the collector failed")??;
    stopper.abort();
    let _ = tokio::task::spawn_blocking(move || dispatcher.join()).await;
    pb.finish_and_clear();
    let client_cpu_s = process_cpu_seconds().zip(cpu_before).map(|(b, a)| b - a);
    let end_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let report = agg.report(!cfg.slos.is_empty());
    let calibration = mock_ttft.and_then(|prog| {
        report.get(aiperf_core::metrics::Metric::TimeToFirstToken).and_then(|d| d.percentile(50.0)).map(|m| (prog, m))
    });
    let summary = RunSummary {
        report,
        input_config: cfg.redacted_json(),
        was_cancelled: was_cancelled.load(Ordering::SeqCst),
        start_unix_ns,
        end_unix_ns,
        tokenizer,
        warmup,
        calibration,
        client_cpu_s,
        startup_ms: ready_ms,
    };
    let dir = &cfg.args.artifact_dir;
    let mut exporters: Vec<Box<dyn Exporter>> = vec![
        Box::new(JsonExporter { path: dir.join("profile_export_aiperf.json") }),
        Box::new(CsvExporter { path: dir.join("profile_export_aiperf.csv") }),
    ];
    jsonl.finish(&summary)?;
    for e in &mut exporters {
        e.finish(&summary)?;
    }
    println!("{}", export::console_table(&summary));
    println!("Exports written to {}", dir.display());
    Ok(())
}

/// CPU time (user + system) of this process so far, where the OS tells it (Linux `/proc`).
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Sends warmup requests (first turns of the schedule's sessions, in order) and waits for them.
#[allow(clippy::too_many_arguments)]
async fn run_warmup(
    client: &HttpClient,
    endpoint: &Endpoint,
    trace: &Trace,
    schedule: &Schedule,
    prompts: &PromptBuilder,
    template: &BodyTemplate,
    count: u64,
    concurrency: Option<usize>,
) -> (u64, u64) {
    let clock = Clock { base: Instant::now() };
    let limit = concurrency.unwrap_or(8).max(1);
    let mut errors = 0;
    let mut in_flight = tokio::task::JoinSet::new();
    for k in 0..count {
        let s = &schedule.starts[(k as usize) % schedule.starts.len()];
        let row_idx = schedule.sessions[s.session as usize].turns[0].row;
        let row = &trace.rows()[row_idx as usize];
        match prepare(template, prompts, row, trace.hash_ids(row), row_idx as u64) {
            Ok(p) => {
                let (client, endpoint) = (client.clone(), endpoint.clone());
                in_flight.spawn(async move { client::send(&client, &endpoint, p.body, &clock).await });
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
    (count, errors)
}

/// The single collector: aggregates, writes the JSONL line of every record, moves the bar.
async fn collect(
    mut rx: mpsc::UnboundedReceiver<Finished>,
    mut jsonl: JsonlExporter,
    pb: indicatif::ProgressBar,
    use_server_token_count: bool,
    slos: Vec<aiperf_core::metrics::Slo>,
    api_key: Option<String>,
    expected: Arc<OnceLock<Vec<Option<u64>>>>,
) -> Result<(Aggregate, JsonlExporter, Option<f64>)> {
    let mut agg = Aggregate::default();
    let mut mock_ttft = None;
    let mut errors = 0u64;
    while let Some(Finished { mut record, row, mock_ttft_ms }) = rx.recv().await {
        record.expected_cached_tokens = expected.wait().get(row as usize).copied().flatten();
        if let (Some(key), Some(e)) = (api_key.as_deref(), record.error.as_mut())
            && !key.is_empty()
        {
            e.message = e.message.replace(key, "<redacted>");
        }
        mock_ttft = mock_ttft.or(mock_ttft_ms);
        let metrics = agg.add(&record, use_server_token_count, &slos);
        errors += u64::from(record.error.is_some());
        jsonl.record(&record, metrics.as_ref())?;
        pb.inc(1);
        if errors > 0 {
            pb.set_message(format!("({errors} errors)"));
        }
    }
    Ok((agg, jsonl, mock_ttft))
}
