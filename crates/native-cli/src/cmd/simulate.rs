//! `aiperf-cli simulate`: what a trace would hit on a cluster of replicas with finite prefix
//! caches, a router and a simple engine timing ([`aiperf_core::simulate`]), without a server.
//!
//! Comma-separated lists on the cluster options (replicas, capacity, router, policy) give a sweep:
//! one run folder per combination, each with the records and summary files of a real run (so
//! `report` and `compare` open it) plus `simulation.json` (per-replica hit rates, routing
//! balance, sampled KV usage, queue and running requests), and a table of every combination on
//! the console and in `simulate_summary.csv` / `.json`. `--calibrate RUN_DIR` fits the engine
//! timing from a measured run's records ([`aiperf_core::simulate::calibrate`]) and writes the fit
//! beside the results.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

use aiperf_core::analysis::DEFAULT_BLOCK_SIZE;
use aiperf_core::replay::schedule::Schedule;
use aiperf_core::results::aggregate::{Aggregate, Report};
use aiperf_core::results::export::SummaryFormat;
use aiperf_core::results::line::{RECORDS_FILE, record_line};
use aiperf_core::results::metrics::Metric;
use aiperf_core::results::record::RequestRecord;
use aiperf_core::results::summary::{RunSummary, shell_command};
use aiperf_core::simulate::calibrate::steps::{StepCalibration, calibrate_steps};
use aiperf_core::simulate::calibrate::{Calibration, Observation, calibrate};
use aiperf_core::simulate::engine::{DEFAULT_MAX_BATCH_TOKENS, EngineMode};
use aiperf_core::simulate::{
    BlockIds, Cluster, Engine, MAX_REPLICAS, Policy, Router, SimRequest, Simulation, blocks_for_gb, sample_every_ns,
    simulate_numbered, trace_schedule,
};
use aiperf_core::trace::{DEFAULT_MAX_LINE_BYTES, LineRead, Trace, read_line_capped};
use anyhow::{Context, Result, bail};
use serde_json::json;

