//! The server's side of a replay: `/metrics` scraped, readiness waited for, the prefix cache
//! reset, GPU telemetry, as the options ask.

use std::time::Duration;

use anyhow::{Result, bail, ensure};

use super::limits::{SCRAPE_INTERVAL_RANGE, seconds};
use crate::profile::options::{Args, WaitMode};
use crate::profile::scraper;

/// How long to wait for the server before anything is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerWait {
    pub limit: Duration,
    /// The option that asked for the wait, as the user wrote it (errors name it).
    pub flag: &'static str,
    /// `--wait-for-model-mode`; `None`: GET /v1/models or /health.
    pub mode: Option<WaitMode>,
    /// `--wait-for-model-interval`: between two probes.
    pub interval: Duration,
}

/// The time between two readiness probes without `--wait-for-model-interval`.
pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// The time limit of a cache-reset call without `--reset-kv-cache-timeout-seconds`.
pub const DEFAULT_RESET_TIMEOUT: Duration = Duration::from_secs(10);

/// `--reset-prefix-cache` (AIPerf's `--reset-kv-cache`) and its options.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheReset {
    /// `--reset-kv-cache-path`: POSTed instead of the server kind's path.
    pub path: Option<String>,
    /// `--reset-kv-cache-timeout-seconds`.
    pub timeout: Duration,
}

/// The server's side: metrics scraped, readiness, cache reset.
#[derive(Clone, Debug)]
pub struct ServerPlan {
    /// `/metrics` URLs scraped (credentials kept for fetching; de-duplicated); empty = off.
    pub metrics_urls: Vec<String>,
    pub metrics_interval: Duration,
    /// `--wait-for-server` (or AIPerf's `--wait-for-model-timeout`).
    pub wait: Option<ServerWait>,
    pub reset: Option<CacheReset>,
    /// `--server-metrics-formats`: (json, csv, parquet) written.
    pub metrics_formats: (bool, bool, bool),
    /// `--gpu-telemetry`: the DCGM exporters' `/metrics` URLs scraped; empty = off.
    pub gpu_urls: Vec<String>,
    /// `--go-on-unreachable`: replay even when a URL took no connection before time zero.
    pub go_on_unreachable: bool,
    /// `--server-kind`.
    pub kind: Option<aiperf_core::server::kinds::ServerKind>,
    /// `--network-latency-*`.
    pub network: super::network::NetworkLatency,
}

impl ServerPlan {
    /// The server options: every `--url`'s `/metrics` and the `--server-metrics` ones, each once.
    pub(super) fn of(a: &Args, urls: &[String]) -> Result<ServerPlan> {
        let mut metrics_urls = Vec::new();
        if !a.no_server_metrics {
            for u in urls.iter().chain(&a.server_metrics) {
                let m = scraper::metrics_url(u);
                if !metrics_urls.contains(&m) {
                    metrics_urls.push(m);
                }
            }
        }
        let (lo, hi) = SCRAPE_INTERVAL_RANGE;
        let i = a.server_metrics_interval;
        ensure!(
            i.is_finite() && (lo..=hi).contains(&i),
            "--server-metrics-interval {i:?}: accepted is {lo} to {hi} seconds"
        );
        let interval = match a.wait_for_model_interval {
            Some(v) => seconds(v, "--wait-for-model-interval", false)?,
            None => DEFAULT_PROBE_INTERVAL,
        };
        let mode = a.wait_for_model_mode;
        let reset_timeout = match a.reset_kv_cache_timeout_seconds {
            Some(v) => seconds(v, "--reset-kv-cache-timeout-seconds", false)?,
            None => DEFAULT_RESET_TIMEOUT,
        };
        let reset_path = a.reset_kv_cache_path.as_deref().map(reset_path).transpose()?;
        Ok(ServerPlan {
            metrics_urls,
            metrics_interval: Duration::from_secs_f64(i),
            wait: match (a.wait_for_server, a.wait_for_model_timeout) {
                (Some(w), _) => Some(ServerWait {
                    limit: seconds(w, "--wait-for-server", false)?,
                    flag: "--wait-for-server",
                    mode,
                    interval,
                }),
                // AIPerf's spelling: 0 does not wait.
                (None, Some(w)) => Some(seconds(w, "--wait-for-model-timeout", true)?)
                    .filter(|d| !d.is_zero())
                    .map(|limit| ServerWait { limit, flag: "--wait-for-model-timeout", mode, interval }),
                (None, None) => None,
            },
            reset: a.reset_prefix_cache.then_some(CacheReset { path: reset_path, timeout: reset_timeout }),
            metrics_formats: metrics_formats(&a.server_metrics_formats)?,
            gpu_urls: gpu_urls(a.gpu_telemetry.as_deref())?,
            go_on_unreachable: a.go_on_unreachable,
            kind: a.server_kind,
            network: super::network::NetworkLatency::of(a)?,
        })
    }
}

