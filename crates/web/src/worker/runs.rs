//! Finished runs in the worker: read (records streamed), kept, and drawn as the run view's HTML.

use std::cell::RefCell;

use aiperf_core::fork::InTurn;
use aiperf_core::view::curve::Curve;
use aiperf_core::view::html::RunSection;
use aiperf_core::view::server::ServerTimeline;
use aiperf_core::view::{
    LoadedPart, Run, RunLoader, RunSettings, gpu_energy_of_summary, gpu_telemetry_of_summary, html,
};

use super::files::{blob, next_chunk, reader_of, text};
use super::helper::{APART, HELPER_FROM_BYTES, Helper, yield_to_tasks};
use super::model::Inner;
use crate::protocol::{FileRef, FromWorker, RunFiles, RunStages, RunsView};
use crate::web::now_ms;

/// Reads the runs and summaries of load `generation` into `inner`; the answer to send, or `None`
/// when a newer load took its place.
pub(super) async fn read(
    inner: &RefCell<Inner>,
    generation: u64,
    runs: &[RunFiles],
    curves: &[(FileRef, String)],
) -> Option<FromWorker> {
    let t0 = now_ms();
    let mut stages = RunStages::default();
    let (loaded, sections) = match read_all(runs, curves, &mut stages).await {
        Ok(loaded) => loaded,
        Err(message) => return Some(FromWorker::RunsFailed { message }),
    };
    let mut inner = inner.borrow_mut();
    if inner.runs_generation != generation {
        return None;
    }
    (inner.runs, inner.curves) = loaded;
    let t1 = now_ms();
    let mut view = view_of(&inner.curves, &inner.runs, 0, Some(&sections));
    let t2 = now_ms();
    stages.html_ms += t2 - t1;
    view.stages = stages;
    view.compute_ms = t2 - t0;
    Some(FromWorker::Runs(Box::new(view)))
}

/// The runs and curves read, and each run's section of the view (its index among the runs).
type Loaded = ((Vec<Run>, Vec<Curve>), Vec<String>);

async fn read_all(runs: &[RunFiles], curves: &[(FileRef, String)], stages: &mut RunStages) -> Result<Loaded, String> {
    let mut loaded_curves = Vec::new();
    for (file, name) in curves {
        loaded_curves.push(Curve::from_json(name, &text(file).await?).map_err(|e| e.to_string())?);
    }
    let (mut loaded, mut sections) = (Vec::new(), Vec::new());
    for (k, files) in runs.iter().enumerate() {
        let (run, section) = read_run(files, k, stages).await?;
        loaded.push(run);
        sections.push(section);
    }
    Ok(((loaded, loaded_curves), sections))
}

/// The run view of `curves` and `runs` (the HTML of `aiperf-cli report`, from the same code).
pub(super) fn view(curves: &[Curve], runs: &[Run], baseline: usize) -> RunsView {
    view_of(curves, runs, baseline, None)
}

/// [`view`] with each run's section already made ([`html::run_section`] of run `k` at `k`).
fn view_of(curves: &[Curve], runs: &[Run], baseline: usize, sections: Option<&[String]>) -> RunsView {
    let refs: Vec<&Run> = runs.iter().collect();
    let mut html = String::new();
    for c in curves {
        html.push_str(&html::curve_section(c));
    }
    if !runs.is_empty() {
        match sections {
            Some(s) => html.push_str(&html::runs_fragment_of(&refs, baseline, s)),
            None => html.push_str(&html::runs_fragment(&refs, baseline)),
        }
    }
    RunsView {
        labels: runs.iter().map(|r| r.label.clone()).collect(),
        baseline: baseline.min(runs.len().saturating_sub(1)),
        records: runs.iter().map(|r| r.points.len() as u64).collect(),
        html,
        compute_ms: 0.0,
        stages: RunStages::default(),
    }
}

/// The share of a big records file the worker reads itself while the helper reads the rest
/// (the rest crosses back as bytes and is merged here, which takes the worker a little while).
const FIRST_PART: f64 = 0.56;

/// Files up to this size are read in two parts. The helper's part is held twice while it
/// crosses (its bincode and the records read back, ≈ 200 bytes a record each): above it (about
/// 2.9 million records), the worker reads the whole file itself and stays further from the
/// 4 GiB a WebAssembly memory can hold.
const SPLIT_UP_TO_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;