/// Simulate a trace on a cluster: replicas with prefix caches, a router, engine timing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace (any format `analyze-trace` reads).
    pub file: PathBuf,
    #[command(flatten)]
    pub format: crate::io::trace_format::TraceFormatArgs,
    /// Replicas (a comma-separated list sweeps).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub replicas: Vec<u32>,
    /// KV capacity of each replica in blocks, or `unbounded` (a list sweeps).
    #[arg(long, value_delimiter = ',', default_value = "unbounded", value_parser = parse_blocks)]
    pub kv_blocks: Vec<Option<u64>>,
    /// KV capacity of each replica in GB (10^9 bytes), converted to blocks with
    /// --bytes-per-token; replaces --kv-blocks (a list sweeps).
    #[arg(long, value_delimiter = ',', requires = "bytes_per_token")]
    pub kv_gb: Vec<f64>,
    /// KV bytes per token (2 × layers × KV heads × head size × bytes per value).
    #[arg(long)]
    pub bytes_per_token: Option<u64>,
    /// Tokens per block: the trace's hash-id block size. The engine serves whole cached blocks
    /// up to the prompt's last token, which it always computes again (as vLLM does: a fully
    /// cached prompt of whole blocks hits one block less).
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Router (a list sweeps); kv-aware is NVIDIA Dynamo's KV router cost.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "kv-aware")]
    pub router: Vec<Router>,
    /// Eviction policy (a list sweeps).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "lru")]
    pub policy: Vec<Policy>,
    /// Weight of the blocks to prefill in the kv-aware cost (Dynamo's overlap_score_weight).
    #[arg(long, default_value_t = 1.0)]
    pub overlap_weight: f64,
    /// Most requests running at once on a replica (unbounded when absent).
    #[arg(long)]
    pub max_running: Option<u32>,
    /// Fixed prefill time (ms).
    #[arg(long, default_value_t = Engine::default().prefill_fixed_us / 1000.0)]
    pub prefill_fixed_ms: f64,
    /// Prefill time per uncached prompt token (ms).
    #[arg(long, default_value_t = Engine::default().prefill_per_token_us / 1000.0)]
    pub prefill_per_token_ms: f64,
    /// Fixed time between output tokens (ms).
    #[arg(long, default_value_t = Engine::default().decode_fixed_us / 1000.0)]
    pub decode_fixed_ms: f64,
    /// Time between output tokens added by each running request (ms).
    #[arg(long, default_value_t = Engine::default().decode_per_running_us / 1000.0)]
    pub decode_per_running_ms: f64,
    /// How a replica's time advances. `request`: each request timed on its own (prefill from its
    /// uncached tokens, then its tokens at the decode time). `step`: in engine steps of at most
    /// --max-batch-tokens tokens, as vLLM v1's scheduler builds them (running requests' next
    /// tokens first, in the order they started, then waiting requests' prompts, chunked to the
    /// budget), each taking --decode-fixed-ms + --prefill-per-token-ms per prompt token +
    /// --decode-per-running-ms per decode token in it; a decode token that needs a KV block when
    /// every block is pinned preempts the latest started request, which computes its prompt and
    /// output again later (counted per replica in simulation.json). `step-llamacpp`: the same
    /// steps in llama.cpp's server's order: every waiting request that finds a free slot
    /// (--max-running slots, the least recently used first) starts, then each step takes every
    /// decoding request's next token and the running requests' prompt tokens in slot order up to
    /// --max-batch-tokens; no preemption.
    #[arg(long, value_enum, default_value = "request")]
    pub engine: EngineMode,
    /// Most tokens one engine step computes (--engine step, step-llamacpp): vLLM's max_num_batched_tokens,
    /// llama.cpp's --batch-size.
    #[arg(long, default_value_t = DEFAULT_MAX_BATCH_TOKENS, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_batch_tokens: u32,
    /// Fit the engine timing from a measured run folder's records (its profile_export.jsonl):
    /// time to first token against uncached prompt tokens, time between tokens against requests
    /// running; replaces the four timing options. With --max-running, the server is taken to
    /// run that many requests at once per URL, first come first served, and each request's wait
    /// for a slot is taken out of its time to first token (give the server's own limit: vLLM's
    /// max_num_seqs, llama.cpp's --parallel). Without it, the prefill is fitted on the requests
    /// sent while nothing else was in flight on their URL, when 3 or more were (the others may
    /// have waited in the server's queue).
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["prefill_fixed_ms", "prefill_per_token_ms", "decode_fixed_ms", "decode_per_running_ms"])]
    pub calibrate: Option<PathBuf>,
    /// Seed of the random router.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Hold each request's prompt blocks only. By default its output tokens also take blocks
    /// as they are decoded, as vLLM's do (a prompt of whole blocks takes one more at its first
    /// output token); `analyze-trace`'s LRU curve counts prompt blocks only.
    #[arg(long)]
    pub prompt_blocks_only: bool,
    /// Sampled series points (KV usage, queue, running) over the trace's span.
    #[arg(long, default_value_t = 200)]
    pub samples: u64,
    /// Folder of the run folders and the sweep's summary.
    #[arg(long, default_value = "simulate")]
    pub output_dir: PathBuf,
    /// Replace the files of an earlier simulation in --output-dir (a folder holding one is
    /// refused otherwise).
    #[arg(long)]
    pub overwrite: bool,
    /// Skip the records (`profile_export.jsonl`): only the summaries.
    #[arg(long)]
    pub no_records: bool,
    /// Skip invalid rows instead of stopping at the first one.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Longest line accepted (bytes).
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

fn parse_blocks(s: &str) -> Result<Option<u64>, String> {
    match s.trim() {
        "unbounded" | "inf" => Ok(None),
        t => match t.parse::<u64>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(format!("'{s}' is not a block count: a whole number ≥ 1, or `unbounded`")),
        },
    }
}

