//! AIPerf's load-shaping options, checked: request cancellation (which requests the client
//! abandons, and when) and the options given as the exports write them, here; the run's ramps,
//! user-centric rate, prefill limit and gamma arrivals in [`run`]; the rate series file in
//! [`series`]; the warm-up phase in [`warmup`].

mod run;
mod series;
mod warmup;

use aiperf_core::replay::cancel::Cancellation;
use anyhow::{Result, bail, ensure};

use super::limits::seconds;
use crate::profile::options::LoadShape;
pub use run::{Ramps, prefill, ramps, smoothness, users};
pub use series::rate_series;
pub use warmup::{RunLoad, WarmupPlan, warmup};

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
