//! The web worker: reads the file (streamed from a `blob:` URL), parses it with progress, keeps
//! the trace, and answers analysis and synthesis requests. All computing happens here.

use std::cell::RefCell;
use std::rc::Rc;

use aiperf_core::formats::{FileOptions, Format};
use aiperf_core::trace::{ParseOptions, Trace};
use aiperf_core::view::curve::Curve;
use aiperf_core::view::server::ServerTimeline;
use aiperf_core::view::{Run, RunLoader, RunSettings, html};
use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use yew_agent::worker::{HandlerId, Worker, WorkerScope};

use crate::engine::{ModelCache, analysis_view, bad_rows, synth_file_name, synth_view, synthesize};
use crate::ingest::{Ingest, Read};
use crate::protocol::{FileSummary, FromWorker, Progress, RunFiles, RunsView, ToWorker};
use crate::web::now_ms;
use aiperf_core::formats::settings::ConversionSettings;
use aiperf_core::synthesis::SynthesisSettings;

/// Progress is reported at most every this many bytes.
const PROGRESS_EVERY: u64 = 2 << 20;

#[derive(Default)]
struct Inner {
    trace: Option<Rc<Trace>>,
    name: String,
    /// True when the loaded trace was converted from another format (it can be downloaded).
    converted: bool,
    model: ModelCache,
    /// The last synthesis, kept for the download.
    last: Option<(SynthesisSettings, Rc<Trace>)>,
    /// Bumped by every load, so that an older load still streaming stops.
    load_generation: u64,
    /// Finished runs (`profile_export.jsonl`), shown by the run view.
    runs: Vec<Run>,
    /// Sweeps and capacity searches dropped with them (or alone).
    curves: Vec<Curve>,
    runs_generation: u64,
}

/// The worker agent (registered by the `worker` binary).
pub struct TraceWorker {
    inner: Rc<RefCell<Inner>>,
}

/// Messages the worker sends itself (none).
#[derive(Serialize, Deserialize)]
pub enum Never {}

impl Worker for TraceWorker {
    type Message = Never;
    type Input = ToWorker;
    type Output = FromWorker;

    fn create(_scope: &WorkerScope<Self>) -> Self {
        TraceWorker { inner: Rc::default() }
    }

    fn update(&mut self, _scope: &WorkerScope<Self>, msg: Never) {
        match msg {}
    }

    fn received(&mut self, scope: &WorkerScope<Self>, msg: ToWorker, id: HandlerId) {
        match msg {
            ToWorker::Load { url, name, size, block_size, format, conversion, more } => {
                let generation = {
                    let mut inner = self.inner.borrow_mut();
                    inner.load_generation += 1;
                    inner.trace = None;
                    inner.model = ModelCache::default();
                    inner.last = None;
                    inner.load_generation
                };
                let (inner, scope) = (self.inner.clone(), scope.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let load = Load { inner, scope, id, generation };
                    let source = Source { url, name, size, more };
                    load.run(source, block_size, format, conversion).await;
                });
            }
            ToWorker::Analyze { block_size } => {
                let trace = self.inner.borrow().trace.clone();
                if let Some(trace) = trace {
                    scope.respond(id, analyze(&trace, block_size));
                }
            }
            ToWorker::Synthesize { settings } => {
                let t0 = now_ms();
                let msg = match self.synthesized(&settings) {
                    Ok(trace) => {
                        let mut view = synth_view(&trace, &settings);
                        view.compute_ms = now_ms() - t0;
                        FromWorker::Synthesis(Box::new(view))
                    }
                    Err(message) => FromWorker::SynthFailed { message },
                };
                scope.respond(id, msg);
            }
            ToWorker::Export { settings } => {
                let msg = match self.synthesized(&settings) {
                    Ok(trace) => {
                        let name = synth_file_name(&self.inner.borrow().name, &settings.params.seed.to_string());
                        FromWorker::Export { settings, name, jsonl: aiperf_core::trace::write_trace(&trace) }
                    }
                    Err(message) => FromWorker::SynthFailed { message },
                };
                scope.respond(id, msg);
            }
            ToWorker::ExportConverted => {
                let inner = self.inner.borrow();
                if let (Some(trace), true) = (&inner.trace, inner.converted) {
                    let name = converted_file_name(&inner.name);
                    scope.respond(id, FromWorker::Converted { name, jsonl: aiperf_core::trace::write_trace(trace) });
                }
            }
            ToWorker::LoadRuns { runs, curves } => {
                let generation = {
                    let mut inner = self.inner.borrow_mut();
                    inner.runs_generation += 1;
                    inner.runs.clear();
                    inner.curves.clear();
                    inner.runs_generation
                };
                let (inner, scope) = (self.inner.clone(), scope.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let t0 = now_ms();
                    let mut loaded_curves = Vec::new();
                    for (url, name) in &curves {
                        match fetch_text(url).await.and_then(|t| Curve::from_json(name, &t).map_err(|e| e.to_string()))
                        {
                            Ok(c) => loaded_curves.push(c),
                            Err(message) => {
                                scope.respond(id, FromWorker::RunsFailed { message });
                                return;
                            }
                        }
                    }
                    let mut loaded = Vec::new();
                    for files in &runs {
                        match load_run(files).await {
                            Ok(run) => loaded.push(run),
                            Err(message) => {
                                scope.respond(id, FromWorker::RunsFailed { message });
                                return;
                            }
                        }
                    }
                    let mut inner = inner.borrow_mut();
                    if inner.runs_generation != generation {
                        return;
                    }
                    inner.runs = loaded;
                    inner.curves = loaded_curves;
                    let mut view = runs_view(&inner.curves, &inner.runs, 0);
                    view.compute_ms = now_ms() - t0;
                    scope.respond(id, FromWorker::Runs(Box::new(view)));
                });
            }
            ToWorker::ShowRuns { labels, baseline } => {
                let t0 = now_ms();
                let mut inner = self.inner.borrow_mut();
                for (run, label) in inner.runs.iter_mut().zip(labels) {
                    run.label = label;
                }
                let mut view = runs_view(&inner.curves, &inner.runs, baseline);
                view.compute_ms = now_ms() - t0;
                scope.respond(id, FromWorker::Runs(Box::new(view)));
            }
            ToWorker::Describe { run, index } => {
                let text = self.inner.borrow().runs.get(run).and_then(|r| r.describe(index as usize));
                if let Some(text) = text {
                    scope.respond(id, FromWorker::Record { run, index, text });
                }
            }
        }
    }
}