/// One combination's numbers, for the sweep table.
struct Row {
    name: String,
    cluster: Cluster,
    calibration: Option<Calibration>,
    step_calibration: Option<StepCalibration>,
    sim: Simulation,
    ttft_ms: [f64; 2],
    latency_ms: [f64; 2],
}

pub fn run(args: Args) -> Result<()> {
    if args.block_size == 0 {
        bail!("--block-size: 0 is not accepted: a whole number of tokens ≥ 1");
    }
    if let Some(r) = args.replicas.iter().find(|&&r| !(1..=MAX_REPLICAS).contains(&r)) {
        bail!("--replicas: {r} is not accepted: a whole number from 1 to {MAX_REPLICAS}");
    }
    let capacities: Vec<Option<u64>> = if args.kv_gb.is_empty() {
        args.kv_blocks.clone()
    } else {
        let bpt = args.bytes_per_token.unwrap_or(0);
        let mut caps = Vec::new();
        for &gb in &args.kv_gb {
            let blocks = blocks_for_gb(gb, bpt, args.block_size);
            if !gb.is_finite() || blocks == 0 {
                bail!("--kv-gb: {gb} holds no block of {} tokens at {bpt} bytes a token", args.block_size);
            }
            caps.push(Some(blocks));
        }
        caps
    };
    let combos: Vec<(u32, Option<u64>, Router, Policy, String)> = args
        .replicas
        .iter()
        .flat_map(|&r| capacities.iter().map(move |&kv| (r, kv)))
        .flat_map(|(r, kv)| args.router.iter().map(move |&router| (r, kv, router)))
        .flat_map(|(r, kv, router)| {
            args.policy.iter().map(move |&policy| {
                let kv_name = kv.map_or("unbounded".to_owned(), |b| b.to_string());
                (r, kv, router, policy, format!("r{r}_kv{kv_name}_{}_{}", router.name(), policy.name()))
            })
        })
        .collect();
    refuse_earlier_outputs(&args, &combos)?;
    let observations = args.calibrate.as_deref().map(|dir| observe(dir, args.max_line_bytes)).transpose()?;
    let (mut calibration, mut step_calibration) = (None, None);
    if let (Some(dir), Some(obs)) = (args.calibrate.as_deref(), observations.as_deref()) {
        let records = dir.join(RECORDS_FILE);
        let context = || format!("--calibrate {}", records.display());
        match args.engine.step_order() {
            None => calibration = Some(calibrate(obs, args.max_running).with_context(context)?),
            Some(order) => {
                let mut c = calibrate_steps(obs, args.max_running, args.max_batch_tokens).with_context(context)?;
                c.steps.order = order;
                step_calibration = Some(c);
            }
        }
        if args.max_running.is_none()
            && let Some((max, source)) = server_running_max(dir)
        {
            show!(
                "The server ran at most {max} requests at once ({source} in {}): --max-running {max} takes the wait for a slot out of the fitted prefill and queues in the simulation alike",
                dir.display()
            );
        }
    }
    if let Some(c) = &calibration {
        show!("{}", calibration_text(c));
    }
    if let Some(c) = &step_calibration {
        show!("{}", step_calibration_text(c));
    }
    let loaded =
        crate::io::trace_format::read_trace_any(&args.file, &args.format, args.skip_invalid, args.max_line_bytes)?;
    let trace = loaded.trace;
    // The trace's blocks are numbered on a thread of their own while its schedule is built.
    let (schedule, ids) = std::thread::scope(|s| {
        let numbering = s.spawn(|| BlockIds::of(&trace));
        let schedule = trace_schedule(&trace);
        (schedule, numbering.join())
    });
    let schedule = Arc::new(schedule.with_context(|| format!("{}", args.file.display()))?);
    let mut numbered = ids
        .map_err(|_| anyhow::anyhow!("the numbering of the trace's blocks failed"))?
        .with_context(|| format!("simulate {}", args.file.display()))?;
    numbered.mark_once(&trace, &schedule);
    let mut ids = Some(numbered);
    let sample_every_ns = sample_every_ns(&schedule, args.samples);
    let engine = calibration.map_or(
        Engine {
            prefill_fixed_us: args.prefill_fixed_ms * 1000.0,
            prefill_per_token_us: args.prefill_per_token_ms * 1000.0,
            decode_fixed_us: args.decode_fixed_ms * 1000.0,
            decode_per_running_us: args.decode_per_running_ms * 1000.0,
        },
        |c| c.engine,
    );
    let steps = step_calibration.map(|c| c.steps).or_else(|| args.engine.steps(&engine, args.max_batch_tokens));
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("cannot create {}", args.output_dir.display()))?;

    let mut rows = Vec::new();
    let last = combos.len().saturating_sub(1);
    for (k, (replicas, kv_blocks, router, policy, name)) in combos.into_iter().enumerate() {
        let cluster = Cluster {
            replicas,
            kv_blocks,
            block_size: args.block_size,
            policy,
            router,
            overlap_weight: args.overlap_weight,
            max_running: args.max_running,
            engine,
            seed: args.seed,
            sample_every_ns,
            output_blocks: !args.prompt_blocks_only,
            steps,
        };
        let fits = Fits { calibration: calibration.as_ref(), steps: step_calibration.as_ref() };
        let input = Input { trace: &trace, schedule: &schedule, ids: &mut ids, last: k == last };
        let (sim, report) = simulate_run(&args.output_dir.join(&name), input, &cluster, fits, &args)?;
        // Every simulated request succeeds: its time to first token and its latency from its
        // arrival (sent when it arrived) are the report's TTFT and effective latency.
        let p50_p99 = |m: Metric| [50.0, 99.0].map(|p| report.get(m).and_then(|d| d.percentile(p)).unwrap_or(0.0));
        let (ttft_ms, latency_ms) = (p50_p99(Metric::TimeToFirstToken), p50_p99(Metric::EffectiveLatency));
        rows.push(Row { name, cluster, calibration, step_calibration, sim, ttft_ms, latency_ms });
    }
    let (csv, table, json) = sweep_summary(&rows, &args);
    crate::io::exports::write_file(&args.output_dir.join(SUMMARY_CSV), &csv)?;
    crate::io::exports::write_file(&args.output_dir.join(SUMMARY_JSON), &json)?;
    show!("{table}");
    show!("Simulated runs written to {}", args.output_dir.display());
    Ok(())
}

