//! Transforms that long production traces need: a time window, a cap on idle gaps, whole-
//! conversation sampling, a cap on inter-turn delays. (Model filtering and dropping failed rows
//! need the source's fields and happen during conversion: [`super::ConvertOptions`].)
//!
//! They work on any trace whose rows have timestamps (ms); a conversation is a row's
//! `conversation_id`, else its `session_id`, else the row alone. The result is rebased so that the
//! first kept row is at 0 ms and stably sorted by time.

use std::collections::HashMap;

use super::error::FormatError;
use crate::rng::derive_seed;
use crate::trace::{Number, Trace};

/// Which transforms to apply (each `None` = off). Applied in this order: window, sampling,
/// turn-gap cap, idle-gap cap.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Transforms {
    /// Keep rows with `timestamp ≥ start` (ms, trace time).
    pub window_start_ms: Option<f64>,
    /// Keep rows with `timestamp < end` (ms, trace time).
    pub window_end_ms: Option<f64>,
    /// Keep this fraction of conversations (0 < f ≤ 1), chosen by the seed.
    pub sample_fraction: Option<f64>,
    pub sample_seed: u64,
    /// Shorten any gap between consecutive turns of a conversation to at most this (ms).
    pub max_turn_gap_ms: Option<f64>,
    /// Shorten any gap between consecutive arrivals of the trace to at most this (ms).
    pub max_idle_gap_ms: Option<f64>,
}

/// What the transforms did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransformReport {
    pub rows_in: u64,
    pub outside_window: u64,
    pub sampled_out: u64,
    pub conversations_kept: u64,
    pub conversations_total: u64,
    pub turn_gaps_capped: u64,
    pub idle_gaps_capped: u64,
    pub rows_out: u64,
}

impl std::fmt::Display for TransformReport {
    /// The one-line account shown by `convert-trace` and the browser app.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "transforms: {} rows in, {} outside the window, {} sampled out ({} of {} conversations kept), \
             {} turn gaps and {} idle gaps capped, {} rows out",
            self.rows_in,
            self.outside_window,
            self.sampled_out,
            self.conversations_kept,
            self.conversations_total,
            self.turn_gaps_capped,
            self.idle_gaps_capped,
            self.rows_out
        )
    }
}

impl Transforms {
    /// True when nothing is asked.
    pub fn is_identity(&self) -> bool {
        *self == Transforms { sample_seed: self.sample_seed, ..Transforms::default() }
    }

    fn validate(&self) -> Result<(), FormatError> {
        let bad =
            |what: &str, v: f64| Err(FormatError::Options(format!("{what} must be a non-negative number, got {v}")));
        for (what, v) in [
            ("the window start", self.window_start_ms),
            ("the window end", self.window_end_ms),
            ("the turn-gap cap", self.max_turn_gap_ms),
            ("the idle-gap cap", self.max_idle_gap_ms),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                return bad(what, v);
            }
        }
        if let (Some(s), Some(e)) = (self.window_start_ms, self.window_end_ms)
            && e <= s
        {
            return Err(FormatError::Options(format!("the window end ({e} ms) must be after its start ({s} ms)")));
        }
        if let Some(f) = self.sample_fraction
            && !(f > 0.0 && f <= 1.0)
        {
            return Err(FormatError::Options(format!("the sampling fraction must be in (0, 1], got {f}")));
        }
        Ok(())
    }
}