/// The run view of `curves` and `runs` (the HTML of `aiperf-cli report`, from the same code).
fn runs_view(curves: &[Curve], runs: &[Run], baseline: usize) -> RunsView {
    let refs: Vec<&Run> = runs.iter().collect();
    let mut html = String::new();
    for c in curves {
        html.push_str(&html::curve_section(c));
    }
    if !runs.is_empty() {
        html.push_str(&html::runs_fragment(&refs, baseline));
    }
    RunsView {
        labels: runs.iter().map(|r| r.label.clone()).collect(),
        baseline: baseline.min(runs.len().saturating_sub(1)),
        records: runs.iter().map(|r| r.points.len() as u64).collect(),
        html,
        compute_ms: 0.0,
    }
}

/// The text of a (small) file behind a blob URL.
async fn fetch_text(url: &str) -> Result<String, String> {
    let response = fetch(url).await?;
    let text = JsFuture::from(response.text().map_err(js_error)?).await.map_err(js_error)?;
    Ok(text.as_string().unwrap_or_default())
}

/// Reads one run: its summary file (for the settings), then its records, streamed.
async fn load_run(files: &RunFiles) -> Result<Run, String> {
    let settings = match &files.config {
        Some((url, name)) => {
            RunSettings::from_summary_json(name, &fetch_text(url).await?).map_err(|e| e.to_string())?
        }
        None => RunSettings::default(),
    };
    let server = match &files.server {
        Some((url, name)) => ServerTimeline::from_json(name, &fetch_text(url).await?).map_err(|e| e.to_string())?,
        None => None,
    };
    let response = fetch(&files.records_url).await?;
    let body = response.body().ok_or_else(|| "cannot read the file: empty response".to_string())?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().dyn_into().map_err(js_error)?;
    let mut loader = RunLoader::new(&files.records_name, settings);
    let mut buf = Vec::new();
    while next_chunk(&reader, &mut buf).await? {
        loader.push(&buf).map_err(|e| e.to_string())?;
    }
    let mut run = loader.finish(&files.label).map_err(|e| e.to_string())?;
    run.server = server;
    Ok(run)
}

/// Reads the next chunk of a stream into `buf`; `false` at the stream's end.
async fn next_chunk(reader: &web_sys::ReadableStreamDefaultReader, buf: &mut Vec<u8>) -> Result<bool, String> {
    let chunk = JsFuture::from(reader.read()).await.map_err(js_error)?;
    let done = js_sys::Reflect::get(&chunk, &JsValue::from_str("done")).map_err(js_error)?;
    if done.as_bool() == Some(true) {
        return Ok(false);
    }
    let value: js_sys::Uint8Array =
        js_sys::Reflect::get(&chunk, &JsValue::from_str("value")).map_err(js_error)?.dyn_into().map_err(js_error)?;
    buf.resize(value.length() as usize, 0);
    value.copy_to(buf);
    Ok(true)
}