/// The files a simulation writes into --output-dir.
const SUMMARY_CSV: &str = "simulate_summary.csv";
const SUMMARY_JSON: &str = "simulate_summary.json";
const SIMULATION_JSON: &str = "simulation.json";

/// Refuses, before anything is read, an output that is the input trace, and a folder holding an
/// earlier simulation unless `--overwrite` (no earlier results are replaced unasked).
fn refuse_earlier_outputs(args: &Args, combos: &[(u32, Option<u64>, Router, Policy, String)]) -> Result<()> {
    let dir = &args.output_dir;
    let mut outputs = vec![dir.join(SUMMARY_CSV), dir.join(SUMMARY_JSON)];
    for (.., name) in combos {
        let run = dir.join(name);
        outputs.extend([RECORDS_FILE, SIMULATION_JSON, crate::io::exports::READY_MARKER].map(|f| run.join(f)));
        outputs.extend(SummaryFormat::ALL.map(|f| run.join(f.file_name())));
    }
    let paths: Vec<&Path> = outputs.iter().map(PathBuf::as_path).collect();
    crate::io::output::refuse_same_files(&paths, &[&args.file])?;
    if !args.overwrite
        && let Some(earlier) = outputs.iter().find(|p| p.exists())
    {
        bail!(
            "{} holds an earlier simulation ({}): choose another --output-dir, or --overwrite to replace it",
            dir.display(),
            earlier.display()
        );
    }
    Ok(())
}

