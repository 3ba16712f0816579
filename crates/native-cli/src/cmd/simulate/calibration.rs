//! `--calibrate RUN_DIR`: what a measured run's records say about the engine, and the fits written
//! beside the results.

use super::args::Args;
use aiperf_core::results::line::RECORDS_FILE;
use aiperf_core::results::record::RequestRecord;
use aiperf_core::simulate::calibrate::steps::StepCalibration;
use aiperf_core::simulate::calibrate::{Calibration, Observation};
use aiperf_core::trace::{LineRead, read_line_capped};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::Path;

/// What `dir`'s records say about the engine ([`Observation`]), for `--calibrate`.
pub(super) fn observe(dir: &Path, max_line_bytes: usize) -> Result<Vec<Observation>> {
    let path = dir.join(RECORDS_FILE);
    let mut reader =
        crate::io::input::open(&path).with_context(|| format!("--calibrate: {} is no run folder", dir.display()))?;
    let (mut buf, mut rec, mut obs, mut line) = (Vec::new(), RequestRecord::default(), Vec::new(), 0u64);
    loop {
        buf.clear();
        match read_line_capped(&mut reader, &mut buf, max_line_bytes)
            .with_context(|| format!("cannot read {}", path.display()))?
        {
            LineRead::End => break,
            LineRead::TooLong => {
                bail!(
                    "{}:{}: the line is longer than {max_line_bytes} bytes (--max-line-bytes raises the limit)",
                    path.display(),
                    line + 1
                )
            }
            LineRead::Line => line += 1,
        }
        let read = aiperf_core::results::line::read_line(&buf, &mut rec)
            .with_context(|| format!("{}:{line}: not a record", path.display()))?;
        if read && let Some(o) = Observation::of(&rec) {
            obs.push(o);
        }
    }
    Ok(obs)
}

/// The most requests the server ran at once and the metric that says it, from the run's summary.
pub(super) fn server_running_max(dir: &Path) -> Option<(u64, String)> {
    let text = std::fs::read(dir.join(aiperf_core::results::export::SummaryFormat::Json.file_name())).ok()?;
    let summary: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let running = &summary["prefix_cache_comparison"]["server_running_requests"];
    let max = running["max"].as_f64().filter(|m| m.is_finite() && *m >= 1.0)?;
    Some((max as u64, running["source"].as_str().unwrap_or("the server's metrics").to_owned()))
}

pub(super) fn calibration_json(c: &Calibration, args: &Args) -> serde_json::Value {
    let fit = |f: &aiperf_core::simulate::calibrate::Fit, x: &str| json!({ "x": x, "points": f.points, "intercept_ms": f.intercept / 1000.0, "slope_ms": f.slope / 1000.0, "r2": f.r2, "mae_ms": f.mae / 1000.0 });
    json!({
        "run": args.calibrate.as_ref().map(|p| p.display().to_string()),
        "time_to_first_token": fit(&c.prefill, "uncached prompt tokens"),
        "inter_token_latency": fit(&c.decode, "requests running on the URL"),
        "slots": c.slots,
        "mean_wait_for_a_slot_ms": c.mean_wait_us / 1000.0,
    })
}

pub(super) fn step_calibration_json(c: &StepCalibration, args: &Args) -> serde_json::Value {
    json!({
        "run": args.calibrate.as_ref().map(|p| p.display().to_string()),
        "step_time": {
            "x": ["prompt tokens in the step", "decode tokens in the step"],
            "points": c.decode_points + c.prefill_points,
            "decode_windows": c.decode_points,
            "prefill_windows": c.prefill_points,
            "fixed_ms": c.steps.fixed_us / 1000.0,
            "per_prefill_token_ms": c.steps.per_prefill_token_us / 1000.0,
            "per_decode_token_ms": c.steps.per_decode_token_us / 1000.0,
            "r2": c.r2,
            "mae_ms": c.mae_us / 1000.0,
        },
        "max_batch_tokens": c.steps.max_batch_tokens,
        "slots": c.slots,
    })
}

pub(super) fn step_calibration_text(c: &StepCalibration) -> String {
    let s = &c.steps;
    format!(
        "Calibrated engine steps of at most {} tokens ({} decoding windows, {} prefills on an idle server; {}):\n  \
         step {:.3} ms + {:.5} ms per prompt token + {:.4} ms per decode token (R² {:.3}, mean error {:.3} ms a step)",
        s.max_batch_tokens,
        c.decode_points,
        c.prefill_points,
        c.slots.map_or("each taken to start when sent".to_owned(), |n| format!("{n} slots per URL")),
        s.fixed_us / 1000.0,
        s.per_prefill_token_us / 1000.0,
        s.per_decode_token_us / 1000.0,
        c.r2,
        c.mae_us / 1000.0
    )
}

pub(super) fn calibration_text(c: &Calibration) -> String {
    let e = &c.engine;
    format!(
        "Calibrated engine ({} requests for the time to first token, {} for the time between tokens; {}):\n  \
         prefill {:.3} ms + {:.5} ms per uncached token (R² {:.3}, mean error {:.2} ms)\n  \
         decode {:.3} ms + {:.4} ms per running request (R² {:.3}, mean error {:.3} ms)",
        c.prefill.points,
        c.decode.points,
        c.slots.map_or("each taken to start when sent".to_owned(), |s| format!(
            "{s} slots per URL, mean wait for one {:.2} ms taken out",
            c.mean_wait_us / 1000.0
        )),
        e.prefill_fixed_us / 1000.0,
        e.prefill_per_token_us / 1000.0,
        c.prefill.r2,
        c.prefill.mae / 1000.0,
        e.decode_fixed_us / 1000.0,
        e.decode_per_running_us / 1000.0,
        c.decode.r2,
        c.decode.mae / 1000.0
    )
}
