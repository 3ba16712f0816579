//! The two options whose meaning holds for any timed trace, on a trace of any format:
//! `--replay-speedup` and `--max-idle-gap-cap-seconds` ([`reflow_idle_gaps`]).

use super::options::BasetenReplay;
use crate::formats::error::FormatError;
use crate::trace::{Number, Trace};

/// AIPerf's `reflow_idle_gaps`: the times (ms, truncated to whole ms) in the same positions, with
/// every gap between consecutive times (in time order, ties in position order) longer than the
/// cap (rounded up to whole ms) shortened to it; the earliest time keeps its value.
pub fn reflow_idle_gaps(times_ms: &[f64], cap_ms: f64) -> Vec<i64> {
    let values: Vec<i64> = times_ms.iter().map(|&t| t as i64).collect();
    if values.len() <= 1 {
        return values;
    }
    let cap = cap_ms.ceil() as i64;
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| (values[i], i));
    let mut out = vec![0i64; values.len()];
    let (mut prev_old, mut prev_new) = (values[order[0]], values[order[0]]);
    out[order[0]] = prev_new;
    for &i in &order[1..] {
        prev_new += (values[i] - prev_old).min(cap);
        out[i] = prev_new;
        prev_old = values[i];
    }
    out
}

/// `--replay-speedup` and `--max-idle-gap-cap-seconds` on a trace of another format: every row's
/// `timestamp` and `delay` divided by `speedup` (hash ids untouched), then every gap between
/// consecutive timestamps (all rows, time order) longer than the cap shortened to it
/// ([`reflow_idle_gaps`]).
pub fn retime(trace: &mut Trace, speedup: f64, idle_gap_cap_s: Option<f64>) -> Result<(), FormatError> {
    BasetenReplay { speedup, idle_gap_cap_s, ..BasetenReplay::default() }.validate()?;
    for row in trace.rows_mut() {
        if speedup != 1.0 {
            row.timestamp = row.timestamp.map(|t| Number::Float(t.as_f64() / speedup));
            row.delay = row.delay.map(|d| Number::Float(d.as_f64() / speedup));
        }
    }
    if let Some(cap) = idle_gap_cap_s {
        let times: Vec<f64> = trace.rows().iter().filter_map(|r| r.timestamp.map(Number::as_f64)).collect();
        let new = reflow_idle_gaps(&times, cap * 1000.0);
        for (row, t) in trace.rows_mut().iter_mut().filter(|r| r.timestamp.is_some()).zip(new) {
            row.timestamp = Some(Number::Int(t));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reflow_matches_aiperf() {
        // Positions kept, ties in position order, the cap rounded up, times truncated.
        assert_eq!(reflow_idle_gaps(&[5000.0, 0.0, 100.9, 100.0, 9000.0], 999.2), [1100, 0, 100, 100, 2100]);
        assert_eq!(reflow_idle_gaps(&[7.5], 1.0), [7]);
    }

    #[test]
    fn retime_divides_timestamps_and_delays_and_caps_idle_gaps() {
        let mut t = crate::trace::parse_str(
            "{\"timestamp\":0,\"input_length\":1,\"hash_ids\":[1]}\n{\"timestamp\":10000,\"input_length\":1}\n\
             {\"session_id\":\"s\",\"timestamp\":4000,\"input_length\":1}\n{\"session_id\":\"s\",\"delay\":600,\"input_length\":1}\n",
            crate::trace::ParseOptions::default(),
        )
        .unwrap()
        .trace;
        retime(&mut t, 2.0, Some(1.0)).unwrap();
        let ts: Vec<Option<f64>> = t.rows().iter().map(|r| r.timestamp.map(Number::as_f64)).collect();
        assert_eq!(ts, [Some(0.0), Some(2000.0), Some(1000.0), None]);
        assert_eq!(t.rows()[3].delay, Some(Number::Float(300.0)));
        assert_eq!(t.hash_ids(&t.rows()[0]), [1]);
        assert!(retime(&mut t, 0.0, None).is_err());
    }
}