/// What `dir`'s records say about the engine ([`Observation`]), for `--calibrate`.
fn observe(dir: &Path, max_line_bytes: usize) -> Result<Vec<Observation>> {
    let path = dir.join(RECORDS_FILE);
    let mut reader =
        crate::io::input::open(&path).with_context(|| format!("--calibrate: {} is no run folder", dir.display()))?;
    let (mut buf, mut rec, mut obs, mut line) = (Vec::new(), RequestRecord::default(), Vec::new(), 0u64);
    loop {
        buf.clear();
        match read_line_capped(&mut reader, &mut buf, max_line_bytes)
            .with_context(|| format!("cannot read {}", path.display()))?
        {
            LineRead::End => break,
            LineRead::TooLong => {
                bail!(
                    "{}:{}: the line is longer than {max_line_bytes} bytes (--max-line-bytes raises the limit)",
                    path.display(),
                    line + 1
                )
            }
            LineRead::Line => line += 1,
        }
        let read = aiperf_core::results::line::read_line(&buf, &mut rec)
            .with_context(|| format!("{}:{line}: not a record", path.display()))?;
        if read && let Some(o) = Observation::of(&rec) {
            obs.push(o);
        }
    }
    Ok(obs)
}

/// The most requests the server ran at once and the metric that says it, from the run's summary.
fn server_running_max(dir: &Path) -> Option<(u64, String)> {
    let text = std::fs::read(dir.join(aiperf_core::results::export::SummaryFormat::Json.file_name())).ok()?;
    let summary: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let running = &summary["prefix_cache_comparison"]["server_running_requests"];
    let max = running["max"].as_f64().filter(|m| m.is_finite() && *m >= 1.0)?;
    Some((max as u64, running["source"].as_str().unwrap_or("the server's metrics").to_owned()))
}

fn calibration_json(c: &Calibration, args: &Args) -> serde_json::Value {
    let fit = |f: &aiperf_core::simulate::calibrate::Fit, x: &str| json!({ "x": x, "points": f.points, "intercept_ms": f.intercept / 1000.0, "slope_ms": f.slope / 1000.0, "r2": f.r2, "mae_ms": f.mae / 1000.0 });
    json!({
        "run": args.calibrate.as_ref().map(|p| p.display().to_string()),
        "time_to_first_token": fit(&c.prefill, "uncached prompt tokens"),
        "inter_token_latency": fit(&c.decode, "requests running on the URL"),
        "slots": c.slots,
        "mean_wait_for_a_slot_ms": c.mean_wait_us / 1000.0,
    })
}

fn step_calibration_json(c: &StepCalibration, args: &Args) -> serde_json::Value {
    json!({
        "run": args.calibrate.as_ref().map(|p| p.display().to_string()),
        "step_time": {
            "x": ["prompt tokens in the step", "decode tokens in the step"],
            "points": c.decode_points + c.prefill_points,
            "decode_windows": c.decode_points,
            "prefill_windows": c.prefill_points,
            "fixed_ms": c.steps.fixed_us / 1000.0,
            "per_prefill_token_ms": c.steps.per_prefill_token_us / 1000.0,
            "per_decode_token_ms": c.steps.per_decode_token_us / 1000.0,
            "r2": c.r2,
            "mae_ms": c.mae_us / 1000.0,
        },
        "max_batch_tokens": c.steps.max_batch_tokens,
        "slots": c.slots,
    })
}

fn step_calibration_text(c: &StepCalibration) -> String {
    let s = &c.steps;
    format!(
        "Calibrated engine steps of at most {} tokens ({} decoding windows, {} prefills on an idle server; {}):\n  \
         step {:.3} ms + {:.5} ms per prompt token + {:.4} ms per decode token (R² {:.3}, mean error {:.3} ms a step)",
        s.max_batch_tokens,
        c.decode_points,
        c.prefill_points,
        c.slots.map_or("each taken to start when sent".to_owned(), |n| format!("{n} slots per URL")),
        s.fixed_us / 1000.0,
        s.per_prefill_token_us / 1000.0,
        s.per_decode_token_us / 1000.0,
        c.r2,
        c.mae_us / 1000.0
    )
}

