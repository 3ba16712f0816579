//! The phases of one replay, in order: warm-up → before time zero (first bodies, connections,
//! the target's clock, the reference scrape) → measure (the records stage and the dispatcher on
//! their own threads) → drain (the grace period) → export. [`replay`] reads as that list.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use aiperf_core::replay::cache_bust::{CacheBust, Phase, Target};
use aiperf_core::replay::dispatch::{Dispatch, Job, Peek};
use aiperf_core::replay::schedule::{Schedule, Starts};
use aiperf_core::replay::sharding::{ClockOffset, ShardRun, Sharding};
use aiperf_core::results::metrics::Metric;
use aiperf_core::results::network::{ProbeSample, adjusted_metrics};
use aiperf_core::results::summary::{RunSummary, shell_command};
use aiperf_core::trace::Trace;
use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use super::clock::{ZERO_LEAD, check_start_ahead, probe_clock, unix_now_ns, wait_until};
use super::control::Control;
use super::dispatcher::{Dispatched, Dispatcher};
use super::plan::ReplayPlan;
use super::plan::network::NetworkLatency;
use super::plan::shaping::WarmupPlan;
use super::preparer::{BodySource, Busting, Preparer};
use super::prompt::PromptBuilder;
use super::records::{Collected, RecordsStage};
use super::request::{self, Finished, Shared};
use super::transport::{self, Clock, Transport};
use super::{network, progress, scraper};
use crate::exit::{self, BadInput};
use crate::io::exports;

mod export;

use export::export;

/// What a replay reads before it starts.
pub struct Inputs {
    pub trace: Arc<Trace>,
    pub schedule: Arc<Schedule>,
    pub prompts: Arc<PromptBuilder>,
    /// Where the tokenizer came from.
    pub tokenizer: String,
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

/// How often the drain phase looks at the clock and the tokens.
const DRAIN_POLL: Duration = Duration::from_millis(10);

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
    announce(plan, &inputs, ready_ms);
    let benchmark_id = exports::benchmark_id(unix_now_ns());
    let busting = |phase, warmup_draws| {
        (plan.target.body.cache_bust != Target::None).then(|| {
            let bust = CacheBust { target: plan.target.body.cache_bust, benchmark_id: benchmark_id.clone() };
            let fixed = matches!(inputs.schedule.starts, Starts::Listed(_));
            Busting::new(bust, phase, warmup_draws, fixed, &plan.target.body, &inputs.prompts)
        })
    };
    let warmup = plan.limits.warmup.as_ref().map(|w| {
        let source = BodySource { busting: busting(Phase::Warmup, 0), ..body_source(plan, &inputs) };
        rt.block_on(send_warmup(&transport, &inputs, &source, plan, w, &control.stop))
    });
    let source =
        BodySource { busting: busting(Phase::Profiling, warmup.map_or(0, |w| w.draws)), ..body_source(plan, &inputs) };
    // The run takes the sessions after the warm-up's, as AIPerf's profiling phase continues the
    // sampler its warm-up drew from.
    let inputs = match warmup {
        Some(w) if matches!(inputs.schedule.starts, Starts::Generated(_)) => {
            Inputs { schedule: Arc::new(inputs.schedule.as_ref().clone().after_warmup(w.draws)), ..inputs }
        }
        _ => inputs,
    };
    let zero = before_time_zero(rt, plan, &inputs, source, &transport, control, started, scraper.as_ref())?;
    let measured = measure(rt, plan, &inputs, transport, control, zero, scraper.as_ref())?;
    let collected = drain(control, plan.limits.grace, &measured.collected)?;
    let warmup = warmup.map(|w| (w.sent, w.failed));
    export(plan, inputs, control, Ran { ready_ms, warmup, measured, benchmark_id }, collected, scraper)
}

/// Says what is replayed to where, and how long getting ready took.
fn announce(plan: &ReplayPlan, inputs: &Inputs, ready_ms: f64) {
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
}

/// Where request bodies come from: the plan's template over the inputs' trace and prompts
/// (without `--cache-bust` markers, which each phase sets).
fn body_source(plan: &ReplayPlan, inputs: &Inputs) -> BodySource {
    BodySource {
        template: plan.target.body.clone(),
        prompts: inputs.prompts.clone(),
        trace: inputs.trace.clone(),
        busting: None,
    }
}

/// What the run holds at time zero.
struct TimeZero {
    /// Bodies built ahead of their deadlines.
    preparer: Preparer,
    /// The instant of time zero.
    base: Instant,
    /// The target's clock against this machine's (sharded runs).
    clock_offset: Option<ClockOffset>,
}

