//! The export phase: the summary of the collected records with the server's metrics, GPU
//! telemetry and network latency, every file written (each attempted), the console table and the
//! exit status.

use aiperf_core::results::metrics::Metric;
use aiperf_core::results::network::{ProbeSample, adjusted_metrics};
use aiperf_core::results::summary::{RunSummary, shell_command};
use anyhow::Result;

use super::measure::{Measured, process_cpu_seconds};
use super::model::{Inputs, RunOutcome};
use crate::exit;
use crate::io::exports;
use crate::profile::clock::unix_now_ns;
use crate::profile::control::Control;
use crate::profile::plan::ReplayPlan;
use crate::profile::plan::network::NetworkLatency;
use crate::profile::records::Collected;
use crate::profile::scraper;

/// What the phases before the export found.
pub(super) struct Ran {
    pub(super) ready_ms: f64,
    /// Warm-up requests (sent, failed).
    pub(super) warmup: Option<(u64, u64)>,
    pub(super) measured: Measured,
    /// The run's id (AIPerf's `benchmark_id`), in its `--cache-bust` markers too.
    pub(super) benchmark_id: String,
}

/// Export: the summary of the collected records and the server's metrics, every file written
/// (each attempted), the console table; returns the exit status and the summary.
pub(super) fn export(
    plan: &ReplayPlan,
    inputs: Inputs,
    control: &Control,
    ran: Ran,
    collected: Collected,
    scraper: Option<scraper::Scraper>,
) -> Result<RunOutcome> {
    let Ran { ready_ms, warmup, measured: mut m, benchmark_id } = ran;
    let probes = m.prober.take().map(|p| p.finish(!control.interrupted()));
    let client_cpu_s = process_cpu_seconds().zip(m.cpu_before).map(|(b, a)| b - a);
    let gpu = scraper.as_ref().and_then(scraper::Scraper::gpu);
    let start_unix_ns = u64::try_from(m.start_unix_ns).unwrap_or(u64::MAX);
    let (server_metrics, raw) = scraper.map_or((None, None), |s| {
        let series = s.finish();
        let raw = plan.server.metrics_formats.2.then(|| aiperf_core::server::raw::raw_rows(&series, start_unix_ns));
        (Some(aiperf_core::server::window::ServerMetrics::of(&series, start_unix_ns)), raw)
    });
    let server_metrics = server_metrics.filter(|m| m.endpoints.iter().any(|e| e.fetches > 0));
    let input_config = crate::profile::plan::aiperf_config::with_requests(
        plan.aiperf_config().clone(),
        m.fixed_schedule,
        m.sent.as_ref().map_or(0, |d| d.requests),
    );
    let server_written = server_metrics.as_ref().map_or(Ok(()), |m| {
        exports::write_server_metrics(
            &plan.exports.artifact_dir,
            &plan.exports.names,
            (m, raw.as_ref()),
            &input_config,
            plan.server.metrics_formats,
        )
    });
    let start_ns = u64::try_from(m.start_unix_ns).unwrap_or(u64::MAX);
    // AIPerf's window: time zero to the last request's end and a grace for the scrape after it.
    let end_ns =
        collected.aggregate.last_end_ns.map(|e| start_ns.saturating_add(e).saturating_add(GPU_FINAL_SCRAPE_GRACE_NS));
    let (gpu_lines, gpu_written, gpu_export) = gpu_telemetry(gpu.as_ref(), &plan.exports.names, (start_ns, end_ns));
    let with_goodput = !plan.exports.slos.is_empty();
    let mut report = collected.aggregate.report_over_on(with_goodput, None, &crate::threads::Threads);
    let rtt_ns = network_rtt_ns(plan.server.network, probes.as_deref());
    if let Some(rtt) = rtt_ns {
        report.metrics.extend(adjusted_metrics(&collected.aggregate, rtt));
    }
    let requests_end_ns = collected.aggregate.last_end_ns.map(|e| start_ns.saturating_add(e));
    let gpu_energy = gpu_efficiency(gpu.as_ref(), &report, &input_config, (start_ns, requests_end_ns, end_ns));
    let calibration = collected
        .mock_ttft_ms
        .and_then(|prog| report.get(Metric::TimeToFirstToken).and_then(|d| d.percentile(50.0)).map(|m| (prog, m)));
    let interrupted = control.interrupted();
    let summary = RunSummary {
        report,
        benchmark_id,
        cli_command: crate::profile::records::mask(&shell_command(std::env::args()), &plan.secrets()),
        incomplete_reason: None,
        input_config,
        cli_config: {
            let mut c = plan.cli_config().clone();
            // Whether the trace's timestamps were replayed, as resolved (not only as flagged).
            c["fixed_schedule"] = serde_json::Value::Bool(m.fixed_schedule);
            c
        },
        was_cancelled: interrupted,
        start_unix_ns: m.start_unix_ns,
        end_unix_ns: unix_now_ns(),
        tokenizer: inputs.tokenizer,
        warmup,
        calibration,
        client_cpu_s,
        startup_ms: ready_ms,
        urls: plan.shown_urls(),
        sharding: m.sharding,
        // llama.cpp's hit rate compares its evaluated tokens with every token sent: only when
        // the scrapes reach the last request's end.
        server: server_metrics.as_ref().map(|m| {
            let covered = requests_end_ns.is_some_and(|end| m.covers(end));
            aiperf_core::server::kinds::ServerView::of(m, covered.then_some(collected.aggregate.total_input_tokens))
        }),
        gpu_telemetry: gpu_export,
        gpu_energy,
    };
    let written = write_summaries(plan, &summary, &collected, with_goodput, rtt_ns);
    let probes_written = probes.as_ref().map_or(Ok(()), |p| {
        exports::write_file(
            &plan.exports.artifact_dir.join(plan.exports.names.network_latency()),
            &aiperf_core::results::network::samples_jsonl(p),
        )
    });
    show!("{}", aiperf_core::results::export::console_table(&summary));
    if plan.exports.show_trace_timing {
        show!("{}", aiperf_core::results::http_trace::timing_table(&summary));
    }
    let ceiling_note = match (&m.sent, plan.limits.concurrency) {
        (Ok(d), Some(c)) if m.fixed_schedule => Some(ceiling_note(c, d.ceiling, d.requests, &summary)),
        _ => None,
    };
    if let Some(n) = &ceiling_note {
        show!("note: {n}");
    }
    if let (Ok(d), Some(cap)) = (&m.sent, plan.limits.system_idle_cap) {
        show!(
            "note: --system-idle-gap-cap-seconds {}: the replay skipped {:.3} s of idle time in {} move(s)",
            cap.as_secs_f64(),
            d.idle_skips.1 as f64 / 1e9,
            d.idle_skips.0
        );
    }
    for line in &gpu_lines {
        show!("{line}");
    }
    if written.is_ok() && server_written.is_ok() && gpu_written.is_ok() && probes_written.is_ok() {
        exports::write_ready_marker(&plan.exports.artifact_dir, &summary)?;
    }
    show!("Exports written to {}", plan.exports.artifact_dir.display());
    written?;
    server_written?;
    gpu_written?;
    probes_written?;
    m.sent?;
    Ok(RunOutcome { status: exit_status(interrupted, &summary), summary, ceiling_note })
}