fn calibration_text(c: &Calibration) -> String {
    let e = &c.engine;
    format!(
        "Calibrated engine ({} requests for the time to first token, {} for the time between tokens; {}):\n  \
         prefill {:.3} ms + {:.5} ms per uncached token (R² {:.3}, mean error {:.2} ms)\n  \
         decode {:.3} ms + {:.4} ms per running request (R² {:.3}, mean error {:.3} ms)",
        c.prefill.points,
        c.decode.points,
        c.slots.map_or("each taken to start when sent".to_owned(), |s| format!(
            "{s} slots per URL, mean wait for one {:.2} ms taken out",
            c.mean_wait_us / 1000.0
        )),
        e.prefill_fixed_us / 1000.0,
        e.prefill_per_token_us / 1000.0,
        c.prefill.r2,
        c.prefill.mae / 1000.0,
        e.decode_fixed_us / 1000.0,
        e.decode_per_running_us / 1000.0,
        c.decode.r2,
        c.decode.mae / 1000.0
    )
}

/// The fits a simulation was timed by.
#[derive(Clone, Copy)]
struct Fits<'a> {
    calibration: Option<&'a Calibration>,
    steps: Option<&'a StepCalibration>,
}

fn cli_config(c: &Cluster, fits: Fits<'_>, args: &Args) -> serde_json::Value {
    let mut config = json!({
        "simulated": true,
        "input_file": args.file.display().to_string(),
        "replicas": c.replicas,
        "kv_blocks": c.kv_blocks,
        "block_size": c.block_size,
        "router": c.router.name(),
        "policy": c.policy.name(),
        "overlap_weight": c.overlap_weight,
        "max_running": c.max_running,
        "engine": c.engine,
        "seed": c.seed,
    });
    if let Some(cal) = fits.calibration {
        config["calibration"] = calibration_json(cal, args);
    }
    if let Some(steps) = &c.steps {
        config["engine_steps"] = json!(steps);
    }
    if let Some(cal) = fits.steps {
        config["step_calibration"] = step_calibration_json(cal, args);
    }
    config
}

/// Requests handed from the simulation to the aggregating thread at once.
const HANDOVER_BATCH: usize = 4096;
/// Batches on their way at most (the simulation waits for the aggregating thread beyond).
const HANDOVER_BATCHES: usize = 16;

/// The simulation's ended requests on their way to the aggregating thread, a batch at a time.
struct Handover {
    to: Option<SyncSender<Vec<(usize, SimRequest)>>>,
    batch: Vec<(usize, SimRequest)>,
}

impl Handover {
    fn push(&mut self, i: usize, r: &SimRequest) {
        self.batch.push((i, *r));
        if self.batch.len() == HANDOVER_BATCH {
            self.send();
        }
    }

    /// Sends the batch; once the aggregating thread has stopped (on an error, which its join
    /// gives), nothing more is sent.
    fn send(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(HANDOVER_BATCH));
        if self.to.as_ref().is_some_and(|to| to.send(batch).is_err()) {
            self.to = None;
        }
    }
}

/// What every combination simulates: the trace, its schedule and its blocks numbered (dropped
/// once the last combination's simulation has run, before its report takes memory).
struct Input<'a> {
    trace: &'a Trace,
    schedule: &'a Arc<Schedule>,
    ids: &'a mut Option<BlockIds>,
    last: bool,
}