/// `--reset-kv-cache-path`: a path on the server (a leading `/` added), without a scheme or host.
fn reset_path(p: &str) -> Result<String> {
    let t = p.trim();
    ensure!(
        !t.is_empty() && !t.contains("://") && !t.contains(char::is_whitespace),
        "--reset-kv-cache-path {p:?}: accepted is a path on the server, e.g. /reset_prefix_cache"
    );
    Ok(if t.starts_with('/') { t.to_owned() } else { format!("/{t}") })
}

/// `--gpu-telemetry [URL…]`: AIPerf's default DCGM endpoints, then the URLs given, each once;
/// AIPerf's other collectors and modes are refused with the reason.
fn gpu_urls(given: Option<&[String]>) -> Result<Vec<String>> {
    let Some(given) = given else { return Ok(Vec::new()) };
    let mut urls: Vec<String> = aiperf_core::server::gpu::DEFAULT_ENDPOINTS.iter().map(|u| u.to_string()).collect();
    for g in given {
        let lower = g.trim().to_ascii_lowercase();
        match lower.as_str() {
            "pynvml" | "amdsmi" => bail!(
                "--gpu-telemetry {g}: local GPU libraries are not read (aiperf-cli has no Python or vendor bindings); run NVIDIA's dcgm-exporter beside the GPUs and give its URL, e.g. --gpu-telemetry http://gpu-node:9400/metrics"
            ),
            "dashboard" => bail!(
                "--gpu-telemetry dashboard: the GPU dashboard is not drawn; give the DCGM exporters' URLs (the GPU numbers go to gpu_telemetry_export.jsonl and the console)"
            ),
            _ if lower.ends_with(".csv") => bail!(
                "--gpu-telemetry {g}: replaying recorded GPU metrics from a CSV file is not supported; accepted are DCGM exporter URLs"
            ),
            "" => bail!("--gpu-telemetry \"\": accepted are DCGM exporter URLs, e.g. http://gpu-node:9400/metrics"),
            _ => {
                let u = scraper::metrics_url(g);
                if !urls.contains(&u) {
                    urls.push(u);
                }
            }
        }
    }
    Ok(urls)
}

