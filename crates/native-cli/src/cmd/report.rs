//! `aiperf-cli report` and `aiperf-cli compare`: finished runs read back from their artifact
//! folders (`profile_export.jsonl`, with `profile_export_aiperf.json` for the settings) through
//! [`aiperf_core::view`], which recomputes the summary exactly as `profile` did.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;

use aiperf_core::campaign::search::SEARCH_JSON;
use aiperf_core::campaign::sweep::SWEEP_JSON;
use aiperf_core::results::export::SummaryFormat;
use aiperf_core::view::curve::Curve;
use aiperf_core::view::server::ServerTimeline;
use aiperf_core::view::{
    MAX_RUNS, RecordBatch, RecordReader, Run, RunLoader, RunSettings, compare, default_label, gpu_energy_of_summary,
    gpu_telemetry_of_summary, html,
};
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde_json::Value;

use crate::exit::BadInput;
use crate::io::exports::ExportNames;
use crate::io::{input, output};

/// The runs and how to label them (shared by both commands).
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// Artifact folders of runs (or their profile_export.jsonl files), 1 to 8; a sweep's or a
    /// capacity search's folder stands for its sub-runs.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// The run the others are compared with (1-based, in the order given).
    #[arg(long, default_value_t = 1)]
    pub baseline: usize,
    /// Labels of the runs, in order (default: the folder names).
    #[arg(long, num_args = 1..)]
    pub label: Vec<String>,
}

/// `aiperf-cli report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub runs: RunsArgs,
    /// The HTML file to write (self-contained: opens from disk with no network).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Aligned columns for a terminal.
    Table,
    /// One JSON document (runs, baseline counted from 1, rows with values and changes).
    Json,
    /// One row per metric, a value and a change column per run.
    Csv,
}

/// `aiperf-cli compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub runs: RunsArgs,
    /// How the comparison is printed on standard output.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
}

fn bad(msg: String) -> anyhow::Error {
    anyhow::anyhow!(msg).context(BadInput)
}

/// The records file, the summary file and the server metrics beside it, under AIPerf's names or
/// those of the run's `--profile-export-prefix`.
fn files_of(path: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (dir, names, records) = if path.is_dir() {
        let names = ExportNames::of_folder(path);
        (path, names.clone(), path.join(names.records()))
    } else {
        (path.parent().unwrap_or(Path::new(".")), ExportNames::of_records(path), path.to_path_buf())
    };
    let [server, ..] = names.server_metrics();
    (records, dir.join(names.summary(SummaryFormat::Json)), dir.join(server))
}

/// Reads one run.
pub fn load(path: &Path, label: Option<&str>) -> Result<Run> {
    let (records, config, server) = files_of(path);
    let mut gpus = None;
    let mut gpu_energy = Vec::new();
    let settings = if config.is_file() {
        let text = std::fs::read_to_string(&config).with_context(|| format!("cannot read {}", config.display()))?;
        let settings =
            RunSettings::from_summary_json(&config.display().to_string(), &text).map_err(|e| bad(e.to_string()))?;
        // The GPUs scraped during the run (a bad block is only a warning).
        match gpu_telemetry_of_summary(&config.display().to_string(), &text) {
            Ok(t) => gpus = t,
            Err(e) => say!("warning: {e}: the GPU telemetry is not shown"),
        }
        match gpu_energy_of_summary(&config.display().to_string(), &text) {
            Ok(e) => gpu_energy = e,
            Err(e) => say!("warning: {e}: the GPU energy efficiency is not shown"),
        }
        settings
    } else {
        say!("warning: {} not found: default settings (server token counts, no goodput SLOs)", config.display());
        RunSettings::default()
    };
    let name = records.display().to_string();
    let reader = input::open(&records)?;
    let mut loader = RunLoader::new(&name, settings);
    read_records(reader, &name, &mut loader)?;
    let label = label.map_or_else(|| default_label(&path.display().to_string()), str::to_string);
    let mut run = loader.finish_on(&label, &crate::threads::Threads).map_err(|e| bad(e.to_string()))?;
    run.gpus = gpus;
    run.gpu_energy = gpu_energy;
    // The server's metrics over the run, when they were scraped (a bad file is only a warning).
    if let Ok(text) = std::fs::read_to_string(&server) {
        match ServerTimeline::from_json(&server.display().to_string(), &text) {
            Ok(t) => run.server = t,
            Err(e) => say!("warning: {e}: the server's metrics are not drawn"),
        }
    }
    Ok(run)
}