/// One combination simulated into its folder: records and summaries like a real run's, and
/// `simulation.json`. The requests are aggregated, and their records written, on a thread of
/// their own as they end, while the simulation goes on.
fn simulate_run(
    dir: &Path,
    Input { trace, schedule, ids, last }: Input<'_>,
    cluster: &Cluster,
    fits: Fits<'_>,
    args: &Args,
) -> Result<(Simulation, Report)> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let out = (!args.no_records)
        .then(|| crate::io::exports::records_file(dir, &crate::io::exports::ExportNames::default()))
        .transpose()?;
    let records_path = dir.join(RECORDS_FILE);
    let numbered = ids.as_ref().context("the trace's blocks were numbered for the combinations before")?;
    let (to, from) = std::sync::mpsc::sync_channel(HANDOVER_BATCHES);
    let (sim, aggregate) = std::thread::scope(|s| -> Result<_> {
        let aggregating = std::thread::Builder::new()
            .spawn_scoped(s, || aggregate_ended(from, trace, out, &records_path))
            .context("cannot start the thread aggregating the simulated requests")?;
        let mut handover = Handover { to: Some(to), batch: Vec::with_capacity(HANDOVER_BATCH) };
        let sim = simulate_numbered(trace, Arc::clone(schedule), numbered, cluster, &mut |i, r| handover.push(i, r));
        handover.send();
        drop(handover);
        Ok((sim, aggregating.join()))
    })?;
    if last {
        *ids = None;
    }
    let sim = sim.context("simulate")?;
    let mut aggregate =
        aggregate.map_err(|_| anyhow::anyhow!("the aggregation of the simulated requests failed"))??;
    let end = aggregate.last_end_ns.unwrap_or(0);
    // The time-weighted metrics are swept on a thread of their own while the lists' statistics
    // are taken: the report is the aggregate's `into_report_over(false, None)`.
    let timeline = std::mem::take(&mut aggregate.timeline);
    let (mut report, curves) = std::thread::scope(|s| {
        let sweep = s.spawn(|| timeline.window_metrics(None));
        let report = aggregate.into_report_over(false, None);
        (report, sweep.join())
    });
    report.timeline = curves.map_err(|_| anyhow::anyhow!("the time-weighted metrics' sweep failed"))?;
    let summary = RunSummary {
        benchmark_id: format!("{:012x}", 0),
        cli_command: shell_command(std::env::args()),
        incomplete_reason: None,
        urls: (0..cluster.replicas).map(|i| format!("replica-{i}")).collect(),
        report,
        // A simulation has no AIPerf configuration: its settings are ours only.
        input_config: serde_json::Value::Null,
        cli_config: cli_config(cluster, fits, args),
        was_cancelled: false,
        start_unix_ns: 0,
        end_unix_ns: u128::from(end),
        tokenizer: "trace lengths (simulated)".to_owned(),
        ..RunSummary::default()
    };
    crate::io::exports::write_summaries(dir, &crate::io::exports::ExportNames::default(), &summary)?;
    let replicas: Vec<_> = sim
        .replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut replica = json!({
                "replica": i,
                "requests": r.requests,
                "token_hit_rate": r.token_hit_rate(),
                "row_hit_rate": r.row_hit_rate(),
                "input_tokens": r.input_tokens,
                "cached_tokens": r.cached_tokens,
                "evictions": r.evictions,
                "peak_blocks": r.peak_blocks,
                "peak_waiting": r.peak_waiting,
                "peak_running": r.peak_running,
            });
            if cluster.steps.is_some() {
                replica["preemptions"] = json!(r.preemptions);
            }
            replica
        })
        .collect();
    let total = sim.total();
    let mut doc = json!({
        "cluster": cli_config(cluster, fits, args),
        "token_hit_rate": total.token_hit_rate(),
        "row_hit_rate": total.row_hit_rate(),
        "imbalance": sim.imbalance(),
        "replicas": replicas,
        "samples": sim.samples,
    });
    if cluster.steps.is_some() {
        doc["preemptions"] = json!(total.preemptions);
    }
    crate::io::exports::write_file(&dir.join(SIMULATION_JSON), &doc.to_string())?;
    crate::io::exports::write_ready_marker(dir, &summary)?;
    Ok((sim, summary.report))
}

