//! One combination simulated into its run folder: the simulation hands ended requests to a thread
//! that aggregates them and writes their records.

use super::args::Args;
use super::calibration::{calibration_json, step_calibration_json};
use aiperf_core::replay::schedule::Schedule;
use aiperf_core::results::aggregate::{Aggregate, Report};
use aiperf_core::results::line::{RECORDS_FILE, record_line};
use aiperf_core::results::summary::{RunSummary, shell_command};
use aiperf_core::simulate::calibrate::Calibration;
use aiperf_core::simulate::calibrate::steps::StepCalibration;
use aiperf_core::simulate::{BlockIds, Cluster, Observer, SimRequest, Simulation, simulate_numbered};
use aiperf_core::trace::Row;
use anyhow::{Context, Result};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

/// Each combination's simulation details in its run folder.
pub(super) const SIMULATION_JSON: &str = "simulation.json";

/// The fits a simulation was timed by.
#[derive(Clone, Copy)]
pub(super) struct Fits<'a> {
    pub(super) calibration: Option<&'a Calibration>,
    pub(super) steps: Option<&'a StepCalibration>,
}

pub(super) fn cli_config(c: &Cluster, fits: Fits<'_>, args: &Args) -> serde_json::Value {
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

/// A batch of ended requests, and the earliest arrival of a request in a later batch.
pub(super) type Batch = (Vec<(usize, SimRequest)>, u64);

/// The simulation's ended requests on their way to the aggregating thread, a batch at a time.
pub(super) struct Handover {
    pub(super) to: Option<SyncSender<Batch>>,
    pub(super) batch: Vec<(usize, SimRequest)>,
    /// The earliest arrival of a request handed over from now on, as last told.
    pub(super) arrivals_from: u64,
}

impl Observer for Handover {
    fn ended(&mut self, i: usize, r: &SimRequest) {
        self.batch.push((i, *r));
        if self.batch.len() == HANDOVER_BATCH {
            self.send();
        }
    }

    fn arrivals_from(&mut self, ns: u64) {
        self.arrivals_from = ns;
    }

    /// Every request goes to the aggregate as it ends: the simulation keeps none (a sweep holds
    /// none of its combinations' requests).
    fn keep_requests(&self) -> bool {
        false
    }
}

impl Handover {
    /// Sends the batch; once the aggregating thread has stopped (on an error, which its join
    /// gives), nothing more is sent.
    fn send(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(HANDOVER_BATCH));
        if self.to.as_ref().is_some_and(|to| to.send((batch, self.arrivals_from)).is_err()) {
            self.to = None;
        }
    }
}

/// What every combination simulates: the trace's rows, its schedule and its blocks numbered (the
/// hash ids' values are let go once numbered).
pub(super) struct Held {
    pub(super) rows: Vec<Row>,
    pub(super) schedule: Arc<Schedule>,
    pub(super) ids: BlockIds,
}

/// The combination's input: what is [`Held`] for every combination, let go once the last
/// combination's simulation has run (freed beside its report, which then takes the memory).
pub(super) struct Input<'a> {
    pub(super) held: &'a mut Option<Held>,
    pub(super) last: bool,
}

/// One combination simulated into its folder: records and summaries like a real run's, and
/// `simulation.json`. The requests are aggregated, and their records written, on a thread of
/// their own as they end, while the simulation goes on.
pub(super) fn simulate_run(
    dir: &Path,
    Input { held, last }: Input<'_>,
    cluster: &Cluster,
    fits: Fits<'_>,
    args: &Args,
) -> Result<(Simulation, Report)> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let out = (!args.no_records)
        .then(|| crate::io::exports::records_file(dir, &crate::io::exports::ExportNames::default()))
        .transpose()?;
    let records_path = dir.join(RECORDS_FILE);
    let Held { rows, schedule, ids: numbered } =
        held.as_ref().context("the trace was let go after the combinations before")?;
    let (to, from) = std::sync::mpsc::sync_channel(HANDOVER_BATCHES);
    let (sim, aggregate) = std::thread::scope(|s| -> Result<_> {
        let aggregating = std::thread::Builder::new()
            .spawn_scoped(s, || aggregate_ended(from, rows, out, &records_path))
            .context("cannot start the thread aggregating the simulated requests")?;
        let mut handover = Handover { to: Some(to), batch: Vec::with_capacity(HANDOVER_BATCH), arrivals_from: 0 };
        let sim = simulate_numbered(rows, Arc::clone(schedule), numbered, cluster, &mut handover);
        handover.send();
        drop(handover);
        Ok((sim, aggregating.join()))
    })?;
    // After the last simulation the trace, its schedule and its numbered blocks are freed on a
    // thread of their own while the report is made.
    let freeing = held.take_if(|_| last).map(|h| std::thread::Builder::new().spawn(move || drop(h)));
    let sim = sim.context("simulate")?;
    let aggregate = aggregate.map_err(|_| anyhow::anyhow!("the aggregation of the simulated requests failed"))??;
    let end = aggregate.last_end_ns.unwrap_or(0);
    let report = aggregate.into_report_over_on(false, None, &crate::threads::Threads);
    if let Some(Ok(freeing)) = freeing {
        let _ = freeing.join();
    }
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
/// they started), each one's record line written to `out` when given; the curves of the
/// timeline that can be are swept as the batches come ([`aiperf_core::results::timeline::Timeline::settle`]).
pub(super) fn aggregate_ended(
    from: Receiver<Batch>,
    rows: &[Row],
    mut out: Option<Box<dyn Write + Send>>,
    records_path: &Path,
) -> Result<Aggregate> {
    let mut aggregate = Aggregate::expecting(rows.len());
    for (batch, arrivals_from) in from {
        for (_, r) in batch {
            // The aggregate takes a request's evenly spaced chunks as one gap; its line lists them
            // (and the row's session and line, which the metrics do not read).
            let chunks = r.chunks();
            let mut rec = if out.is_some() { r.record_without_chunks(rows) } else { r.record_for_metrics() };
            let metrics = aggregate.add_chunks(&rec, chunks, true, &[]);
            if let Some(out) = out.as_mut() {
                rec.chunk_ns = chunks.to_vec();
                out.write_all(&record_line(&rec, metrics.as_ref(), 0))
                    .with_context(|| format!("cannot write {}", records_path.display()))?;
            }
        }
        aggregate.timeline.settle(arrivals_from);
    }
    aggregate.timeline.settle(u64::MAX);
    if let Some(mut out) = out {
        out.flush().with_context(|| format!("cannot write {}", records_path.display()))?;
    }
    Ok(aggregate)
}
