//! AIPerf's `baseten_trace` replay options (`--replay-speedup`, `--max-idle-gap-cap-seconds`,
//! `--trace-session-sample-ratio`, `--open-loop-replay`/`--no-open-loop-replay`,
//! `--open-loop-strict`, `--omit-kv-hints`, `--force-min-tokens`/`--no-force-min-tokens`):
//! checked here, applied by the core's Baseten conversion
//! ([`aiperf_core::formats::baseten::convert`]) and, on a trace of another format, by [`apply`].
//!
//! AIPerf 0.13 reads them in its `baseten_trace` loader only. Two mean the same on any timed
//! trace and are honoured on every one (`--replay-speedup` divides the times, the idle-gap cap
//! shortens the gaps; `--open-loop-replay` is how every trace replays); the others need what
//! only a Baseten row records (durations, KV hints, the recorded output length to force) or its
//! session sampling, and are refused on other input by name, with the reason.

use std::path::Path;

use aiperf_core::formats::Format;
use aiperf_core::formats::baseten::{BasetenReplay, retime};
use aiperf_core::synthesis::TransformParams;
use aiperf_core::trace::Trace;
use anyhow::{Result, bail, ensure};
use serde_json::{Map, Value};

use super::model::Input;
use crate::io::trace_format::{FormatChoice, TraceFormatArgs};
use crate::profile::options::Args;

/// The Baseten replay options of a run: the values, and the spellings given that only a Baseten
/// trace honours.
#[derive(Clone, Debug, Default)]
pub struct BasetenPlan {
    pub replay: BasetenReplay,
    pub baseten_only: Vec<&'static str>,
    /// `--replay-speedup` or `--max-idle-gap-cap-seconds` given.
    pub retimes: bool,
}

/// The options checked against the input (`format`: the trace format as named, after
/// `--custom-dataset-type`).
pub fn plan(
    a: &Args,
    format: &TraceFormatArgs,
    input: &Input,
    synthesis: Option<&TransformParams>,
    extra_inputs: &Map<String, Value>,
) -> Result<BasetenPlan> {
    if let Some(s) = a.replay_speedup {
        ensure!(
            s.is_finite() && s > 0.0 && s <= 1e6,
            "--replay-speedup {s}: accepted is a number above 0 and at most 1000000 (10 = ten times faster than recorded)"
        );
    }
    if let Some(c) = a.max_idle_gap_cap_seconds {
        ensure!(
            c.is_finite() && c > 0.0 && c <= aiperf_core::duration::MAX_MS as f64 / 1000.0,
            "--max-idle-gap-cap-seconds {c}: accepted is a number of seconds above 0 and at most {} ({})",
            aiperf_core::duration::MAX_MS / 1000,
            aiperf_core::duration::MAX_WORDS
        );
    }
    if let Some(r) = a.trace_session_sample_ratio {
        ensure!(r > 0.0 && r <= 1.0, "--trace-session-sample-ratio {r}: accepted is a fraction above 0 and at most 1");
    }
    ensure!(
        !(a.open_loop_strict && a.no_open_loop_replay),
        "--open-loop-strict requires open-loop replay; remove --no-open-loop-replay (or drop --open-loop-strict)."
    );
    let mut baseten_only = Vec::new();
    for (given, spelling) in [
        (a.trace_session_sample_ratio.is_some(), "--trace-session-sample-ratio"),
        (a.no_open_loop_replay, "--no-open-loop-replay"),
        (a.open_loop_strict, "--open-loop-strict"),
        (a.omit_kv_hints, "--omit-kv-hints"),
        (a.force_min_tokens, "--force-min-tokens"),
        (a.no_force_min_tokens, "--no-force-min-tokens"),
    ] {
        if given {
            baseten_only.push(spelling);
        }
    }
    let retimes = a.replay_speedup.is_some() || a.max_idle_gap_cap_seconds.is_some();
    let replay = BasetenReplay {
        open_loop: !a.no_open_loop_replay,
        strict: a.open_loop_strict,
        speedup: a.replay_speedup.unwrap_or(1.0),
        idle_gap_cap_s: a.max_idle_gap_cap_seconds,
        session_sample_ratio: a.trace_session_sample_ratio,
        inter_turn_delay_cap_s: a.inter_turn_delay_cap_seconds,
        omit_kv_hints: a.omit_kv_hints,
        force_min_tokens: !a.no_force_min_tokens,
        seed: a.random_seed,
        start_offset_ms: a.fixed_schedule_start_offset,
        end_offset_ms: a.fixed_schedule_end_offset,
    };
    let named = match (input, format.trace_format) {
        (Input::Synthetic(_), _) => Some("the synthetic workload (no --input-file)".to_owned()),
        (Input::Records(_), _) => Some("the config file's inline records".to_owned()),
        (Input::File(_), FormatChoice::Is(f)) if f != Format::Baseten => Some(format!("a {} trace", f.name())),
        _ => None,
    };
    if let (Some(what), Some(first)) = (&named, baseten_only.first()) {
        refuse_on(first, what)?;
    }
    if matches!(input, Input::Synthetic(_)) && retimes {
        bail!(
            "--replay-speedup and --max-idle-gap-cap-seconds retime a trace's recorded times, and the input is the \
             synthetic workload (no --input-file); give a trace with --input-file"
        );
    }
    if named.is_none() {
        baseten_checks(a, synthesis, extra_inputs, &replay)?;
    }
    Ok(BasetenPlan { replay, baseten_only, retimes })
}

