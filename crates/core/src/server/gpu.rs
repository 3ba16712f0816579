//! GPU telemetry from NVIDIA DCGM exporters (`--gpu-telemetry`), as AIPerf reads it: every
//! sample with a `gpu` label is one GPU's (its `UUID`, `modelName`, `pci_bus_id`, `device`,
//! `Hostname`, `namespace` and `pod` labels name it), the DCGM fields AIPerf knows
//! ([`DCGM_FIELDS`]) are renamed and scaled to its units, and each scrape of each GPU is one
//! line of `gpu_telemetry_export.jsonl` (AIPerf's `TelemetryRecord`, absent values left out).
//! [`GpuTelemetry`] keeps every GPU's values for the run's per-GPU summary.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::csv;
use crate::server::prometheus::Family;
use crate::stats::{Distribution, REPORT_PERCENTILES};

/// AIPerf's file of GPU telemetry records.
pub const JSONL_FILE: &str = "gpu_telemetry_export.jsonl";

/// AIPerf's default DCGM exporter endpoints.
pub const DEFAULT_ENDPOINTS: [&str; 2] = ["http://localhost:9400/metrics", "http://localhost:9401/metrics"];

/// One DCGM field AIPerf reads: the exporter's name, AIPerf's field, the factor to AIPerf's unit,
/// the unit and the name AIPerf shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcgmField {
    pub dcgm: &'static str,
    pub field: &'static str,
    pub scale: f64,
    pub unit: &'static str,
    pub display: &'static str,
}

const fn f(
    dcgm: &'static str,
    field: &'static str,
    scale: f64,
    unit: &'static str,
    display: &'static str,
) -> DcgmField {
    DcgmField { dcgm, field, scale, unit, display }
}

/// The DCGM fields, in the order of AIPerf's `TelemetryMetrics`.
pub const DCGM_FIELDS: [DcgmField; 11] = [
    f("DCGM_FI_DEV_POWER_USAGE", "nvidia_power_usage", 1.0, "W", "NVIDIA GPU Power Usage"),
    // mJ → MJ
    f("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "nvidia_energy_consumption", 1e-9, "MJ", "NVIDIA Energy Consumption"),
    f("DCGM_FI_DEV_GPU_UTIL", "nvidia_gpu_utilization", 1.0, "%", "NVIDIA GPU Utilization"),
    f("DCGM_FI_DEV_MEM_COPY_UTIL", "nvidia_memory_utilization", 1.0, "%", "NVIDIA Memory Utilization"),
    // MiB → GB
    f("DCGM_FI_DEV_FB_USED", "nvidia_memory_used", 1.048576e-3, "GB", "NVIDIA GPU Memory Used"),
    f("DCGM_FI_DEV_GPU_TEMP", "nvidia_temperature", 1.0, "°C", "NVIDIA GPU Temperature"),
    // ratio → percent
    f("DCGM_FI_PROF_SM_ACTIVE", "nvidia_sm_utilization", 100.0, "%", "NVIDIA SM Utilization"),
    f("DCGM_FI_DEV_DEC_UTIL", "nvidia_decoder_utilization", 1.0, "%", "NVIDIA Decoder Utilization"),
    f("DCGM_FI_DEV_ENC_UTIL", "nvidia_encoder_utilization", 1.0, "%", "NVIDIA Encoder Utilization"),
    f("DCGM_FI_DEV_XID_ERRORS", "nvidia_xid_errors", 1.0, "count", "NVIDIA XID Errors"),
    // ns → µs
    f("DCGM_FI_DEV_POWER_VIOLATION", "nvidia_power_violation", 1e-3, "us", "NVIDIA Power Violation"),
];

/// Who a GPU is (its DCGM labels).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct GpuId {
    pub index: u32,
    pub uuid: Option<String>,
    pub model_name: Option<String>,
    pub pci_bus_id: Option<String>,
    pub device: Option<String>,
    pub hostname: Option<String>,
    pub namespace: Option<String>,
    pub pod_name: Option<String>,
}

/// One GPU at one scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuRecord {
    pub timestamp_ns: u64,
    /// The exporter's URL (as shown: credentials redacted).
    pub url: String,
    pub gpu: GpuId,
    /// Values of [`DCGM_FIELDS`] (by position) in AIPerf's units.
    pub values: [Option<f64>; 11],
}

/// The GPUs of one exporter page, in GPU index order; samples without a numeric `gpu` label and
/// values that are not finite are left out, as AIPerf does.
pub fn records_of(timestamp_ns: u64, url: &str, families: &[Family]) -> Vec<GpuRecord> {
    let mut gpus: BTreeMap<u32, GpuRecord> = BTreeMap::new();
    for fam in families {
        let Some(i) = DCGM_FIELDS.iter().position(|d| d.dcgm == fam.name.trim_end_matches("_total")) else {
            continue;
        };
        for s in &fam.samples {
            let label = |k: &str| s.labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            let Some(index) = label("gpu").and_then(|g| g.parse::<u32>().ok()) else {
                continue;
            };
            if !s.value.is_finite() {
                continue;
            }
            let rec = gpus.entry(index).or_insert_with(|| GpuRecord {
                timestamp_ns,
                url: url.to_owned(),
                gpu: GpuId {
                    index,
                    uuid: label("UUID"),
                    model_name: label("modelName"),
                    pci_bus_id: label("pci_bus_id"),
                    device: label("device"),
                    hostname: label("Hostname"),
                    namespace: label("namespace"),
                    pod_name: label("pod"),
                },
                values: [None; 11],
            });
            rec.values[i] = Some(s.value * DCGM_FIELDS[i].scale);
        }
    }
    gpus.into_values().collect()
}

