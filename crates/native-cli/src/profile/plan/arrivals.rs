//! When sessions start: the arrival options (`--fixed-schedule` and its offsets,
//! `--request-rate`) resolved against a trace into the core's [`Timing`], and the sessions that
//! the offsets keep.

use aiperf_core::replay::schedule::{ArrivalPattern, Timing};
use aiperf_core::trace::Trace;
use anyhow::{Result, ensure};

/// The arrival options, resolved against the trace by [`Arrivals::timing`].
#[derive(Clone, Copy, Debug)]
pub struct Arrivals {
    /// `--fixed-schedule` (true) or `--no-fixed-schedule` (false); `None` = decided by the trace.
    pub fixed: Option<bool>,
    pub start_offset_ms: Option<f64>,
    pub end_offset_ms: Option<f64>,
    pub auto_offset: bool,
    pub rate: Option<(f64, ArrivalPattern)>,
}

impl Arrivals {
    /// The timing mode: the trace's timestamps when asked, or when the trace has them and no
    /// request rate was chosen. As in AIPerf, `--concurrency` then caps concurrent sessions and
    /// keeps the timestamps (each request leaves at the later of its time and a free slot).
    /// `speedup` is the synthesis' speed-up ratio (1 without one); `concurrency` whether
    /// `--concurrency` was given.
    pub fn timing(&self, trace_has_timestamps: bool, speedup: f64, seed: u64, concurrency: bool) -> Result<Timing> {
        let a = self;
        let fixed = a.fixed.unwrap_or(trace_has_timestamps && a.rate.is_none());
        if fixed {
            ensure!(
                a.rate.is_none(),
                "--request-rate cannot be combined with a fixed schedule (add --no-fixed-schedule)"
            );
            // The offsets are raw trace ms (AIPerf's meaning); sessions were already filtered on
            // the raw timestamps (`filter_offsets`), so on sped-up timestamps (`floor(ts / r)`)
            // the floored offsets keep exactly those sessions, and time zero is the start offset
            // sped up too (AIPerf leaves it unscaled, so its early requests fire together).
            let r = speedup;
            let scaled = |ms: Option<f64>| ms.map(|v| if r == 1.0 { v } else { (v / r).floor() });
            return Ok(Timing::Fixed {
                start_offset_ms: scaled(a.start_offset_ms),
                end_offset_ms: scaled(a.end_offset_ms),
                auto_offset: a.auto_offset || a.start_offset_ms.is_none(),
            });
        }
        ensure!(
            a.start_offset_ms.is_none() && a.end_offset_ms.is_none(),
            "--fixed-schedule-start/end-offset need a fixed schedule"
        );
        Ok(match a.rate {
            Some((per_second, pattern)) => Timing::Rate { per_second, pattern, seed },
            None => {
                ensure!(concurrency, "this trace has no timestamps: choose --request-rate or --concurrency");
                Timing::AsFastAsAllowed
            }
        })
    }

    /// Before synthesis: with a speed-up and `--fixed-schedule-start/end-offset`, drops the
    /// sessions whose first turn's raw timestamp is outside the offsets (inclusive), so that the
    /// offsets mean trace milliseconds before the speed-up, as in AIPerf.
    pub fn filter_offsets(&self, trace: Trace, sped_up: bool) -> Trace {
        let a = self;
        if !sped_up || (a.start_offset_ms.is_none() && a.end_offset_ms.is_none()) || a.fixed == Some(false) {
            return trace;
        }
        let outside = |ts: Option<f64>| {
            ts.is_some_and(|t| a.start_offset_ms.is_some_and(|s| t < s) || a.end_offset_ms.is_some_and(|e| t > e))
        };
        let mut dropped: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut keep = Vec::with_capacity(trace.len());
        for row in trace.rows() {
            let ts = row.timestamp.map(|n| n.as_f64());
            keep.push(match row.session_id.as_deref() {
                None => !outside(ts),
                Some(id) if seen.insert(id) => {
                    if outside(ts) {
                        dropped.insert(id);
                    }
                    !dropped.contains(id)
                }
                Some(id) => !dropped.contains(id),
            });
        }
        trace.iter().zip(keep).filter(|(_, k)| *k).map(|((r, ids), _)| (r.clone(), ids.to_vec())).collect()
    }
}
