//! AIPerf's `weka_trace` replay options (`--ignore-trace-delays`, `--use-think-time-only`,
//! `--max-context-length`, `--trace-idle-gap-cap-seconds`): checked here, applied by the core's
//! WEKA reader ([`aiperf_core::formats::WekaTiming`]) and, once the trace is read, by [`apply`].
//!
//! AIPerf reads them in its `weka_trace` loader only: on other input they would change nothing,
//! so they are refused there by name, with the reason.

use aiperf_core::formats::{Format, WekaTiming};
use aiperf_core::trace::Trace;
use anyhow::{Result, bail, ensure};

use super::model::Input;
use crate::io::trace_format::{FormatChoice, TraceFormatArgs};
use crate::profile::options::Args;

/// AIPerf's words for `--max-context-length` on input that is not WEKA.
const NOT_WEKA_MAX_CONTEXT: &str = "--max-context-length only applies to Weka trace replay (--custom-dataset-type \
     weka_trace or a weka --public-dataset). It filters by recorded peak prompt+output length at load time; other \
     formats do not implement this filter. Drop --max-context-length or switch to a Weka dataset.";

/// AIPerf's environment settings of its WEKA agent-chain detection and naming.
const CHAIN_SETTINGS: &[&str] = &[
    "AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS",
    "AIPERF_DATASET_WEKA_SEAM_MAX_GAP_SECONDS",
    "AIPERF_DATASET_WEKA_SEAM_MIN_OVERLAP_RATIO",
    "AIPERF_DATASET_WEKA_AUX_MAX_REQUESTS",
    "AIPERF_DATASET_WEKA_AUX_ISL_RATIO",
    "AIPERF_DATASET_WEKA_AUX_ISL_FLOOR",
    "AIPERF_DATASET_WEKA_AUX_CROSS_MODEL",
    "AIPERF_DATASET_WEKA_AUX_REDUCTION_OSL_MAX",
    "AIPERF_DATASET_WEKA_AUX_REDUCTION_RATIO",
    "AIPERF_DATASET_WEKA_WORKER_GROUP_MIN",
];

/// Refuses AIPerf's chain settings: the chains are split with AIPerf 0.13's defaults.
fn refuse_chain_settings() -> Result<()> {
    if let Some(name) = CHAIN_SETTINGS.iter().find(|n| std::env::var_os(n).is_some()) {
        bail!(
            "{name} is set: AIPerf's settings of its WEKA agent-chain detection are not read here (the chains are \
             split with AIPerf 0.13's defaults); unset it"
        );
    }
    Ok(())
}

/// The options given, checked (`None` when none is). `--inter-turn-delay-cap-seconds` alone
/// (checked by [`super::delay_cap`]) replays a WEKA trace's conversations as sessions too, their
/// delays capped, as AIPerf's `weka_trace` loader replays every WEKA trace.
pub fn timing(a: &Args, format: &TraceFormatArgs, input: &Input, max_osl: Option<u64>) -> Result<Option<WekaTiming>> {
    let given = given(a);
    let Some(first) = given.first() else {
        let weka = matches!(input, Input::File(f) if super::delay_cap::reads_as(f, format.trace_format, Format::Weka));
        if !(a.inter_turn_delay_cap_seconds.is_some() && weka) {
            return Ok(None);
        }
        refuse_chain_settings()?;
        return Ok(Some(WekaTiming {
            inter_turn_delay_cap_s: a.inter_turn_delay_cap_seconds,
            max_osl,
            ..WekaTiming::default()
        }));
    };
    refuse_chain_settings()?;
    ensure!(
        !(a.ignore_trace_delays && a.use_think_time_only),
        "--ignore-trace-delays and --use-think-time-only are mutually exclusive (each sets Turn.delay differently)."
    );
    if let Some(n) = a.max_context_length {
        ensure!(n >= 1, "--max-context-length {n}: accepted is a whole number of tokens, at least 1");
    }
    if let Some(s) = a.trace_idle_gap_cap_seconds {
        ensure!(
            s.is_finite() && s >= 0.0 && s <= aiperf_core::duration::MAX_MS as f64 / 1000.0,
            "--trace-idle-gap-cap-seconds {s}: accepted is a number of seconds from 0 to {} ({})",
            aiperf_core::duration::MAX_MS / 1000,
            aiperf_core::duration::MAX_WORDS
        );
    }
    let named = match (input, format.trace_format) {
        (Input::Synthetic(_), _) => Some("the synthetic workload (no --input-file)".to_owned()),
        (Input::Records(_), _) => Some("the config file's inline records".to_owned()),
        (Input::Dataset(d), _) => Some(format!("a {} file", d.kind)),
        (Input::File(_), FormatChoice::Is(f)) if f != Format::Weka => Some(format!("a {} trace", f.name())),
        _ => None,
    };
    if let Some(what) = named {
        refuse_on(first, &what, a.max_context_length.is_some())?;
    }
    Ok(Some(WekaTiming {
        think_time_only: a.use_think_time_only,
        ignore_delays: a.ignore_trace_delays,
        idle_gap_cap_s: a.trace_idle_gap_cap_seconds,
        inter_turn_delay_cap_s: a.inter_turn_delay_cap_seconds,
        max_context_length: a.max_context_length,
        max_osl,
    }))
}

/// The spellings of the options given, in the order of AIPerf's help.
fn given(a: &Args) -> Vec<&'static str> {
    let mut out = Vec::new();
    if a.ignore_trace_delays {
        out.push("--ignore-trace-delays");
    }
    if a.use_think_time_only {
        out.push("--use-think-time-only");
    }
    if a.max_context_length.is_some() {
        out.push("--max-context-length");
    }
    if a.trace_idle_gap_cap_seconds.is_some() {
        out.push("--trace-idle-gap-cap-seconds");
    }
    out
}

/// The refusal of `option` on input that is not WEKA (`what`).
fn refuse_on(option: &str, what: &str, max_context: bool) -> Result<()> {
    if max_context {
        bail!("{NOT_WEKA_MAX_CONTEXT}");
    }
    bail!(
        "{option} applies to WEKA traces only (AIPerf 0.13 reads it in its weka_trace loader alone, so on other input \
         it would change nothing), and the input is {what}; drop it, or replay a WEKA trace (--custom-dataset-type weka_trace)"
    )
}

/// The trace read with `timing`: refused unless it is WEKA; with `--ignore-trace-delays` no turn keeps a time, otherwise only
/// each session's first turn does (the later ones follow their delays).
pub fn apply(trace: Trace, format: Format, timing: &WekaTiming) -> Result<Trace> {
    if format != Format::Weka {
        let only_the_delay_cap = WekaTiming {
            inter_turn_delay_cap_s: timing.inter_turn_delay_cap_s,
            max_osl: timing.max_osl,
            ..WekaTiming::default()
        } == *timing;
        if only_the_delay_cap {
            return Ok(trace);
        }
        let option = if timing.ignore_delays {
            "--ignore-trace-delays"
        } else if timing.think_time_only {
            "--use-think-time-only"
        } else if timing.max_context_length.is_some() {
            "--max-context-length"
        } else {
            "--trace-idle-gap-cap-seconds"
        };
        refuse_on(option, &format!("a {} trace (detected)", format.name()), timing.max_context_length.is_some())?;
    }
    let mut trace = trace;
    aiperf_core::formats::time_turns(&mut trace, timing.ignore_delays);
    Ok(trace)
}
