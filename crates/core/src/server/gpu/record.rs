//! One scrape's GPUs: the records of an exporter page, and their line of
//! `gpu_telemetry_export.jsonl` written and read back.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::dcgm::DCGM_FIELDS;
use crate::server::prometheus::Family;

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
