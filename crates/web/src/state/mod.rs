//! The page's state and its pure reducer: the trace, its analysis and synthesis, the run view and
//! what the worker was asked. Big data (analyses, charts, run views) sits behind `Rc`, so a state
//! change or a render copies pointers, not vectors; the reducer's messages ([`Action`]) say what
//! happened, and each piece of state is one enum, not an enum with flags beside it.

mod computed;
mod runs;
#[cfg(test)]
mod tests;

pub use computed::Computed;
pub use runs::{RunView, ShownRuns};

use std::collections::BTreeMap;
use std::rc::Rc;

use aiperf_core::formats::settings::ConversionSettings;
use aiperf_core::synthesis::{Mode, Param, SynthesisSettings};
use yew::Reducible;

use crate::agentic::{AgenticField, AgenticForm, AgenticRequest, AgenticView};
use crate::params::Form;
use crate::protocol::{AnalysisView, BadRow, FileSummary, FromWorker, Progress, SynthView};
use crate::what_if::{Field, SimView, WhatIfForm};
use aiperf_core::simulate::Cluster;

/// Where loading a file stands.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Load {
    #[default]
    Empty,
    Reading {
        name: String,
        progress: Progress,
    },
    Failed {
        name: String,
        message: String,
        bad_rows: Rc<Vec<BadRow>>,
        bad_total: u64,
    },
    /// Parsed and held by the worker.
    Ready(Rc<FileSummary>),
}

/// What the worker was last asked to compute for the open trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Asked {
    pub block_size: Option<u32>,
    pub synth: Option<SynthesisSettings>,
}

/// How the next file is read: its format (`None`: detected from the content) and the conversion
/// settings (`convert-trace`'s flags) as typed, by flag name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    pub format: Option<String>,
    pub conversion: BTreeMap<&'static str, String>,
}

impl Reading {
    /// The typed conversion settings (the core's parser and range checks, as `convert-trace`'s),
    /// or what is wrong with the first field refused.
    pub fn conversion(&self) -> Result<ConversionSettings, String> {
        ConversionSettings::from_pairs(self.conversion.iter().map(|(k, v)| (*k, v.as_str()))).map_err(|e| e.to_string())
    }
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct AppState {
    pub form: Form,
    /// Unknown keys of the URL the page was opened with.
    pub url_warnings: Vec<String>,
    pub reading: Reading,
    pub load: Load,
    pub analysis: Computed<AnalysisView>,
    pub synth: Computed<SynthView>,
    pub asked: Asked,
    /// `performance.now()` when the current file was dropped or picked.
    pub started_at: Option<f64>,
    /// Drop → analysis on screen, measured after the render that showed it.
    pub shown_ms: Option<f64>,
    /// Seconds the worker has been silent while the page waits on it, once that passes
    /// [`WORKER_SILENCE_NOTICE_MS`]: a worker that died (e.g. out of memory) sends nothing more.
    pub worker_silent_s: Option<u64>,
    pub runs: RunView,
    /// The "What if" panel: its controls, the last simulation, the cluster last asked for.
    pub what_if: WhatIfForm,
    pub sim: Computed<SimView>,
    pub asked_sim: Option<Cluster>,
    /// The agentic-code generator: its form and the last dataset generated.
    pub agentic_form: AgenticForm,
    pub agentic: Computed<AgenticView>,
}

/// Silence of the worker, while it owes an answer, after which the page says so.
pub const WORKER_SILENCE_NOTICE_MS: f64 = 30_000.0;

/// What happened (the reducer's messages).
#[derive(Debug)]
pub enum Action {
    /// The user edited a parameter.
    Edited(Param, String),
    /// The user chose a synthesis mode.
    ModeChosen(Mode),
    /// The user chose the next file's format (`None`: detect it).
    FormatChosen(Option<String>),
    /// The user edited a conversion flag (`""`: unset; a switch is `"1"` when on).
    ConversionEdited { flag: &'static str, value: String },
    /// A file was handed to the worker at `now` (ms), to be analysed with `block_size`;
    /// `sample`: the bundled sample.
    FileOpened { name: String, size: u64, now: f64, sample: bool, block_size: u32 },
    /// Reading a file could not even start (e.g. the sample is missing).
    OpenFailed { name: String, message: String },
    /// The worker said something.
    Worker(FromWorker),
    /// These requests went out (see [`AppState::pending`]).
    Requested(Asked),
    /// The analysis is on screen, `elapsed` ms after the drop.
    AnalysisShown { elapsed: f64 },
    /// Periodic check: the worker was last heard from or written to `silent_ms` ago.
    Ticked { silent_ms: f64 },
    /// Runs were handed to the worker at `now` (ms).
    RunsOpened { names: Vec<String>, now: f64 },
    /// The dropped files do not make runs, or the browser refused them.
    RunsRefused(String),
    /// The run view is on screen, `elapsed` ms after the drop.
    RunsShown { elapsed: f64 },
    /// The user edited a control of the "What if" panel.
    WhatIfEdited(Field, String),
    /// A simulation of this cluster went out (see [`AppState::pending_sim`]).
    SimRequested(Cluster),
    /// The user edited a field of the agentic-code form.
    AgenticEdited(AgenticField, String),
    /// The user uploaded an agentic configuration `(file name, text)`, or went back to the
    /// defaults (`None`).
    AgenticConfigChosen(Option<(String, String)>),
    /// An agentic dataset was asked for.
    AgenticRequested(AgenticRequest),
}

impl AppState {
    pub fn new(form: Form, url_warnings: Vec<String>) -> Self {
        AppState { form, url_warnings, ..Default::default() }
    }

