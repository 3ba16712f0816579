//! `--gpu-telemetry URL`: a DCGM exporter's page (a recorded one, served by the test) is scraped
//! during the run; each GPU of each scrape is a line of `gpu_telemetry_export.jsonl` in AIPerf's
//! shape and units, and the console has a line per GPU. `--no-gpu-telemetry` and runs without
//! the option write no GPU file; AIPerf's local collectors are refused by reason.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// Serves `page` at every path, keep-alive, until the test ends; returns its base URL.
fn serve(page: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut line = String::new();
                    // The request line and headers, up to the blank line.
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n",
                        page.len()
                    );
                    if conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(page.as_bytes())).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

const DCGM_PAGE: &str = include_str!("../../../tests/fixtures/dcgm/dcgm-exporter-metrics.txt");

#[test]
fn a_dcgm_exporter_is_scraped_into_aiperfs_gpu_records() {
    let exporter = serve(DCGM_PAGE);
    let mock = Mock::start(&["--ttft-ms", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..6).map(|i| format!(r#"{{"timestamp": {}, "input_length": 20, "output_length": 4}}"#, i * 100)).collect();
    let trace = write_trace(dir.path(), &lines);
    let art = dir.path().join("gpu");
    let out = profile_streaming(&mock.url, &trace, &art, &["--gpu-telemetry", &exporter, "--ui-type", "none"], LIMIT);
    ok(&out);
    let records = read_jsonl(&art.join("gpu_telemetry_export.jsonl"));
    // Two GPUs a scrape: before warm-up, before time zero, every 333 ms, after the drain.
    assert!(records.len() >= 6 && records.len().is_multiple_of(2), "{} records", records.len());
    let r = &records[0];
    assert_eq!(r["gpu_index"], 0);
    assert_eq!(r["gpu_uuid"], "GPU-8a1d3b62-5f0e-4c2a-9d41-7e3b2c1f0a11");
    assert_eq!(r["gpu_model_name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(r["pci_bus_id"], "00000000:18:00.0");
    assert_eq!(r["device"], "nvidia0");
    assert_eq!(r["hostname"], "dgx-node-1");
    assert_eq!(r["platform"], "nvidia");
    assert_eq!(r["telemetry_source_url"], format!("{exporter}/metrics"));
    assert!(r["timestamp_ns"].as_u64().unwrap() > 1_700_000_000_000_000_000);
    let d = &r["telemetry_data"];
    assert_eq!(d["nvidia_power_usage"], 512.337);
    assert_eq!(d["nvidia_gpu_utilization"], 97.0);
    assert_eq!(d["nvidia_memory_utilization"], 58.0);
    assert_eq!(d["nvidia_temperature"], 61.0);
    let close = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9 * want.max(1.0);
    assert!(close(&d["nvidia_memory_used"], 76670.0 * 1.048576e-3), "{d}");
    assert!(close(&d["nvidia_energy_consumption"], 4518820913062.0 * 1e-9), "{d}");
    assert!(close(&d["nvidia_sm_utilization"], 87.4512), "{d}");
    assert!(close(&d["nvidia_power_violation"], 1532.0), "{d}");
    assert_eq!(d.as_object().unwrap().len(), 11, "the DCGM fields AIPerf reads, no other: {d}");
    assert_eq!(records[1]["gpu_index"], 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("GPU 0 NVIDIA H100 80GB HBM3 (GPU-8a1d3b62-5f0e-4c2a-9d41-7e3b2c1f0a11, ")
            && stdout.contains("Power Usage avg 512.3 max 512.3 W"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("GPU telemetry: {} record(s) in gpu_telemetry_export.jsonl", records.len())));
    let config = summary(&art)["aiperf_cli_config"]["gpu_telemetry"].clone();
    assert_eq!(config[2], format!("{exporter}/metrics"), "{config}");

    // --no-gpu-telemetry, and no option: no GPU file.
    for (name, extra) in [("off", &["--no-gpu-telemetry"][..]), ("none", &[][..])] {
        let art = dir.path().join(name);
        let out = profile_streaming(&mock.url, &trace, &art, extra, LIMIT);
        ok(&out);
        assert!(!art.join("gpu_telemetry_export.jsonl").exists());
        assert!(!String::from_utf8_lossy(&out.stdout).contains("GPU telemetry"));
    }
    // AIPerf's local collectors are refused by reason, before anything is sent.
    let out = profile_streaming(&mock.url, &trace, &dir.path().join("nvml"), &["--gpu-telemetry", "pynvml"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--gpu-telemetry pynvml: local GPU libraries are not read"));
}
