//! AIPerf 0.13's `--inter-turn-delay-cap-seconds`: every turn's `delay` (milliseconds after the
//! previous turn of its session completed) at most the cap, as AIPerf's `DelayCapTracker` clamps
//! the delays its loaders read (Mooncake `delay`, `multi_turn` turns, `dag_jsonl` turns, WEKA
//! and closed-loop Baseten delays). A turn's `timestamp` is not touched.

use super::model::{Number, Trace};

/// What capping a trace's delays did: AIPerf's summary line of its loaders.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DelayCapReport {
    /// The cap in seconds.
    pub cap_s: f64,
    /// Delays longer than the cap, shortened to it.
    pub capped: u64,
    /// The longest delay read, before capping (ms).
    pub max_observed_ms: f64,
}

impl std::fmt::Display for DelayCapReport {
    /// AIPerf's words when it capped something.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Capped {} inter-turn delays exceeding {}s (max observed: {:.1} ms)",
            self.capped, self.cap_s, self.max_observed_ms
        )
    }
}

/// The cap of `cap_s` seconds in milliseconds, as AIPerf computes it (`cap_seconds * 1000.0`).
pub fn cap_ms(cap_s: f64) -> f64 {
    cap_s * 1000.0
}

/// `delay_ms` at most `cap_s` seconds: `Some(cap)` when it was longer, `None` when it is kept
/// (a negative or not finite delay too, as AIPerf passes negative ones through).
pub fn clamp_ms(delay_ms: f64, cap_s: f64) -> Option<f64> {
    let cap = cap_ms(cap_s);
    (delay_ms.is_finite() && delay_ms > cap).then_some(cap)
}

/// Caps the `delay` of every row of `trace` at `cap_s` seconds (a capped delay written as an
/// integer when the cap is a whole number of milliseconds).
pub fn cap_delays(trace: &mut Trace, cap_s: f64) -> DelayCapReport {
    let mut report = DelayCapReport { cap_s, ..DelayCapReport::default() };
    let capped = number(cap_ms(cap_s));
    for row in trace.rows_mut() {
        let Some(d) = row.delay else { continue };
        let ms = d.as_f64();
        if ms.is_finite() && ms > report.max_observed_ms {
            report.max_observed_ms = ms;
        }
        if clamp_ms(ms, cap_s).is_some() {
            row.delay = Some(capped);
            report.capped += 1;
        }
    }
    report
}

/// `ms` as a trace number: an integer when it is one (and fits), else a float.
fn number(ms: f64) -> Number {
    if ms.fract() == 0.0 && ms.abs() < 9.0e15 { Number::Int(ms as i64) } else { Number::Float(ms) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{Input, Row};

    fn trace(delays: &[Option<Number>]) -> Trace {
        let mut t = Trace::new();
        for (i, d) in delays.iter().enumerate() {
            let mut r = Row::new(Input::Length(10));
            r.session_id = Some("s".into());
            r.delay = *d;
            r.timestamp = (i == 0).then_some(Number::Int(5_000_000));
            t.push(r, []);
        }
        t
    }

    fn delays(t: &Trace) -> Vec<Option<Number>> {
        t.rows().iter().map(|r| r.delay).collect()
    }

    #[test]
    fn delays_longer_than_the_cap_become_the_cap_and_the_others_stay() {
        let mut t = trace(&[None, Some(Number::Int(500)), Some(Number::Int(2000)), Some(Number::Float(1999.5))]);
        let r = cap_delays(&mut t, 1.5);
        assert_eq!(delays(&t), [None, Some(Number::Int(500)), Some(Number::Int(1500)), Some(Number::Int(1500))]);
        assert_eq!(r, DelayCapReport { cap_s: 1.5, capped: 2, max_observed_ms: 2000.0 });
        assert_eq!(r.to_string(), "Capped 2 inter-turn delays exceeding 1.5s (max observed: 2000.0 ms)");
        // The timestamp is not a delay.
        assert_eq!(t.rows()[0].timestamp, Some(Number::Int(5_000_000)));
    }

    #[test]
    fn a_cap_of_zero_sends_every_turn_at_once_and_a_fractional_one_stays_fractional() {
        let mut t = trace(&[Some(Number::Int(0)), Some(Number::Float(0.25)), Some(Number::Int(7))]);
        assert_eq!(cap_delays(&mut t, 0.0).capped, 2);
        assert_eq!(delays(&t), [Some(Number::Int(0)); 3]);
        let mut t = trace(&[Some(Number::Int(7))]);
        cap_delays(&mut t, 0.0025);
        assert_eq!(delays(&t), [Some(Number::Float(2.5))]);
    }

    #[test]
    fn clamp_keeps_what_aiperf_keeps() {
        assert_eq!(clamp_ms(3000.0, 2.0), Some(2000.0));
        assert_eq!(clamp_ms(2000.0, 2.0), None);
        assert_eq!(clamp_ms(-5.0, 0.0), None);
        assert_eq!(clamp_ms(f64::NAN, 1.0), None);
    }
}