async fn fetch(url: &str) -> Result<web_sys::Response, String> {
    let global: web_sys::WorkerGlobalScope = js_sys::global().dyn_into().map_err(js_error)?;
    let response: web_sys::Response =
        JsFuture::from(global.fetch_with_str(url)).await.map_err(js_error)?.dyn_into().map_err(js_error)?;
    if !response.ok() {
        return Err(format!("cannot read the file: HTTP {}", response.status()));
    }
    Ok(response)
}

impl TraceWorker {
    /// The synthesized trace for these settings (reused when asked twice, e.g. for the download).
    fn synthesized(&self, settings: &SynthesisSettings) -> Result<Rc<Trace>, String> {
        let mut inner = self.inner.borrow_mut();
        if let Some((s, t)) = &inner.last
            && s == settings
        {
            return Ok(t.clone());
        }
        let trace = inner.trace.clone().ok_or_else(|| "no trace is loaded".to_string())?;
        let out = Rc::new(synthesize(&trace, settings, &mut inner.model)?);
        inner.last = Some((settings.clone(), out.clone()));
        Ok(out)
    }
}

fn analyze(trace: &Trace, block_size: u32) -> FromWorker {
    let t0 = now_ms();
    let mut view = analysis_view(trace, block_size);
    view.compute_ms = now_ms() - t0;
    FromWorker::Analysis(Box::new(view))
}

/// The file(s) to read: `more` are merged after the first.
struct Source {
    url: String,
    name: String,
    size: u64,
    more: Vec<(String, String)>,
}

struct Load {
    inner: Rc<RefCell<Inner>>,
    scope: WorkerScope<TraceWorker>,
    id: HandlerId,
    generation: u64,
}

impl Load {
    fn current(&self) -> bool {
        self.inner.borrow().load_generation == self.generation
    }

    async fn run(self, source: Source, block_size: u32, format: Option<String>, conversion: ConversionSettings) {
        let Source { url, name, size, more } = source;
        let url = url.as_str();
        let t0 = now_ms();
        let transforms = conversion.transforms.clone();
        let result = match format.as_deref().map(|f| (f, Format::from_name(f))) {
            Some((f, None)) => Err(format!("unknown trace format {f:?} (accepted: {})", format_names())),
            Some((_, Some(f))) => self.read(url, &name, size, Some(f), &conversion, &more).await,
            None => self.read(url, &name, size, None, &conversion, &more).await,
        };
        if !self.current() {
            return;
        }
        let read = match result {
            Ok(o) => o,
            Err(message) => {
                self.scope.respond(self.id, FromWorker::LoadFailed { message, bad_rows: Vec::new(), bad_total: 0 });
                return;
            }
        };
        let (outcome, format, evidence, notes, has_prefix_info) = match read {
            Read::Mooncake(o) => {
                // A Mooncake trace without any hash id has no prefix information either.
                let ids = o.trace.rows().iter().any(|r| !o.trace.hash_ids(r).is_empty());
                (o, None, "Mooncake JSONL".to_string(), Vec::new(), ids)
            }
            Read::Converted { detection, converted } => {
                let c = *converted;
                let mut notes = c.notes;
                let s = &c.stats;
                notes.push(format!("converted {} of {} records", c.trace.len(), s.records));
                if s.failed_dropped > 0 {
                    notes.push(format!("{} failed rows dropped", s.failed_dropped));
                }
                if s.failed_kept > 0 {
                    notes.push(format!("{} failed rows kept", s.failed_kept));
                }
                if s.other_models > 0 {
                    notes.push(format!("{} rows of other models dropped", s.other_models));
                }
                let o = aiperf_core::trace::ParseOutcome {
                    trace: c.trace,
                    lines: s.records,
                    skipped: Vec::new(),
                    skipped_total: 0,
                };
                (o, Some(detection.format), detection.evidence, notes, c.has_prefix_info)
            }
        };
        let (mut outcome, mut notes) = (outcome, notes);
        let transformed = !transforms.is_identity();
        if transformed {
            match aiperf_core::formats::transform::apply(&outcome.trace, &transforms) {
                Ok((trace, r)) => {
                    notes.push(r.to_string());
                    outcome.trace = trace;
                }
                Err(e) => {
                    let msg = FromWorker::LoadFailed { message: e.to_string(), bad_rows: Vec::new(), bad_total: 0 };
                    self.scope.respond(self.id, msg);
                    return;
                }
            }
        }
        let bad = bad_rows(&outcome.skipped);
        if outcome.trace.is_empty() {
            let message = if outcome.skipped_total > 0 {
                format!("no valid row: all {} non-empty lines are invalid", outcome.skipped_total)
            } else {
                "the file holds no rows".to_string()
            };
            let msg = FromWorker::LoadFailed { message, bad_rows: bad, bad_total: outcome.skipped_total };
            self.scope.respond(self.id, msg);
            return;
        }
        let trace = Rc::new(outcome.trace);
        {
            let mut inner = self.inner.borrow_mut();
            inner.trace = Some(trace.clone());
            inner.name = name.clone();
            inner.converted = format.is_some() || transformed;
        }
        let summary = FileSummary {
            name,
            size,
            lines: outcome.lines,
            rows: trace.len() as u64,
            bad_rows: bad,
            bad_total: outcome.skipped_total,
            parse_ms: now_ms() - t0,
            format: format.unwrap_or(Format::Mooncake).name().to_string(),
            evidence,
            notes,
            has_prefix_info,
            downloadable: format.is_some() || transformed,
        };
        self.scope.respond(self.id, FromWorker::Loaded(summary));
        self.scope.respond(self.id, analyze(&trace, block_size));
    }