/// Before time zero: the first bodies built, connections open for the first burst, the target's
/// clock probed (shards), the reference scrape of the server's counters, then time zero itself.
#[allow(clippy::too_many_arguments)]
fn before_time_zero<T: Transport + Clone>(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    inputs: &Inputs,
    source: BodySource,
    transport: &T,
    control: &Control,
    started: Instant,
    scraper: Option<&scraper::Scraper>,
) -> Result<TimeZero> {
    let preparer = Preparer::start(Arc::new(source), inputs.schedule.clone())?;
    open_connections(rt, plan, inputs, transport, control)?;
    let clock_offset = clock_offset(rt, plan, transport, control);
    if let Some(s) = scraper {
        s.scrape(true);
    }
    // Time zero lies ZERO_LEAD ahead of the moment the measuring threads start (or of the common
    // start), so that the dispatcher is running by then and hands the first burst off early, as
    // it does every later one; the dispatcher sends nothing before it.
    let base = match plan.coordination.start_at_unix_ns {
        Some(at) => {
            check_start_ahead(at, started).context(BadInput)?;
            wait_until(at, &control.stop)
        }
        None => Instant::now() + ZERO_LEAD,
    };
    Ok(TimeZero { preparer, base, clock_offset })
}

/// Opens the connections the first burst needs, spread over the URLs like the sessions (at least
/// one each); fails when no URL took one, unless `--go-on-unreachable`.
fn open_connections<T: Transport + Clone>(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    inputs: &Inputs,
    transport: &T,
    control: &Control,
) -> Result<()> {
    let urls = plan.target.urls.len().max(1);
    let connections = match connections_needed(&inputs.schedule, plan.limits.concurrency) {
        0 => 0,
        // No connection is kept for a request: one per URL only finds out whether it answers.
        _ if !plan.target.reuse_connections || plan.target.sticky => urls,
        n => n.div_ceil(urls) * urls,
    };
    if connections == 0 || control.stop.is_cancelled() {
        return Ok(());
    }
    let t0 = Instant::now();
    let Some(per_url) = rt.block_on(transport.warm(connections)) else { return Ok(()) };
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
        say!("warning: no connection could be opened to {} before time zero: its sessions will fail", dead.join(", "));
    }
    Ok(())
}

/// Shards and common starts: the target's clock against this machine's, reported, with a
/// warning when they disagree beyond doubt.
fn clock_offset<T: Transport>(
    rt: &tokio::runtime::Runtime,
    plan: &ReplayPlan,
    transport: &T,
    control: &Control,
) -> Option<ClockOffset> {
    let coord = plan.coordination;
    if !coord.probe_clock() || control.stop.is_cancelled() {
        return None;
    }
    let offset = rt.block_on(probe_clock(transport, coord.start_at_unix_ns));
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
}

/// What measuring leaves for the drain and the export.
struct Measured {
    /// The records stage's answer, once every request has ended.
    collected: mpsc::Receiver<Result<Collected>>,
    /// What the dispatcher sent, or why it stopped.
    sent: Result<Dispatched>,
    start_unix_ns: u128,
    cpu_before: Option<f64>,
    sharding: Option<Sharding>,
    /// Whether the trace's timestamps are replayed.
    fixed_schedule: bool,
    /// The network round-trip probes of `--network-latency-automatic`, running.
    prober: Option<network::Prober>,
}

