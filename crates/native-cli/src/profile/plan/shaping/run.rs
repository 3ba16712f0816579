//! The run's own load shape: the ramps of rate, concurrency and prefill concurrency, the
//! user-centric rate and its users, the prefill limit, gamma arrivals' smoothness.

use std::time::Duration;

use aiperf_core::replay::schedule::{ArrivalPattern, Shard};
use anyhow::{Result, bail, ensure};

use crate::profile::options::LoadShape;
use crate::profile::plan::limits::{MAX_CONCURRENCY, RATE_RANGE, SMOOTHNESS_RANGE, in_range, seconds};

/// The ramps of the run's load: the concurrency's and the prefill concurrency's (ns), the
/// rate's (µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ramps {
    pub concurrency_ns: Option<u64>,
    pub rate_us: Option<u64>,
    pub prefill_ns: Option<u64>,
}

/// A ramp's duration, checked (seconds above 0).
pub(super) fn ramp(v: Option<f64>, name: &str) -> Result<Option<Duration>> {
    v.map(|d| seconds(d, name, false)).transpose()
}

pub(super) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `--concurrency-ramp-duration` (needs `--concurrency`) and `--request-rate-ramp-duration`
/// (needs `--request-rate`), as AIPerf requires them.
pub fn ramps(a: &LoadShape, rate: Option<f64>, concurrency: Option<usize>) -> Result<Ramps> {
    let c = ramp(a.concurrency_ramp_duration, "--concurrency-ramp-duration")?;
    let r = ramp(a.request_rate_ramp_duration, "--request-rate-ramp-duration")?;
    if c.is_some() && concurrency.is_none() {
        bail!(
            "--concurrency-ramp-duration {:?} needs --concurrency (the ceiling it ramps to): give --concurrency, or drop the ramp",
            a.concurrency_ramp_duration.unwrap_or_default()
        );
    }
    if r.is_some() && rate.is_none() {
        bail!(
            "--request-rate-ramp-duration {:?} can only ramp a rate: give --request-rate, or drop the ramp",
            a.request_rate_ramp_duration.unwrap_or_default()
        );
    }
    // Without a prefill limit AIPerf ramps nothing (its `ramping` template gives the ramp alone).
    let p = ramp(a.prefill_concurrency_ramp_duration, "--prefill-concurrency-ramp-duration")?
        .filter(|_| a.prefill_concurrency.is_some());
    Ok(Ramps {
        concurrency_ns: c.map(ns),
        rate_us: r.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
        prefill_ns: p.map(ns),
    })
}

/// A user-centric rate and its users (`rate_flag`, `users_flag`): both or neither, each in its
/// range.
pub(super) fn rate_and_users(
    rate: Option<f64>,
    users: Option<u32>,
    rate_flag: &str,
    users_flag: &str,
) -> Result<Option<(f64, u32)>> {
    let (r, n) = match (rate, users) {
        (None, None) => return Ok(None),
        (Some(r), Some(n)) => (r, n),
        (Some(r), None) => bail!("{rate_flag} {r:?} needs {users_flag} (the users who share the rate)"),
        (None, Some(n)) => bail!("{users_flag} {n} needs {rate_flag} (the rate the users share)"),
    };
    ensure!(
        r.is_finite() && r >= RATE_RANGE.0 && r <= RATE_RANGE.1,
        "{rate_flag} {r:?}: accepted is {} to {} requests per second",
        RATE_RANGE.0,
        RATE_RANGE.1
    );
    Ok(Some((r, in_range(n, users_flag, 1, MAX_CONCURRENCY as u32)?)))
}

/// `--user-centric-rate` with `--num-users` (AIPerf's user-centric timing), checked: both or
/// neither, instead of a request rate, a rate series or the trace's timestamps; (rate, users).
pub fn users(a: &LoadShape, request_rate_given: bool, fixed_schedule: bool) -> Result<Option<(f64, u32)>> {
    let Some((r, n)) = rate_and_users(a.user_centric_rate, a.num_users, "--user-centric-rate", "--num-users")? else {
        return Ok(None);
    };
    ensure!(!request_rate_given, "--user-centric-rate {r:?} is the run's rate: drop --request-rate");
    ensure!(a.request_rate_series.is_none(), "--user-centric-rate {r:?} is the run's rate: drop --request-rate-series");
    ensure!(
        a.request_rate_ramp_duration.is_none(),
        "--request-rate-ramp-duration does not ramp --user-centric-rate: drop the ramp"
    );
    ensure!(!fixed_schedule, "--user-centric-rate {r:?} times the turns itself: drop --fixed-schedule");
    Ok(Some((r, n)))
}

