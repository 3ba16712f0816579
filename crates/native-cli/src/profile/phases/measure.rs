//! Measure: the records stage and the dispatcher on their own threads, the duration timer.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, mpsc};
use std::time::Instant;

use aiperf_core::replay::dispatch::Dispatch;
use aiperf_core::replay::schedule::Starts;
use aiperf_core::replay::sharding::{ShardRun, Sharding};
use anyhow::{Context, Result};

use super::model::Inputs;
use super::time_zero::TimeZero;
use crate::io::exports;
use crate::profile::clock::unix_now_ns;
use crate::profile::control::Control;
use crate::profile::dispatcher::{Dispatched, Dispatcher};
use crate::profile::plan::ReplayPlan;
use crate::profile::plan::network::NetworkLatency;
use crate::profile::records::{Collected, RecordsStage};
use crate::profile::request::{self, Finished, Shared};
use crate::profile::transport::{Clock, Transport};
use crate::profile::{network, progress, scraper};

/// What measuring leaves for the drain and the export.
pub(super) struct Measured {
    /// The records stage's answer, once every request has ended.
    pub(super) collected: mpsc::Receiver<Result<Collected>>,
    /// What the dispatcher sent, or why it stopped.
    pub(super) sent: Result<Dispatched>,
    pub(super) start_unix_ns: u128,
    pub(super) cpu_before: Option<f64>,
    pub(super) sharding: Option<Sharding>,
    /// Whether the trace's timestamps are replayed.
    pub(super) fixed_schedule: bool,
    /// The network round-trip probes of `--network-latency-automatic`, running.
    pub(super) prober: Option<network::Prober>,
}

/// Measure: the records stage and the dispatcher on their own threads, the duration timer; returns
/// once the dispatcher has sent everything or was stopped.
pub(super) fn measure<T: Transport + Clone>(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    inputs: &Inputs,
    transport: T,
    control: &Control,
    zero: TimeZero,
    scraper: Option<&scraper::Scraper>,
) -> Result<Measured> {
    let cpu_before = process_cpu_seconds();
    let clock = Clock { base: zero.base };
    let coord = plan.coordination;
    let start_unix_ns = coord
        .start_at_unix_ns
        .map_or_else(|| unix_now_ns() + zero.base.saturating_duration_since(Instant::now()).as_nanos(), u128::from);
    if let Some(s) = scraper {
        s.periodic();
    }
    let prober = match plan.server.network {
        NetworkLatency::Probe { interval } => {
            Some(network::Prober::start(network::targets(&plan.target.urls, &plan.shown_urls()), interval))
        }
        NetworkLatency::Off | NetworkLatency::Mean(_) => None,
    };
    let sharding = (!coord.shard.is_whole() || coord.start_at_unix_ns.is_some()).then(|| {
        Sharding::Shard(ShardRun {
            index: coord.shard.index,
            count: coord.shard.count,
            start_unix_ns: u64::try_from(start_unix_ns).unwrap_or(u64::MAX),
            common_start: coord.start_at_unix_ns.is_some(),
            clock: zero.clock_offset,
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
        prefill_limited: plan.limits.prefill.is_some(),
    });
    let sent_count = Arc::new(AtomicU64::new(0));
    let t0_unix_ns = u64::try_from(start_unix_ns).unwrap_or(u64::MAX);
    let live = scraper.and_then(scraper::Scraper::live);
    let (records, collected) = start_records_stage(plan, inputs, sent_count.clone(), t0_unix_ns, live)?;
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
        )
        .with_cancellation(plan.limits.cancellation)
        .with_concurrency_ramp(plan.limits.ramps.concurrency_ns)
        .with_prefill_limit(plan.limits.prefill, plan.limits.ramps.prefill_ns)
        .with_system_idle_cap(plan.limits.system_idle_cap.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))),
        preparer: zero.preparer,
        shared: shared.clone(),
        handle: rt.handle().clone(),
        completions,
        completions_tx,
        records,
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
    Ok(Measured { collected, sent, start_unix_ns, cpu_before, sharding, fixed_schedule, prober })
}

/// Starts the records stage on its own thread (the records file created, the progress shown);
/// returns where requests' records go and where the stage answers when they have all ended.
/// `t0_unix_ns` is time zero on the wall clock (the records' AIPerf times count from it).
fn start_records_stage(
    plan: &ReplayPlan,
    inputs: &Inputs,
    sent_count: Arc<AtomicU64>,
    t0_unix_ns: u64,
    server: Option<scraper::Live>,
) -> Result<(mpsc::Sender<Finished>, mpsc::Receiver<Result<Collected>>)> {
    let progress = progress::Progress::new(
        plan.exports.progress,
        progress::Bounds { requests: inputs.schedule.request_count(), duration: plan.limits.duration },
        sent_count,
        server,
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
            if plan.exports.records {
                exports::records_file(&plan.exports.artifact_dir, &plan.exports.names)?
            } else {
                exports::no_records_file(&plan.exports.artifact_dir, &plan.exports.names)?
            }
        },
        progress,
        slicer: plan
            .exports
            .slice
            .map(|d| aiperf_core::results::timeslices::Slicer::new(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
            .transpose()?,
        t0_unix_ns,
        http_trace: plan.exports.http_trace,
        raw_out: if plan.exports.raw {
            Some(exports::raw_file(&plan.exports.artifact_dir, &plan.exports.names)?)
        } else {
            exports::no_raw_file(&plan.exports.artifact_dir, &plan.exports.names)?;
            None
        },
    };
    std::thread::Builder::new()
        .name("records".into())
        .spawn(move || {
            let _ = collected_tx.send(stage.run(records_rx));
        })
        .context("cannot start the records thread")?;
    Ok((records_tx, collected_rx))
}

/// CPU time (user + system) of this process so far.
pub(super) fn process_cpu_seconds() -> Option<f64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(t.tv_sec as f64 + t.tv_nsec as f64 / 1e9)
}