/// What AIPerf refuses with a Baseten trace (its words).
fn baseten_checks(
    a: &Args,
    synthesis: Option<&TransformParams>,
    extra: &Map<String, Value>,
    replay: &BasetenReplay,
) -> Result<()> {
    let src = "--custom-dataset-type baseten_trace";
    let baseten = a.custom_dataset_type == "baseten_trace";
    if baseten && let Some(s) = synthesis {
        ensure!(
            s.speedup_ratio == 1.0,
            "--synthesis-speedup-ratio is not supported with {src}; use --replay-speedup to scale replay pacing."
        );
        let reshaping: Vec<&str> = [
            (s.prefix_len_multiplier != 1.0, "--synthesis-prefix-len-multiplier"),
            (s.prefix_root_multiplier != 1, "--synthesis-prefix-root-multiplier"),
            (s.prompt_len_multiplier != 1.0, "--synthesis-prompt-len-multiplier"),
        ]
        .into_iter()
        .filter_map(|(set, f)| set.then_some(f))
        .collect();
        if !reshaping.is_empty() {
            bail!(
                "{} {} not supported with {src}: it replays recorded prompts verbatim, so hash-reshaping synthesis \
                 cannot change the sent prompt and would desync the forwarded hash_ids KV hints.",
                reshaping.join(", "),
                if reshaping.len() == 1 { "is" } else { "are" }
            );
        }
    }
    if baseten {
        let mut collisions = Vec::new();
        if replay.force_min_tokens && extra.contains_key("min_tokens") {
            collisions.push(("min_tokens", "--no-force-min-tokens"));
        }
        if !replay.omit_kv_hints {
            collisions.extend(
                ["hash_ids", "block_size"]
                    .into_iter()
                    .filter(|k| extra.contains_key(*k))
                    .map(|k| (k, "--omit-kv-hints")),
            );
        }
        if !collisions.is_empty() {
            let lines: Vec<String> = collisions
                .iter()
                .map(|(k, flag)| {
                    format!("--extra-inputs {k} is overwritten per-turn by the baseten_trace loader; pass {flag} to send your value instead")
                })
                .collect();
            bail!("{}", lines.join("; "));
        }
    }
    if replay.speedup != 1.0 && (replay.start_offset_ms.is_some() || replay.end_offset_ms.is_some()) {
        bail!(
            "--replay-speedup with --fixed-schedule-start-offset/--fixed-schedule-end-offset: AIPerf keeps a Baseten \
             trace's rows by their recorded times but puts the start offset on the sped-up timeline; give one or the other"
        );
    }
    Ok(())
}

/// The refusal of `option` on input that is not a Baseten trace (`what`).
fn refuse_on(option: &str, what: &str) -> Result<()> {
    let why = match option {
        "--trace-session-sample-ratio" => {
            "it samples a Baseten trace's sessions as AIPerf's baseten_trace loader does; convert-trace --sample-fraction samples any trace's conversations"
        }
        "--no-open-loop-replay" => {
            "its think times are the recorded gaps less the recorded durations (duration_e2e_ms), which only Baseten rows record"
        }
        "--open-loop-strict" => {
            "it splits a Baseten trace's sessions into single rows; rows without session_id are single-turn already"
        }
        _ => {
            "only Baseten rows carry the recorded KV hints and output lengths it sends or drops; other traces send neither"
        }
    };
    bail!(
        "{option} applies to Baseten traces only (AIPerf 0.13 reads it in its baseten_trace loader alone: {why}), and the \
         input is {what}; drop it, or replay a Baseten trace (--custom-dataset-type baseten_trace)"
    )
}

/// Whether the file starts as a Parquet or Arrow IPC file does (`false` when it cannot be read:
/// reading the trace says why).
pub fn looks_columnar(path: &Path) -> bool {
    crate::io::input::head(path, 8).is_ok_and(|h| h.starts_with(b"PAR1") || h.starts_with(b"ARROW1"))
}

/// The trace read (of `format`) with the options: a Baseten trace was converted with them
/// already; another is refused if a Baseten-only option is given, else retimed.
pub fn apply(mut trace: Trace, format: Format, plan: &BasetenPlan) -> Result<Trace> {
    if format == Format::Baseten {
        return Ok(trace);
    }
    if let Some(first) = plan.baseten_only.first() {
        refuse_on(first, &format!("a {} trace (detected)", format.name()))?;
    }
    if plan.retimes {
        retime(&mut trace, plan.replay.speedup, plan.replay.idle_gap_cap_s)?;
    }
    Ok(trace)
}