/// Reads the run's records into a loader: with the helper, the first part here and the rest
/// there at once ([`RunLoader::add_part`]); where the helper fails, or reads a line it cannot
/// parse, the helper is stopped and this worker reads the rest itself (and names that line). The
/// time of each stage is added to `stages`.
async fn read_records(
    files: &RunFiles,
    settings: RunSettings,
    helper: &mut Option<Helper>,
    stages: &mut RunStages,
) -> Result<RunLoader, String> {
    let mut loader = RunLoader::new(&files.records_name, settings);
    let whole = blob(&files.records)?;
    let size = whole.size();
    let js = |e: wasm_bindgen::JsValue| format!("cannot read {}: {e:?}", files.records_name);
    let split = match helper.as_ref() {
        Some(helper) if (2.0..=SPLIT_UP_TO_BYTES).contains(&size) => {
            let at = (size * FIRST_PART).floor().max(1.0);
            let rest = whole.slice_with_f64(at - 1.0).map_err(js)?;
            helper.read_rest(&rest, &loader.rest_of_file()).map(|asked| (at, asked))
        }
        _ => None,
    };
    let first = match &split {
        Some((at, _)) => whole.slice_with_f64_and_f64(0.0, *at).map_err(js)?,
        None => whole.clone(),
    };
    let mut buf = Vec::new();
    stream(&reader_of(&first)?, &mut loader, &mut buf, helper.as_ref().filter(|_| split.is_some()), stages).await?;
    let Some((at, asked)) = split else { return Ok(loader) };
    // The line under way where the helper's part starts is this worker's to end.
    let t = now_ms();
    let rest = reader_of(&whole.slice_with_f64(at).map_err(js)?)?;
    let mut ended = None;
    while ended.is_none() && next_chunk(&rest, &mut buf).await? {
        ended = loader.push_to_line_end(&buf).map_err(|e| e.to_string())?;
    }
    let part = asked.answer::<LoadedPart>().await;
    let records = part.as_ref().map_or(0, LoadedPart::records);
    let added = match (ended, part) {
        (Some(_), Some(part)) => loader.add_part(part),
        // The line under way ran to the end of the file: the helper read no line.
        (None, Some(_)) => records == 0,
        (_, None) => false,
    };
    stages.parse_ms += now_ms() - t;
    if added {
        stages.records_apart += records as u64;
        let _ = rest.cancel();
        return Ok(loader);
    }
    // Stopped, the helper sends no late answer that would be taken for the curves'.
    *helper = None;
    if let Some(used) = ended {
        loader.push(&buf[used..]).map_err(|e| e.to_string())?;
        stream(&rest, &mut loader, &mut buf, None, stages).await?;
    }
    Ok(loader)
}

/// Pushes the reader's chunks into the loader, timing the reads and the parse; until `helper`
/// took its request, this worker yields to its tasks between chunks (so that the helper's
/// messages come through).
async fn stream(
    reader: &web_sys::ReadableStreamDefaultReader,
    loader: &mut RunLoader,
    buf: &mut Vec<u8>,
    mut helper: Option<&Helper>,
    stages: &mut RunStages,
) -> Result<(), String> {
    let mut t = now_ms();
    while next_chunk(reader, buf).await? {
        if helper.is_some_and(Helper::took_request) {
            helper = None;
        } else if helper.is_some() {
            yield_to_tasks().await;
        }
        let got = now_ms();
        stages.read_ms += got - t;
        stages.chunks += 1;
        loader.push(buf).map_err(|e| e.to_string())?;
        t = now_ms();
        stages.parse_ms += t - got;
    }
    stages.read_ms += now_ms() - t;
    Ok(())
}

/// Reads run `k`: its summary file (for the settings, the GPUs and their energy efficiency),
/// then its records, streamed; its section of the view drawn. The time of each stage is added
/// to `stages`.
async fn read_run(files: &RunFiles, k: usize, stages: &mut RunStages) -> Result<(Run, String), String> {
    let t0 = now_ms();
    let (settings, gpus, gpu_energy) = match &files.config {
        Some((file, name)) => {
            let text = text(file).await?;
            let settings = RunSettings::from_summary_json(name, &text).map_err(|e| e.to_string())?;
            // As in `aiperf-cli report`, a bad GPU block leaves its table out, not the run.
            let gpus = gpu_telemetry_of_summary(name, &text).ok().flatten();
            (settings, gpus, gpu_energy_of_summary(name, &text).unwrap_or_default())
        }
        None => (RunSettings::default(), None, Vec::new()),
    };
    let server = match &files.server {
        Some((file, name)) => ServerTimeline::from_json(name, &text(file).await?).map_err(|e| e.to_string())?,
        None => None,
    };
    let big = files.records.blob().is_some_and(|b| b.size() >= HELPER_FROM_BYTES);
    let mut helper = if big { Helper::start() } else { None };
    stages.read_ms += now_ms() - t0;
    let loader = read_records(files, settings, &mut helper, stages).await?;
    let attach = |run: &mut Run| {
        run.server = server;
        run.gpus = gpus;
        run.gpu_energy = gpu_energy;
    };
    let t = now_ms();
    let request = helper.as_ref().and_then(|h| Some((h, loader.curves_apart(&APART)?)));
    let asked = match request {
        Some((helper, request)) => helper.ask(&request).await,
        None => None,
    };
    let Some(asked) = asked else {
        let mut run = loader.finish(&files.label).map_err(|e| e.to_string())?;
        attach(&mut run);
        let t1 = now_ms();
        stages.summary_ms += t1 - t;
        let section = html::run_section(&run, k);
        stages.html_ms += now_ms() - t1;
        return Ok((run, section));
    };
    // The helper computes its groups of curves while this worker computes the rest of the
    // summary, then draws the run's section but its summary table.
    let mut pending = loader.finish_apart(&files.label, &InTurn, &APART).map_err(|e| e.to_string())?;
    attach(pending.run_mut());
    let t1 = now_ms();
    let drawn = RunSection::of(pending.run(), k);
    let t2 = now_ms();
    let given = asked.answer::<Vec<aiperf_core::results::timeline::Metrics>>().await;
    stages.curves_apart += u64::from(given.is_some());
    let run = pending.complete(given);
    let t3 = now_ms();
    let section = drawn.with_summary(&run.report);
    stages.summary_ms += (t1 - t) + (t3 - t2);
    stages.html_ms += (t2 - t1) + (now_ms() - t3);
    Ok((run, section))
}
