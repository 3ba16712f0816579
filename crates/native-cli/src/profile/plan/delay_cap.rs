//! AIPerf's `--inter-turn-delay-cap-seconds`: checked here, and applied where AIPerf's loaders
//! apply it — the core's [`cap_delays`] on the rows read (a trace's `delay`, single_turn and
//! multi_turn files, inline records, dag_jsonl turns: [`apply`]), the WEKA reader on its
//! conversations' delays ([`super::weka`]) and the Baseten conversion on its closed loop's
//! ([`super::baseten`]).
//!
//! AIPerf 0.13 routes the option to file datasets only: its synthetic workload's delays are drawn
//! from `--conversation-turn-delay-*`, and the cap is refused there, by name.

use std::path::Path;

use aiperf_core::formats::Format;
use aiperf_core::trace::Trace;
use aiperf_core::trace::delay_cap::cap_delays;
use anyhow::{Result, bail, ensure};

use super::model::Input;
use crate::io::trace_format::FormatChoice;
use crate::profile::options::Args;

/// The cap given, checked against the input (seconds).
pub fn check(a: &Args, input: &Input) -> Result<Option<f64>> {
    let Some(s) = a.inter_turn_delay_cap_seconds else { return Ok(None) };
    ensure!(
        s.is_finite() && s >= 0.0 && s <= aiperf_core::duration::MAX_MS as f64 / 1000.0,
        "--inter-turn-delay-cap-seconds {s}: accepted is a number of seconds from 0 to {} ({}); 0 sends every later \
         turn as soon as the previous one completed",
        aiperf_core::duration::MAX_MS / 1000,
        aiperf_core::duration::MAX_WORDS
    );
    if matches!(input, Input::Synthetic(_)) {
        bail!(
            "--inter-turn-delay-cap-seconds caps the delays a dataset file records, and the input is the synthetic \
             workload (no --input-file), whose delays --conversation-turn-delay-mean/-stddev draw (AIPerf 0.13 \
             ignores the cap there); drop it, or give a file with --input-file"
        );
    }
    Ok(Some(s))
}

/// Whether the trace file `path` is read as `format`: named so, or detected from its first bytes.
pub fn reads_as(path: &Path, choice: FormatChoice, format: Format) -> bool {
    match choice {
        FormatChoice::Is(f) => f == format,
        FormatChoice::Auto => crate::io::input::head(path, 1 << 20)
            .is_ok_and(|head| aiperf_core::formats::detect(&head).is_ok_and(|d| d.format == format)),
    }
}

/// The rows' delays capped at `cap` seconds (a trace of `format`, `None` for AIPerf's own
/// dataset files); WEKA and Baseten traces were capped as they were read.
pub fn apply(trace: &mut Trace, cap: Option<f64>, format: Option<Format>) {
    let Some(cap) = cap else { return };
    if matches!(format, Some(Format::Weka | Format::Baseten)) {
        return;
    }
    let report = cap_delays(trace, cap);
    if report.capped > 0 {
        say!("{report}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::profile::options;
    use crate::profile::plan::ReplayPlan;
    use crate::profile::plan::replay::tests::{err, plan};

    #[test]
    fn the_cap_is_seconds_from_zero_and_reaches_every_reader() {
        let p = plan(&["--inter-turn-delay-cap-seconds", "2.5"]).unwrap();
        assert_eq!(p.source.delay_cap_s, Some(2.5));
        assert_eq!(p.source.baseten.replay.inter_turn_delay_cap_s, Some(2.5));
        assert_eq!(p.cli_config()["inter_turn_delay_cap_seconds"], 2.5);
        assert_eq!(p.aiperf_config()["datasets"][0]["inter_turn_delay_cap_seconds"], 2.5);
        // 0 is accepted, as in AIPerf: every later turn leaves when the previous one completed.
        assert_eq!(plan(&["--inter-turn-delay-cap-seconds", "0"]).unwrap().source.delay_cap_s, Some(0.0));
        // A named WEKA trace replays its conversations as sessions, their delays capped.
        let w = plan(&["--inter-turn-delay-cap-seconds", "3", "--custom-dataset-type", "weka_trace"]).unwrap();
        assert_eq!(w.source.weka.unwrap().inter_turn_delay_cap_s, Some(3.0));
        assert!(plan(&["--inter-turn-delay-cap-seconds", "3"]).unwrap().source.weka.is_none());
        for bad in ["-1", "NaN", "inf", "1e12"] {
            let e = err(&[&format!("--inter-turn-delay-cap-seconds={bad}")]);
            let want = format!(
                "--inter-turn-delay-cap-seconds {}: accepted is a number of seconds from 0 to",
                bad.parse::<f64>().unwrap()
            );
            assert!(e.contains(&want), "{bad}: {e}");
        }
        assert!(plan(&[]).unwrap().cli_config().get("inter_turn_delay_cap_seconds").is_none());
    }

    #[test]
    fn the_synthetic_workload_is_refused_with_the_reason() {
        let args = options::parse(["x", "-m", "m", "--isl", "100", "--inter-turn-delay-cap-seconds", "1"]).unwrap();
        let e = format!("{:#}", ReplayPlan::from_args(args).unwrap_err());
        assert!(e.contains("the input is the synthetic workload (no --input-file)"), "{e}");
        assert!(e.contains("AIPerf 0.13 ignores the cap there"), "{e}");
    }
}