/// Record batches in flight between the reading thread and the loader.
const BATCHES: usize = 4;
/// Bytes read at once: a batch holds one read's records (a few thousand).
const READ_BYTES: usize = 1 << 20;

/// Reads the records file `name` into `loader`: a thread reads its bytes and parses its lines
/// into batches, this one adds them in the file's order; added batches go back to be refilled,
/// so at most [`BATCHES`] batches and one read are held.
fn read_records(mut reader: Box<dyn BufRead + Send>, name: &str, loader: &mut RunLoader) -> Result<()> {
    std::thread::scope(|scope| {
        // Both channels end with this closure, so a reading thread waiting on either ends too.
        let (full_tx, full_rx) = sync_channel::<Result<RecordBatch>>(BATCHES);
        let (empty_tx, empty_rx) = sync_channel::<RecordBatch>(BATCHES);
        for _ in 0..BATCHES {
            empty_tx.send(RecordBatch::default()).context("the record batches' channel closed")?;
        }
        scope.spawn(move || {
            let mut records = RecordReader::new(name);
            let mut buf = vec![0u8; READ_BYTES];
            while let Ok(mut batch) = empty_rx.recv() {
                let step = match reader.read(&mut buf).with_context(|| format!("cannot read {name}")) {
                    Ok(0) => records.finish(&mut batch).map(|()| false).map_err(|e| bad(e.to_string())),
                    Ok(n) => records.push(&buf[..n], &mut batch).map(|()| true).map_err(|e| bad(e.to_string())),
                    Err(e) => Err(e),
                };
                let more = matches!(step, Ok(true));
                if full_tx.send(step.map(|_| batch)).is_err() || !more {
                    return;
                }
            }
        });
        for batch in full_rx {
            let mut batch = batch?;
            loader.add(&batch);
            batch.clear();
            // The reading thread has ended when this fails: the batch is not needed.
            let _ = empty_tx.send(batch);
        }
        Ok(())
    })
}

/// A sub-run of a campaign: its folder and its label.
type SubRun = (PathBuf, String);

/// A sweep or search folder: its curve (with each point's figures from its sub-run's summary
/// where the campaign's summary lacks them) and its sub-runs' folders with labels, in order of load.
fn campaign(path: &Path) -> Result<Option<(Curve, Vec<SubRun>)>> {
    if !path.is_dir() {
        return Ok(None);
    }
    let Some(file) = [SWEEP_JSON, SEARCH_JSON].iter().map(|f| path.join(f)).find(|p| p.is_file()) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut curve = Curve::from_json(&file.display().to_string(), &text).map_err(|e| bad(e.to_string()))?;
    let name = default_label(&path.display().to_string());
    let mut subs = Vec::new();
    for i in 0..curve.points.len() {
        let dir = path.join(&curve.points[i].artifact_dir);
        let names = ExportNames::of_folder(&dir);
        if let Ok(t) = std::fs::read_to_string(dir.join(names.summary(SummaryFormat::Json))) {
            curve.add_run_summary(i, &t);
        }
        if dir.join(names.records()).is_file() {
            let value = compare::num(curve.points[i].value);
            subs.push((dir, format!("{name} {}={value}", curve.parameter)));
        }
    }
    Ok(Some((curve, subs)))
}

/// What [`load_all`] read.
struct Loaded {
    curves: Vec<Curve>,
    runs: Vec<Run>,
    /// 0-based.
    baseline: usize,
    /// Each run's path, in the order of `runs`.
    paths: Vec<PathBuf>,
}

