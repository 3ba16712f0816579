//! Writing a run's exports: the per-request JSONL (opened before the first request, written as
//! records arrive) and the summary files, each the pure serialization of one
//! [`RunSummary`](aiperf_core::results::summary::RunSummary) by [`aiperf_core::results::export`].

use std::io::Write;
use std::path::Path;

use aiperf_core::results::export::SummaryFormat;
use aiperf_core::results::line::RECORDS_FILE;
use aiperf_core::results::names::PREFIX_SUFFIXES;
use aiperf_core::results::summary::RunSummary;
use aiperf_core::results::timeslices::{TIMESLICES_CSV, TIMESLICES_JSON, TimeSlices, timeslices_csv, timeslices_json};
use aiperf_core::server::export as server_export;
use aiperf_core::server::window::ServerMetrics;
use anyhow::{Context, Result};

use crate::io::output;

/// The names of a run's export files: AIPerf's own, or all of them built on the base name of
/// `--profile-export-prefix` (`BASE.json`, `BASE.csv`, `BASE.jsonl`, `BASE_timeslices.csv`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportNames {
    base: Option<String>,
}

impl ExportNames {
    /// The names of `--profile-export-prefix PREFIX`: an absolute path gives its last part (the
    /// files stay in the artifact folder), and a known export suffix is stripped, as AIPerf does.
    /// A prefix naming a sub-folder, or nothing once stripped, is an error.
    pub fn with_prefix(prefix: &str) -> Result<ExportNames> {
        let path = Path::new(prefix);
        let name = if path.is_absolute() { path.file_name().and_then(|n| n.to_str()).unwrap_or("") } else { prefix };
        let base = PREFIX_SUFFIXES.iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name);
        if base.is_empty() || base == "." || base == ".." || base.contains(['/', '\\']) || base.starts_with('-') {
            anyhow::bail!(
                "--profile-export-prefix {prefix:?}: accepted is a file name without folders (e.g. `run1`: run1.json, run1.csv, run1.jsonl, …)"
            );
        }
        Ok(ExportNames { base: Some(base.to_owned()) })
    }

    /// The names a run folder was written with: AIPerf's own when its records file is there,
    /// else the one base `B` with both `B.jsonl` and `B.json` in the folder (a run written with
    /// `--profile-export-prefix B`); AIPerf's own names when there is none or several.
    pub fn of_folder(dir: &Path) -> ExportNames {
        if dir.join(RECORDS_FILE).is_file() {
            return ExportNames::default();
        }
        let Ok(entries) = std::fs::read_dir(dir) else { return ExportNames::default() };
        let mut bases = entries.filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let base = name.strip_suffix(".jsonl")?;
            // `B_raw.jsonl`, `B_gpu_telemetry.jsonl`, …: another export of the run.
            let other_export =
                PREFIX_SUFFIXES.iter().any(|s| *s != ".jsonl" && s.ends_with(".jsonl") && name.ends_with(s));
            (!base.is_empty() && !other_export && dir.join(format!("{base}.json")).is_file()).then(|| base.to_owned())
        });
        match (bases.next(), bases.next()) {
            (Some(base), None) => ExportNames { base: Some(base) },
            _ => ExportNames::default(),
        }
    }

    /// The names of the run whose records file is `records`: AIPerf's own for
    /// `profile_export.jsonl`, else those built on the file's stem (`B.jsonl` → `B.json`, …).
    pub fn of_records(records: &Path) -> ExportNames {
        match records.file_name().and_then(|n| n.to_str()) {
            Some(RECORDS_FILE) | None => ExportNames::default(),
            Some(name) => name
                .strip_suffix(".jsonl")
                .filter(|b| !b.is_empty())
                .map_or_else(ExportNames::default, |b| ExportNames { base: Some(b.to_owned()) }),
        }
    }

    /// The base name of `--profile-export-prefix`, if given.
    pub fn base(&self) -> Option<&str> {
        self.base.as_deref()
    }

    fn named(&self, suffix: &str, default: &str) -> String {
        self.base.as_ref().map_or_else(|| default.to_owned(), |b| format!("{b}{suffix}"))
    }

    /// The per-request records (`profile_export.jsonl`).
    pub fn records(&self) -> String {
        self.named(".jsonl", RECORDS_FILE)
    }

    /// The raw records of `--export-level raw` (`profile_export_raw.jsonl`).
    pub fn raw(&self) -> String {
        self.named("_raw.jsonl", aiperf_core::results::raw::RAW_FILE)
    }

    /// A summary file (`profile_export_aiperf.json`, `.csv`, `profile_export_console.txt`).
    pub fn summary(&self, f: SummaryFormat) -> String {
        let suffix = match f {
            SummaryFormat::Json => ".json",
            SummaryFormat::Csv => ".csv",
            SummaryFormat::Console => "_console.txt",
        };
        self.named(suffix, f.file_name())
    }

    /// The time slices of `--slice-duration`: JSON, then CSV.
    pub fn timeslices(&self) -> [String; 2] {
        [self.named("_timeslices.json", TIMESLICES_JSON), self.named("_timeslices.csv", TIMESLICES_CSV)]
    }

    /// The server metrics' JSON, CSV, then Parquet.
    pub fn server_metrics(&self) -> [String; 3] {
        [
            self.named("_server_metrics.json", server_export::JSON_FILE),
            self.named("_server_metrics.csv", server_export::CSV_FILE),
            self.named("_server_metrics.parquet", crate::io::server_parquet::FILE),
        ]
    }

    /// The GPU telemetry records of `--gpu-telemetry`.
    pub fn gpu_telemetry(&self) -> String {
        self.named("_gpu_telemetry.jsonl", aiperf_core::server::gpu::JSONL_FILE)
    }

    /// The network latency probes of `--network-latency-automatic`.
    pub fn network_latency(&self) -> String {
        self.named("_network_latency.jsonl", aiperf_core::results::network::JSONL_FILE)
    }

    /// Whether `name` is one of these export files.
    pub fn is_export(&self, name: &str) -> bool {
        let Some(base) = &self.base else { return false };
        name.strip_prefix(base.as_str()).is_some_and(|rest| {
            [".json", ".csv", ".jsonl", "_console.txt", "_timeslices.json", "_timeslices.csv"]
                .into_iter()
                .chain(["_server_metrics.json", "_server_metrics.csv", "_gpu_telemetry.jsonl", "_raw.jsonl"])
                .chain(["_network_latency.jsonl"])
                .any(|s| s == rest)
        })
    }
}

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
pub fn no_records_file(dir: &Path, names: &ExportNames) -> Result<Box<dyn Write + Send>> {
    for f in [READY_MARKER.to_owned(), names.records()] {
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
pub fn records_file(dir: &Path, names: &ExportNames) -> Result<Box<dyn Write + Send>> {
    let marker = dir.join(READY_MARKER);
    if marker.is_file() {
        std::fs::remove_file(&marker).with_context(|| format!("cannot remove {}", marker.display()))?;
    }
    Ok(Box::new(std::io::BufWriter::with_capacity(1 << 18, output::create_stream(&dir.join(names.records()))?)))
}

/// Opens `profile_export_raw.jsonl` in `dir` for the records stage (`--export-level raw`),
/// buffered like the records file.
pub fn raw_file(dir: &Path, names: &ExportNames) -> Result<Box<dyn Write + Send>> {
    Ok(Box::new(std::io::BufWriter::with_capacity(1 << 18, output::create_stream(&dir.join(names.raw()))?)))
}

/// Removes the raw records file of a run this one replaces (`--overwrite`) without writing one.
pub fn no_raw_file(dir: &Path, names: &ExportNames) -> Result<()> {
    let path = dir.join(names.raw());
    if path.is_file() {
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}

/// Writes `server_metrics_export.json`, `.csv` and `.parquet` into `dir` (those of
/// `--server-metrics-formats`; the Parquet file holds `raw`, the rows of every scrape in the
/// window); each is attempted.
pub fn write_server_metrics(
    dir: &Path,
    names: &ExportNames,
    (m, raw): (&ServerMetrics, Option<&aiperf_core::server::raw::RawTable>),
    input_config: &serde_json::Value,
    (json, csv, _): (bool, bool, bool),
) -> Result<()> {
    let mut first_error = None;
    let [json_name, csv_name, parquet_name] = names.server_metrics();
    let parquet = raw.map(|t| crate::io::server_parquet::encode(t, parquet_metadata(m, t, input_config)));
    let files = [
        json.then(|| (json_name, Ok(server_export::export_json(m, input_config).into_bytes()))),
        csv.then(|| (csv_name, Ok(server_export::export_csv(m).into_bytes()))),
        parquet.map(|bytes| (parquet_name, bytes)),
    ];
    for (name, bytes) in files.into_iter().flatten() {
        let path = dir.join(name);
        let written = bytes.and_then(|b| output::write_output(&path, &b));
        if let Err(e) = written.with_context(|| format!("cannot write {}", path.display())) {
            say!("error: {}", crate::exit::describe(&e));
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The Parquet file's key-value metadata: what it holds, under AIPerf's key names.
fn parquet_metadata(
    m: &ServerMetrics,
    t: &aiperf_core::server::raw::RawTable,
    input_config: &serde_json::Value,
) -> Vec<(String, String)> {
    let urls: Vec<&str> = m.endpoints.iter().map(|e| e.url.as_str()).collect();
    [
        ("aiperf.schema_version", "1.0".to_owned()),
        ("aiperf.exporter", format!("aiperf-cli {}", env!("CARGO_PKG_VERSION"))),
        ("aiperf.time_filter_start_ns", m.window_start_ns.to_string()),
        ("aiperf.input_config", input_config.to_string()),
        ("aiperf.endpoint_urls", serde_json::json!(urls).to_string()),
        ("aiperf.endpoint_count", urls.len().to_string()),
        ("aiperf.label_columns", serde_json::json!(t.label_keys).to_string()),
        ("aiperf.label_count", t.label_keys.len().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Writes every summary file into `dir`; all are attempted, the first failure is returned.
pub fn write_summaries(dir: &Path, names: &ExportNames, summary: &RunSummary) -> Result<()> {
    let mut first_error = None;
    for f in SummaryFormat::ALL {
        let path = dir.join(names.summary(f));
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
pub fn write_timeslices(dir: &Path, names: &ExportNames, slices: &TimeSlices, summary: &RunSummary) -> Result<()> {
    let json = timeslices_json(slices, summary.start_unix_ns, &summary.input_config);
    let [json_name, csv_name] = names.timeslices();
    write_file(&dir.join(json_name), &json)?;
    write_file(&dir.join(csv_name), &timeslices_csv(slices, summary.start_unix_ns))
}

/// Writes one summary file (a sweep's, an aggregate's, a search's).
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    output::write_output(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}