    /// The loaded file.
    pub fn file(&self) -> Option<&Rc<FileSummary>> {
        match &self.load {
            Load::Ready(file) => Some(file),
            _ => None,
        }
    }

    /// The synthesis settings to compute now, if a trace is loaded and the form is valid.
    pub fn synth_request(&self) -> Option<SynthesisSettings> {
        self.file()?;
        self.form.synth()
    }

    /// What to ask the worker now: the valid block size and synthesis settings of the form, each
    /// when it differs from what was asked last, so a request goes out once.
    pub fn pending(&self) -> Asked {
        if self.file().is_none() {
            return Asked::default();
        }
        Asked {
            block_size: self.form.block_size().filter(|&b| self.asked.block_size != Some(b)),
            synth: self.form.synth().filter(|s| self.asked.synth.as_ref() != Some(s)),
        }
    }

    /// The cluster to simulate now: the "What if" form's, once a trace is loaded, when it differs
    /// from the one asked for last.
    pub fn pending_sim(&self) -> Option<Cluster> {
        self.file()?;
        self.what_if.cluster().filter(|c| self.asked_sim.as_ref() != Some(c))
    }

    /// Whether the page waits on the worker.
    fn waiting(&self) -> bool {
        matches!(self.load, Load::Reading { .. })
            || matches!(self.runs, RunView::Reading { .. })
            || self.analysis.busy()
            || self.synth.busy()
            || self.sim.busy()
            || self.agentic.busy()
    }

    /// Applies an action; `false` when nothing changed (the old state is kept: no re-render).
    fn apply(&mut self, action: Action) -> bool {
        match action {
            Action::Edited(f, v) => {
                if self.form.get(f) == v {
                    return false;
                }
                self.form.set(f, v);
            }
            Action::ModeChosen(m) => {
                if self.form.mode == m {
                    return false;
                }
                self.form.mode = m;
            }
            Action::FormatChosen(format) => {
                if self.reading.format == format {
                    return false;
                }
                self.reading.format = format;
            }
            Action::ConversionEdited { flag, value } => {
                if self.reading.conversion.get(flag).map_or("", String::as_str) == value {
                    return false;
                }
                self.reading.conversion.insert(flag, value);
            }
            Action::FileOpened { name, size, now, sample, block_size } => {
                self.form.sample = sample;
                self.load = Load::Reading { name, progress: Progress { total: size, ..Default::default() } };
                self.analysis = Computed::Computing { last: None };
                self.synth = Computed::Idle;
                self.sim = Computed::Idle;
                self.asked_sim = None;
                self.asked = Asked { block_size: Some(block_size), synth: None };
                self.started_at = Some(now);
                self.shown_ms = None;
                self.worker_silent_s = None;
            }
            Action::OpenFailed { name, message } => {
                self.load = Load::Failed { name, message, bad_rows: Rc::new(Vec::new()), bad_total: 0 };
                self.analysis = Computed::Idle;
            }
            Action::Requested(asked) => {
                if asked.block_size.is_none() && asked.synth.is_none() {
                    return false;
                }
                if let Some(bs) = asked.block_size {
                    self.asked.block_size = Some(bs);
                    self.analysis = self.analysis.start();
                }
                if let Some(settings) = asked.synth {
                    self.asked.synth = Some(settings);
                    self.synth = self.synth.start();
                }
            }
            Action::AnalysisShown { elapsed } => {
                self.shown_ms = Some(elapsed);
                self.started_at = None;
            }
            Action::Ticked { silent_ms } => {
                let silent =
                    (self.waiting() && silent_ms >= WORKER_SILENCE_NOTICE_MS).then(|| (silent_ms / 1000.0) as u64);
                if silent == self.worker_silent_s {
                    return false;
                }
                self.worker_silent_s = silent;
            }
            // Any message shows the worker is alive: the silence notice goes.
            Action::Worker(msg) => {
                let was_silent = self.worker_silent_s.take().is_some();
                return self.heard(msg) || was_silent;
            }
            Action::RunsOpened { names, now } => self.runs = RunView::Reading { names, started: now },
            Action::RunsRefused(message) => self.runs = RunView::Failed(message),
            Action::RunsShown { elapsed } => match self.runs.with_shown(elapsed) {
                Some(runs) => self.runs = runs,
                None => return false,
            },
            Action::WhatIfEdited(f, v) => {
                if self.what_if.get(f) == v {
                    return false;
                }
                self.what_if.set(f, v);
            }
            Action::SimRequested(cluster) => {
                self.asked_sim = Some(cluster);
                self.sim = self.sim.start();
            }
            Action::AgenticEdited(f, v) => {
                if self.agentic_form.get(f) == v {
                    return false;
                }
                self.agentic_form.set(f, v);
            }
            Action::AgenticConfigChosen(config) => {
                if self.agentic_form.config == config {
                    return false;
                }
                self.agentic_form.config = config;
            }
            Action::AgenticRequested(_) => self.agentic = self.agentic.start(),
        }
        true
    }

