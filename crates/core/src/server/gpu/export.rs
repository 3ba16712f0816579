//! AIPerf's `telemetry_data` block of `profile_export_aiperf.json`: each GPU's statistics by
//! endpoint, written as JSON and CSV and read back.

use serde_json::{Map, Value, json};

use super::dcgm::DCGM_FIELDS;
use crate::csv;
use crate::stats::REPORT_PERCENTILES;

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
    pub(super) fn new(unit: &str) -> GpuStats {
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