/// The simulated requests aggregated as they come (in the order they ended, ties in the order
/// they started), each one's record line written to `out` when given.
fn aggregate_ended(
    from: Receiver<Vec<(usize, SimRequest)>>,
    trace: &Trace,
    mut out: Option<Box<dyn Write + Send>>,
    records_path: &Path,
) -> Result<Aggregate> {
    let mut aggregate = Aggregate::expecting(trace.len());
    for batch in from {
        for (_, r) in batch {
            // The aggregate takes a request's evenly spaced chunks as one gap; its line lists them
            // (and the row's session and line, which the metrics do not read).
            let chunks = r.chunks();
            let mut rec = if out.is_some() { r.record_without_chunks(trace) } else { r.record_for_metrics() };
            let metrics = aggregate.add_chunks(&rec, chunks, true, &[]);
            if let Some(out) = out.as_mut() {
                rec.chunk_ns = chunks.to_vec();
                out.write_all(&record_line(&rec, metrics.as_ref(), 0))
                    .with_context(|| format!("cannot write {}", records_path.display()))?;
            }
        }
    }
    if let Some(mut out) = out {
        out.flush().with_context(|| format!("cannot write {}", records_path.display()))?;
    }
    Ok(aggregate)
}

/// The sweep's table: CSV, console text and JSON.
fn sweep_summary(rows: &[Row], args: &Args) -> (String, String, String) {
    let header = [
        "run",
        "replicas",
        "kv_blocks",
        "router",
        "policy",
        "requests",
        "token_hit_rate",
        "row_hit_rate",
        "ttft_p50_ms",
        "ttft_p99_ms",
        "latency_p50_ms",
        "latency_p99_ms",
        "imbalance",
        "evictions",
    ];
    let mut csv = header.join(",") + "\n";
    let mut table = format!(
        "{:<36} {:>8} {:>8} {:>8} {:>11} {:>11} {:>9} {:>10}\n",
        "run", "requests", "tok hit", "row hit", "TTFT p50ms", "TTFT p99ms", "imbalance", "evictions"
    );
    let mut json = Vec::new();
    for r in rows {
        let t = r.sim.total();
        let c = &r.cluster;
        let kv = c.kv_blocks.map_or("unbounded".to_owned(), |b| b.to_string());
        csv += &format!(
            "{},{},{},{},{},{},{:.6},{:.6},{:.3},{:.3},{:.3},{:.3},{:.4},{}\n",
            r.name,
            c.replicas,
            kv,
            c.router.name(),
            c.policy.name(),
            t.requests,
            t.token_hit_rate(),
            t.row_hit_rate(),
            r.ttft_ms[0],
            r.ttft_ms[1],
            r.latency_ms[0],
            r.latency_ms[1],
            r.sim.imbalance(),
            t.evictions
        );
        table += &format!(
            "{:<36} {:>8} {:>7.2}% {:>7.2}% {:>11.1} {:>11.1} {:>9.3} {:>10}\n",
            r.name,
            t.requests,
            t.token_hit_rate() * 100.0,
            t.row_hit_rate() * 100.0,
            r.ttft_ms[0],
            r.ttft_ms[1],
            r.sim.imbalance(),
            t.evictions
        );
        let mut row = json!({
            "run": r.name,
            "replicas": c.replicas,
            "kv_blocks": c.kv_blocks,
            "router": c.router.name(),
            "policy": c.policy.name(),
            "requests": t.requests,
            "token_hit_rate": t.token_hit_rate(),
            "row_hit_rate": t.row_hit_rate(),
            "ttft_p50_ms": r.ttft_ms[0],
            "ttft_p99_ms": r.ttft_ms[1],
            "latency_p50_ms": r.latency_ms[0],
            "latency_p99_ms": r.latency_ms[1],
            "imbalance": r.sim.imbalance(),
            "evictions": t.evictions,
        });
        if let Some(c) = &r.calibration {
            row["calibration"] = calibration_json(c, args);
        }
        if let Some(c) = &r.step_calibration {
            row["step_calibration"] = step_calibration_json(c, args);
        }
        if c.steps.is_some() {
            row["preemptions"] = json!(t.preemptions);
        }
        json.push(row);
    }
    let json = serde_json::to_string_pretty(&json).unwrap_or_default();
    (csv, table.trim_end().to_owned(), json)
}
