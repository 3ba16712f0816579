//! Writing a run's exports: the per-request JSONL (opened before the first request, written as
//! records arrive) and the summary files, each the pure serialization of one
//! [`RunSummary`](aiperf_core::results::summary::RunSummary) by [`aiperf_core::results::export`].

use std::io::Write;
use std::path::Path;

use aiperf_core::results::export::SummaryFormat;
use aiperf_core::results::line::RECORDS_FILE;
use aiperf_core::results::summary::RunSummary;
use aiperf_core::results::timeslices::{TIMESLICES_CSV, TIMESLICES_JSON, TimeSlices, timeslices_csv, timeslices_json};
use aiperf_core::server::export as server_export;
use aiperf_core::server::window::ServerMetrics;
use anyhow::{Context, Result};

use crate::io::output;

/// A new run id as AIPerf writes one (`benchmark_id`): 12 hex digits, from the process's
/// randomly keyed hasher over the start time and the process id.
pub fn benchmark_id(start_unix_ns: u128) -> String {
    use std::hash::BuildHasher;
    let h = std::collections::hash_map::RandomState::new().hash_one((start_unix_ns, std::process::id()));
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

/// AIPerf's marker that a run folder is complete: written last, once every export is.
pub const READY_MARKER: &str = ".aiperf_results_ready.json";

/// Writes [`READY_MARKER`] into `dir` as AIPerf does (`{"ready":true,"was_cancelled":…,"partial":…}`).
pub fn write_ready_marker(dir: &Path, summary: &RunSummary) -> Result<()> {
    let marker = serde_json::json!({
        "ready": true,
        "was_cancelled": summary.was_cancelled,
        "partial": summary.incomplete_reason.is_some(),
    });
    write_file(&dir.join(READY_MARKER), &marker.to_string())
}

/// `--export-level summary`: no records file. The run's records go nowhere; the records file and
/// the [`READY_MARKER`] of a run this one replaces (`--overwrite`) are removed.
pub fn no_records_file(dir: &Path) -> Result<Box<dyn Write + Send>> {
    for f in [READY_MARKER, RECORDS_FILE] {
        let path = dir.join(f);
        if path.is_file() {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(Box::new(std::io::sink()))
}

/// Opens `profile_export.jsonl` in `dir` for the records stage, after taking away the
/// [`READY_MARKER`] of a run this one replaces (`--overwrite`), so that the folder does not say
/// it is complete before it is.
/// Buffered: the records stage flushes each batch (see [`crate::profile::records`]), so a busy run makes one
/// write per batch rather than one per request.
pub fn records_file(dir: &Path) -> Result<Box<dyn Write + Send>> {
    let marker = dir.join(READY_MARKER);
    if marker.is_file() {
        std::fs::remove_file(&marker).with_context(|| format!("cannot remove {}", marker.display()))?;
    }
    Ok(Box::new(std::io::BufWriter::with_capacity(1 << 18, output::create_stream(&dir.join(RECORDS_FILE))?)))
}

/// Writes `server_metrics_export.json` and `.csv` into `dir` (those of `--server-metrics-formats`);
/// each is attempted.
pub fn write_server_metrics(
    dir: &Path,
    m: &ServerMetrics,
    input_config: &serde_json::Value,
    (json, csv): (bool, bool),
) -> Result<()> {
    let mut first_error = None;
    let files = [
        json.then(|| (server_export::JSON_FILE, server_export::export_json(m, input_config))),
        csv.then(|| (server_export::CSV_FILE, server_export::export_csv(m))),
    ];
    for (name, text) in files.into_iter().flatten() {
        let path = dir.join(name);
        if let Err(e) =
            output::write_output(&path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
        {
            say!("error: {}", crate::exit::describe(&e));
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes every summary file into `dir`; all are attempted, the first failure is returned.
pub fn write_summaries(dir: &Path, summary: &RunSummary) -> Result<()> {
    let mut first_error = None;
    for f in SummaryFormat::ALL {
        let path = dir.join(f.file_name());
        if let Err(e) = output::write_output(&path, f.serialize(summary).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
        {
            say!("error: {}", crate::exit::describe(&e));
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes `profile_export_aiperf_timeslices.json` and `.csv` into `dir`.
pub fn write_timeslices(dir: &Path, slices: &TimeSlices, summary: &RunSummary) -> Result<()> {
    let json = timeslices_json(slices, summary.start_unix_ns, &summary.input_config);
    write_file(&dir.join(TIMESLICES_JSON), &json)?;
    write_file(&dir.join(TIMESLICES_CSV), &timeslices_csv(slices, summary.start_unix_ns))
}

/// Writes one summary file (a sweep's, an aggregate's, a search's).
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    output::write_output(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}
