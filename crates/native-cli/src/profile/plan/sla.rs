//! AIPerf's SLA targets (`--ttft-sla-ms`, `--itl-sla-ms`/`--tpot-sla-ms`, `--e2e-sla-ms`,
//! `--error-rate-sla`, `--slo-attainment-fraction`) as the goodput targets of the capacity search
//! (`--search-max`).
//!
//! AIPerf 0.13 reads them in its search recipes only and ignores them otherwise. Its
//! `max-goodput-under-slo` recipe, the one judged per request as our search is, makes the three
//! latency thresholds per-request SLOs (`time_to_first_token`, `inter_token_latency` (TPOT and
//! ITL are the one metric), `request_latency`) and asks that the share of good requests among
//! all requests sent, failed ones included (`good_request_fraction`), reach the attainment
//! fraction (default 0.95). Its `max-concurrency-under-sla` recipe bounds the run's average
//! `request_error_rate` strictly below `--error-rate-sla` (a fraction, the metric in percent):
//! a run at or above it fails here as there.

use aiperf_core::results::metrics::{Metric, parse_goodput};
use anyhow::{Result, bail, ensure};

use crate::profile::options::Args;

/// What the SLA targets leave to the search beyond the `--goodput` SLOs they were folded into.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Targets {
    /// `--error-rate-sla`: a run whose share of failed requests reaches this fails.
    pub max_error_rate: Option<f64>,
    /// Some SLA target was given without `--search-max`, where it does nothing.
    pub ignored: bool,
}

/// Checks the SLA targets against AIPerf's bounds and, under `--search-max`, folds the latency
/// targets into `--goodput` and the attainment fraction into `--search-goodput-fraction`.
pub fn fold(args: &mut Args) -> Result<Targets> {
    let ms = |v: Option<f64>, flag: &str| -> Result<Option<f64>> {
        if let Some(x) = v {
            ensure!(x > 0.0 && x.is_finite(), "{flag} {x}: accepted is a number of milliseconds > 0");
        }
        Ok(v)
    };
    let ttft = ms(args.ttft_sla_ms, "--ttft-sla-ms")?;
    let itl = ms(args.itl_sla_ms, "--itl-sla-ms")?;
    let tpot = ms(args.tpot_sla_ms, "--tpot-sla-ms")?;
    let e2e = ms(args.e2e_sla_ms, "--e2e-sla-ms")?;
    if let Some(e) = args.error_rate_sla {
        ensure!(e > 0.0 && e < 1.0, "--error-rate-sla {e}: accepted is a fraction between 0 and 1 (excluded)");
    }
    if let Some(f) = args.slo_attainment_fraction {
        ensure!(f > 0.0 && f <= 1.0, "--slo-attainment-fraction {f}: accepted is a fraction > 0 and at most 1");
    }
    let inter_token = match (tpot, itl) {
        (Some(t), Some(i)) if t != i => bail!(
            "--tpot-sla-ms {t} and --itl-sla-ms {i}: both name the inter_token_latency target; give one, or the same value"
        ),
        (t, i) => t.or(i),
    };
    let any = ttft.is_some() || inter_token.is_some() || e2e.is_some();
    let given = any || args.error_rate_sla.is_some() || args.slo_attainment_fraction.is_some();
    if args.search_max.is_none() {
        return Ok(Targets { max_error_rate: None, ignored: given });
    }
    if any {
        let mut slos = match &args.goodput {
            Some(g) => parse_goodput(g)?,
            None => Vec::new(),
        };
        let mut text = args.goodput.clone().unwrap_or_default();
        for (flag, metric, value) in [
            ("--ttft-sla-ms", Metric::TimeToFirstToken, ttft),
            (if tpot.is_some() { "--tpot-sla-ms" } else { "--itl-sla-ms" }, Metric::InterTokenLatency, inter_token),
            ("--e2e-sla-ms", Metric::RequestLatency, e2e),
        ] {
            let Some(v) = value else { continue };
            match slos.iter().find(|s| s.metric == metric) {
                Some(s) if s.threshold != v => bail!(
                    "{flag} {v} and --goodput {}:{}: both set the {} target; give one, or the same value",
                    metric.tag(),
                    s.threshold,
                    metric.tag()
                ),
                Some(_) => {}
                None => {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(&format!("{}:{v}", metric.tag()));
                    slos.push(aiperf_core::results::metrics::Slo { metric, threshold: v });
                }
            }
        }
        args.goodput = Some(text);
    }
    if let Some(f) = args.slo_attainment_fraction {
        args.search_goodput_fraction = f;
    }
    Ok(Targets { max_error_rate: args.error_rate_sla, ignored: false })
}

