//! The wall clock of a run split across processes: the target's clock offset estimated from its
//! `Date` headers, the common start (`--start-at`) checked and waited for.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiperf_core::replay::sharding::{ClockOffset, DateProbe, estimate_offset};
use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::transport::Transport;

/// Date probes spread over a second narrow the offset to about 100 ms plus the round trip.
const CLOCK_PROBES: u32 = 10;
const CLOCK_PROBE_GAP: Duration = Duration::from_millis(100);
/// Probing stops this long before a common start.
const CLOCK_PROBE_MARGIN: Duration = Duration::from_millis(300);

/// Estimates the target's clock offset from its `Date` headers, probing every 100 ms while
/// time allows before `start_at`.
pub async fn probe_clock<T: Transport>(transport: &T, start_at_unix_ns: Option<u64>) -> Option<ClockOffset> {
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
pub fn check_start_ahead(at_unix_ns: u64, started: Instant) -> Result<()> {
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

/// How often waiting for a common start looks at the clock and the stop token.
const WAIT_POLL: Duration = Duration::from_millis(100);

/// Time zero of a run lies this far after the measuring threads start.
pub const ZERO_LEAD: Duration = Duration::from_millis(20);

/// Sleeps until [`ZERO_LEAD`] before the wall clock reads `at_unix_ns` (or the run is stopped)
/// and returns the instant that corresponds to `at_unix_ns`.
pub fn wait_until(at_unix_ns: u64, stop: &CancellationToken) -> Instant {
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
        std::thread::sleep((left - ZERO_LEAD).min(WAIT_POLL));
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

pub fn unix_now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}