/// The curves of the campaign folders given, every run (a campaign's sub-runs when all runs fit
/// in [`MAX_RUNS`]), labelled, the 0-based baseline, and the runs' paths.
fn load_all(a: &RunsArgs) -> Result<Loaded> {
    if a.runs.len() > MAX_RUNS {
        return Err(bad(format!("{} runs given: at most {MAX_RUNS} are compared at once", a.runs.len())));
    }
    if !a.label.is_empty() && a.label.len() != a.runs.len() {
        return Err(bad(format!(
            "{} label(s) for {} run(s): give one --label per run, or none",
            a.label.len(),
            a.runs.len()
        )));
    }
    let mut curves = Vec::new();
    // (path, label) of each run to read; campaigns' sub-runs kept apart until they are counted.
    let mut plain: Vec<(PathBuf, Option<String>)> = Vec::new();
    let mut subs: Vec<SubRun> = Vec::new();
    for (i, p) in a.runs.iter().enumerate() {
        match campaign(p)? {
            Some((curve, s)) => {
                curves.push(curve);
                subs.extend(s);
            }
            None => plain.push((p.clone(), a.label.get(i).cloned())),
        }
    }
    let mut paths = plain;
    if paths.len() + subs.len() <= MAX_RUNS {
        paths.extend(subs.into_iter().map(|(p, l)| (p, Some(l))));
    } else if !subs.is_empty() {
        say!(
            "note: {} sub-runs are not shown one by one (at most {MAX_RUNS} runs at once); give their folders to see them",
            subs.len()
        );
    }
    if paths.is_empty() && curves.is_empty() {
        return Err(bad("no run to read".into()));
    }
    if !paths.is_empty() && (a.baseline == 0 || a.baseline > paths.len()) {
        return Err(bad(format!(
            "--baseline {}: accepted 1 to {} (the runs in the order given)",
            a.baseline,
            paths.len()
        )));
    }
    let runs = paths.iter().map(|(p, l)| load(p, l.as_deref())).collect::<Result<Vec<_>>>()?;
    let paths = paths.into_iter().map(|(p, _)| p).collect();
    Ok(Loaded { curves, runs, baseline: a.baseline.saturating_sub(1), paths })
}

pub fn run_report(a: ReportArgs) -> Result<()> {
    if output::is_stdio(&a.output) {
        bail!("--output -: the report is a file to open in a browser; name one, e.g. report.html");
    }
    let inputs: Vec<PathBuf> = a.runs.runs.iter().map(|p| files_of(p).0).collect();
    output::refuse_same_files(&[a.output.as_path()], &inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    let Loaded { curves, runs, baseline, .. } = load_all(&a.runs)?;
    let refs: Vec<&Run> = runs.iter().collect();
    let curve_refs: Vec<&Curve> = curves.iter().collect();
    let page = html::report_page_with(&curve_refs, &refs, baseline);
    output::write_output(&a.output, page.as_bytes()).with_context(|| format!("cannot write {}", a.output.display()))?;
    let what = match curves.len() {
        0 => String::new(),
        n => format!("{n} sweep/search curve(s) and "),
    };
    say!("Report of {what}{} run(s) written to {} ({} KiB)", runs.len(), a.output.display(), page.len() / 1024);
    Ok(())
}

/// When a run written by AIPerf (its options only in `input_config`) is compared, every run's
/// options are AIPerf's `input_config` under AIPerf's option names
/// ([`option_names`](super::option_names::option_names)), so that only options that differ are
/// listed; runs of ours alone are compared on `aiperf_cli_config`.
fn same_option_names(runs: &mut [Run], paths: &[PathBuf]) {
    let summaries: Vec<Option<Value>> = paths
        .iter()
        .map(|p| std::fs::read_to_string(files_of(p).1).ok().and_then(|t| serde_json::from_str(&t).ok()))
        .collect();
    let aiperfs = summaries.iter().flatten().any(|s| s.get("aiperf_cli_config").is_none());
    if !aiperfs {
        return;
    }
    for (run, summary) in runs.iter_mut().zip(&summaries) {
        if let Some(config) = summary.as_ref().and_then(|s| s.get("input_config")).filter(|c| c.is_object()) {
            run.settings.input_config = super::option_names::option_names(config);
        }
    }
}

pub fn run_compare(a: CompareArgs) -> Result<()> {
    let Loaded { mut runs, baseline, paths, .. } = load_all(&a.runs)?;
    if runs.is_empty() {
        return Err(bad(
            "no run to compare: a campaign's sub-runs are compared when at most 8 runs are given in all".into()
        ));
    }
    same_option_names(&mut runs, &paths);
    let refs: Vec<&Run> = runs.iter().collect();
    let c = compare::compare(&refs, baseline);
    let text = match a.format {
        CompareFormat::Table => c.table(),
        CompareFormat::Json => c.json(),
        CompareFormat::Csv => c.csv(),
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("cannot write to standard output")
}