/// The share of a run's requests that failed, the run's `request_error_rate` as a fraction.
pub fn error_rate(request_count: u64, error_count: u64) -> f64 {
    let total = request_count + error_count;
    if total == 0 { 0.0 } else { error_count as f64 / total as f64 }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::options::parse;

    fn folded(extra: &[&str]) -> Result<(Args, Targets)> {
        let argv: Vec<&str> = [&["x", "-m", "m", "--input-file", "t.jsonl"], extra].concat();
        let mut a = parse(argv).unwrap();
        let t = fold(&mut a)?;
        Ok((a, t))
    }

    #[test]
    fn the_latency_targets_become_goodput_slos_under_a_search() {
        let (a, t) = folded(&[
            "--search-max",
            "concurrency",
            "--ttft-sla-ms",
            "500",
            "--tpot-sla-ms",
            "15",
            "--e2e-sla-ms",
            "2000",
            "--slo-attainment-fraction",
            "0.9",
            "--error-rate-sla",
            "0.05",
        ])
        .unwrap();
        assert_eq!(a.goodput.as_deref(), Some("time_to_first_token:500 inter_token_latency:15 request_latency:2000"));
        assert_eq!(a.search_goodput_fraction, 0.9);
        assert_eq!(t, Targets { max_error_rate: Some(0.05), ignored: false });
        // Added to --goodput's own SLOs; the same target twice is one.
        let (a, _) = folded(&[
            "--search-max",
            "request-rate",
            "--goodput",
            "time_to_first_token:500 output_token_throughput_per_user:10",
            "--ttft-sla-ms",
            "500",
            "--itl-sla-ms",
            "20",
        ])
        .unwrap();
        assert_eq!(
            a.goodput.as_deref(),
            Some("time_to_first_token:500 output_token_throughput_per_user:10 inter_token_latency:20")
        );
        assert_eq!(a.search_goodput_fraction, 0.95, "AIPerf's default attainment fraction is ours");
    }

    #[test]
    fn without_a_search_the_targets_are_checked_and_ignored() {
        let (a, t) = folded(&["--ttft-sla-ms", "500", "--slo-attainment-fraction", "0.5"]).unwrap();
        assert_eq!((a.goodput, t), (None, Targets { max_error_rate: None, ignored: true }));
        let (_, t) = folded(&[]).unwrap();
        assert!(!t.ignored);
    }

    #[test]
    fn bounds_and_conflicts_are_refused_by_name() {
        let e = |x: &[&str]| folded(x).unwrap_err().to_string();
        assert!(e(&["--ttft-sla-ms", "0"]).starts_with("--ttft-sla-ms 0: accepted"));
        assert!(e(&["--e2e-sla-ms=-1"]).starts_with("--e2e-sla-ms -1: accepted"));
        assert!(e(&["--error-rate-sla", "1"]).starts_with("--error-rate-sla 1: accepted"));
        assert!(e(&["--slo-attainment-fraction", "1.5"]).starts_with("--slo-attainment-fraction 1.5: accepted"));
        assert!(e(&["--tpot-sla-ms", "10", "--itl-sla-ms", "20"]).contains("both name the inter_token_latency"));
        let s = ["--search-max", "concurrency"];
        assert!(
            e(&[&s[..], &["--goodput", "time_to_first_token:100", "--ttft-sla-ms", "200"]].concat())
                .contains("both set the time_to_first_token target")
        );
        assert_eq!(error_rate(95, 5), 0.05);
        assert_eq!(error_rate(0, 0), 0.0);
    }
}
