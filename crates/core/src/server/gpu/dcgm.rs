//! The DCGM fields AIPerf reads: their exporter names, AIPerf's fields, units and scales, and
//! which of them are counters.

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

/// AIPerf's GPU telemetry counters: cumulative since the GPU started, summarised by their rise
/// over the window rather than by statistics.
const COUNTERS: [&str; 3] = ["nvidia_energy_consumption", "nvidia_xid_errors", "nvidia_power_violation"];

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