impl GpuRecord {
    /// Its line of `gpu_telemetry_export.jsonl` (AIPerf's `TelemetryRecord`; absent values left
    /// out), without the newline.
    pub fn jsonl_line(&self) -> String {
        let mut m = Map::new();
        let g = &self.gpu;
        m.insert("gpu_index".into(), json!(g.index));
        for (k, v) in [
            ("gpu_uuid", &g.uuid),
            ("gpu_model_name", &g.model_name),
            ("pci_bus_id", &g.pci_bus_id),
            ("device", &g.device),
            ("hostname", &g.hostname),
            ("namespace", &g.namespace),
            ("pod_name", &g.pod_name),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        m.insert("platform".into(), json!("nvidia"));
        m.insert("timestamp_ns".into(), json!(self.timestamp_ns));
        m.insert("telemetry_source_url".into(), json!(self.url));
        let data: Map<String, Value> = DCGM_FIELDS
            .iter()
            .zip(self.values)
            .filter_map(|(d, v)| v.map(|v| (d.field.to_owned(), json!(v))))
            .collect();
        m.insert("telemetry_data".into(), Value::Object(data));
        Value::Object(m).to_string()
    }
}

impl GpuRecord {
    /// Reads a line of `gpu_telemetry_export.jsonl` (AIPerf's `TelemetryRecord`, ours or
    /// AIPerf's); fields other than the DCGM ones are left out. An error names the field.
    pub fn from_jsonl_line(line: &str) -> Result<GpuRecord, String> {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let index = v.get("gpu_index").and_then(Value::as_u64).and_then(|i| u32::try_from(i).ok());
        let index = index.ok_or_else(|| format!("gpu_index: expected a GPU index, found {}", v["gpu_index"]))?;
        let timestamp_ns = v.get("timestamp_ns").and_then(Value::as_u64);
        let timestamp_ns = timestamp_ns
            .ok_or_else(|| format!("timestamp_ns: expected Unix nanoseconds, found {}", v["timestamp_ns"]))?;
        let data = v.get("telemetry_data").and_then(Value::as_object);
        let data = data.ok_or_else(|| format!("telemetry_data: expected an object, found {}", v["telemetry_data"]))?;
        let mut values = [None; 11];
        for (slot, d) in values.iter_mut().zip(&DCGM_FIELDS) {
            *slot = match data.get(d.field) {
                None | Some(Value::Null) => None,
                Some(x) => Some(
                    x.as_f64().ok_or_else(|| format!("telemetry_data.{}: expected a number, found {x}", d.field))?,
                ),
            };
        }
        Ok(GpuRecord {
            timestamp_ns,
            url: s("telemetry_source_url").unwrap_or_default(),
            gpu: GpuId {
                index,
                uuid: s("gpu_uuid"),
                model_name: s("gpu_model_name"),
                pci_bus_id: s("pci_bus_id"),
                device: s("device"),
                hostname: s("hostname"),
                namespace: s("namespace"),
                pod_name: s("pod_name"),
            },
            values,
        })
    }
}

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

/// AIPerf's GPU telemetry counters: cumulative since the GPU started, summarised by their rise
/// over the window rather than by statistics.
const COUNTERS: [&str; 3] = ["nvidia_energy_consumption", "nvidia_xid_errors", "nvidia_power_violation"];

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

/// One of AIPerf's GPU energy-efficiency metrics, written once per vendor as `nvidia_<name>` or
/// `amd_<name>`: the name after the vendor, the header and the unit, in AIPerf's console order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EfficiencyMetric {
    pub name: &'static str,
    pub header: &'static str,
    pub unit: &'static str,
}

const fn e(name: &'static str, header: &'static str, unit: &'static str) -> EfficiencyMetric {
    EfficiencyMetric { name, header, unit }
}

/// AIPerf's energy-efficiency metrics (`power_efficiency_metrics.py`), in its display order.
pub const EFFICIENCY_METRICS: [EfficiencyMetric; 12] = [
    e("energy_delay_product", "Energy Delay Product", "J*s"),
    e("performance_per_watt", "Performance per Watt", "requests/sec/W"),
    e("output_tps_per_watt", "Output Tokens per Second per Watt", "tokens/sec/W"),
    e("goodput_per_watt", "Goodput per Watt", "good-req/s/W"),
    e("average_gpu_power", "Average GPU Power", "W"),
    e("total_gpu_energy", "Total GPU Energy", "J"),
    e("total_gpu_power", "Total GPU Power", "W"),
    e("energy_per_total_token", "Energy per Total Token", "mJ/token"),
    e("energy_per_output_token", "Energy per Output Token", "mJ/token"),
    e("energy_per_request", "Energy per Request", "joules/request"),
    e("output_tokens_per_joule", "Output Tokens per Joule", "tokens/J"),
    e("energy_per_user", "Energy per User", "joules/user"),
];

/// The GPU vendors AIPerf writes energy-efficiency metrics for, with the title of their console
/// table, in the order of AIPerf's console.
pub const EFFICIENCY_VENDORS: [(&str, &str); 2] =
    [("nvidia", "GPU Power Efficiency (NVIDIA)"), ("amd", "GPU Power Efficiency (AMD)")];

/// One energy-efficiency value of one vendor's GPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyMetric {
    /// `nvidia` or `amd`.
    pub vendor: &'static str,
    pub metric: &'static EfficiencyMetric,
    pub value: f64,
}

impl EnergyMetric {
    /// Its key in the summary (`nvidia_total_gpu_energy`).
    pub fn tag(&self) -> String {
        format!("{}_{}", self.vendor, self.metric.name)
    }

    /// The metric of a summary key, and its vendor.
    pub fn of_tag(tag: &str) -> Option<(&'static str, &'static EfficiencyMetric)> {
        let (vendor, _) =
            EFFICIENCY_VENDORS.iter().find(|(v, _)| tag.strip_prefix(v).is_some_and(|r| r.starts_with('_')))?;
        let name = &tag[vendor.len() + 1..];
        Some((vendor, EFFICIENCY_METRICS.iter().find(|m| m.name == name)?))
    }