/// `--server-metrics-formats` (AIPerf's names): which of json and csv are written.
fn metrics_formats(given: &[String]) -> Result<(bool, bool, bool)> {
    if given.is_empty() {
        return Ok((true, true, false));
    }
    let mut out = (false, false, false);
    for f in given {
        match f.trim().to_ascii_lowercase().as_str() {
            "json" => out.0 = true,
            "csv" => out.1 = true,
            "parquet" => out.2 = true,
            "jsonl" => bail!(
                "--server-metrics-formats {f}: the scrapes are not exported as JSON lines; accepted is json, csv, parquet (the raw time series)"
            ),
            _ => bail!("--server-metrics-formats {f}: accepted is json, csv, parquet"),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::plan::replay::tests::{err, plan};

    #[test]
    fn server_metrics_urls_wait_and_reset() {
        let p = plan(&["-u", "http://h:1/v1/"]).unwrap();
        assert_eq!(p.server.metrics_urls, vec!["http://h:1/v1/metrics"]);
        assert_eq!(p.server.metrics_interval, Duration::from_millis(333));
        let p = plan(&["--server-metrics", "http://a:2", "http://localhost:8000/metrics", "b:3/"]).unwrap();
        assert_eq!(
            p.server.metrics_urls,
            vec!["http://localhost:8000/metrics", "http://a:2/metrics", "http://b:3/metrics"]
        );
        assert!(plan(&["--no-server-metrics"]).unwrap().server.metrics_urls.is_empty());
        assert!(plan(&["--no-server-metrics", "--server-metrics", "http://a"]).is_err());
        assert!(
            err(&["--server-metrics-interval", "0"])
                .contains("--server-metrics-interval 0.0: accepted is 0.01 to 3600")
        );
        assert!(err(&["--wait-for-server=-1"]).contains("--wait-for-server -1.0"));
        let p = plan(&["--wait-for-server", "5", "--reset-prefix-cache", "--server-kind", "llamacpp"]).unwrap();
        assert_eq!(
            p.server.wait,
            Some(ServerWait {
                limit: Duration::from_secs(5),
                flag: "--wait-for-server",
                mode: None,
                interval: DEFAULT_PROBE_INTERVAL
            })
        );
        assert_eq!(p.server.reset, Some(CacheReset { path: None, timeout: DEFAULT_RESET_TIMEOUT }));
        assert_eq!(p.server.metrics_formats, (true, true, false));
        assert_eq!(p.server.kind, Some(aiperf_core::server::kinds::ServerKind::Llamacpp));
        let p = plan(&[
            "--wait-for-model-timeout",
            "5",
            "--wait-for-model-mode",
            "both",
            "--wait-for-model-interval",
            "0.5",
            "--reset-kv-cache",
            "--reset-kv-cache-path",
            "flush_cache",
            "--reset-kv-cache-timeout-seconds",
            "2",
            "--server-metrics-formats",
            "csv",
        ])
        .unwrap();
        let wait = p.server.wait.unwrap();
        assert_eq!((wait.mode, wait.interval), (Some(WaitMode::Both), Duration::from_millis(500)));
        assert_eq!(
            p.server.reset,
            Some(CacheReset { path: Some("/flush_cache".into()), timeout: Duration::from_secs(2) })
        );
        assert_eq!(p.server.metrics_formats, (false, true, false));
        assert!(p.server.gpu_urls.is_empty());
        let p = plan(&["--gpu-telemetry"]).unwrap();
        assert_eq!(p.server.gpu_urls, ["http://localhost:9400/metrics", "http://localhost:9401/metrics"]);
        let p = plan(&["--gpu-telemetry", "node1:9400", "http://localhost:9401/metrics"]).unwrap();
        assert_eq!(p.server.gpu_urls.len(), 3);
        assert_eq!(p.server.gpu_urls[2], "http://node1:9400/metrics");
        assert!(err(&["--gpu-telemetry", "pynvml"]).contains("local GPU libraries are not read"));
        assert!(err(&["--gpu-telemetry", "amdsmi"]).contains("--gpu-telemetry amdsmi: local GPU libraries"));
        assert!(err(&["--gpu-telemetry", "gpu.csv"]).contains("from a CSV file is not supported"));
        assert_eq!(
            plan(&["--server-metrics-formats", "json,parquet"]).unwrap().server.metrics_formats,
            (true, false, true)
        );
        assert!(err(&["--server-metrics-formats", "json,jsonl"]).contains(
            "--server-metrics-formats jsonl: the scrapes are not exported as JSON lines; accepted is json, csv, parquet"
        ));
        assert!(
            err(&["--server-metrics-formats", "xml"])
                .contains("--server-metrics-formats xml: accepted is json, csv, parquet")
        );
        assert!(err(&["--wait-for-model-interval", "0"]).contains("--wait-for-model-interval 0.0"));
        assert!(
            err(&["--reset-kv-cache", "--reset-kv-cache-path", "http://h/x"])
                .contains("accepted is a path on the server")
        );
        assert!(
            err(&["--reset-kv-cache", "--reset-kv-cache-timeout-seconds", "0"])
                .contains("--reset-kv-cache-timeout-seconds 0.0")
        );
        let cfg = plan(&["-u", "http://u:secret99@h:1"]).unwrap().cli_config().to_string();
        assert!(!cfg.contains("secret99") && cfg.contains("http://<redacted>@h:1/metrics"), "{cfg}");
    }
}
