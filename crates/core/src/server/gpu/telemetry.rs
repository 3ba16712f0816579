//! Every GPU's values over the run ([`GpuTelemetry`]): the per-GPU summaries, AIPerf's
//! `telemetry_data` over the profiling window and the energy and power its efficiency metrics
//! are divided from.

use std::collections::BTreeMap;

use super::dcgm::{DCGM_FIELDS, DcgmField};
use super::energy::VendorEnergy;
use super::export::{GpuExport, GpuStats, TelemetryExport};
use super::record::{GpuId, GpuRecord};
use crate::stats::Distribution;

/// One scrape of one GPU: when (Unix ns) and the values of [`DCGM_FIELDS`] (by position).
type Snapshot = (u64, [Option<f64>; 11]);

/// One GPU's labels and its scrapes over the run.
type GpuValues = (GpuId, Vec<Snapshot>);

/// Every GPU's values over the run.
#[derive(Clone, Debug, Default)]
pub struct GpuTelemetry {
    /// By exporter URL and GPU index.
    gpus: BTreeMap<(String, u32), GpuValues>,
}

/// One GPU's summary: its labels and each field's distribution over the run's scrapes.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSummary {
    pub url: String,
    pub gpu: GpuId,
    /// ([`DCGM_FIELDS`] entry, distribution) of the fields it reported.
    pub metrics: Vec<(DcgmField, Distribution)>,
}

impl GpuTelemetry {
    pub fn add(&mut self, records: &[GpuRecord]) {
        for r in records {
            if r.values.iter().all(Option::is_none) {
                continue;
            }
            let entry =
                self.gpus.entry((r.url.clone(), r.gpu.index)).or_insert_with(|| (r.gpu.clone(), Default::default()));
            entry.1.push((r.timestamp_ns, r.values));
        }
    }

    /// Every GPU's summary, by exporter URL and GPU index.
    pub fn summaries(&self) -> Vec<GpuSummary> {
        self.gpus
            .iter()
            .map(|((url, _), (gpu, snapshots))| GpuSummary {
                url: url.clone(),
                gpu: gpu.clone(),
                metrics: DCGM_FIELDS
                    .iter()
                    .enumerate()
                    .filter_map(|(i, d)| {
                        let values: Vec<f64> = snapshots.iter().filter_map(|(_, v)| v[i]).collect();
                        Distribution::of(&values).map(|dist| (*d, dist))
                    })
                    .collect(),
            })
            .collect()
    }

    /// AIPerf's `telemetry_data` over the profiling window `[start_ns, end_ns]` (Unix ns, both
    /// ends included; `None`: unbounded), as its GPU telemetry accumulator computes it: a gauge's
    /// statistics over the scrapes in the window, a counter's rise from its last value before the
    /// window (or its first in it) to its last in it. `start_time`/`end_time` are the window's
    /// ends as the summary writes them.
    pub fn export(&self, start_ns: Option<u64>, end_ns: Option<u64>, times: (String, String)) -> TelemetryExport {
        let urls: Vec<String> = self.gpus.keys().map(|(u, _)| u.clone()).fold(Vec::new(), |mut v, u| {
            if !v.contains(&u) {
                v.push(u);
            }
            v
        });
        let mut endpoints: Vec<(String, Vec<GpuExport>)> = Vec::new();
        for ((url, _), (gpu, snapshots)) in &self.gpus {
            let display = endpoint_display(url);
            let export = gpu_export(gpu, snapshots, start_ns, end_ns);
            match endpoints.iter_mut().find(|(d, _)| *d == display) {
                Some((_, gpus)) => gpus.push(export),
                None => endpoints.push((display, vec![export])),
            }
        }
        TelemetryExport {
            endpoints_configured: urls.clone(),
            endpoints_successful: urls,
            start_time: times.0,
            end_time: times.1,
            endpoints,
        }
    }

    /// One console line per GPU: who it is, then each field's average and maximum.
    pub fn console_lines(&self) -> Vec<String> {
        self.summaries()
            .iter()
            .map(|g| {
                let name = g.gpu.model_name.as_deref().unwrap_or("GPU");
                let uuid = g.gpu.uuid.as_deref().unwrap_or("no UUID");
                let fields: Vec<String> = g
                    .metrics
                    .iter()
                    .map(|(d, dist)| {
                        let short = d.short();
                        format!("{short} avg {:.1} max {:.1} {}", dist.avg, dist.max, d.unit)
                    })
                    .collect();
                format!("GPU {} {name} ({uuid}, {}): {}", g.gpu.index, g.url, fields.join(", "))
            })
            .collect()
    }

    /// Whether no GPU was seen.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }
}