/// Applies the transforms; every row needs a timestamp.
pub fn apply(trace: &Trace, t: &Transforms) -> Result<(Trace, TransformReport), FormatError> {
    t.validate()?;
    let mut report = TransformReport { rows_in: trace.len() as u64, ..TransformReport::default() };
    let mut times = Vec::with_capacity(trace.len());
    for row in trace.rows() {
        let ts = row.timestamp.map(Number::as_f64).filter(|v| v.is_finite()).ok_or_else(|| {
            FormatError::Options(format!("line {}: the transforms need a timestamp on every row", row.line))
        })?;
        times.push(ts);
    }
    // Conversation keys: index of the first row with the same id.
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    let conv: Vec<usize> = trace
        .rows()
        .iter()
        .enumerate()
        .map(|(i, r)| match r.conversation_id().or(r.session_id.as_deref()) {
            Some(id) => *first_of.entry(id).or_insert(i),
            None => i,
        })
        .collect();
    let mut keep: Vec<usize> = (0..trace.len())
        .filter(|&i| {
            let inside =
                t.window_start_ms.is_none_or(|s| times[i] >= s) && t.window_end_ms.is_none_or(|e| times[i] < e);
            report.outside_window += u64::from(!inside);
            inside
        })
        .collect();
    let mut kept_convs: HashMap<usize, bool> = HashMap::new();
    for &i in &keep {
        kept_convs.entry(conv[i]).or_insert(true);
    }
    report.conversations_total = kept_convs.len() as u64;
    if let Some(f) = t.sample_fraction {
        for (&c, kept) in kept_convs.iter_mut() {
            // The decision depends on the conversation's identity and the seed only, so the same
            // conversation is kept or dropped whole, whatever the window.
            let row = &trace.rows()[c];
            let key =
                row.conversation_id().or(row.session_id.as_deref()).map_or_else(|| format!("#row{c}"), str::to_string);
            let u = (derive_seed(t.sample_seed, &key) >> 11) as f64 / (1u64 << 53) as f64;
            *kept = u < f;
        }
        let before = keep.len();
        keep.retain(|&i| kept_convs.get(&conv[i]).copied().unwrap_or(false));
        report.sampled_out = (before - keep.len()) as u64;
    }
    report.conversations_kept = kept_convs.values().filter(|k| **k).count() as u64;
    let mut new_times: Vec<f64> = keep.iter().map(|&i| times[i]).collect();
    if let Some(cap) = t.max_turn_gap_ms {
        // Per conversation: shift each turn (and the ones after it) back by the excess over the cap.
        let mut last: HashMap<usize, (f64, f64)> = HashMap::new();
        for (k, &i) in keep.iter().enumerate() {
            let orig = times[i];
            let new = match last.get(&conv[i]) {
                Some(&(prev_orig, prev_new)) => {
                    let gap = orig - prev_orig;
                    if gap > cap {
                        report.turn_gaps_capped += 1;
                        prev_new + cap
                    } else {
                        prev_new + gap.max(0.0)
                    }
                }
                None => orig,
            };
            last.insert(conv[i], (orig, new));
            new_times[k] = new;
        }
    }
    let mut order: Vec<usize> = (0..keep.len()).collect();
    order.sort_by(|&a, &b| new_times[a].total_cmp(&new_times[b]));
    let mut sorted: Vec<f64> = order.iter().map(|&k| new_times[k]).collect();
    if let Some(cap) = t.max_idle_gap_ms {
        let mut shift = 0.0;
        let mut prev = sorted.first().copied().unwrap_or(0.0);
        for v in sorted.iter_mut() {
            let gap = *v - prev;
            if gap > cap {
                shift += gap - cap;
                report.idle_gaps_capped += 1;
            }
            prev = *v;
            *v -= shift;
        }
    }
    let origin = sorted.first().copied().unwrap_or(0.0);
    let mut out = Trace::with_capacity(keep.len(), 0);
    for (pos, &k) in order.iter().enumerate() {
        let row = &trace.rows()[keep[k]];
        let mut r = row.clone();
        let ms = sorted[pos] - origin;
        r.timestamp = Some(if ms.fract() == 0.0 && ms < 9.0e15 { Number::Int(ms as i64) } else { Number::Float(ms) });
        out.push(r, trace.hash_ids(row).iter().copied());
    }
    report.rows_out = out.len() as u64;
    Ok((out, report))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, parse_str};

    fn trace(text: &str) -> Trace {
        parse_str(text, ParseOptions::default()).unwrap().trace
    }

    fn stamps(t: &Trace) -> Vec<f64> {
        t.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect()
    }

    const CONV: &str = "{\"timestamp\":0,\"conversation_id\":\"a\",\"input_length\":1}\n\
                        {\"timestamp\":1000,\"conversation_id\":\"b\",\"input_length\":2}\n\
                        {\"timestamp\":90000,\"conversation_id\":\"a\",\"input_length\":3}\n\
                        {\"timestamp\":90500,\"input_length\":4}\n\
                        {\"timestamp\":3600000,\"conversation_id\":\"b\",\"input_length\":5}\n";

    #[test]
    fn window_keeps_rows_inside_and_rebases() {
        let t = Transforms { window_start_ms: Some(1000.0), window_end_ms: Some(90500.0), ..Transforms::default() };
        let (out, r) = apply(&trace(CONV), &t).unwrap();
        assert_eq!(stamps(&out), [0.0, 89000.0]);
        assert_eq!((r.outside_window, r.rows_out), (3, 2));
    }

    #[test]
    fn idle_gaps_are_capped() {
        let t = Transforms { max_idle_gap_ms: Some(10_000.0), ..Transforms::default() };
        let (out, r) = apply(&trace(CONV), &t).unwrap();
        // Gaps 1000, 89000→10000, 500, 3509500→10000.
        assert_eq!(stamps(&out), [0.0, 1000.0, 11000.0, 11500.0, 21500.0]);
        assert_eq!(r.idle_gaps_capped, 2);
    }

    #[test]
    fn turn_gaps_are_capped_per_conversation_and_rows_resorted() {
        let t = Transforms { max_turn_gap_ms: Some(5000.0), ..Transforms::default() };
        let (out, r) = apply(&trace(CONV), &t).unwrap();
        let lens: Vec<i64> = out.rows().iter().map(|r| r.input_length().unwrap()).collect();
        // a: 0 → 5000; b: 1000 → 6000; the lone row stays at 90500.
        assert_eq!(stamps(&out), [0.0, 1000.0, 5000.0, 6000.0, 90500.0]);
        assert_eq!(lens, [1, 2, 3, 5, 4]);
        assert_eq!(r.turn_gaps_capped, 2);
    }

    #[test]
    fn sampling_keeps_or_drops_whole_conversations_reproducibly() {
        let text: String = (0..400)
            .map(|i| format!("{{\"timestamp\":{i},\"conversation_id\":\"c{}\",\"input_length\":1}}\n", i % 100))
            .collect();
        let t = trace(&text);
        let opts = Transforms { sample_fraction: Some(0.3), sample_seed: 7, ..Transforms::default() };
        let (a, ra) = apply(&t, &opts).unwrap();
        let (b, _) = apply(&t, &opts).unwrap();
        assert_eq!(a, b);
        assert_eq!(ra.conversations_total, 100);
        assert!((15..=45).contains(&ra.conversations_kept), "{}", ra.conversations_kept);
        // Whole conversations: every kept conversation keeps its 4 turns.
        let mut per: HashMap<String, u32> = HashMap::new();
        for r in a.rows() {
            *per.entry(r.conversation_id().unwrap().to_string()).or_default() += 1;
        }
        assert_eq!(per.len() as u64, ra.conversations_kept);
        assert!(per.values().all(|&n| n == 4));
        let (c, _) = apply(&t, &Transforms { sample_seed: 8, ..opts }).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn rejects_bad_options_and_untimed_rows() {
        let t = trace(CONV);
        assert!(apply(&t, &Transforms { sample_fraction: Some(0.0), ..Transforms::default() }).is_err());
        let w = Transforms { window_start_ms: Some(5.0), window_end_ms: Some(5.0), ..Transforms::default() };
        assert!(apply(&t, &w).is_err());
        assert!(apply(&trace("{\"input_length\":1}\n"), &Transforms::default()).is_err());
    }
}