    /// Applies a worker message; `false` when nothing changed.
    fn heard(&mut self, msg: FromWorker) -> bool {
        match msg {
            FromWorker::Progress(p) => match &mut self.load {
                Load::Reading { progress, .. } => *progress = p,
                _ => return false,
            },
            FromWorker::Loaded(summary) => self.load = Load::Ready(Rc::new(summary)),
            FromWorker::LoadFailed { message, bad_rows, bad_total } => {
                let name = match &self.load {
                    Load::Reading { name, .. } => name.clone(),
                    _ => String::new(),
                };
                self.load = Load::Failed { name, message, bad_rows: Rc::new(bad_rows), bad_total };
                self.analysis = Computed::Idle;
            }
            FromWorker::Analysis(view) => {
                // A late answer for a block size no longer asked for is dropped (while the field
                // is invalid, e.g. from a bad link, the analysis at the last valid size shows).
                if self.form.block_size().is_some_and(|bs| bs != view.block_size) {
                    return false;
                }
                self.analysis = Computed::Done(Ok(Rc::from(view)));
            }
            FromWorker::Synthesis(view) => {
                let wanted = self.form.synth();
                if wanted.as_ref() == Some(&view.settings) {
                    self.synth = Computed::Done(Ok(Rc::from(view)));
                } else if wanted.is_none() && self.synth.busy() {
                    // A late answer for other settings while the form is invalid: no newer
                    // request is coming, so the wait ends.
                    self.synth = self.synth.settle();
                } else {
                    return false;
                }
            }
            FromWorker::SynthFailed { message } => self.synth = Computed::Done(Err(message)),
            FromWorker::Simulation(view) => {
                let wanted = self.what_if.cluster();
                if wanted == Some(view.cluster) {
                    self.sim = Computed::Done(Ok(Rc::from(view)));
                } else if wanted.is_none() && self.sim.busy() {
                    self.sim = self.sim.settle();
                } else {
                    return false;
                }
            }
            FromWorker::Agentic(view) => self.agentic = Computed::Done(Ok(Rc::from(view))),
            FromWorker::AgenticFailed { message } => self.agentic = Computed::Done(Err(message)),
            FromWorker::SimFailed { cluster, message } => {
                if self.what_if.cluster() != Some(cluster) {
                    return false;
                }
                self.sim = Computed::Done(Err(message));
            }
            FromWorker::Runs(view) => self.runs = self.runs.with_view(Rc::from(view)),
            FromWorker::RunsFailed { message } => self.runs = RunView::Failed(message),
            FromWorker::Record { text, .. } => match self.runs.with_record(text) {
                Some(runs) => self.runs = runs,
                None => return false,
            },
            // Files to save: the worker hook offers them as downloads.
            FromWorker::Export { .. } | FromWorker::Converted { .. } | FromWorker::File { .. } => return false,
        }
        true
    }
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        if next.apply(action) { Rc::new(next) } else { self }
    }
}
