//! GPU telemetry from NVIDIA DCGM exporters (`--gpu-telemetry`), as AIPerf reads it: every
//! sample with a `gpu` label is one GPU's (its `UUID`, `modelName`, `pci_bus_id`, `device`,
//! `Hostname`, `namespace` and `pod` labels name it), the DCGM fields AIPerf knows
//! ([`DCGM_FIELDS`]) are renamed and scaled to its units, and each scrape of each GPU is one
//! line of `gpu_telemetry_export.jsonl` (AIPerf's `TelemetryRecord`, absent values left out).
//! [`GpuTelemetry`] keeps every GPU's values for the run's per-GPU summary.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::server::prometheus::Family;
use crate::stats::Distribution;

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

/// One GPU's labels and the values of each of [`DCGM_FIELDS`] over the run.
type GpuValues = (GpuId, [Vec<f64>; 11]);

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
            let entry =
                self.gpus.entry((r.url.clone(), r.gpu.index)).or_insert_with(|| (r.gpu.clone(), Default::default()));
            for (list, v) in entry.1.iter_mut().zip(r.values) {
                if let Some(v) = v {
                    list.push(v);
                }
            }
        }
    }

    /// Every GPU's summary, by exporter URL and GPU index.
    pub fn summaries(&self) -> Vec<GpuSummary> {
        self.gpus
            .iter()
            .map(|((url, _), (gpu, values))| GpuSummary {
                url: url.clone(),
                gpu: gpu.clone(),
                metrics: DCGM_FIELDS
                    .iter()
                    .zip(values)
                    .filter_map(|(d, v)| Distribution::of(v).map(|dist| (*d, dist)))
                    .collect(),
            })
            .collect()
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
                        let short = d.display.trim_start_matches("NVIDIA ").trim_start_matches("GPU ");
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
}
