//! The page's state and its pure reducer. Big data (analyses, charts) sits behind `Rc`, so a
//! state change or a render copies pointers, not vectors; the reducer's messages ([`Action`]) say
//! what happened, and each piece of state is one enum, not an enum with flags beside it.

use std::rc::Rc;

use aiperf_core::analysis::Analysis;
use yew::Reducible;

use aiperf_core::synthesis::{Mode, Param, SynthesisSettings};

use crate::params::Form;
use crate::protocol::{AnalysisView, BadRow, FileSummary, FromWorker, Progress, SynthView};

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

/// A shown analysis: the parsed numbers plus the worker's view, both shared, never copied.
#[derive(Debug, PartialEq)]
pub struct Shown {
    pub analysis: Rc<Analysis>,
    pub view: AnalysisView,
}

impl Shown {
    fn from_view(view: AnalysisView) -> Result<Shown, String> {
        let analysis = serde_json::from_str(&view.json).map_err(|e| format!("unreadable analysis: {e}"))?;
        Ok(Shown { analysis: Rc::new(analysis), view })
    }
}

/// A synthesis ready to show.
#[derive(Debug, PartialEq)]
pub struct SynthShown {
    pub analysis: Rc<Analysis>,
    pub view: SynthView,
}

/// Something the worker computes on request; the last outcome stays shown while a newer one is
/// computed.
#[derive(Debug, Default, PartialEq)]
pub enum Computed<T> {
    #[default]
    Idle,
    Computing {
        last: Option<Result<Rc<T>, String>>,
    },
    Done(Result<Rc<T>, String>),
}

// By hand: cloning shares the `Rc`s, so `T` itself need not be `Clone`.
impl<T> Clone for Computed<T> {
    fn clone(&self) -> Self {
        match self {
            Computed::Idle => Computed::Idle,
            Computing { last } => Computing { last: last.clone() },
            Computed::Done(o) => Computed::Done(o.clone()),
        }
    }
}

impl<T> Computed<T> {
    /// A request went out.
    fn start(&self) -> Self {
        Computed::Computing { last: self.outcome().cloned() }
    }

    /// What to show: the latest outcome.
    pub fn outcome(&self) -> Option<&Result<Rc<T>, String>> {
        match self {
            Computed::Idle | Computing { last: None } => None,
            Computed::Computing { last: Some(o) } | Computed::Done(o) => Some(o),
        }
    }

    /// The latest result, when it succeeded.
    pub fn shown(&self) -> Option<&Rc<T>> {
        self.outcome().and_then(|o| o.as_ref().ok())
    }

    /// The latest error message.
    pub fn error(&self) -> Option<&str> {
        self.outcome().and_then(|o| o.as_ref().err()).map(String::as_str)
    }

    pub fn busy(&self) -> bool {
        matches!(self, Computed::Computing { .. })
    }
}