/// `--prefill-concurrency`, checked as AIPerf checks it (at least 1, at most `--concurrency`,
/// only on streamed answers, whose first token ends the prefill), this shard's part of it.
pub fn prefill(a: &LoadShape, concurrency: Option<usize>, streaming: bool, shard: Shard) -> Result<Option<usize>> {
    checked_prefill(a.prefill_concurrency, "--prefill-concurrency", concurrency, streaming, shard)
}

pub(super) fn checked_prefill(
    p: Option<usize>,
    name: &str,
    concurrency: Option<usize>,
    streaming: bool,
    shard: Shard,
) -> Result<Option<usize>> {
    let Some(p) = p else { return Ok(None) };
    let p = in_range(p, name, 1, MAX_CONCURRENCY)?;
    ensure!(
        streaming,
        "{name} {p} needs --streaming: a request's prefill ends with its first streamed token (AIPerf requires it too)"
    );
    if let Some(c) = concurrency {
        ensure!(p <= c, "{name} {p}: accepted is at most the concurrency ({c})");
    }
    ensure!(
        p >= shard.count as usize,
        "{name} {p} with --shard {shard}: the limit is divided across the {} shards, so it must be at least {}",
        shard.count,
        shard.count
    );
    Ok(Some(shard.part_of(p as u64) as usize))
}