    /// Reads the file at `url` (and the `more` files merged after it) into one trace.
    async fn read(
        &self,
        url: &str,
        name: &str,
        size: u64,
        format: Option<Format>,
        conversion: &ConversionSettings,
        more: &[(String, String)],
    ) -> Result<Read, String> {
        let convert = conversion.options.clone();
        let mut ingest = Ingest::new(ParseOptions::new(name).skip_invalid(true), format).convert_options(convert);
        if !more.is_empty() {
            let place = FileOptions {
                source: name.into(),
                format: format.unwrap_or(Format::Weka),
                start_offset_ms: conversion.file_offset_ms(0),
                conversation_prefix: "0:".into(),
            };
            ingest = ingest.first_file(place);
        }
        let mut reported = 0;
        self.stream(url, &mut ingest, size, &mut reported).await?;
        for (k, (url, name)) in more.iter().enumerate() {
            let k = k + 1;
            let place = FileOptions {
                source: name.as_str().into(),
                format: format.unwrap_or(Format::Weka),
                start_offset_ms: conversion.file_offset_ms(k),
                conversation_prefix: format!("{k}:"),
            };
            ingest = ingest
                .next_file(ParseOptions::new(name.as_str()), place)
                .map_err(|e| e.0)?
                .map_err(|e| e.to_string())?;
            self.stream(url, &mut ingest, size, &mut reported).await?;
        }
        ingest.finish().map_err(|e| e.0)?.map_err(|e| e.to_string())
    }

    async fn stream(&self, url: &str, ingest: &mut Ingest, size: u64, reported: &mut u64) -> Result<(), String> {
        let global: web_sys::WorkerGlobalScope = js_sys::global().dyn_into().map_err(js_error)?;
        let response: web_sys::Response =
            JsFuture::from(global.fetch_with_str(url)).await.map_err(js_error)?.dyn_into().map_err(js_error)?;
        if !response.ok() {
            return Err(format!("cannot read the file: HTTP {}", response.status()));
        }
        let body = response.body().ok_or_else(|| "cannot read the file: empty response".to_string())?;
        let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().dyn_into().map_err(js_error)?;
        let mut buf = Vec::new();
        loop {
            let more = next_chunk(&reader, &mut buf).await?;
            if !self.current() {
                let _ = reader.cancel();
                return Err("superseded".into());
            }
            if !more {
                return Ok(());
            }
            ingest.push(&buf).map_err(|e| e.0)?;
            if ingest.bytes() - *reported >= PROGRESS_EVERY {
                *reported = ingest.bytes();
                let (rows, invalid) = ingest.counts();
                let p = Progress { bytes: *reported, total: size, rows: rows as u64, invalid };
                self.scope.respond(self.id, FromWorker::Progress(p));
            }
        }
    }
}

fn format_names() -> String {
    Format::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

/// `trace.csv` → `trace.mooncake.jsonl` (the name `convert-trace`'s users would pick).
fn converted_file_name(name: &str) -> String {
    let stem = name.strip_suffix(".gz").unwrap_or(name);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    format!("{stem}.mooncake.jsonl")
}

fn js_error(e: impl Into<JsValue>) -> String {
    let e: JsValue = e.into();
    format!("cannot read the file: {}", e.as_string().unwrap_or_else(|| format!("{e:?}")))
}
