//! AIPerf's `baseten_trace` replay options and their bounds.

use crate::formats::error::FormatError;

/// AIPerf's `baseten_trace` replay options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BasetenReplay {
    /// `--open-loop-replay` (default) / `--no-open-loop-replay`.
    pub open_loop: bool,
    /// `--open-loop-strict`: every row its own single-turn session (open loop only).
    pub strict: bool,
    /// `--replay-speedup` (1 = recorded speed).
    pub speedup: f64,
    /// `--max-idle-gap-cap-seconds`.
    pub idle_gap_cap_s: Option<f64>,
    /// `--trace-session-sample-ratio` (0 < r ≤ 1).
    pub session_sample_ratio: Option<f64>,
    /// `--inter-turn-delay-cap-seconds`: the closed loop's think times at most this.
    pub inter_turn_delay_cap_s: Option<f64>,
    /// `--omit-kv-hints`.
    pub omit_kv_hints: bool,
    /// `--force-min-tokens` (default) / `--no-force-min-tokens`.
    pub force_min_tokens: bool,
    /// `--random-seed`.
    pub seed: u64,
    /// `--fixed-schedule-start-offset` / `--fixed-schedule-end-offset`: rows kept by their
    /// recorded time after the earliest row (ms, before the speedup), both ends included.
    pub start_offset_ms: Option<f64>,
    pub end_offset_ms: Option<f64>,
}

impl Default for BasetenReplay {
    fn default() -> Self {
        BasetenReplay {
            open_loop: true,
            strict: false,
            speedup: 1.0,
            idle_gap_cap_s: None,
            session_sample_ratio: None,
            inter_turn_delay_cap_s: None,
            omit_kv_hints: false,
            force_min_tokens: true,
            seed: 0,
            start_offset_ms: None,
            end_offset_ms: None,
        }
    }
}

impl BasetenReplay {
    /// Refuses values AIPerf refuses, naming the option and what it accepts.
    pub(super) fn validate(&self) -> Result<(), FormatError> {
        let bad = |what: &str, v: f64, accepted: &str| {
            Err(FormatError::Options(format!("{what} {v}: accepted is {accepted}")))
        };
        if !(self.speedup.is_finite() && self.speedup > 0.0) {
            return bad("--replay-speedup", self.speedup, "a number above 0");
        }
        if let Some(c) = self.idle_gap_cap_s
            && !(c.is_finite() && c > 0.0)
        {
            return bad("--max-idle-gap-cap-seconds", c, "a number of seconds above 0");
        }
        if let Some(r) = self.session_sample_ratio
            && !(r > 0.0 && r <= 1.0)
        {
            return bad("--trace-session-sample-ratio", r, "a fraction above 0 and at most 1");
        }
        if let Some(c) = self.inter_turn_delay_cap_s
            && !(c.is_finite() && c >= 0.0)
        {
            return bad("--inter-turn-delay-cap-seconds", c, "a number of seconds from 0");
        }
        if self.strict && !self.open_loop {
            return Err(FormatError::Options(
                "--open-loop-strict requires open-loop replay; remove --no-open-loop-replay (or drop --open-loop-strict)."
                    .into(),
            ));
        }
        Ok(())
    }
}