/// An exporter URL as AIPerf keys its endpoints: host and port, then the path without its
/// `/metrics` ending (the scheme, query and fragment left out).
pub fn endpoint_display(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    format!("{host}{}", path.strip_suffix("/metrics").unwrap_or(path))
}

/// One GPU's `GpuSummary` over the window of its scrapes `[start_ns, end_ns]`.
fn gpu_export(gpu: &GpuId, snapshots: &[Snapshot], start_ns: Option<u64>, end_ns: Option<u64>) -> GpuExport {
    let mut snaps = snapshots.to_vec();
    snaps.sort_by_key(|(t, _)| *t);
    let first = start_ns.map_or(0, |s| snaps.partition_point(|(t, _)| *t < s));
    let last = end_ns.map_or(snaps.len(), |e| snaps.partition_point(|(t, _)| *t <= e)).max(first);
    let window = &snaps[first..last];
    let metrics = DCGM_FIELDS
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let stats = if d.is_counter() {
                let end = window.iter().rev().find_map(|(_, v)| v[i])?;
                let base = snaps[..first].iter().rev().find_map(|(_, v)| v[i]);
                let base = base.or_else(|| window.iter().find_map(|(_, v)| v[i]))?;
                let rise = end - base;
                // A counter that went back (the exporter restarted) rose by 0.
                GpuStats { avg: Some(if 0.0 > rise { 0.0 } else { rise }), ..GpuStats::new(d.unit) }
            } else {
                gauge_stats(d.unit, window.iter().map(|(_, v)| v[i]))?
            };
            Some((d.field.to_owned(), stats))
        })
        .collect();
    GpuExport {
        index: gpu.index,
        name: gpu.model_name.clone().unwrap_or_default(),
        uuid: gpu.uuid.clone().unwrap_or_default(),
        platform: "nvidia".to_owned(),
        hostname: gpu.hostname.clone(),
        namespace: gpu.namespace.clone(),
        pod_name: gpu.pod_name.clone(),
        metrics,
    }
}

/// A gauge's statistics over the scrapes of the window, a scrape without the field counted but
/// left out of the statistics (numpy's `nan*` functions over AIPerf's NaN-padded columns: the
/// sums run over every scrape with 0 in place of a missing value; the sample standard
/// deviation, 0 for a single value); `None` when no scrape of the window had it.
fn gauge_stats(unit: &str, column: impl Iterator<Item = Option<f64>> + Clone) -> Option<GpuStats> {
    let valid: Vec<f64> = column.clone().flatten().collect();
    let d = Distribution::of(&valid)?;
    let padded: Vec<f64> = column.clone().map(|v| v.unwrap_or(0.0)).collect();
    let total = crate::stats::sum(&padded);
    let avg = total / valid.len() as f64;
    let std = if valid.len() > 1 {
        let squares: Vec<f64> = column.clone().map(|v| v.map_or(0.0, |x| (x - avg) * (x - avg))).collect();
        (crate::stats::sum(&squares) / (valid.len() - 1) as f64).sqrt()
    } else {
        0.0
    };
    Some(GpuStats {
        avg: Some(avg),
        percentiles: d.percentiles.map(Some),
        min: Some(d.min),
        max: Some(d.max),
        std: Some(std),
        count: Some(padded.len() as u64),
        sum: Some(total),
        ..GpuStats::new(unit)
    })
}

impl GpuTelemetry {
    /// Each vendor's energy and power as AIPerf's analyzer queries them: the energy counters'
    /// rise over `[start_ns, energy_end_ns]` (the summary's window, with the grace for the scrape
    /// after the last request) and the power's average over `[start_ns, power_end_ns]` (the last
    /// request's end), both ends included; vendors in name order.
    pub fn vendor_energy(
        &self,
        start_ns: Option<u64>,
        energy_end_ns: Option<u64>,
        power_end_ns: Option<u64>,
    ) -> Vec<VendorEnergy> {
        // DCGM exporters: every GPU is NVIDIA's.
        let mut nvidia = VendorEnergy { vendor: "nvidia", energy_j: (0.0, 0), power_w: (0.0, 0) };
        for (gpu, snapshots) in self.gpus.values() {
            let field = |x: &GpuExport, name: &str| x.metrics.iter().find(|(k, _)| k == name).and_then(|(_, s)| s.avg);
            if let Some(mj) = field(&gpu_export(gpu, snapshots, start_ns, energy_end_ns), "nvidia_energy_consumption") {
                nvidia.energy_j.0 += mj * 1_000_000.0;
                nvidia.energy_j.1 += 1;
            }
            if let Some(w) = field(&gpu_export(gpu, snapshots, start_ns, power_end_ns), "nvidia_power_usage") {
                nvidia.power_w.0 += w;
                nvidia.power_w.1 += 1;
            }
        }
        if self.gpus.is_empty() { Vec::new() } else { vec![nvidia] }
    }
}
