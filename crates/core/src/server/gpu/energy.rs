//! AIPerf's GPU energy-efficiency metrics (`nvidia_*`, `amd_*`): their table, the values of a
//! summary read back, and their computation from the GPUs' energy and the run's numbers.

use serde_json::Value;

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::gpu::{GpuRecord, GpuTelemetry};
    use serde_json::json;

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
