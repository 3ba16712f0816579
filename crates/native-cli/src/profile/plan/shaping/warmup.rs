//! The warm-up phase as AIPerf's: what ends it, its rate or concurrency (the run's unless given),
//! its ramps and prefill limit, a user-centric warm-up.

use std::time::Duration;

use aiperf_core::replay::schedule::{ArrivalPattern, Shard};
use aiperf_core::replay::warmup::Warmup;
use anyhow::{Result, bail, ensure};

use super::run::{Ramps, checked_prefill, ns, ramp, rate_and_users};
use crate::profile::options::LoadShape;
use crate::profile::plan::limits::{MAX_CONCURRENCY, MAX_REQUESTS, RATE_RANGE, in_range, seconds};

/// The warm-up phase: what it sends, and how long its last requests may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WarmupPlan {
    pub shape: Warmup,
    /// `--warmup-grace-period`: after the warm-up's duration, in-flight requests get this long.
    pub grace: Option<Duration>,
}

/// The run's own load, which the warm-up takes when its own options are not given.
pub struct RunLoad {
    pub rate: Option<f64>,
    pub pattern: ArrivalPattern,
    /// This process's part of `--concurrency`.
    pub concurrency: Option<usize>,
    /// This process's part of `--warmup-request-count` (0: none).
    pub warmup_requests: u64,
    pub shard: Shard,
    pub seed: u64,
    /// The run's ramps, which the warm-up takes unless it has its own.
    pub ramps: Ramps,
    /// The shape of gamma gaps.
    pub smoothness: Option<f64>,
    /// This process's part of `--prefill-concurrency`.
    pub prefill: Option<usize>,
    pub streaming: bool,
}

