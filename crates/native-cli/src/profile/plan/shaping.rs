//! AIPerf's load-shaping options, checked: request cancellation (which requests the client
//! abandons, and when), the warm-up phase, the ramps of rate and concurrency, gamma arrivals.

use std::time::Duration;

use aiperf_core::replay::cancel::Cancellation;
use aiperf_core::replay::schedule::{ArrivalPattern, RateSeries, Shard};
use aiperf_core::replay::warmup::Warmup;
use anyhow::{Result, bail, ensure};

use super::limits::{MAX_CONCURRENCY, MAX_REQUESTS, RATE_RANGE, SMOOTHNESS_RANGE, in_range, seconds};
use crate::profile::options::LoadShape;

/// The warm-up phase: what it sends, and how long its last requests may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WarmupPlan {
    pub shape: Warmup,
    /// `--warmup-grace-period`: after the warm-up's duration, in-flight requests get this long.
    pub grace: Option<Duration>,
}

/// The ramps of the run's load: the concurrency's and the prefill concurrency's (ns), the
/// rate's (µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ramps {
    pub concurrency_ns: Option<u64>,
    pub rate_us: Option<u64>,
    pub prefill_ns: Option<u64>,
}

/// A ramp's duration, checked (seconds above 0).
fn ramp(v: Option<f64>, name: &str) -> Result<Option<Duration>> {
    v.map(|d| seconds(d, name, false)).transpose()
}

fn ns(d: Duration) -> u64 {
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
fn rate_and_users(
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

/// `--prefill-concurrency`, checked as AIPerf checks it (at least 1, at most `--concurrency`,
/// only on streamed answers, whose first token ends the prefill), this shard's part of it.
pub fn prefill(a: &LoadShape, concurrency: Option<usize>, streaming: bool, shard: Shard) -> Result<Option<usize>> {
    checked_prefill(a.prefill_concurrency, "--prefill-concurrency", concurrency, streaming, shard)
}

fn checked_prefill(
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

/// A `--request-rate-series` file's points as (µs, rate): AIPerf's format (a JSON array of
/// `{"time_s", "qps"}` objects, or an object whose only key `points` holds it), at least two
/// points, times ≥ 0 strictly increasing, rates within the `--request-rate` bounds.
pub fn rate_series(a: &LoadShape, request_rate_given: bool) -> Result<Option<RateSeries>> {
    use anyhow::Context;
    let Some(path) = &a.request_rate_series else { return Ok(None) };
    let name = path.display();
    ensure!(
        !request_rate_given,
        "--request-rate-series {name} sets the rate over time: drop --request-rate (AIPerf refuses both too)"
    );
    let text = std::fs::read_to_string(path).with_context(|| format!("--request-rate-series: cannot read {name}"))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("--request-rate-series {name}: not JSON"))?;
    let points = match &doc {
        serde_json::Value::Array(p) => p,
        serde_json::Value::Object(o) if o.len() == 1 && o.contains_key("points") => match &o["points"] {
            serde_json::Value::Array(p) => p,
            _ => bail!("--request-rate-series {name}: points: accepted is an array of {{\"time_s\", \"qps\"}} objects"),
        },
        _ => bail!(
            "--request-rate-series {name}: accepted is an array of {{\"time_s\", \"qps\"}} objects or an object with the one key points"
        ),
    };
    ensure!(points.len() >= 2, "--request-rate-series {name}: {} point(s): accepted is at least two", points.len());
    let mut out = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        let field = |k: &str| p.get(k).and_then(serde_json::Value::as_f64);
        let extra = p.as_object().is_none_or(|o| o.keys().any(|k| k != "time_s" && k != "qps"));
        let (Some(t), Some(q), false) = (field("time_s"), field("qps"), extra) else {
            bail!("--request-rate-series {name}: point {i} is {p}: accepted is {{\"time_s\": SECONDS, \"qps\": RATE}}");
        };
        let t = seconds(t, &format!("--request-rate-series {name}: point {i}: time_s"), true)?;
        ensure!(
            q.is_finite() && q >= RATE_RANGE.0 && q <= RATE_RANGE.1,
            "--request-rate-series {name}: point {i}: qps {q:?}: accepted is {} to {} requests per second",
            RATE_RANGE.0,
            RATE_RANGE.1
        );
        let us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX);
        if let Some(&(prev, _)) = out.last() {
            ensure!(
                us > prev,
                "--request-rate-series {name}: point {i}: time_s must be greater than the point before's"
            );
        }
        out.push((us, q));
    }
    Ok(Some(out.into()))
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

/// `--request-cancellation-rate` (percent, above 0 to 100) and `--request-cancellation-delay`
/// (seconds after the send, AIPerf's default 0), chosen by `seed`; the delay alone is refused,
/// as AIPerf refuses it.
pub fn cancellation(a: &LoadShape, seed: u64) -> Result<Option<Cancellation>> {
    let Some(rate) = a.request_cancellation_rate else {
        if let Some(d) = a.request_cancellation_delay {
            bail!(
                "--request-cancellation-delay {d:?} needs --request-cancellation-rate (the percent of requests to cancel): give both, or drop the delay"
            );
        }
        return Ok(None);
    };
    ensure!(
        rate.is_finite() && rate > 0.0 && rate <= 100.0,
        "--request-cancellation-rate {rate:?}: accepted is a percent of requests above 0 and at most 100"
    );
    let delay = seconds(a.request_cancellation_delay.unwrap_or(0.0), "--request-cancellation-delay", true)?;
    Ok(Cancellation::new(rate, u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX), seed))
}

