//! The web worker: reads the file (streamed from the page's `Blob`), parses it with progress, keeps
//! the trace, and answers analysis and synthesis requests; reads and draws finished runs. All
//! computing happens here.

mod files;
mod helper;
mod load;
mod model;
mod runs;

use std::rc::Rc;

use aiperf_core::simulate::Cluster;
use aiperf_core::synthesis::SynthesisSettings;
use aiperf_core::trace::Trace;
use yew_agent::worker::{HandlerId, Worker, WorkerScope};

use crate::engine::{ModelCache, synth_file_name, synth_view, synthesize};
use crate::protocol::{FromWorker, ToWorker};
use crate::web::now_ms;
use load::{Load, Source, analyze};
use model::Inner;
pub use model::{Never, TraceWorker};

/// Starts this worker's script: the page's worker, or the helper it starts itself
/// ([`helper`]).
pub fn start() {
    if helper::is_helper() {
        helper::serve();
    } else {
        use yew_agent::Registrable;
        TraceWorker::registrar().encoding::<crate::codec::WithFiles>().register();
    }
}

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
            ToWorker::Load { file, name, size, block_size, format, conversion, more } => {
                let generation = {
                    let mut inner = self.inner.borrow_mut();
                    inner.load_generation += 1;
                    inner.trace = None;
                    inner.model = ModelCache::default();
                    inner.last = None;
                    inner.schedule = None;
                    inner.load_generation
                };
                let (inner, scope) = (self.inner.clone(), scope.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let load = Load { inner, scope, id, generation };
                    let source = Source { file, name, size, more };
                    load.run(source, block_size, format, *conversion).await;
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
                        let original = self.inner.borrow().trace.clone();
                        if let (aiperf_core::synthesis::Mode::Generate, Some(original)) = (settings.mode, original) {
                            view.arrivals = aiperf_core::synthesis::fidelity::arrival_checks(&original, &trace);
                        }
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
                        let jsonl = aiperf_core::trace::write_trace(&trace);
                        match crate::web::blob_url(jsonl.as_bytes(), "application/x-ndjson") {
                            Ok(url) => FromWorker::Export { settings, name, url },
                            Err(e) => FromWorker::SynthFailed { message: format!("cannot offer the download: {e:?}") },
                        }
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
                    let answer = runs::read(&inner, generation, &runs, &curves).await;
                    if let Some(msg) = answer {
                        scope.respond(id, msg);
                    }
                });
            }
            ToWorker::ShowRuns { labels, baseline } => {
                let t0 = now_ms();
                let mut inner = self.inner.borrow_mut();
                for (run, label) in inner.runs.iter_mut().zip(labels) {
                    run.label = label;
                }
                let mut view = runs::view(&inner.curves, &inner.runs, baseline);
                view.compute_ms = now_ms() - t0;
                view.stages.html_ms = view.compute_ms;
                scope.respond(id, FromWorker::Runs(Box::new(view)));
            }
            ToWorker::Simulate { cluster } => {
                // Run from a timer task, after the messages already queued: a newer request
                // queued behind this one replaces it before it starts.
                let generation = {
                    let mut inner = self.inner.borrow_mut();
                    inner.sim_generation += 1;
                    inner.sim_generation
                };
                let (inner, scope) = (self.inner.clone(), scope.clone());
                gloo_timers::callback::Timeout::new(0, move || {
                    if inner.borrow().sim_generation == generation
                        && let Some(msg) = simulated(&mut inner.borrow_mut(), &cluster)
                    {
                        scope.respond(id, msg);
                    }
                })
                .forget();
            }
            ToWorker::Agentic { request } => {
                let t0 = now_ms();
                let msg = match crate::agentic::generate_dataset(&request) {
                    Ok((mut view, generated)) => {
                        view.compute_ms = now_ms() - t0;
                        self.inner.borrow_mut().agentic = Some(generated);
                        FromWorker::Agentic(Box::new(view))
                    }
                    Err(message) => FromWorker::AgenticFailed { message },
                };
                scope.respond(id, msg);
            }
            ToWorker::AgenticFile { name } => {
                let text = self.inner.borrow().agentic.as_ref().and_then(|g| g.file(&name));
                if let Some(text) = text {
                    scope.respond(id, FromWorker::File { name, text });
                }
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

/// The loaded trace simulated on `cluster` (`None` without a trace).
fn simulated(inner: &mut Inner, cluster: &Cluster) -> Option<FromWorker> {
    let trace = inner.trace.clone()?;
    let t0 = now_ms();
    let schedule = match &inner.schedule {
        Some(s) => Ok(s.clone()),
        None => crate::what_if::schedule(&trace),
    };
    let result = schedule.and_then(|s| {
        inner.schedule = Some(s.clone());
        crate::what_if::simulate_view(&trace, &s, cluster)
    });
    Some(match result {
        Ok(mut view) => {
            view.compute_ms = now_ms() - t0;
            FromWorker::Simulation(Box::new(view))
        }
        Err(message) => FromWorker::SimFailed { cluster: *cluster, message },
    })
}

/// `trace.csv` → `trace.mooncake.jsonl` (the name `convert-trace`'s users would pick).
fn converted_file_name(name: &str) -> String {
    let stem = name.strip_suffix(".gz").unwrap_or(name);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    format!("{stem}.mooncake.jsonl")
}