/// The warm-up, as AIPerf's: there is one when `--warmup-request-count`, `--num-warmup-sessions`
/// or `--warmup-duration` is given (it ends at the first of them); it runs at
/// `--warmup-request-rate` (or the run's rate) with `--warmup-arrival-pattern` (or the run's),
/// capped by `--warmup-concurrency` (or the run's concurrency) when given, and without a rate at
/// that concurrency (1 unless given). A shard sends its part of the counts, rate and concurrency.
pub fn warmup(a: &LoadShape, run: &RunLoad) -> Result<Option<WarmupPlan>> {
    let shard = run.shard;
    let duration = a.warmup_duration.map(|d| seconds(d, "--warmup-duration", false)).transpose()?;
    let sessions = a
        .num_warmup_sessions
        .map(|n| in_range(n, "--num-warmup-sessions", 1, MAX_REQUESTS).map(|n| shard.part_of(n)))
        .transpose()?;
    let concurrency = a
        .warmup_concurrency
        .map(|c| {
            in_range(c, "--warmup-concurrency", 1, MAX_CONCURRENCY).map(|c| shard.part_of(c as u64).max(1) as usize)
        })
        .transpose()?;
    let rate = a
        .warmup_request_rate
        .map(|r| {
            ensure!(
                r.is_finite() && r >= RATE_RANGE.0 && r <= RATE_RANGE.1,
                "--warmup-request-rate {r:?}: accepted is {} to {} requests per second",
                RATE_RANGE.0,
                RATE_RANGE.1
            );
            Ok(r)
        })
        .transpose()?
        .or(run.rate);
    let users = warmup_users(a, shard)?;
    let rate = users.map(|u| u.0).or(rate);
    let grace = a.warmup_grace_period.map(|g| seconds(g, "--warmup-grace-period", true)).transpose()?;
    if let (Some(g), None) = (a.warmup_grace_period, duration) {
        bail!(
            "--warmup-grace-period {g:?} needs --warmup-duration: the grace period follows a warm-up bounded by time; give --warmup-duration, or drop --warmup-grace-period"
        );
    }
    let shape = Warmup {
        requests: (run.warmup_requests > 0).then_some(run.warmup_requests),
        sessions,
        duration_ns: duration.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        rate: rate.map(|r| (r / f64::from(shard.count), a.warmup_arrival_pattern.unwrap_or(run.pattern))),
        concurrency: match (concurrency.or(run.concurrency), rate) {
            (Some(c), _) => Some(c),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        },
        seed: run.seed,
        concurrency_ramp_ns: ramp(a.warmup_concurrency_ramp_duration, "--warmup-concurrency-ramp-duration")?
            .map(ns)
            .or(run.ramps.concurrency_ns),
        rate_ramp_us: match ramp(a.warmup_request_rate_ramp_duration, "--warmup-request-rate-ramp-duration")? {
            Some(_) if rate.is_none() => bail!(
                "--warmup-request-rate-ramp-duration {:?} can only ramp a warm-up rate: give --warmup-request-rate, or drop the ramp",
                a.warmup_request_rate_ramp_duration.unwrap_or_default()
            ),
            Some(d) => Some(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            None => run.ramps.rate_us,
        },
        smoothness: run.smoothness,
        prefill: None,
        prefill_ramp_ns: None,
        users: users.map(|u| u.1),
    };
    let shape = warmup_prefill(a, run, shape)?;
    // A shard whose part of the counts is nothing sends no warm-up.
    let nothing = shape.sends_nothing();
    Ok((shape.is_bounded() && !nothing).then_some(WarmupPlan { shape, grace }))
}

/// `--warmup-user-centric-rate` with `--warmup-num-users` (a config file's user-centric warm-up),
/// checked as the run's pair: both or neither, instead of the warm-up's request rate and arrival
/// pattern; (rate, users). It counts requests and time, not sessions of one request.
fn warmup_users(a: &LoadShape, shard: Shard) -> Result<Option<(f64, u32)>> {
    let Some((r, n)) = rate_and_users(
        a.warmup_user_centric_rate,
        a.warmup_num_users,
        "--warmup-user-centric-rate",
        "--warmup-num-users",
    )?
    else {
        return Ok(None);
    };
    for (given, other) in [
        (a.warmup_request_rate.is_some(), "--warmup-request-rate"),
        (a.warmup_arrival_pattern.is_some(), "--warmup-arrival-pattern"),
        (a.warmup_request_rate_ramp_duration.is_some(), "--warmup-request-rate-ramp-duration"),
        (a.num_warmup_sessions.is_some(), "--num-warmup-sessions"),
    ] {
        ensure!(
            !given,
            "--warmup-user-centric-rate {r:?} times the warm-up's sessions itself: drop {other} (bound the warm-up by --warmup-duration or --warmup-request-count)"
        );
    }
    ensure!(
        shard.is_whole(),
        "--warmup-user-centric-rate {r:?} cannot be split between shards: drop it, or warm up with --warmup-request-rate"
    );
    Ok(Some((r, n)))
}

/// The warm-up's prefill limit: `--warmup-prefill-concurrency` (checked as the run's, against
/// the warm-up's concurrency) and its ramp, or the run's, as AIPerf's.
fn warmup_prefill(a: &LoadShape, run: &RunLoad, shape: Warmup) -> Result<Warmup> {
    let own = a.warmup_prefill_concurrency;
    let prefill = checked_prefill(own, "--warmup-prefill-concurrency", shape.concurrency, run.streaming, run.shard)?
        .or(run.prefill);
    let ramp_ns = ramp(a.warmup_prefill_concurrency_ramp_duration, "--warmup-prefill-concurrency-ramp-duration")?
        .map(ns)
        .or(run.ramps.prefill_ns)
        .filter(|_| prefill.is_some());
    Ok(Warmup { prefill, prefill_ramp_ns: ramp_ns, ..shape })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use aiperf_core::replay::schedule::ArrivalPattern;

    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn warmup_takes_the_runs_load_unless_given_its_own() {
        assert!(plan(&["--warmup-concurrency", "3"]).unwrap().limits.warmup.is_none());
        let w = plan(&["--warmup-request-count", "5"]).unwrap().limits.warmup.unwrap();
        assert_eq!((w.shape.requests, w.shape.concurrency, w.shape.rate), (Some(5), Some(1), None));
        let w = plan(&["--num-warmup-sessions", "5", "--concurrency", "4"]).unwrap().limits.warmup.unwrap();
        assert_eq!((w.shape.sessions, w.shape.concurrency), (Some(5), Some(4)));
        let w = plan(&["--warmup-duration", "2", "--request-rate", "10", "--arrival-pattern", "constant"])
            .unwrap()
            .limits
            .warmup
            .unwrap();
        assert_eq!(w.shape.rate, Some((10.0, ArrivalPattern::Constant)));
        assert_eq!((w.shape.concurrency, w.shape.duration_ns, w.grace), (None, Some(2_000_000_000), None));
        let w = plan(&[
            "--warmup-duration",
            "1",
            "--warmup-grace-period",
            "0.5",
            "--warmup-request-rate",
            "3",
            "--warmup-arrival-pattern",
            "poisson",
            "--warmup-concurrency",
            "2",
            "--request-rate",
            "10",
            "--arrival-pattern",
            "constant",
        ])
        .unwrap()
        .limits
        .warmup
        .unwrap();
        assert_eq!(w.shape.rate, Some((3.0, ArrivalPattern::Poisson)));
        assert_eq!((w.shape.concurrency, w.grace), (Some(2), Some(std::time::Duration::from_millis(500))));
        // A shard sends its part.
        let w = plan(&["--shard", "1/2", "--warmup-request-count", "5", "--warmup-request-rate", "8"])
            .unwrap()
            .limits
            .warmup
            .unwrap();
        assert_eq!((w.shape.requests, w.shape.rate.map(|r| r.0)), (Some(2), Some(4.0)));
    }

    #[test]
    fn warmup_options_out_of_bounds_are_named() {
        for (args, says) in [
            (&["--warmup-duration", "0"][..], "--warmup-duration 0.0"),
            (&["--num-warmup-sessions", "0"], "--num-warmup-sessions 0: accepted is 1 to"),
            (&["--warmup-request-count", "1", "--warmup-concurrency", "0"], "--warmup-concurrency 0: accepted is 1 to"),
            (&["--warmup-request-count", "1", "--warmup-request-rate", "0"], "--warmup-request-rate 0.0: accepted"),
            (
                &["--warmup-request-count", "1", "--warmup-grace-period", "1"],
                "--warmup-grace-period 1.0 needs --warmup-duration",
            ),
        ] {
            let e = format!("{:#}", plan(args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }

    #[test]
    fn a_user_centric_warmup_takes_its_rate_and_users_and_nothing_else_that_times_it() {
        let w = plan(&["--warmup-duration", "2", "--warmup-user-centric-rate", "4", "--warmup-num-users", "3"])
            .unwrap()
            .limits
            .warmup
            .unwrap();
        assert_eq!((w.shape.users, w.shape.rate.map(|r| r.0), w.shape.concurrency), (Some(3), Some(4.0), None));
        let uc = ["--warmup-duration", "2", "--warmup-user-centric-rate", "4", "--warmup-num-users", "3"];
        let with = |more: &[&'static str]| [&uc[..], more].concat();
        for (args, says) in [
            (vec!["--warmup-duration", "2", "--warmup-user-centric-rate", "4"], "needs --warmup-num-users"),
            (vec!["--warmup-duration", "2", "--warmup-num-users", "4"], "needs --warmup-user-centric-rate"),
            (
                vec!["--warmup-duration", "2", "--warmup-user-centric-rate", "4", "--warmup-num-users", "0"],
                "--warmup-num-users 0: accepted is 1 to",
            ),
            (
                vec!["--warmup-duration", "2", "--warmup-user-centric-rate", "0", "--warmup-num-users", "3"],
                "--warmup-user-centric-rate 0.0: accepted is",
            ),
            (with(&["--warmup-request-rate", "3"]), "drop --warmup-request-rate"),
            (with(&["--warmup-arrival-pattern", "constant"]), "drop --warmup-arrival-pattern"),
            (with(&["--num-warmup-sessions", "3"]), "drop --num-warmup-sessions"),
            (with(&["--shard", "1/2"]), "cannot be split between shards"),
        ] {
            let e = format!("{:#}", plan(&args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}