/// The load-shaping options given, as written to the exports (options not given are left out).
pub fn input_config(a: &LoadShape) -> Vec<(&'static str, serde_json::Value)> {
    let mut out = Vec::new();
    let mut put = |k: &'static str, v: Option<serde_json::Value>| {
        if let Some(v) = v {
            out.push((k, v));
        }
    };
    put("request_cancellation_rate", a.request_cancellation_rate.map(Into::into));
    put("request_cancellation_delay", a.request_cancellation_delay.map(Into::into));
    put("warmup_duration", a.warmup_duration.map(Into::into));
    put("num_warmup_sessions", a.num_warmup_sessions.map(Into::into));
    put("warmup_concurrency", a.warmup_concurrency.map(Into::into));
    put("warmup_request_rate", a.warmup_request_rate.map(Into::into));
    put("warmup_arrival_pattern", a.warmup_arrival_pattern.map(|p| format!("{p:?}").to_lowercase().into()));
    put("warmup_grace_period", a.warmup_grace_period.map(Into::into));
    put("request_rate_ramp_duration", a.request_rate_ramp_duration.map(Into::into));
    put("concurrency_ramp_duration", a.concurrency_ramp_duration.map(Into::into));
    put("prefill_concurrency", a.prefill_concurrency.map(Into::into));
    put("warmup_prefill_concurrency", a.warmup_prefill_concurrency.map(Into::into));
    put("warmup_prefill_concurrency_ramp_duration", a.warmup_prefill_concurrency_ramp_duration.map(Into::into));
    put("user_centric_rate", a.user_centric_rate.map(Into::into));
    put("num_users", a.num_users.map(Into::into));
    put("warmup_user_centric_rate", a.warmup_user_centric_rate.map(Into::into));
    put("warmup_num_users", a.warmup_num_users.map(Into::into));
    put("prefill_concurrency_ramp_duration", a.prefill_concurrency_ramp_duration.map(Into::into));
    put("warmup_request_rate_ramp_duration", a.warmup_request_rate_ramp_duration.map(Into::into));
    put("warmup_concurrency_ramp_duration", a.warmup_concurrency_ramp_duration.map(Into::into));
    put("arrival_smoothness", a.arrival_smoothness.map(Into::into));
    put("request_rate_series", a.request_rate_series.as_ref().map(|p| p.display().to_string().into()));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::profile::plan::replay::tests::{err, plan};

    #[test]
    fn cancellation_takes_a_percent_and_a_delay_that_needs_it() {
        assert!(plan(&[]).unwrap().limits.cancellation.is_none());
        let c = plan(&["--request-cancellation-rate", "100", "--request-cancellation-delay", "0.25"]).unwrap();
        assert_eq!(c.limits.cancellation.unwrap().delay_ns(), 250_000_000);
        let c = plan(&["--request-cancellation-rate", "0.5"]).unwrap();
        assert_eq!(c.limits.cancellation.unwrap().delay_ns(), 0);
        for (args, says) in [
            (&["--request-cancellation-rate", "0"][..], "--request-cancellation-rate 0.0: accepted is a percent"),
            (&["--request-cancellation-rate", "100.5"], "--request-cancellation-rate 100.5: accepted"),
            (
                &["--request-cancellation-delay", "1"],
                "--request-cancellation-delay 1.0 needs --request-cancellation-rate",
            ),
            (
                &["--request-cancellation-rate", "5", "--request-cancellation-delay=-1"],
                "--request-cancellation-delay -1.0",
            ),
        ] {
            assert!(err(args).contains(says), "{args:?}: {}", err(args));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod warmup_tests {
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
mod series_tests {
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn a_rate_series_file_is_read_as_aiperf_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.json");
        let with = |text: &str, extra: &[&str]| {
            std::fs::write(&f, text).unwrap();
            plan(&[&["--request-rate-series", f.to_str().unwrap()], extra].concat())
        };
        let p = with(r#"{"points": [{"time_s": 0, "qps": 2}, {"time_s": 1.5, "qps": 4}]}"#, &[]).unwrap();
        assert_eq!(p.limits.rate_series.as_deref(), Some(&[(0, 2.0), (1_500_000, 4.0)][..]));
        assert_eq!(p.source.arrivals.rate.map(|r| r.0), Some(2.0));
        for (text, extra, says) in [
            (r#"[{"time_s": 0, "qps": 2}]"#, &[][..], "1 point(s): accepted is at least two"),
            (r#"[{"time_s": 1, "qps": 2}, {"time_s": 1, "qps": 3}]"#, &[], "point 1: time_s must be greater"),
            (r#"[{"time_s": 0, "qps": 0}, {"time_s": 1, "qps": 3}]"#, &[], "point 0: qps 0.0: accepted"),
            (r#"[{"time_s": 0, "rate": 1}, {"time_s": 1, "qps": 3}]"#, &[], "point 0 is"),
            (r#"{"pts": []}"#, &[], "accepted is an array"),
            (r#"[{"time_s": 0, "qps": 1}, {"time_s": 1, "qps": 3}]"#, &["--request-rate", "3"], "drop --request-rate"),
        ] {
            let e = format!("{:#}", with(text, extra).unwrap_err());
            assert!(e.contains(says), "{text}: {e}");
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
