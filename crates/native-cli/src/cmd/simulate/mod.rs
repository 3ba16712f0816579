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

mod args;
mod calibration;
mod folder;
mod table;

pub use args::Args;
use calibration::{calibration_text, observe, server_running_max, step_calibration_text};
use folder::{Fits, Held, Input, SIMULATION_JSON, simulate_run};
use table::{Row, SUMMARY_CSV, SUMMARY_JSON, sweep_summary};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aiperf_core::fork::InTurn;
use aiperf_core::results::export::SummaryFormat;
use aiperf_core::results::line::RECORDS_FILE;
use aiperf_core::results::metrics::Metric;
use aiperf_core::simulate::calibrate::calibrate;
use aiperf_core::simulate::calibrate::steps::calibrate_steps;
use aiperf_core::simulate::{
    Cluster, Engine, MAX_REPLICAS, Numbering, Policy, Router, blocks_for_gb, sample_every_ns, trace_schedule,
};
use anyhow::{Context, Result, bail};

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
    // The rows are taken as the parse hands them over, their hash ids numbered as they come.
    let mut numbering = Numbering::new();
    crate::io::trace_format::read_trace_taking(
        &args.file,
        &args.format,
        args.skip_invalid,
        args.max_line_bytes,
        &aiperf_core::formats::ConvertOptions::default(),
        |block| numbering.take(block),
    )?;
    let (trace_rows, mut numbered, uses) =
        numbering.finish().with_context(|| format!("simulate {}", args.file.display()))?;
    // The blocks used once are marked on a thread of their own while the schedule is built.
    let (schedule, marked) = std::thread::scope(|s| {
        let marking = s.spawn(|| numbered.mark_counted(uses, &trace_rows, &InTurn));
        (trace_schedule(&trace_rows), marking.join())
    });
    let schedule = Arc::new(schedule.with_context(|| format!("{}", args.file.display()))?);
    marked.map_err(|_| anyhow::anyhow!("the marking of the blocks used once failed"))?;
    let sample_every_ns = sample_every_ns(&schedule, args.samples);
    let mut held = Some(Held { rows: trace_rows, schedule, ids: numbered });
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
        let input = Input { held: &mut held, last: k == last };
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