    /// Where AIPerf's console shows it: NVIDIA's table, then AMD's, each in the display order.
    fn console_rank(&self) -> (usize, usize) {
        let v = EFFICIENCY_VENDORS.iter().position(|(n, _)| *n == self.vendor).unwrap_or(usize::MAX);
        (v, EFFICIENCY_METRICS.iter().position(|m| m == self.metric).unwrap_or(usize::MAX))
    }

    /// The energy-efficiency metrics of a summary (`profile_export_aiperf.json`, ours or
    /// AIPerf's): every `nvidia_*`/`amd_*` key of the table with a numeric `avg`, in the
    /// summary's order. A key of the table holding anything else is an error naming it.
    pub fn of_summary(v: &Value) -> Result<Vec<EnergyMetric>, String> {
        let mut out = Vec::new();
        for (tag, m) in v.as_object().into_iter().flatten() {
            let Some((vendor, metric)) = EnergyMetric::of_tag(tag) else { continue };
            match m.get("avg").and_then(Value::as_f64) {
                Some(value) => out.push(EnergyMetric { vendor, metric, value }),
                None => {
                    return Err(format!(
                        "{tag}: expected {{\"unit\": \"{}\", \"avg\": NUMBER}}, found {m}",
                        metric.unit
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The metrics in the order of AIPerf's console tables, each vendor's under its title:
    /// (title, metrics).
    pub fn console_groups(metrics: &[EnergyMetric]) -> Vec<(&'static str, Vec<&EnergyMetric>)> {
        let mut sorted: Vec<&EnergyMetric> = metrics.iter().collect();
        sorted.sort_by_key(|m| m.console_rank());
        EFFICIENCY_VENDORS
            .iter()
            .map(|(v, title)| (*title, sorted.iter().copied().filter(|m| m.vendor == *v).collect::<Vec<_>>()))
            .filter(|(_, ms)| !ms.is_empty())
            .collect()
    }
}

/// One vendor's GPUs over the profiling window: what AIPerf's energy-efficiency analyzer reads
/// from its GPU telemetry.
#[derive(Clone, Debug, PartialEq)]
pub struct VendorEnergy {
    pub vendor: &'static str,
    /// The GPUs' energy counters' rise (J), summed, and how many GPUs had one.
    pub energy_j: (f64, usize),
    /// The GPUs' average power (W), summed, and how many GPUs had one.
    pub power_w: (f64, usize),
}

/// The run's numbers AIPerf's energy-efficiency metrics are divided by (its summary's values of
/// the same keys), `None` where the summary has no such value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EfficiencyInputs {
    /// The profiling window: time zero to the last request's end (s).
    pub duration_s: f64,
    pub total_osl: Option<f64>,
    pub total_isl: Option<f64>,
    pub request_count: Option<f64>,
    /// `request_latency`'s average (ms).
    pub request_latency_ms: Option<f64>,
    pub request_throughput: Option<f64>,
    pub output_token_throughput: Option<f64>,
    pub goodput: Option<f64>,
    /// The profiling phase's concurrency, when it has a positive one.
    pub concurrency: Option<u64>,
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

/// AIPerf's energy-efficiency metrics (its `EnergyEfficiencyAnalyzer`), each vendor's in the
/// order AIPerf emits them. The energy is the counters' rise, or, without one, the power times
/// the window; the average power is that energy over the window. A metric is left out where
/// AIPerf leaves it out: its input absent or zero (the per-watt ones: absent; goodput per watt:
/// without goodput SLOs; energy per user: without a concurrency).
pub fn efficiency(vendors: &[VendorEnergy], x: &EfficiencyInputs) -> Vec<EnergyMetric> {
    let mut out = Vec::new();
    for v in vendors {
        let mut put = |name: &str, value: f64| {
            if let Some(metric) = EFFICIENCY_METRICS.iter().find(|m| m.name == name) {
                out.push(EnergyMetric { vendor: v.vendor, metric, value });
            }
        };
        let (energy_j, energy_n) = v.energy_j;
        let (power_w, power_n) = v.power_w;
        if power_n > 0 {
            put("total_gpu_power", power_w);
        }
        let d = x.duration_s;
        let (energy, avg_power) = if energy_n > 0 && energy_j > 0.0 {
            (energy_j, if d > 0.0 { energy_j / d } else { 0.0 })
        } else if power_n > 0 && power_w > 0.0 && d > 0.0 {
            (power_w * d, power_w)
        } else {
            continue;
        };
        if energy <= 0.0 {
            continue;
        }
        if avg_power > 0.0 {
            put("average_gpu_power", avg_power);
        }
        put("total_gpu_energy", energy);
        let nonzero = |x: Option<f64>| x.filter(|&v| v != 0.0);
        let output_tokens = nonzero(x.total_osl);
        if let Some(n) = output_tokens {
            put("output_tokens_per_joule", n / energy);
            put("energy_per_output_token", energy * 1000.0 / n);
        }
        let total_tokens = nonzero(x.total_isl).unwrap_or(0.0) + output_tokens.unwrap_or(0.0);
        if total_tokens > 0.0 {
            put("energy_per_total_token", energy * 1000.0 / total_tokens);
        }
        let per_request = nonzero(x.request_count).map(|n| energy / n);
        if let Some(j) = per_request {
            put("energy_per_request", j);
        }
        if let Some(c) = x.concurrency.filter(|&c| c > 0) {
            put("energy_per_user", energy / c as f64);
        }
        if let (Some(j), Some(ms)) = (per_request, nonzero(x.request_latency_ms)) {
            put("energy_delay_product", j * (ms / 1000.0));
        }
        if avg_power > 0.0 {
            for (name, value) in [
                ("performance_per_watt", x.request_throughput),
                ("output_tps_per_watt", x.output_token_throughput),
                ("goodput_per_watt", x.goodput),
            ] {
                if let Some(value) = value {
                    put(name, value / avg_power);
                }
            }
        }
    }
    out
}

/// One GPU field's statistics as AIPerf's `JsonMetricResult` holds them (absent ones `None`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuStats {
    pub unit: String,
    pub avg: Option<f64>,
    /// At [`REPORT_PERCENTILES`], in order.
    pub percentiles: [Option<f64>; 9],
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub std: Option<f64>,
    pub count: Option<u64>,
    pub sum: Option<f64>,
}

impl GpuStats {
    fn new(unit: &str) -> GpuStats {
        GpuStats { unit: unit.to_owned(), ..GpuStats::default() }
    }

    /// The statistics in AIPerf's order (`avg`, `p1`…`p99`, `min`, `max`, `std`, `count`, `sum`).
    fn keys(&self) -> Vec<(String, Value)> {
        let mut v = vec![("avg".to_owned(), self.avg.map(|x| json!(x)))];
        v.extend(REPORT_PERCENTILES.iter().zip(self.percentiles).map(|(p, x)| (format!("p{p}"), x.map(|x| json!(x)))));
        v.extend([
            ("min".to_owned(), self.min.map(|x| json!(x))),
            ("max".to_owned(), self.max.map(|x| json!(x))),
            ("std".to_owned(), self.std.map(|x| json!(x))),
            ("count".to_owned(), self.count.map(|x| json!(x))),
            ("sum".to_owned(), self.sum.map(|x| json!(x))),
        ]);
        v.into_iter().filter_map(|(k, x)| x.map(|x| (k, x))).collect()
    }

    /// The statistic named by AIPerf's key (`avg`, `min`, `max`, `std`, `sum`, `count`, `p50`, …).
    pub fn get(&self, key: &str) -> Option<f64> {
        match key {
            "avg" => self.avg,
            "min" => self.min,
            "max" => self.max,
            "std" => self.std,
            "sum" => self.sum,
            "count" => self.count.map(|c| c as f64),
            _ => {
                let p: f64 = key.strip_prefix('p')?.parse().ok()?;
                REPORT_PERCENTILES.iter().position(|&q| q == p).and_then(|i| self.percentiles[i])
            }
        }
    }
}

/// One GPU of AIPerf's `telemetry_data` (its `GpuSummary`).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuExport {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub platform: String,
    pub hostname: Option<String>,
    pub namespace: Option<String>,
    pub pod_name: Option<String>,
    /// (field, statistics), in the order of AIPerf's GPU metrics.
    pub metrics: Vec<(String, GpuStats)>,
}

/// AIPerf's `telemetry_data` block of `profile_export_aiperf.json` (`TelemetryExportData`): the
/// exporters that answered, the window, and each GPU's statistics by endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct TelemetryExport {
    pub endpoints_configured: Vec<String>,
    pub endpoints_successful: Vec<String>,
    pub start_time: String,
    pub end_time: String,
    /// (endpoint as AIPerf shows it, [`endpoint_display`]; its GPUs).
    pub endpoints: Vec<(String, Vec<GpuExport>)>,
}

impl DcgmField {
    /// Its name without the vendor and a leading "GPU" (`Power Usage`, `Energy Consumption`).
    pub fn short(&self) -> &'static str {
        self.display.trim_start_matches("NVIDIA ").trim_start_matches("GPU ")
    }

    /// Whether AIPerf summarises it as a counter: its rise over the run (the `avg` key alone).
    pub fn is_counter(&self) -> bool {
        COUNTERS.contains(&self.field)
    }

    /// The DCGM field AIPerf writes under `field`.
    pub fn of_field(field: &str) -> Option<&'static DcgmField> {
        DCGM_FIELDS.iter().find(|d| d.field == field)
    }
}

/// One of a GPU's optional labels.
type Label = fn(&GpuExport) -> &Option<String>;

/// The key of a GPU under its endpoint.
fn gpu_key(index: u32) -> String {
    format!("gpu_{index}")
}

impl TelemetryExport {
    /// The block as AIPerf writes it (absent values left out).
    pub fn to_json(&self) -> Value {
        let mut endpoints = Map::new();
        for (display, gpus) in &self.endpoints {
            let mut map = Map::new();
            for g in gpus {
                let mut m = Map::new();
                m.insert("gpu_index".into(), json!(g.index));
                m.insert("gpu_name".into(), json!(g.name));
                m.insert("gpu_uuid".into(), json!(g.uuid));
                m.insert("platform".into(), json!(g.platform));
                for (k, v) in [("hostname", &g.hostname), ("namespace", &g.namespace), ("pod_name", &g.pod_name)] {
                    if let Some(v) = v {
                        m.insert(k.into(), json!(v));
                    }
                }
                let metrics: Map<String, Value> = g
                    .metrics
                    .iter()
                    .map(|(k, s)| {
                        let mut o = Map::new();
                        o.insert("unit".into(), json!(s.unit));
                        o.extend(s.keys());
                        (k.clone(), Value::Object(o))
                    })
                    .collect();
                m.insert("metrics".into(), Value::Object(metrics));
                map.insert(gpu_key(g.index), Value::Object(m));
            }
            endpoints.insert(display.clone(), json!({ "gpus": map }));
        }
        json!({
            "summary": {
                "endpoints_configured": self.endpoints_configured,
                "endpoints_successful": self.endpoints_successful,
                "start_time": self.start_time,
                "end_time": self.end_time,
            },
            "endpoints": endpoints,
            "error_summary": [],
        })
    }