/// The round trip (ns) subtracted from the latencies (`network_adjusted_*`): the mean given, or
/// the probes' mean; said on the console, or why nothing is subtracted.
fn network_rtt_ns(network: NetworkLatency, probes: Option<&[ProbeSample]>) -> Option<f64> {
    match (network, probes) {
        (NetworkLatency::Mean(ms), _) => {
            let rtt_ns = ms * 1e6;
            if rtt_ns > 0.0 {
                say!(
                    "Network latency: subtracting a fixed mean round trip of {ms:.3} ms from the latencies (network_adjusted_* metrics)"
                );
            }
            Some(rtt_ns)
        }
        (NetworkLatency::Probe { .. }, Some(p)) => match aiperf_core::results::network::mean_rtt_ns(p) {
            Some(rtt_ns) => {
                say!(
                    "Network latency: subtracting the measured mean round trip of {:.3} ms (over {} TCP-handshake probe(s), {} failed) from the latencies (network_adjusted_* metrics)",
                    rtt_ns / 1e6,
                    aiperf_core::results::network::successes(p),
                    p.len() - aiperf_core::results::network::successes(p)
                );
                Some(rtt_ns)
            }
            None => {
                say!("warning: no network latency probe succeeded ({} tried): no network_adjusted_* metrics", p.len());
                None
            }
        },
        _ => None,
    }
}

/// How long after the last request's end a GPU scrape still counts in the summary: AIPerf's
/// `FINAL_SCRAPE_GRACE_NS`, two scrape intervals.
const GPU_FINAL_SCRAPE_GRACE_NS: u64 = 666_000_000;

/// The GPU telemetry's console lines (a note when no exporter answered), whether its records
/// file was written, and AIPerf's `telemetry_data` over `window` (Unix ns: time zero, and the
/// end of the last request with the grace).
fn gpu_telemetry(
    gpu: Option<&scraper::GpuShared>,
    names: &exports::ExportNames,
    window: (u64, Option<u64>),
) -> (Vec<String>, Result<()>, Option<aiperf_core::server::gpu::TelemetryExport>) {
    let Some(Ok(mut g)) = gpu.map(|g| g.lock()) else {
        return (Vec::new(), Ok(()), None);
    };
    let written = match g.close() {
        Some(e) => {
            say!("error: {e}");
            Err(anyhow::anyhow!(e))
        }
        None => Ok(()),
    };
    let lines = if g.telemetry.is_empty() {
        vec!["GPU telemetry: no DCGM exporter answered with GPU metrics (--gpu-telemetry URL…)".to_owned()]
    } else {
        let mut l = g.telemetry.console_lines();
        l.push(format!("GPU telemetry: {} record(s) in {}", g.records, names.gpu_telemetry()));
        l
    };
    let (start, end) = window;
    let iso8601 = aiperf_core::datetime::iso8601;
    let times = (iso8601(u128::from(start)), iso8601(end.map_or_else(unix_now_ns, u128::from)));
    let export = g.telemetry.export(Some(start), end, times);
    (lines, written, Some(export))
}

