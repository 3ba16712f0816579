//! What the arrival model is made of: the learned [`ArrivalModel`], how a trace marks its sessions,
//! one generated [`Arrival`] and the options of generation.

use crate::trace::Number;

/// The component name of the arrival generator's seed.
pub(super) const ARRIVALS_COMPONENT: &str = "synthesis.generate.arrivals";

/// What was learned about when requests arrive.
#[derive(Clone, Debug)]
pub struct ArrivalModel {
    pub(super) start_ms: f64,
    /// Width of a model window (ms).
    pub(super) window_ms: f64,
    /// Requests per window of the smoothed curve, one per source window.
    pub(super) curve: Vec<f64>,
    /// Variance of the lognormal residual's logarithm, and its lag-1 correlation.
    pub(super) log_var: f64,
    pub(super) log_phi: f64,
    /// Requests per distinct timestamp.
    pub(super) burst_sizes: Vec<u32>,
    pub(super) mean_burst: f64,
    /// Gaps between distinct timestamps in operational time (a window holds as many units as it
    /// holds distinct timestamps).
    pub(super) unit_gaps: Vec<f64>,
    /// Turns per session and gaps between a session's turns (ms), when the source has
    /// conversations (empty otherwise).
    pub(super) turns: Vec<u32>,
    pub(super) turn_gaps: Vec<f64>,
    /// How the source marks its sessions (and so the generated rows).
    pub(super) sessions: SessionStyle,
}

/// How a trace marks the turns of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionStyle {
    /// `conversation_id` on every turn, each with its timestamp.
    #[default]
    Conversation,
    /// Mooncake's `session_id`, each turn with its timestamp.
    SessionTimestamps,
    /// Mooncake's `session_id`, later turns with a `delay` (ms after the previous turn).
    SessionDelays,
}

/// One generated arrival.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// Milliseconds, rounded to 1 µs.
    pub time: Number,
    /// The session (numbered from 0 in order of their starts), when the model has sessions.
    pub session: Option<u64>,
    /// For a later turn of a session: the gap after the previous turn (ms, rounded to 1 µs).
    pub gap: Option<Number>,
}

/// Milliseconds rounded to 1 µs, whole ones as an integer.
pub(super) fn micro_ms(ms: f64) -> Number {
    let ms = (ms * 1000.0).round() / 1000.0;
    if ms.fract() == 0.0 && ms.abs() < 9e15 { Number::Int(ms as i64) } else { Number::Float(ms) }
}

/// Options of arrival generation.
#[derive(Clone, Copy, Debug)]
pub struct ArrivalOptions {
    /// Divides every time (the whole timeline runs this much faster).
    pub speedup: f64,
    /// Multiplies the rate (more requests per window, same timeline).
    pub intensity: f64,
    /// The generated timeline stops here (ms after the start), if set.
    pub duration_ms: Option<f64>,
}