/// `--arrival-smoothness` (`--vllm-burstiness`): the shape of gamma gaps, for
/// `--arrival-pattern gamma` only, as AIPerf requires.
pub fn smoothness(a: &LoadShape, pattern: ArrivalPattern) -> Result<Option<f64>> {
    let Some(k) = a.arrival_smoothness else { return Ok(None) };
    ensure!(
        k.is_finite() && k >= SMOOTHNESS_RANGE.0 && k <= SMOOTHNESS_RANGE.1,
        "--arrival-smoothness {k:?}: accepted is {} to {} (1 is Poisson)",
        SMOOTHNESS_RANGE.0,
        SMOOTHNESS_RANGE.1
    );
    ensure!(
        pattern == ArrivalPattern::Gamma,
        "--arrival-smoothness {k:?} shapes gamma arrivals: give --arrival-pattern gamma, or drop it"
    );
    Ok(Some(k))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod ramp_tests {
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn ramps_need_what_they_ramp_and_the_warmup_takes_the_runs() {
        let p =
            plan(&["--concurrency", "4", "--concurrency-ramp-duration", "2", "--warmup-request-count", "3"]).unwrap();
        assert_eq!(p.limits.ramps.concurrency_ns, Some(2_000_000_000));
        assert_eq!(p.limits.warmup.unwrap().shape.concurrency_ramp_ns, Some(2_000_000_000));
        let p = plan(&[
            "--request-rate",
            "4",
            "--request-rate-ramp-duration",
            "2",
            "--warmup-request-count",
            "3",
            "--warmup-request-rate-ramp-duration",
            "0.5",
        ])
        .unwrap();
        assert_eq!(p.limits.ramps.rate_us, Some(2_000_000));
        assert_eq!(p.limits.warmup.unwrap().shape.rate_ramp_us, Some(500_000));
        for (args, says) in [
            (
                &["--request-rate", "4", "--concurrency-ramp-duration", "2"][..],
                "--concurrency-ramp-duration 2.0 needs --concurrency",
            ),
            (
                &["--concurrency", "4", "--request-rate-ramp-duration", "2"],
                "--request-rate-ramp-duration 2.0 can only ramp a rate",
            ),
            (&["--concurrency", "4", "--concurrency-ramp-duration", "0"], "--concurrency-ramp-duration 0.0"),
            (
                &["--concurrency", "4", "--warmup-request-count", "2", "--warmup-request-rate-ramp-duration", "1"],
                "--warmup-request-rate-ramp-duration 1.0 can only ramp a warm-up rate",
            ),
        ] {
            let e = format!("{:#}", plan(args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod gamma_tests {
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn smoothness_shapes_gamma_arrivals_only() {
        let p = plan(&["--request-rate", "5", "--arrival-pattern", "gamma", "--vllm-burstiness", "0.5"]).unwrap();
        assert_eq!(p.limits.smoothness, Some(0.5));
        assert_eq!(p.cli_config()["arrival_pattern"], "gamma");
        for (args, says) in [
            (
                &["--request-rate", "5", "--arrival-smoothness", "2"][..],
                "--arrival-smoothness 2.0 shapes gamma arrivals",
            ),
            (
                &["--request-rate", "5", "--arrival-pattern", "gamma", "--arrival-smoothness", "0"],
                "--arrival-smoothness 0.0: accepted is 0.001 to 1000",
            ),
        ] {
            let e = format!("{:#}", plan(args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod prefill_tests {
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn the_prefill_limit_is_checked_as_aiperf_checks_it() {
        let p = plan(&["--streaming", "--concurrency", "4", "--prefill-concurrency", "2"]).unwrap();
        assert_eq!((p.limits.prefill, p.limits.ramps.prefill_ns), (Some(2), None));
        let p =
            plan(&["--streaming", "--prefill-concurrency", "3", "--prefill-concurrency-ramp-duration", "1.5"]).unwrap();
        assert_eq!((p.limits.prefill, p.limits.ramps.prefill_ns), (Some(3), Some(1_500_000_000)));
        // The warm-up takes the run's limit and ramp unless it has its own.
        let w = |args: &[&str]| plan(args).unwrap().limits.warmup.unwrap().shape;
        let run = ["--streaming", "--concurrency", "4", "--warmup-request-count", "2", "--prefill-concurrency", "2"];
        assert_eq!((w(&run).prefill, w(&run).prefill_ramp_ns), (Some(2), None));
        let own = [&run[..], &["--warmup-prefill-concurrency", "1", "--warmup-prefill-concurrency-ramp-duration", "1"]]
            .concat();
        assert_eq!((w(&own).prefill, w(&own).prefill_ramp_ns), (Some(1), Some(1_000_000_000)));
        let p = plan(&["--prefill-concurrency-ramp-duration", "1.5"]).unwrap();
        assert_eq!((p.limits.prefill, p.limits.ramps.prefill_ns), (None, None));
        let p = plan(&["--streaming", "--prefill-concurrency", "3", "--shard", "0/2"]).unwrap();
        assert_eq!(p.limits.prefill, Some(2));
        for (args, says) in [
            (&["--prefill-concurrency", "1"][..], "--prefill-concurrency 1 needs --streaming"),
            (
                &["--streaming", "--concurrency", "2", "--prefill-concurrency", "3"],
                "accepted is at most the concurrency (2)",
            ),
            (
                &[
                    "--streaming",
                    "--concurrency",
                    "4",
                    "--warmup-request-count",
                    "2",
                    "--warmup-concurrency",
                    "2",
                    "--warmup-prefill-concurrency",
                    "3",
                ],
                "--warmup-prefill-concurrency 3: accepted is at most the concurrency (2)",
            ),
            (&["--streaming", "--prefill-concurrency", "0"], "--prefill-concurrency 0: accepted is 1 to"),
            (&["--streaming", "--prefill-concurrency-ramp-duration", "0"], "--prefill-concurrency-ramp-duration 0"),
            (&["--streaming", "--prefill-concurrency", "1", "--shard", "0/2"], "must be at least 2"),
        ] {
            let e = format!("{:#}", plan(args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod user_tests {
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn user_centric_rates_take_their_users_and_nothing_else_that_times_arrivals() {
        let p = plan(&["--user-centric-rate", "4", "--num-users", "3"]).unwrap();
        assert_eq!(p.limits.users, Some(3));
        assert_eq!(p.source.arrivals.rate.map(|r| r.0), Some(4.0));
        for (args, says) in [
            (&["--user-centric-rate", "4"][..], "--user-centric-rate 4.0 needs --num-users"),
            (&["--num-users", "4"], "--num-users 4 needs --user-centric-rate"),
            (&["--user-centric-rate", "4", "--num-users", "0"], "--num-users 0: accepted is 1 to"),
            (&["--user-centric-rate", "0", "--num-users", "2"], "--user-centric-rate 0.0: accepted is"),
            (&["--user-centric-rate", "4", "--num-users", "2", "--request-rate", "3"], "drop --request-rate"),
            (&["--user-centric-rate", "4", "--num-users", "2", "--fixed-schedule"], "drop --fixed-schedule"),
        ] {
            let e = format!("{:#}", plan(args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}