/// AIPerf's GPU energy-efficiency metrics: the GPUs' energy over `window` (Unix ns: time zero,
/// the last request's end, and that end with the grace) and their power up to the last request's
/// end, divided by the report's numbers and the profiling phase's concurrency.
fn gpu_efficiency(
    gpu: Option<&scraper::GpuShared>,
    report: &aiperf_core::results::aggregate::Report,
    input_config: &serde_json::Value,
    window: (u64, Option<u64>, Option<u64>),
) -> Vec<aiperf_core::server::gpu::EnergyMetric> {
    use aiperf_core::server::gpu::{EfficiencyInputs, efficiency};
    let Some(Ok(g)) = gpu.map(|g| g.lock()) else {
        return Vec::new();
    };
    let (start, requests_end, energy_end) = window;
    let vendors = g.telemetry.vendor_energy(Some(start), energy_end, requests_end);
    let concurrency = input_config
        .get("phases")
        .and_then(serde_json::Value::as_array)
        .and_then(|p| p.iter().find(|p| p.get("kind").is_some_and(|k| k == "profiling")))
        .and_then(|p| p.get("concurrency"))
        .and_then(serde_json::Value::as_u64);
    let inputs = EfficiencyInputs {
        duration_s: requests_end.map_or(0.0, |e| e.saturating_sub(start) as f64 / 1e9),
        total_osl: Some(report.total_output_tokens as f64),
        total_isl: Some(report.total_input_tokens as f64),
        request_count: Some(report.request_count as f64),
        request_latency_ms: report.get(Metric::RequestLatency).map(|d| d.avg),
        request_throughput: Some(report.request_throughput),
        output_token_throughput: Some(report.output_token_throughput),
        goodput: report.goodput,
        concurrency,
    };
    efficiency(&vendors, &inputs)
}

/// Writes the summary files, and the time slices of `--slice-duration`; each is attempted, the
/// first failure is returned.
fn write_summaries(
    plan: &ReplayPlan,
    summary: &RunSummary,
    collected: &Collected,
    with_goodput: bool,
    rtt_ns: Option<f64>,
) -> Result<()> {
    let mut written = exports::write_summaries(&plan.exports.artifact_dir, &plan.exports.names, summary);
    if let Some(slicer) = &collected.slices {
        let mut slices = slicer.finish_on(
            collected.aggregate.last_end_ns.unwrap_or(0),
            with_goodput,
            &collected.aggregate.timeline,
            &crate::threads::Threads,
        );
        if let Some(rtt) = rtt_ns {
            for (slice, agg) in slices.slices.iter_mut().zip(slicer.aggregates()) {
                slice.report.metrics.extend(adjusted_metrics(agg, rtt));
            }
        }
        if slices.beyond > 0 {
            say!(
                "warning: {} request(s) sent after the first {} time slices are left out of the time slices",
                slices.beyond,
                aiperf_core::results::timeslices::MAX_SLICES
            );
        }
        let w = exports::write_timeslices(&plan.exports.artifact_dir, &plan.exports.names, &slices, summary);
        if let Err(e) = &w {
            say!("error: {}", crate::exit::describe(e));
        }
        written = written.and(w);
    }
    written
}

/// A run's exit status: interrupted by a signal, no request succeeded (said why), or success.
fn exit_status(interrupted: bool, summary: &RunSummary) -> u8 {
    if interrupted {
        exit::INTERRUPTED
    } else if summary.report.request_count == 0 {
        say!(
            "error: no request succeeded ({} failed); see the errors above and profile_export.jsonl",
            summary.report.error_request_count
        );
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    }
}

/// What a `--concurrency` ceiling did to a fixed schedule: nothing (never reached), or how many
/// session starts it held back past their timestamps, with the lateness that cost.
fn ceiling_note(c: usize, ceiling: aiperf_core::replay::dispatch::Ceiling, sent: u64, summary: &RunSummary) -> String {
    if ceiling.held_starts == 0 {
        return format!(
            "--concurrency {c} had no effect: at most {} session(s) were in flight on the trace's timestamps",
            ceiling.peak_runs
        );
    }
    let lateness = summary
        .report
        .get(Metric::SendLateness)
        .and_then(|d| d.percentile(50.0))
        .map_or_else(String::new, |p| format!(" (send lateness p50 {p:.1} ms)"));
    format!(
        "--concurrency {c} held {} session start(s) back past their timestamps{lateness}, {sent} request(s) sent: \
         the trace's schedule was not kept; --no-fixed-schedule runs a closed loop at concurrency {c} instead",
        ceiling.held_starts
    )
}