use Computed::Computing;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct AppState {
    pub form: Form,
    /// Unknown keys of the URL the page was opened with.
    pub url_warnings: Vec<String>,
    pub load: Load,
    pub analysis: Computed<Shown>,
    pub synth: Computed<SynthShown>,
    /// `performance.now()` when the current file was dropped or picked.
    pub started_at: Option<f64>,
    /// Drop → analysis on screen, measured after the render that showed it.
    pub shown_ms: Option<f64>,
    /// Increased whenever the analysis request to send changes (to debounce it).
    pub generation: u64,
    /// Seconds the worker has been silent while the page waits on it, once that passes
    /// [`WORKER_SILENCE_NOTICE_MS`]: a worker that died (e.g. out of memory) sends nothing more.
    pub worker_silent_s: Option<u64>,
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
    /// A file was handed to the worker at `now` (ms); `sample`: the bundled sample.
    FileOpened { name: String, size: u64, now: f64, sample: bool },
    /// Reading a file could not even start (e.g. the sample is missing).
    OpenFailed { name: String, message: String },
    /// The worker said something.
    Worker(FromWorker),
    /// An analysis request (another block size) went out.
    AnalysisRequested,
    /// The analysis is on screen, `elapsed` ms after the drop.
    AnalysisShown { elapsed: f64 },
    /// A synthesis request went out.
    SynthesisRequested,
    /// Periodic check: the worker's last message was `silent_ms` ago.
    Ticked { silent_ms: f64 },
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
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            Action::Edited(f, v) => {
                if s.form.get(f) == v {
                    return self;
                }
                s.form.set(f, v);
                s.generation += 1;
            }
            Action::ModeChosen(m) => {
                if s.form.mode == m {
                    return self;
                }
                s.form.mode = m;
                s.generation += 1;
            }
            Action::FileOpened { name, size, now, sample } => {
                s.form.sample = sample;
                s.load = Load::Reading { name, progress: Progress { total: size, ..Default::default() } };
                s.analysis = Computing { last: None };
                s.synth = Computed::Idle;
                s.started_at = Some(now);
                s.shown_ms = None;
                s.worker_silent_s = None;
            }
            Action::OpenFailed { name, message } => {
                s.load = Load::Failed { name, message, bad_rows: Rc::new(Vec::new()), bad_total: 0 };
                s.analysis = Computed::Idle;
            }
            Action::AnalysisRequested => s.analysis = s.analysis.start(),
            Action::AnalysisShown { elapsed } => {
                s.shown_ms = Some(elapsed);
                s.started_at = None;
            }
            Action::SynthesisRequested => s.synth = s.synth.start(),
            Action::Ticked { silent_ms } => {
                let waiting = matches!(s.load, Load::Reading { .. }) || s.analysis.busy() || s.synth.busy();
                let silent = (waiting && silent_ms >= WORKER_SILENCE_NOTICE_MS).then(|| (silent_ms / 1000.0) as u64);
                if silent == s.worker_silent_s {
                    return self;
                }
                s.worker_silent_s = silent;
            }
            // Any message shows the worker is alive: clear the silence notice, then apply it.
            Action::Worker(msg) if s.worker_silent_s.is_some() => {
                s.worker_silent_s = None;
                return Rc::new(s).reduce(Action::Worker(msg));
            }
            Action::Worker(msg) => match msg {
                FromWorker::Progress(p) => match &mut s.load {
                    Load::Reading { progress, .. } => *progress = p,
                    _ => return self,
                },
                FromWorker::Loaded(summary) => {
                    s.load = Load::Ready(Rc::new(summary));
                    s.generation += 1;
                }
                FromWorker::LoadFailed { message, bad_rows, bad_total } => {
                    let name = match &s.load {
                        Load::Reading { name, .. } => name.clone(),
                        _ => String::new(),
                    };
                    s.load = Load::Failed { name, message, bad_rows: Rc::new(bad_rows), bad_total };
                    s.analysis = Computed::Idle;
                }
                FromWorker::Analysis(view) => {
                    // A late answer for a block size no longer asked for is dropped (while the field
                    // is invalid, e.g. from a bad link, the analysis at the last valid size shows).
                    if s.form.block_size().is_some_and(|bs| bs != view.block_size) {
                        return self;
                    }
                    s.analysis = Computed::Done(Shown::from_view(*view).map(Rc::new));
                }
                FromWorker::Synthesis(view) => {
                    let wanted = s.form.synth();
                    if wanted.as_ref() != Some(&view.settings) {
                        // While the form is invalid no newer request is coming: stop waiting.
                        if let (None, Computing { last }) = (&wanted, &s.synth) {
                            s.synth = last.clone().map_or(Computed::Idle, Computed::Done);
                            return Rc::new(s);
                        }
                        return self;
                    }
                    let shown = serde_json::from_str(&view.json)
                        .map(|analysis| Rc::new(SynthShown { analysis: Rc::new(analysis), view: *view }))
                        .map_err(|e| format!("unreadable synthesis statistics: {e}"));
                    s.synth = Computed::Done(shown);
                }
                FromWorker::SynthFailed { message } => s.synth = Computed::Done(Err(message)),
                FromWorker::Export { .. } | FromWorker::Converted { .. } => return self,
                // The run view keeps its own state (`crate::runs::RunsUi`).
                FromWorker::Runs(_) | FromWorker::RunsFailed { .. } | FromWorker::Record { .. } => return self,
            },
        }
        Rc::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::analysis_view;
    use aiperf_core::trace::{ParseOptions, parse_str};

    fn reduce(s: Rc<AppState>, a: Action) -> Rc<AppState> {
        s.reduce(a)
    }

    fn summary() -> FileSummary {
        FileSummary {
            name: "t.jsonl".into(),
            size: 10,
            lines: 2,
            rows: 2,
            bad_rows: vec![],
            bad_total: 0,
            parse_ms: 1.0,
            format: "mooncake".into(),
            evidence: "Mooncake JSONL".into(),
            notes: vec![],
            has_prefix_info: true,
            downloadable: false,
        }
    }

    #[test]
    fn a_silent_worker_is_reported_only_while_the_page_waits_on_it() {
        let s = Rc::new(AppState::default());
        // Nothing asked of the worker: silence is normal.
        let s = reduce(s, Action::Ticked { silent_ms: 60_000.0 });
        assert_eq!(s.worker_silent_s, None);
        let s = reduce(s, Action::FileOpened { name: "t.jsonl".into(), size: 100, now: 5.0, sample: false });
        let quiet = reduce(s.clone(), Action::Ticked { silent_ms: 5_000.0 });
        assert!(Rc::ptr_eq(&quiet, &s), "a short silence changes nothing (no re-render)");
        let s = reduce(s, Action::Ticked { silent_ms: 31_500.0 });
        assert_eq!(s.worker_silent_s, Some(31));
        // Any message clears the notice and is applied.
        let p = Progress { bytes: 50, total: 100, rows: 1, invalid: 0 };
        let s = reduce(s, Action::Worker(FromWorker::Progress(p.clone())));
        assert_eq!(s.worker_silent_s, None);
        assert_eq!(s.load, Load::Reading { name: "t.jsonl".into(), progress: p });
        let s = reduce(s, Action::Ticked { silent_ms: 45_000.0 });
        assert_eq!(s.worker_silent_s, Some(45));
        let s =
            reduce(s, Action::Worker(FromWorker::LoadFailed { message: "x".into(), bad_rows: vec![], bad_total: 0 }));
        assert_eq!(s.worker_silent_s, None);
        let s = reduce(s, Action::Ticked { silent_ms: 90_000.0 });
        assert_eq!(s.worker_silent_s, None, "nothing owed after a failure");
    }

    #[test]
    fn open_progress_load_analysis() {
        let s = Rc::new(AppState::default());
        let s = reduce(s, Action::FileOpened { name: "t.jsonl".into(), size: 100, now: 5.0, sample: false });
        assert!(matches!(s.load, Load::Reading { .. }) && s.analysis.busy());
        let p = Progress { bytes: 50, total: 100, rows: 1, invalid: 0 };
        let s = reduce(s, Action::Worker(FromWorker::Progress(p.clone())));
        assert_eq!(s.load, Load::Reading { name: "t.jsonl".into(), progress: p });
        let s = reduce(s, Action::Worker(FromWorker::Loaded(summary())));
        assert_eq!(s.load, Load::Ready(Rc::new(summary())));
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let s = reduce(s, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace, 512)))));
        assert!(!s.analysis.busy());
        assert_eq!(s.analysis.shown().unwrap().analysis.total_requests, 1);
        let s = reduce(s, Action::AnalysisShown { elapsed: 12.0 });
        assert_eq!((s.shown_ms, s.started_at), (Some(12.0), None));
    }

    #[test]
    fn stale_analysis_is_dropped_and_edits_bump_the_generation() {
        let s = Rc::new(AppState::default());
        let s = reduce(s, Action::Edited(Param::BlockSize, "16".into()));
        assert_eq!(s.generation, 1);
        let same = reduce(s.clone(), Action::Edited(Param::BlockSize, "16".into()));
        assert!(Rc::ptr_eq(&s, &same));
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let late = reduce(s.clone(), Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace, 512)))));
        assert!(late.analysis.shown().is_none());
        // An invalid block size (from a link) still lets the analysis at the default size show.
        let bad = reduce(s, Action::Edited(Param::BlockSize, "x".into()));
        let shown = reduce(bad, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace, 512)))));
        assert!(shown.analysis.shown().is_some());
    }

    #[test]
    fn a_late_synthesis_while_the_form_is_invalid_ends_the_wait() {
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let s = AppState { load: Load::Ready(Rc::new(summary())), ..Default::default() };
        let settings = s.form.synth().unwrap();
        let view = crate::engine::synth_view(&trace, &settings);
        let s = reduce(Rc::new(s), Action::SynthesisRequested);
        // The user types an invalid value: no newer request will go out.
        let s = reduce(s, Action::Edited(Param::SpeedupRatio, "fast".into()));
        assert!(s.synth.busy() && s.form.synth().is_none());
        let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view.clone()))));
        assert_eq!(s.synth, Computed::Idle, "the late result for other settings is not shown, the wait ends");
        // With a valid but different form, a newer request is pending: keep waiting.
        let s = reduce(s, Action::Edited(Param::SpeedupRatio, "3".into()));
        let s = reduce(s, Action::SynthesisRequested);
        let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view))));
        assert!(s.synth.busy());
    }

    #[test]
    fn the_last_synthesis_stays_shown_while_the_next_is_computed() {
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let s = Rc::new(AppState { load: Load::Ready(Rc::new(summary())), ..Default::default() });
        let view = crate::engine::synth_view(&trace, &s.form.synth().unwrap());
        let s = reduce(s, Action::SynthesisRequested);
        let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view))));
        let first = s.synth.shown().cloned().unwrap();
        assert_eq!(first.view.rows, 1);
        let s = reduce(s, Action::Edited(Param::SpeedupRatio, "2".into()));
        let s = reduce(s, Action::SynthesisRequested);
        assert!(s.synth.busy());
        assert!(Rc::ptr_eq(s.synth.shown().unwrap(), &first), "shared, not copied");
        let s = reduce(s, Action::Worker(FromWorker::SynthFailed { message: "too large".into() }));
        assert_eq!((s.synth.busy(), s.synth.error()), (false, Some("too large")));
        // A failure stays shown while the next request is computed.
        let s = reduce(s, Action::SynthesisRequested);
        assert_eq!((s.synth.busy(), s.synth.error()), (true, Some("too large")));
    }

    #[test]
    fn failures_keep_the_bad_rows() {
        let s = reduce(
            Rc::new(AppState::default()),
            Action::FileOpened { name: "bad".into(), size: 1, now: 0.0, sample: true },
        );
        let bad = vec![BadRow { line: 3, field: Some("input_length".into()), reason: "expected an integer".into() }];
        let s = reduce(
            s,
            Action::Worker(FromWorker::LoadFailed {
                message: "no valid row".into(),
                bad_rows: bad.clone(),
                bad_total: 1,
            }),
        );
        match &s.load {
            Load::Failed { name, bad_rows, .. } => assert_eq!((name.as_str(), bad_rows.as_slice()), ("bad", &bad[..])),
            other => panic!("{other:?}"),
        }
        assert!(s.synth_request().is_none());
        assert!(s.form.sample);
    }
}
