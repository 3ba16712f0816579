//! How to convert: the options of the whole conversion, AIPerf's replay options of the formats
//! that have them included.

use super::baseten::BasetenReplay;

/// Arrival times for a source that has none (ServeGen offline batches).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Arrivals {
    /// Every request at 0 ms (the batch submitted at once).
    AllAtZero,
    /// One request every `1/per_second` seconds, in file order.
    Rate { per_second: f64 },
}

/// How to convert.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConvertOptions {
    /// Tokens per target hash id (Mooncake: 512); a multiple of the source block size.
    pub block_size: u32,
    /// Arrivals for ServeGen offline traces.
    pub arrivals: Arrivals,
    /// Output length for sources without one (ServeGen a–c); `None` leaves rows without.
    pub output_length: Option<u64>,
    /// Keep only rows of these models (BurstGPT `Model`, WEKA `model`); empty keeps all.
    pub models: Vec<String>,
    /// Drop failed rows (BurstGPT: `Response tokens == 0`) instead of keeping them.
    pub drop_failed: bool,
    /// WEKA documents re-timed and selected as AIPerf's `weka_trace` loader does (replay only).
    #[serde(skip)]
    pub weka: Option<WekaTiming>,
    /// Baseten traces converted with AIPerf's `baseten_trace` replay options (defaults: `None`).
    #[serde(skip)]
    pub baseten: Option<BasetenReplay>,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            block_size: crate::analysis::DEFAULT_BLOCK_SIZE,
            arrivals: Arrivals::AllAtZero,
            output_length: None,
            models: Vec::new(),
            drop_failed: false,
            weka: None,
            baseten: None,
        }
    }
}

/// AIPerf's `weka_trace` replay options.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WekaTiming {
    /// `--use-think-time-only`: a later turn's delay is its recorded `think_time`.
    pub think_time_only: bool,
    /// `--ignore-trace-delays`: no delay between turns (the replay drops the times too).
    pub ignore_delays: bool,
    /// `--trace-idle-gap-cap-seconds`: the longest gap kept between two request starts.
    pub idle_gap_cap_s: Option<f64>,
    /// `--inter-turn-delay-cap-seconds`: the longest delay of a later turn (unused with
    /// `idle_gap_cap_s`, which takes precedence in AIPerf).
    pub inter_turn_delay_cap_s: Option<f64>,
    /// `--max-context-length`: the largest peak `in + out` of a document kept.
    pub max_context_length: Option<u64>,
    /// `--synthesis-max-osl`: the cap on `out` of the file's own requests, in the peak.
    pub max_osl: Option<u64>,
}
