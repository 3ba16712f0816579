//! AIPerf's network latency calibration options (`--network-latency-automatic`,
//! `--network-latency-mean`, `--network-latency-ping-interval`), checked with AIPerf's rules.

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::super::options::Args;
use super::limits::seconds;

/// Seconds between two probes without `--network-latency-ping-interval` (AIPerf's default).
pub const DEFAULT_PING_INTERVAL_S: f64 = 1.0;

/// What the run does about the network's round trip.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum NetworkLatency {
    /// Nothing (the default).
    #[default]
    Off,
    /// `--network-latency-mean MS`: subtract this mean (ms), without probing.
    Mean(f64),
    /// `--network-latency-automatic`: probe every `interval` while the run measures and subtract
    /// the probes' mean.
    Probe { interval: Duration },
}

impl NetworkLatency {
    /// The options, with AIPerf's rules: automatic and a mean exclude each other, the interval
    /// belongs to automatic, the mean is at least 0 and the interval above 0.
    pub fn of(a: &Args) -> Result<NetworkLatency> {
        let interval = a.network_latency_ping_interval;
        if let Some(ms) = a.network_latency_mean {
            if a.network_latency_automatic {
                bail!(
                    "--network-latency-automatic and --network-latency-mean {ms}: give one of them (automatic measures the round trip; the mean sets it)"
                );
            }
            if let Some(i) = interval {
                bail!(
                    "--network-latency-ping-interval {i}: applies to --network-latency-automatic only, not with --network-latency-mean"
                );
            }
            if !(ms.is_finite() && ms >= 0.0) {
                bail!("--network-latency-mean {ms}: accepted is a number of milliseconds, 0 or more");
            }
            return Ok(NetworkLatency::Mean(ms));
        }
        if !a.network_latency_automatic {
            if let Some(i) = interval {
                bail!(
                    "--network-latency-ping-interval {i}: applies only with --network-latency-automatic (or give --network-latency-mean)"
                );
            }
            return Ok(NetworkLatency::Off);
        }
        let s = interval.unwrap_or(DEFAULT_PING_INTERVAL_S);
        let interval = seconds(s, "--network-latency-ping-interval", false)?;
        Ok(NetworkLatency::Probe { interval })
    }

    /// AIPerf's `network_latency` section of `input_config` (`NetworkLatencyConfig`), when on.
    pub fn input_config(self) -> Option<Value> {
        match self {
            NetworkLatency::Off => None,
            NetworkLatency::Mean(ms) => {
                Some(json!({"enabled": true, "ping_interval": DEFAULT_PING_INTERVAL_S, "mean_ms": ms}))
            }
            NetworkLatency::Probe { interval } => {
                Some(json!({"enabled": true, "ping_interval": interval.as_secs_f64(), "mean_ms": null}))
            }
        }
    }

    /// Our options' record (`aiperf_cli_config`), when on.
    pub fn cli_config(self) -> Option<(&'static str, Value)> {
        match self {
            NetworkLatency::Off => None,
            NetworkLatency::Mean(ms) => Some(("network_latency_mean", json!(ms))),
            NetworkLatency::Probe { interval } => {
                Some(("network_latency_ping_interval", json!(interval.as_secs_f64())))
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::plan::replay::tests::{err, plan};

    #[test]
    fn aiperfs_rules_resolve_the_three_options() {
        let net = |extra: &[&str]| plan(extra).unwrap().server.network;
        assert_eq!(net(&[]), NetworkLatency::Off);
        assert_eq!(net(&["--network-latency-automatic"]), NetworkLatency::Probe { interval: Duration::from_secs(1) });
        assert_eq!(
            net(&["--network-latency-automatic", "--network-latency-ping-interval", "0.25"]),
            NetworkLatency::Probe { interval: Duration::from_millis(250) }
        );
        assert_eq!(net(&["--network-latency-mean", "2.5"]), NetworkLatency::Mean(2.5));
        assert_eq!(net(&["--network-latency-mean", "0"]), NetworkLatency::Mean(0.0));
        assert_eq!(
            err(&["--network-latency-automatic", "--network-latency-mean", "2"]),
            "--network-latency-automatic and --network-latency-mean 2: give one of them (automatic measures the round trip; the mean sets it)"
        );
        assert_eq!(
            err(&["--network-latency-mean", "2", "--network-latency-ping-interval", "1"]),
            "--network-latency-ping-interval 1: applies to --network-latency-automatic only, not with --network-latency-mean"
        );
        assert_eq!(
            err(&["--network-latency-ping-interval", "1"]),
            "--network-latency-ping-interval 1: applies only with --network-latency-automatic (or give --network-latency-mean)"
        );
        assert!(err(&["--network-latency-mean=-1"]).starts_with("--network-latency-mean -1: accepted is"));
        assert!(err(&["--network-latency-mean", "NaN"]).starts_with("--network-latency-mean NaN: accepted is"));
        assert!(
            err(&["--network-latency-automatic", "--network-latency-ping-interval", "0"])
                .starts_with("--network-latency-ping-interval 0.0: ")
        );
    }

    #[test]
    fn the_run_records_the_options_in_both_shapes() {
        let p = plan(&["--network-latency-automatic", "--network-latency-ping-interval", "0.5"]).unwrap();
        assert_eq!(
            p.aiperf_config()["network_latency"],
            json!({"enabled": true, "ping_interval": 0.5, "mean_ms": null})
        );
        assert_eq!(p.cli_config()["network_latency_ping_interval"], json!(0.5));
        let p = plan(&["--network-latency-mean", "3"]).unwrap();
        assert_eq!(
            p.aiperf_config()["network_latency"],
            json!({"enabled": true, "ping_interval": 1.0, "mean_ms": 3.0})
        );
        assert_eq!(p.cli_config()["network_latency_mean"], json!(3.0));
        let p = plan(&[]).unwrap();
        assert!(p.aiperf_config().get("network_latency").is_none());
        assert!(p.cli_config().get("network_latency_mean").is_none());
    }
}
