//! The longest time span a run accepts, and the one check of a number of seconds given for one.
//!
//! Every option that is a time span (`profile`'s request timeout, benchmark duration, grace period,
//! `mock-server`'s idle timeout…) and every offset or delay a replay waits for (a trace's
//! `timestamp` after time zero, its `delay`, checked by [`crate::schedule`]) is at most
//! [`MAX_SECONDS`]: every deadline, timer and `Duration` then fits with room to spare, and a value
//! that would make a run wait for ever is refused before anything is sent.

use std::time::Duration;

/// The longest accepted time span, in seconds: 30 days.
pub const MAX_SECONDS: u64 = 30 * 24 * 3600;
/// [`MAX_SECONDS`] in milliseconds, the unit of trace timestamps and delays.
pub const MAX_MS: u64 = MAX_SECONDS * 1000;
/// How [`MAX_SECONDS`] is said in messages.
pub const MAX_WORDS: &str = "30 days";

/// A number of seconds that is not an accepted time span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("accepted is a number of seconds {} 0 and at most {MAX_SECONDS} ({MAX_WORDS})", if *.zero_ok { "≥" } else { ">" })]
pub struct SecondsError {
    /// Whether 0 is accepted.
    pub zero_ok: bool,
}

/// `v` seconds as a [`Duration`]: finite, above 0 (or 0 itself when `zero_ok`), at most
/// [`MAX_SECONDS`].
pub fn seconds(v: f64, zero_ok: bool) -> Result<Duration, SecondsError> {
    let low_ok = if zero_ok { v >= 0.0 } else { v > 0.0 };
    if !(v.is_finite() && low_ok && v <= MAX_SECONDS as f64) {
        return Err(SecondsError { zero_ok });
    }
    Duration::try_from_secs_f64(v).map_err(|_| SecondsError { zero_ok })
}

/// [`seconds`] of a number written as text (a command-line value).
pub fn parse_seconds(s: &str, zero_ok: bool) -> Result<Duration, SecondsError> {
    s.trim().parse::<f64>().map_err(|_| SecondsError { zero_ok }).and_then(|v| seconds(v, zero_ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_from_zero_to_thirty_days_are_accepted_and_nothing_else() {
        assert_eq!(seconds(0.5, false), Ok(Duration::from_millis(500)));
        assert_eq!(seconds(0.0, true), Ok(Duration::ZERO));
        assert_eq!(seconds(2_592_000.0, false), Ok(Duration::from_secs(2_592_000)));
        for v in [0.0, -1.0, 2_592_000.001, 1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(seconds(v, false), Err(SecondsError { zero_ok: false }), "{v}");
        }
        assert_eq!(seconds(-0.1, true), Err(SecondsError { zero_ok: true }));
        assert_eq!(parse_seconds(" 120 ", false), Ok(Duration::from_secs(120)));
        for s in ["", "soon", "NaN", "inf", "1e300", "-1"] {
            assert!(parse_seconds(s, true).is_err(), "{s}");
        }
        assert_eq!(
            SecondsError { zero_ok: false }.to_string(),
            "accepted is a number of seconds > 0 and at most 2592000 (30 days)"
        );
        assert_eq!(
            SecondsError { zero_ok: true }.to_string(),
            "accepted is a number of seconds ≥ 0 and at most 2592000 (30 days)"
        );
    }
}
