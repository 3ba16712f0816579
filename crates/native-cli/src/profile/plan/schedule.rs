//! The plan applied to a trace: the timing mode, the sessions the fixed schedule's offsets keep,
//! and the schedule a run sends.

use aiperf_core::replay::sampling::Sampling;
use aiperf_core::replay::schedule::{self, Schedule, ScheduleError, Timing};
use aiperf_core::trace::Trace;
use anyhow::{Result, anyhow, ensure};

use super::model::ReplayPlan;

impl ReplayPlan {
    /// The timing mode: the trace's timestamps when asked, or when the trace has them and no
    /// request rate was chosen ([`Arrivals::timing`]).
    pub fn timing(&self, trace_has_timestamps: bool) -> Result<Timing> {
        let speedup = self.source.synthesis.as_ref().map_or(1.0, |p| p.speedup_ratio);
        let concurrency = self.limits.concurrency.is_some();
        self.source.arrivals.timing(trace_has_timestamps, speedup, self.source.seed, concurrency)
    }

    /// Before synthesis: the sessions that `--fixed-schedule-start/end-offset` keep on the raw
    /// timestamps ([`Arrivals::filter_offsets`]).
    pub fn filter_offsets(&self, trace: Trace) -> Trace {
        let sped_up = self.source.synthesis.as_ref().is_some_and(|p| p.speedup_ratio != 1.0);
        self.source.arrivals.filter_offsets(trace, sped_up)
    }

    /// The schedule of `trace`: with a benchmark duration and no request count, rate and
    /// concurrency runs reuse the trace until time is up (as AIPerf does), generated lazily.
    pub fn schedule(&self, trace: &Trace) -> Result<Schedule> {
        let has_timestamps = trace.rows().first().is_some_and(|r| r.timestamp.is_some());
        let timing = self.timing(has_timestamps)?;
        if let Timing::Fixed { .. } = timing {
            sequential_for_fixed(self.source.sampling)?;
        }
        let s = schedule::build(trace, timing, self.limits.request_count).map_err(|e| match e {
            ScheduleError::Row { line, problem } => anyhow!("{}:{line}: {problem}", self.source.input.name()),
            e => anyhow!(e).context("cannot schedule the trace"),
        })?;
        let shard = self.coordination.shard;
        ensure!(
            (shard.count as usize) <= s.sessions.len(),
            "--shard {shard}: the trace has {} session(s) and whole sessions are dealt to shards, so at most {} shards can each get one",
            s.sessions.len(),
            s.sessions.len()
        );
        let s = s
            .sharded(shard)
            .with_rate_ramp(self.limits.ramps.rate_us)
            .with_smoothness(self.limits.smoothness)
            .with_rate_series(self.limits.rate_series.clone())
            .with_users(self.limits.users)
            .with_sampling(self.source.sampling, self.source.seed);
        Ok(if self.limits.duration.is_some() && self.limits.request_count.is_none() { schedule::endless(s) } else { s })
    }
}

/// A fixed schedule sends every session at its timestamp, in timestamp order: AIPerf's fixed
/// schedule takes only sequential sampling, and so does ours.
pub(super) fn sequential_for_fixed(sampling: Sampling) -> Result<()> {
    ensure!(
        sampling == Sampling::Sequential,
        "--dataset-sampling-strategy {}: a fixed schedule (the trace's timestamps) sends each session at its timestamp, so it takes only sequential; add --no-fixed-schedule with --request-rate or --concurrency to sample sessions",
        sampling.name()
    );
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::plan::replay::tests::plan;

    #[test]
    fn timing_follows_aiperf() {
        let p = plan(&["--concurrency", "4"]).unwrap();
        assert!(matches!(p.timing(true).unwrap(), Timing::Fixed { .. }));
        assert_eq!(p.timing(false).unwrap(), Timing::AsFastAsAllowed);
        let p = plan(&["--concurrency", "4", "--no-fixed-schedule"]).unwrap();
        assert_eq!(p.timing(true).unwrap(), Timing::AsFastAsAllowed);
        let p = plan(&["--request-rate", "5", "--arrival-pattern", "constant"]).unwrap();
        assert!(matches!(p.timing(true).unwrap(), Timing::Rate { per_second: 5.0, .. }));
        let p = plan(&["--fixed-schedule", "--request-rate", "5"]).unwrap();
        assert!(p.timing(true).is_err());
        let p = plan(&["--fixed-schedule-start-offset", "10", "--no-fixed-schedule"]).unwrap();
        assert!(p.timing(true).is_err());
    }

    #[test]
    fn offsets_are_raw_trace_ms_before_the_speed_up() {
        use aiperf_core::trace::{ParseOptions, read};
        let text: String = (0..7)
            .map(|i| format!("{{\"timestamp\": {}, \"input_length\": 5, \"output_length\": 1}}\n", 1000 * i + 1))
            .collect();
        let raw = read(text.as_bytes(), ParseOptions::new("t")).unwrap().trace;
        let p = plan(&[
            "--fixed-schedule",
            "--fixed-schedule-start-offset",
            "2001",
            "--fixed-schedule-end-offset",
            "4001",
            "--synthesis-speedup-ratio",
            "2",
        ])
        .unwrap();
        let kept = p.filter_offsets(raw);
        let ts: Vec<f64> = kept.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect();
        assert_eq!(ts, vec![2001.0, 3001.0, 4001.0]);
        let synthesized = aiperf_core::synthesis::transform(&kept, p.source.synthesis.as_ref().unwrap()).unwrap();
        let s = p.schedule(&synthesized).unwrap();
        // Sped up: 1000, 1500, 2000 ms; zero at the sped-up start offset (1000 ms).
        let offsets: Vec<u64> = s.starts().map(|x| x.offset_us.unwrap() / 1000).collect();
        assert_eq!(offsets, vec![0, 500, 1000]);
    }
}