    /// Reads the block back (ours or AIPerf's); an error names the key and what it holds. GPU
    /// fields beyond the DCGM ones (AIPerf's other collectors) are kept as they are.
    pub fn from_json(v: &Value) -> Result<TelemetryExport, String> {
        let at =
            |path: &str, what: &str, found: &Value| format!("telemetry_data.{path}: expected {what}, found {found}");
        let obj = |path: &str, v: &'_ Value| -> Result<Map<String, Value>, String> {
            v.as_object().cloned().ok_or_else(|| at(path, "an object", v))
        };
        let root = obj("", v).map_err(|_| format!("telemetry_data: expected an object, found {v}"))?;
        let summary = root.get("summary").map(|s| obj("summary", s)).transpose()?.unwrap_or_default();
        let strings = |k: &str| -> Result<Vec<String>, String> {
            match summary.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|u| u.as_str().map(str::to_owned).ok_or_else(|| at(&format!("summary.{k}"), "strings", u)))
                    .collect(),
                Some(other) => Err(at(&format!("summary.{k}"), "a list of URLs", other)),
            }
        };
        let text = |k: &str| summary.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut endpoints = Vec::new();
        let empty = Value::Object(Map::new());
        for (display, e) in obj("endpoints", root.get("endpoints").unwrap_or(&empty))? {
            let path = format!("endpoints.{display}.gpus");
            let mut gpus = Vec::new();
            for (key, g) in obj(&path, obj(&format!("endpoints.{display}"), &e)?.get("gpus").unwrap_or(&empty))? {
                let path = format!("{path}.{key}");
                let g = obj(&path, &g)?;
                let index = g.get("gpu_index").unwrap_or(&Value::Null);
                let index = index
                    .as_u64()
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or_else(|| at(&format!("{path}.gpu_index"), "a GPU index (0 to 4294967295)", index))?;
                let s = |k: &str| g.get(k).and_then(Value::as_str).map(str::to_owned);
                let mut metrics = Vec::new();
                for (field, m) in obj(&format!("{path}.metrics"), g.get("metrics").unwrap_or(&empty))? {
                    let mpath = format!("{path}.metrics.{field}");
                    let m = obj(&mpath, &m)?;
                    let num = |k: &str| -> Result<Option<f64>, String> {
                        match m.get(k) {
                            None | Some(Value::Null) => Ok(None),
                            Some(x) => x.as_f64().map(Some).ok_or_else(|| at(&format!("{mpath}.{k}"), "a number", x)),
                        }
                    };
                    let count = match m.get("count") {
                        None | Some(Value::Null) => None,
                        Some(x) => Some(x.as_u64().ok_or_else(|| at(&format!("{mpath}.count"), "a count", x))?),
                    };
                    let mut percentiles = [None; 9];
                    for (slot, p) in percentiles.iter_mut().zip(REPORT_PERCENTILES) {
                        *slot = num(&format!("p{p}"))?;
                    }
                    let stats = GpuStats {
                        unit: m.get("unit").and_then(Value::as_str).unwrap_or_default().to_owned(),
                        avg: num("avg")?,
                        percentiles,
                        min: num("min")?,
                        max: num("max")?,
                        std: num("std")?,
                        count,
                        sum: num("sum")?,
                    };
                    metrics.push((field, stats));
                }
                gpus.push(GpuExport {
                    index,
                    name: s("gpu_name").unwrap_or_default(),
                    uuid: s("gpu_uuid").unwrap_or_default(),
                    platform: s("platform").unwrap_or_default(),
                    hostname: s("hostname"),
                    namespace: s("namespace"),
                    pod_name: s("pod_name"),
                    metrics,
                });
            }
            endpoints.push((display, gpus));
        }
        Ok(TelemetryExport {
            endpoints_configured: strings("endpoints_configured")?,
            endpoints_successful: strings("endpoints_successful")?,
            start_time: text("start_time"),
            end_time: text("end_time"),
            endpoints,
        })
    }

    /// The GPU section AIPerf's `profile_export_aiperf.csv` ends with: two blank lines, then one
    /// row per GPU and field (`Endpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,min,max,
    /// sum,p1…p99,std`, then `Hostname`, `Namespace`, `Pod Name` where a GPU has one), lines
    /// ending in CRLF.
    pub fn csv_section(&self) -> String {
        let gpus = || self.endpoints.iter().flat_map(|(d, gs)| gs.iter().map(move |g| (d, g)));
        let optional: [(&str, Label); 3] =
            [("Hostname", |g| &g.hostname), ("Namespace", |g| &g.namespace), ("Pod Name", |g| &g.pod_name)];
        let optional: Vec<_> = optional.into_iter().filter(|(_, f)| gpus().any(|(_, g)| f(g).is_some())).collect();
        let mut out = String::from("\r\n\r\nEndpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,min,max,sum");
        for p in REPORT_PERCENTILES {
            out.push_str(&format!(",p{p}"));
        }
        out.push_str(",std");
        for (h, _) in &optional {
            out.push_str(&format!(",{h}"));
        }
        out.push_str("\r\n");
        let num = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.2}"));
        for (display, g) in gpus() {
            for d in &DCGM_FIELDS {
                let Some((_, s)) = g.metrics.iter().find(|(k, _)| k == d.field) else {
                    continue;
                };
                let mut row: Vec<String> = vec![
                    csv::field(display),
                    g.index.to_string(),
                    csv::field(&g.name),
                    csv::field(&g.uuid),
                    csv::field(&g.platform),
                    csv::field(&format!("{} ({})", d.display, d.unit)),
                ];
                row.extend([s.avg, s.min, s.max, s.sum].map(num));
                row.extend(s.percentiles.map(num));
                row.push(num(s.std));
                // Python's str() of a missing value, as AIPerf writes it.
                row.extend(optional.iter().map(|(_, f)| f(g).as_deref().map_or_else(|| "None".to_owned(), csv::field)));
                out.push_str(&row.join(","));
                out.push_str("\r\n");
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::prometheus::{DEFAULT_LIMITS, parse};

    const PAGE: &str = "\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\"} 87
DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-bbbb\",pci_bus_id=\"00000000:02:00.0\",device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\"} 12
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-aaaa\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\"} 40000
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-aaaa\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\"} 512.5
# HELP DCGM_FI_PROF_SM_ACTIVE Ratio of cycles an SM has at least 1 warp assigned.
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-aaaa\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\"} 0.5
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-aaaa\"} 1980
DCGM_FI_DEV_GPU_TEMP{UUID=\"no-index\"} 50
";

    #[test]
    fn a_dcgm_page_becomes_one_record_per_gpu_in_aiperfs_units() {
        let fams = parse(PAGE, DEFAULT_LIMITS).unwrap();
        let recs = records_of(7, "http://node1:9400/metrics", &fams);
        assert_eq!(recs.len(), 2);
        let r = &recs[0];
        assert_eq!(r.gpu.uuid.as_deref(), Some("GPU-aaaa"));
        assert_eq!(r.gpu.pci_bus_id.as_deref(), Some("00000000:01:00.0"));
        assert_eq!(r.values[2], Some(87.0));
        assert!((r.values[4].unwrap() - 41.94304).abs() < 1e-9);
        assert_eq!(r.values[6], Some(50.0));
        assert_eq!(
            r.jsonl_line(),
            "{\"gpu_index\":0,\"gpu_uuid\":\"GPU-aaaa\",\"gpu_model_name\":\"NVIDIA H100 80GB HBM3\",\
             \"pci_bus_id\":\"00000000:01:00.0\",\"device\":\"nvidia0\",\"hostname\":\"node1\",\"platform\":\"nvidia\",\
             \"timestamp_ns\":7,\"telemetry_source_url\":\"http://node1:9400/metrics\",\"telemetry_data\":\
             {\"nvidia_power_usage\":512.5,\"nvidia_gpu_utilization\":87.0,\"nvidia_memory_used\":41.94304,\
             \"nvidia_sm_utilization\":50.0}}"
        );
        let mut t = GpuTelemetry::default();
        t.add(&recs);
        t.add(&records_of(8, "http://node1:9400/metrics", &fams));
        let s = t.summaries();
        assert_eq!(s.len(), 2);
        let util = s[0].metrics.iter().find(|(d, _)| d.field == "nvidia_gpu_utilization").unwrap();
        assert_eq!((util.1.count, util.1.avg), (2, 87.0));
        assert_eq!(s[1].metrics.len(), 1);
        assert_eq!(
            t.console_lines()[1],
            "GPU 1 NVIDIA H100 80GB HBM3 (GPU-bbbb, http://node1:9400/metrics): Utilization avg 12.0 max 12.0 %"
        );
    }

    fn record(t: u64, url: &str, power: Option<f64>, energy: f64) -> GpuRecord {
        let mut values = [None; 11];
        values[0] = power;
        values[1] = Some(energy);
        values[2] = Some(50.0);
        GpuRecord {
            timestamp_ns: t,
            url: url.into(),
            gpu: GpuId {
                index: 3,
                uuid: Some("GPU-cccc".into()),
                model_name: Some("H100".into()),
                hostname: Some("node, 2".into()),
                ..GpuId::default()
            },
            values,
        }
    }

    #[test]
    fn the_summary_block_is_aiperfs_over_the_profiling_window() {
        let url = "http://user@node2:9400/metrics?x=1";
        let mut t = GpuTelemetry::default();
        // Before the window (the counters' base), in it (one scrape without power), after it.
        let scrapes = [(5, Some(900.0), 10.0), (20, Some(100.0), 11.0), (30, None, 12.5), (40, Some(300.0), 14.0)];
        for (ts, p, e) in scrapes.into_iter().chain([(41, Some(200.0), 13.0), (90, Some(1.0), 99.0)]) {
            t.add(&[record(ts, url, p, e)]);
        }
        let x = t.export(Some(10), Some(41), ("a".into(), "b".into()));
        assert_eq!(endpoint_display(url), "user@node2:9400");
        assert_eq!(endpoint_display("node:9400"), "node:9400");
        assert_eq!(endpoint_display("https://h/api/metrics"), "h/api");
        assert_eq!(x.endpoints_configured, vec![url.to_owned()]);
        let (display, gpus) = &x.endpoints[0];
        assert_eq!(display, "user@node2:9400");
        let g = &gpus[0];
        let get = |k: &str| &g.metrics.iter().find(|(f, _)| f == k).unwrap().1;
        // Power: 100, 300, 200 over four scrapes of the window.
        let p = get("nvidia_power_usage");
        assert_eq!(
            (p.avg, p.min, p.max, p.sum, p.count),
            (Some(200.0), Some(100.0), Some(300.0), Some(600.0), Some(4))
        );
        assert_eq!(p.std, Some(100.0));
        assert_eq!(p.get("p50"), Some(200.0));
        assert_eq!(p.unit, "W");
        // Energy, a counter: from 10 (before the window) to 13 (its last), its rise only.
        let e = get("nvidia_energy_consumption");
        assert_eq!(*e, GpuStats { unit: "MJ".into(), avg: Some(3.0), ..GpuStats::default() });
        let u = get("nvidia_gpu_utilization");
        assert_eq!((u.std, u.count), (Some(0.0), Some(4)));
        // No window start: the counter rises from its first value in the window; one that went
        // back rose by 0.
        let all = t.export(None, None, ("a".into(), "b".into()));
        let e = all.endpoints[0].1[0].metrics.iter().find(|(f, _)| f == "nvidia_energy_consumption").unwrap();
        assert_eq!(e.1.avg, Some(89.0));
        let empty = t.export(Some(100), None, ("a".into(), "b".into()));
        assert!(empty.endpoints[0].1[0].metrics.is_empty());
        let mut back = GpuTelemetry::default();
        back.add(&[record(1, url, None, 5.0), record(2, url, None, 4.0)]);
        let e = &back.export(None, None, ("a".into(), "b".into())).endpoints[0].1[0].metrics[0];
        assert_eq!((e.0.as_str(), e.1.avg), ("nvidia_energy_consumption", Some(0.0)));

        let j = x.to_json();
        let gj = &j["endpoints"]["user@node2:9400"]["gpus"]["gpu_3"];
        assert_eq!(gj["gpu_name"], "H100");
        assert_eq!(gj["gpu_uuid"], "GPU-cccc");
        assert_eq!(gj["platform"], "nvidia");
        assert_eq!(gj["hostname"], "node, 2");
        assert!(gj.get("namespace").is_none());
        let keys: Vec<&String> = gj["metrics"]["nvidia_power_usage"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std",
                "count", "sum"
            ]
        );
        assert_eq!(gj["metrics"]["nvidia_energy_consumption"], json!({"unit": "MJ", "avg": 3.0}));
        assert_eq!(j["summary"]["start_time"], "a");
        assert_eq!(j["error_summary"], json!([]));
        assert_eq!(TelemetryExport::from_json(&j).unwrap(), x);

        let csv = x.csv_section();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(&lines[..2], ["", ""]);
        assert_eq!(
            lines[2],
            "Endpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std,Hostname"
        );
        assert_eq!(
            lines[3],
            "user@node2:9400,3,H100,GPU-cccc,nvidia,NVIDIA GPU Power Usage (W),200.00,100.00,300.00,600.00,\
             102.00,110.00,120.00,150.00,200.00,250.00,280.00,290.00,298.00,100.00,\"node, 2\""
        );
        assert_eq!(
            lines[4],
            "user@node2:9400,3,H100,GPU-cccc,nvidia,NVIDIA Energy Consumption (MJ),3.00,,,,,,,,,,,,,,\"node, 2\""
        );
        assert_eq!(lines.len(), 7, "{csv}");

        let bad = json!({"endpoints": {"h": {"gpus": {"gpu_0": {"gpu_index": 0, "metrics": {"x": {"avg": "hot"}}}}}}});
        assert_eq!(
            TelemetryExport::from_json(&bad).unwrap_err(),
            "telemetry_data.endpoints.h.gpus.gpu_0.metrics.x.avg: expected a number, found \"hot\""
        );
        let bad = json!({"endpoints": {"h": {"gpus": {"gpu_0": {"gpu_index": -1}}}}});
        assert!(TelemetryExport::from_json(&bad).unwrap_err().contains("gpu_0.gpu_index: expected a GPU index"));
    }

    /// AIPerf's own run with `--gpu-telemetry` (`tests/fixtures/aiperf-0.13.0-runs/gpu-telemetry`):
    /// its records, summarised here over its window, give its `telemetry_data`.
    #[test]
    fn aiperfs_telemetry_data_from_its_records() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/aiperf-0.13.0-runs/gpu-telemetry");
        let text = std::fs::read_to_string(format!("{dir}/profile_export_aiperf.json")).unwrap();
        let summary: Value = serde_json::from_str(&text).unwrap();
        let theirs = TelemetryExport::from_json(&summary["telemetry_data"]).unwrap();
        let mut t = GpuTelemetry::default();
        for line in std::fs::read_to_string(format!("{dir}/gpu_telemetry_export.jsonl")).unwrap().lines() {
            t.add(&[GpuRecord::from_jsonl_line(line).unwrap()]);
        }
        // Its window in the summary, to the microsecond (local time: the fixture's machine is UTC).
        let ns = |s: &str| crate::datetime::parse_datetime(s).unwrap().unix_ns as u64;
        let (start, end) = (ns(&theirs.start_time), ns(&theirs.end_time) + 999);
        let ours = t.export(Some(start), Some(end), (theirs.start_time.clone(), theirs.end_time.clone()));
        assert_eq!(ours.endpoints.len(), 1);
        let gpus = |x: &TelemetryExport| x.endpoints[0].1.iter().map(|g| g.metrics.len()).collect::<Vec<_>>();
        assert_eq!(gpus(&ours), [11, 11]);
        assert_eq!(ours, theirs);
        assert_eq!(ours.to_json(), summary["telemetry_data"]);
        let csv = std::fs::read_to_string(format!("{dir}/profile_export_aiperf.csv")).unwrap();
        assert!(csv.ends_with(&ours.csv_section()), "{}", ours.csv_section());
        assert!(GpuRecord::from_jsonl_line("{\"gpu_index\": 0}").unwrap_err().starts_with("timestamp_ns: expected"));
    }

    /// The same run's energy-efficiency metrics: its telemetry records over its window, divided by
    /// its summary's own numbers, give every `nvidia_*` value it wrote, in its order.
    #[test]
    fn aiperfs_energy_efficiency_from_its_telemetry() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/aiperf-0.13.0-runs/gpu-telemetry");
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{dir}/profile_export_aiperf.json")).unwrap())
                .unwrap();
        let mut t = GpuTelemetry::default();
        for line in std::fs::read_to_string(format!("{dir}/gpu_telemetry_export.jsonl")).unwrap().lines() {
            t.add(&[GpuRecord::from_jsonl_line(line).unwrap()]);
        }
        let ns = |s: &Value| crate::datetime::parse_datetime(s.as_str().unwrap()).unwrap().unix_ns as u64;
        let avg = |k: &str| summary[k]["avg"].as_f64();
        // The window to the nanosecond: its request throughput is the request count over it.
        let duration_ns = (avg("request_count").unwrap() / avg("request_throughput").unwrap() * 1e9).round();
        let (start, energy_end) =
            (ns(&summary["start_time"]), ns(&summary["telemetry_data"]["summary"]["end_time"]) + 999);
        let power_end = ns(&summary["end_time"]) + 999;
        let vendors = t.vendor_energy(Some(start), Some(energy_end), Some(power_end));
        assert_eq!(vendors.len(), 1);
        assert_eq!((vendors[0].energy_j.1, vendors[0].power_w.1), (2, 2));
        let inputs = EfficiencyInputs {
            duration_s: duration_ns / 1e9,
            total_osl: avg("total_osl"),
            total_isl: avg("total_isl"),
            request_count: avg("request_count"),
            request_latency_ms: avg("request_latency"),
            request_throughput: avg("request_throughput"),
            output_token_throughput: avg("output_token_throughput"),
            goodput: avg("goodput"),
            concurrency: Some(1),
        };
        let ours = efficiency(&vendors, &inputs);
        let theirs = EnergyMetric::of_summary(&summary).unwrap();
        assert_eq!(theirs.len(), 11);
        let tags = |x: &[EnergyMetric]| x.iter().map(EnergyMetric::tag).collect::<Vec<_>>();
        assert_eq!(tags(&ours), tags(&theirs));
        for (o, t) in ours.iter().zip(&theirs) {
            assert!(
                (o.value - t.value).abs() <= 1e-12 * t.value.abs(),
                "{}: ours {}, AIPerf's {}",
                o.tag(),
                o.value,
                t.value
            );
            assert_eq!(summary[o.tag()]["unit"], o.metric.unit);
        }
        // The console: one table, in AIPerf's order.
        let groups = EnergyMetric::console_groups(&ours);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].0, "GPU Power Efficiency (NVIDIA)");
        let headers: Vec<&str> = groups[0].1.iter().map(|m| m.metric.header).collect();
        assert_eq!(
            headers,
            [
                "Energy Delay Product",
                "Performance per Watt",
                "Output Tokens per Second per Watt",
                "Average GPU Power",
                "Total GPU Energy",
                "Total GPU Power",
                "Energy per Total Token",
                "Energy per Output Token",
                "Energy per Request",
                "Output Tokens per Joule",
                "Energy per User"
            ]
        );
    }

    #[test]
    fn energy_metrics_are_left_out_where_aiperf_leaves_them_out() {
        let tags = |v: &[VendorEnergy], x: &EfficiencyInputs| {
            efficiency(v, x).iter().map(EnergyMetric::tag).collect::<Vec<_>>()
        };
        let x = EfficiencyInputs {
            duration_s: 2.0,
            total_osl: Some(100.0),
            request_count: Some(10.0),
            request_throughput: Some(5.0),
            ..EfficiencyInputs::default()
        };
        // Power alone: the energy is the power over the window.
        let power_only = [VendorEnergy { vendor: "nvidia", energy_j: (0.0, 0), power_w: (300.0, 1) }];
        let m = efficiency(&power_only, &x);
        let value = |k: &str| m.iter().find(|e| e.tag() == k).map(|e| e.value);
        assert_eq!(value("nvidia_total_gpu_energy"), Some(600.0));
        assert_eq!(value("nvidia_average_gpu_power"), Some(300.0));
        assert_eq!(value("nvidia_energy_per_total_token"), Some(6000.0));
        assert_eq!(value("nvidia_performance_per_watt"), Some(5.0 / 300.0));
        // No latency, no concurrency, no output throughput, no goodput: those are absent.
        assert_eq!(
            tags(&power_only, &x),
            [
                "nvidia_total_gpu_power",
                "nvidia_average_gpu_power",
                "nvidia_total_gpu_energy",
                "nvidia_output_tokens_per_joule",
                "nvidia_energy_per_output_token",
                "nvidia_energy_per_total_token",
                "nvidia_energy_per_request",
                "nvidia_performance_per_watt"
            ]
        );
        // An energy counter that did not rise and no power: nothing; no window: the total power
        // and the energy but no average power nor per-watt metric.
        let flat = [VendorEnergy { vendor: "nvidia", energy_j: (0.0, 2), power_w: (0.0, 0) }];
        assert!(efficiency(&flat, &x).is_empty());
        let counter = [VendorEnergy { vendor: "nvidia", energy_j: (50.0, 1), power_w: (20.0, 1) }];
        let no_window = EfficiencyInputs { duration_s: 0.0, ..x };
        assert_eq!(
            tags(&counter, &no_window)[..3],
            ["nvidia_total_gpu_power", "nvidia_total_gpu_energy", "nvidia_output_tokens_per_joule"]
        );
        assert!(!tags(&counter, &no_window).iter().any(|t| t.ends_with("per_watt")));
        assert_eq!(EnergyMetric::of_tag("amd_energy_per_user").map(|(v, m)| (v, m.unit)), Some(("amd", "joules/user")));
        assert_eq!(EnergyMetric::of_tag("nvidia_power_usage"), None);
        // AIPerf's `amd_*` family read back: its console table after NVIDIA's.
        let both = json!({"amd_total_gpu_energy": {"unit": "J", "avg": 1.0}, "nvidia_energy_per_user": {"unit": "joules/user", "avg": 2.0}, "nvidia_total_gpu_power": {"unit": "W", "avg": 3.0}});
        let read = EnergyMetric::of_summary(&both).unwrap();
        let groups: Vec<(&str, Vec<String>)> = EnergyMetric::console_groups(&read)
            .into_iter()
            .map(|(t, ms)| (t, ms.iter().map(|m| m.tag()).collect()))
            .collect();
        assert_eq!(
            groups,
            [
                (
                    "GPU Power Efficiency (NVIDIA)",
                    vec!["nvidia_total_gpu_power".to_owned(), "nvidia_energy_per_user".to_owned()]
                ),
                ("GPU Power Efficiency (AMD)", vec!["amd_total_gpu_energy".to_owned()])
            ]
        );
        let bad = json!({"nvidia_total_gpu_energy": {"unit": "J", "avg": "lots"}});
        assert_eq!(
            EnergyMetric::of_summary(&bad).unwrap_err(),
            "nvidia_total_gpu_energy: expected {\"unit\": \"J\", \"avg\": NUMBER}, found {\"unit\":\"J\",\"avg\":\"lots\"}"
        );
    }
}
