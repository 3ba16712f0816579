//! GPU telemetry from NVIDIA DCGM exporters (`--gpu-telemetry`), as AIPerf reads it: every
//! sample with a `gpu` label is one GPU's (its `UUID`, `modelName`, `pci_bus_id`, `device`,
//! `Hostname`, `namespace` and `pod` labels name it), the DCGM fields AIPerf knows
//! ([`DCGM_FIELDS`]) are renamed and scaled to its units, and each scrape of each GPU is one
//! line of `gpu_telemetry_export.jsonl` (AIPerf's `TelemetryRecord`, absent values left out).
//! [`GpuTelemetry`] keeps every GPU's values for the run's per-GPU summary.
//!
//! `dcgm`: the DCGM fields; `record`: one scrape's records and their lines; `telemetry`: every
//! GPU's values over the run and their summaries; `export`: AIPerf's `telemetry_data` block,
//! written and read back; `energy`: AIPerf's GPU energy-efficiency metrics.

mod dcgm;
mod energy;
mod export;
mod record;
mod telemetry;

pub use dcgm::{DCGM_FIELDS, DcgmField};
pub use energy::{
    EFFICIENCY_METRICS, EFFICIENCY_VENDORS, EfficiencyInputs, EfficiencyMetric, EnergyMetric, VendorEnergy, efficiency,
};
pub use export::{GpuExport, GpuStats, TelemetryExport};
pub use record::{GpuId, GpuRecord, records_of};
pub use telemetry::{GpuSummary, GpuTelemetry, endpoint_display};

/// AIPerf's file of GPU telemetry records.
pub const JSONL_FILE: &str = "gpu_telemetry_export.jsonl";

/// AIPerf's default DCGM exporter endpoints.
pub const DEFAULT_ENDPOINTS: [&str; 2] = ["http://localhost:9400/metrics", "http://localhost:9401/metrics"];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{Value, json};

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
}
