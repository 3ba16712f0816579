//! [`Engine`]: how long a simulated request runs, per request (prefill and decode times).

use serde::{Deserialize, Serialize};

/// How long a request runs on its replica. Prefill takes `prefill_fixed_us +
/// prefill_per_token_us × uncached prompt tokens`; every output token after the first takes
/// `decode_fixed_us + decode_per_running_us × requests running` (counted when the request
/// starts, itself included).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Engine {
    pub prefill_fixed_us: f64,
    pub prefill_per_token_us: f64,
    pub decode_fixed_us: f64,
    pub decode_per_running_us: f64,
}

impl Default for Engine {
    /// 10 ms + 50 µs per uncached token (20,000 prompt tokens/s) to the first token; 15 ms +
    /// 0.5 ms per running request between tokens: the order of an 8B model on one data-centre GPU.
    fn default() -> Self {
        Engine {
            prefill_fixed_us: 10_000.0,
            prefill_per_token_us: 50.0,
            decode_fixed_us: 15_000.0,
            decode_per_running_us: 500.0,
        }
    }
}
