//! The phases of one replay, in order: warm-up → before time zero (first bodies, connections,
//! the target's clock, the reference scrape) → measure (the records stage and the dispatcher on
//! their own threads) → drain (the grace period) → export. [`replay`] reads as that list.
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use aiperf_core::replay::cache_bust::{CacheBust, Phase, Target};
use aiperf_core::replay::schedule::Starts;
use anyhow::Result;

use super::clock::unix_now_ns;
use super::control::Control;
use super::plan::ReplayPlan;
use super::preparer::{BodySource, Busting};
use super::records::Collected;
use super::scraper;
use super::transport::Transport;
use crate::io::exports;

mod export;
mod measure;
mod model;
mod time_zero;
mod warmup;

use export::{Ran, export};
use measure::measure;
pub use model::{Inputs, RunOutcome};
use time_zero::before_time_zero;
#[cfg(test)]
pub(super) use time_zero::connections_needed;
use warmup::send_warmup;

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
