//! Before time zero: the first bodies built, the connections of the first burst opened, the
//! target's clock probed, the reference scrape, then time zero itself.

use std::sync::Arc;
use std::time::Instant;

use aiperf_core::replay::schedule::Schedule;
use aiperf_core::replay::sharding::ClockOffset;
use anyhow::{Context, Result};

use super::model::Inputs;
use crate::exit::BadInput;
use crate::profile::clock::{ZERO_LEAD, check_start_ahead, probe_clock, wait_until};
use crate::profile::control::Control;
use crate::profile::plan::ReplayPlan;
use crate::profile::preparer::{BodySource, Preparer};
use crate::profile::scraper;
use crate::profile::transport::Transport;

/// What the run holds at time zero.
pub(super) struct TimeZero {
    /// Bodies built ahead of their deadlines.
    pub(super) preparer: Preparer,
    /// The instant of time zero.
    pub(super) base: Instant,
    /// The target's clock against this machine's (sharded runs).
    pub(super) clock_offset: Option<ClockOffset>,
}

/// Before time zero: the first bodies built, connections open for the first burst, the target's
/// clock probed (shards), the reference scrape of the server's counters, then time zero itself.
#[allow(clippy::too_many_arguments)]
pub(super) fn before_time_zero<T: Transport + Clone>(
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

/// Most connections opened before time zero.
const MAX_WARM_CONNECTIONS: usize = 256;
/// Starts this close together count as one burst.
const BURST_WINDOW_US: u64 = 10_000;
/// How many starts are looked at to size the first bursts.
const BURST_SCAN: usize = 10_000;

/// Connections worth opening before time zero: the largest burst among the first starts (runs
/// starting within 10 ms of each other), or the concurrency for runs without timestamps, capped
/// by the concurrency and [`MAX_WARM_CONNECTIONS`].
pub(in crate::profile) fn connections_needed(schedule: &Schedule, concurrency: Option<usize>) -> usize {
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