/// Measure: the records stage and the dispatcher on their own threads, the duration timer; returns
/// once the dispatcher has sent everything or was stopped.
fn measure<T: Transport + Clone>(
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

/// What the phases before the export found.
struct Ran {
    ready_ms: f64,
    /// Warm-up requests (sent, failed).
    warmup: Option<(u64, u64)>,
    measured: Measured,
    /// The run's id (AIPerf's `benchmark_id`), in its `--cache-bust` markers too.
    benchmark_id: String,
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
pub(super) fn connections_needed(schedule: &Schedule, concurrency: Option<usize>) -> usize {
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

/// The warm-up phase ([`aiperf_core::replay::warmup`]): its dispatcher paced on a clock of its
/// own, each request sent as it is due (never measured, never cancelled on purpose); then the
/// requests in flight are waited for, at most `--warmup-grace-period` after the warm-up's
/// duration when one is given. A later turn of a session carries the session's history as the
/// run's do. Returns what it sent; requests still in flight at the
/// end of the grace period are abandoned and count as failed.
async fn send_warmup<T: Transport + Clone>(
    transport: &T,
    inputs: &Inputs,
    source: &BodySource,
    plan: &ReplayPlan,
    warmup: &WarmupPlan,
    stop: &CancellationToken,
) -> WarmedUp {
    let clock = Clock::start();
    let mut dispatch = warmup.shape.dispatch(&inputs.schedule);
    let (mut sent, mut errors) = (0u64, 0u64);
    let mut sessions = WarmupSessions::default();
    let mut in_flight = tokio::task::JoinSet::new();
    // First tokens free prefill slots (`--warmup-prefill-concurrency`).
    let (first_tx, mut first_rx) = tokio::sync::mpsc::unbounded_channel();
    let run = request::Ids::new(false).run;
    let urls = (plan.target.urls.len() as u64).max(1);
    loop {
        if stop.is_cancelled() {
            dispatch.stop();
        }
        let now = clock.now_ns();
        let due = match dispatch.peek(now) {
            Peek::Finished => break,
            Peek::AwaitCompletion => None,
            Peek::Due { deadline_ns, asap } => Some(if asap { now } else { deadline_ns }),
        };
        if let Some(at) = due.filter(|&at| at > now) {
            let wake = tokio::time::sleep(clock.until(at).min(WARMUP_POLL));
            tokio::select! {
                () = wake => {}
                Some(r) = in_flight.join_next() => sessions.done(&mut dispatch, &mut errors, r, clock.now_ns()),
                Some(job) = first_rx.recv() => dispatch.first_token(&job),
            }
            continue;
        }
        if due.is_none() {
            let r = tokio::select! {
                r = in_flight.join_next() => r,
                Some(job) = first_rx.recv() => {
                    dispatch.first_token(&job);
                    continue;
                }
                () = tokio::time::sleep(WARMUP_POLL) => continue,
            };
            match r {
                Some(r) => sessions.done(&mut dispatch, &mut errors, r, clock.now_ns()),
                None => break,
            }
            continue;
        }
        let Some(job) = dispatch.take(now) else { continue };
        sent += 1;
        match sessions.body(source, job) {
            Ok(p) => {
                let t = transport.clone();
                let keep_reply = inputs
                    .trace
                    .rows()
                    .get(job.row as usize)
                    .is_some_and(|r| plan.target.body.turn_history.wants_reply(r, job.turn, job.run_turns));
                // A session of several turns is one conversation, on one URL.
                let (correlation_id, url) = if job.run_turns > 1 {
                    (format!("{run}-warmup-session-{}", job.run), job.run % urls)
                } else {
                    (format!("{run}-warmup-{sent}"), (sent - 1) % urls)
                };
                let out = transport::Outgoing {
                    body: p.body,
                    request_id: format!("{run}-warmup-{sent}"),
                    correlation_id,
                    url_index: u32::try_from(url).unwrap_or(0),
                    last_turn: job.turn.saturating_add(1) >= job.run_turns,
                    first_token: if warmup.shape.prefill.is_some() {
                        let tx = first_tx.clone();
                        transport::OnFirstToken::new(move || {
                            let _ = tx.send(job);
                        })
                    } else {
                        transport::OnFirstToken::default()
                    },
                };
                in_flight.spawn(async move {
                    let ex = t.send(out, clock).await;
                    (job, ex.error.is_some(), keep_reply.then_some(ex.text))
                });
            }
            Err(_) => {
                errors += 1;
                for next in dispatch.complete(&job, now) {
                    sessions.previous.insert((next.run, next.turn), (job.row, None));
                }
            }
        }
    }
    let drained = async {
        while let Some(r) = in_flight.join_next().await {
            errors += u64::from(r.map_or(true, |(_, failed, _)| failed));
        }
    };
    match (warmup.grace, warmup.shape.duration_ns) {
        (Some(grace), Some(d)) => {
            let end = clock.until(d).saturating_add(grace);
            if tokio::time::timeout(end, drained).await.is_err() {
                errors += in_flight.len() as u64;
                in_flight.abort_all();
            }
        }
        _ => drained.await,
    }
    WarmedUp { sent, failed: errors, draws: warmup.shape.draws(&dispatch) }
}

/// A warm-up's requests (sent, failed) and the sessions it drew from the run's sampler.
#[derive(Clone, Copy, Debug)]
struct WarmedUp {
    sent: u64,
    failed: u64,
    draws: u64,
}

/// How often the warm-up looks at the stop token while it waits.
const WARMUP_POLL: Duration = Duration::from_millis(20);

/// The warm-up's sessions of several turns: what each queued later turn follows (the previous
/// turn's row and reply), and the conversations so far.
#[derive(Default)]
struct WarmupSessions {
    previous: std::collections::HashMap<(u64, u32), (u32, Option<String>)>,
    histories: std::collections::HashMap<u64, super::body::History>,
}

impl WarmupSessions {
    /// The body of `job`: a later turn after its session's history, else its row alone.
    fn body(&mut self, source: &BodySource, job: Job) -> super::preparer::Body {
        match self.previous.remove(&(job.run, job.turn)) {
            Some((prev_row, reply)) => {
                source.build_later(super::preparer::Later { job, prev_row, reply }, &mut self.histories)
            }
            None => source.build(job.row, job.run, job.session, job.turn),
        }
    }

    /// A warm-up request ended: its slot is free again, and its session's next turn queued.
    fn done(
        &mut self,
        dispatch: &mut Dispatch,
        errors: &mut u64,
        r: Result<(Job, bool, Option<String>), tokio::task::JoinError>,
        now: u64,
    ) {
        match r {
            Ok((job, failed, reply)) => {
                *errors += u64::from(failed);
                let queued = dispatch.complete(&job, now);
                let mut reply = reply;
                for (i, next) in queued.iter().enumerate() {
                    // Several turns follow a turn that starts sub-agents; the last takes the reply.
                    let r = if i + 1 == queued.len() { reply.take() } else { reply.clone() };
                    self.previous.insert((next.run, next.turn), (job.row, r));
                }
            }
            Err(_) => *errors += 1,
        }
    }
}

/// CPU time (user + system) of this process so far.
fn process_cpu_seconds() -> Option<f64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(t.tv_sec as f64 + t.tv_nsec as f64 / 1e9)
}
