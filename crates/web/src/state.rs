//! The page's state and its pure reducer. Big data (analyses, charts) sits behind `Rc`, so a
//! state change copies pointers, not vectors.

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
    Ready,
}

/// A shown analysis: the parsed numbers plus the worker's view.
#[derive(Debug, PartialEq)]
pub struct Shown {
    pub analysis: Analysis,
    pub view: AnalysisView,
}

impl Shown {
    fn from_view(view: AnalysisView) -> Result<Shown, String> {
        let analysis = serde_json::from_str(&view.json).map_err(|e| format!("unreadable analysis: {e}"))?;
        Ok(Shown { analysis, view })
    }
}

/// Synthesis results.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Synth {
    #[default]
    Idle,
    Ready {
        analysis: Rc<Analysis>,
        view: Rc<SynthView>,
    },
    Failed(String),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct AppState {
    pub form: Form,
    /// Unknown keys of the URL the page was opened with.
    pub url_warnings: Vec<String>,
    pub load: Load,
    pub file: Option<Rc<FileSummary>>,
    pub analysis: Option<Rc<Shown>>,
    pub analysis_error: Option<String>,
    /// An analysis was asked for and has not arrived.
    pub analyzing: bool,
    pub synth: Synth,
    /// A synthesis was asked for and has not arrived (the previous result stays shown).
    pub synth_busy: bool,
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

/// Everything that changes the state.
#[derive(Debug)]
pub enum Action {
    /// A parameter was edited.
    Set(Param, String),
    SetMode(Mode),
    /// A file was handed to the worker at `now` (ms); `sample`: the bundled sample.
    Open {
        name: String,
        size: u64,
        now: f64,
        sample: bool,
    },
    /// Reading a file could not even start (e.g. the sample is missing).
    OpenFailed {
        name: String,
        message: String,
    },
    Worker(FromWorker),
    /// The analysis is on screen, `elapsed` ms after the drop.
    Shown {
        elapsed: f64,
    },
    /// A synthesis request went out.
    SynthStarted,
    /// Periodic check: the worker's last message was `silent_ms` ago.
    Tick {
        silent_ms: f64,
    },
}

impl AppState {
    pub fn new(form: Form, url_warnings: Vec<String>) -> Self {
        AppState { form, url_warnings, ..Default::default() }
    }

    /// The synthesis settings to compute now, if a trace is loaded and the form is valid.
    pub fn synth_request(&self) -> Option<SynthesisSettings> {
        self.file.as_ref()?;
        self.form.synth()
    }
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            Action::Set(f, v) => {
                if s.form.get(f) == v {
                    return self;
                }
                s.form.set(f, v);
                s.generation += 1;
            }
            Action::SetMode(m) => {
                if s.form.mode == m {
                    return self;
                }
                s.form.mode = m;
                s.generation += 1;
            }
            Action::Open { name, size, now, sample } => {
                s.form.sample = sample;
                s.load = Load::Reading { name, progress: Progress { total: size, ..Default::default() } };
                s.file = None;
                s.analysis = None;
                s.analysis_error = None;
                s.analyzing = true;
                s.synth = Synth::Idle;
                s.synth_busy = false;
                s.started_at = Some(now);
                s.shown_ms = None;
                s.worker_silent_s = None;
            }
            Action::OpenFailed { name, message } => {
                s.load = Load::Failed { name, message, bad_rows: Rc::new(Vec::new()), bad_total: 0 };
                s.analyzing = false;
            }
            Action::Shown { elapsed } => {
                s.shown_ms = Some(elapsed);
                s.started_at = None;
            }
            Action::SynthStarted => s.synth_busy = true,
            Action::Tick { silent_ms } => {
                let waiting = matches!(s.load, Load::Reading { .. }) || s.analyzing || s.synth_busy;
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
                    s.load = Load::Ready;
                    s.file = Some(Rc::new(summary));
                    s.generation += 1;
                }
                FromWorker::LoadFailed { message, bad_rows, bad_total } => {
                    let name = match &s.load {
                        Load::Reading { name, .. } => name.clone(),
                        _ => String::new(),
                    };
                    s.load = Load::Failed { name, message, bad_rows: Rc::new(bad_rows), bad_total };
                    s.analyzing = false;
                }
                FromWorker::Analysis(view) => {
                    // A late answer for a block size no longer asked for is dropped (while the field
                    // is invalid, e.g. from a bad link, the analysis at the last valid size shows).
                    if s.form.block_size().is_some_and(|bs| bs != view.block_size) {
                        return self;
                    }
                    s.analyzing = false;
                    match Shown::from_view(*view) {
                        Ok(shown) => {
                            s.analysis = Some(Rc::new(shown));
                            s.analysis_error = None;
                        }
                        Err(e) => s.analysis_error = Some(e),
                    }
                }
                FromWorker::Synthesis(view) => {
                    let wanted = s.form.synth();
                    if wanted.as_ref() != Some(&view.settings) {
                        // While the form is invalid no newer request is coming: stop waiting.
                        if wanted.is_none() && s.synth_busy {
                            s.synth_busy = false;
                            return Rc::new(s);
                        }
                        return self;
                    }
                    s.synth_busy = false;
                    s.synth = match serde_json::from_str(&view.json) {
                        Ok(analysis) => Synth::Ready { analysis: Rc::new(analysis), view: Rc::new(*view) },
                        Err(e) => Synth::Failed(format!("unreadable synthesis statistics: {e}")),
                    };
                }
                FromWorker::SynthFailed { message } => {
                    s.synth_busy = false;
                    s.synth = Synth::Failed(message);
                }
                FromWorker::Export { .. } => return self,
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
        }
    }

    #[test]
    fn a_silent_worker_is_reported_only_while_the_page_waits_on_it() {
        let s = Rc::new(AppState::default());
        // Nothing asked of the worker: silence is normal.
        let s = reduce(s, Action::Tick { silent_ms: 60_000.0 });
        assert_eq!(s.worker_silent_s, None);
        let s = reduce(s, Action::Open { name: "t.jsonl".into(), size: 100, now: 5.0, sample: false });
        let quiet = reduce(s.clone(), Action::Tick { silent_ms: 5_000.0 });
        assert!(Rc::ptr_eq(&quiet, &s), "a short silence changes nothing (no re-render)");
        let s = reduce(s, Action::Tick { silent_ms: 31_500.0 });
        assert_eq!(s.worker_silent_s, Some(31));
        // Any message clears the notice and is applied.
        let p = Progress { bytes: 50, total: 100, rows: 1, invalid: 0 };
        let s = reduce(s, Action::Worker(FromWorker::Progress(p.clone())));
        assert_eq!(s.worker_silent_s, None);
        assert_eq!(s.load, Load::Reading { name: "t.jsonl".into(), progress: p });
        let s = reduce(s, Action::Tick { silent_ms: 45_000.0 });
        assert_eq!(s.worker_silent_s, Some(45));
        let s =
            reduce(s, Action::Worker(FromWorker::LoadFailed { message: "x".into(), bad_rows: vec![], bad_total: 0 }));
        assert_eq!(s.worker_silent_s, None);
        let s = reduce(s, Action::Tick { silent_ms: 90_000.0 });
        assert_eq!(s.worker_silent_s, None, "nothing owed after a failure");
    }

    #[test]
    fn open_progress_load_analysis() {
        let s = Rc::new(AppState::default());
        let s = reduce(s, Action::Open { name: "t.jsonl".into(), size: 100, now: 5.0, sample: false });
        assert!(matches!(s.load, Load::Reading { .. }) && s.analyzing);
        let p = Progress { bytes: 50, total: 100, rows: 1, invalid: 0 };
        let s = reduce(s, Action::Worker(FromWorker::Progress(p.clone())));
        assert_eq!(s.load, Load::Reading { name: "t.jsonl".into(), progress: p });
        let s = reduce(s, Action::Worker(FromWorker::Loaded(summary())));
        assert_eq!(s.load, Load::Ready);
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let s = reduce(s, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace, 512)))));
        assert!(!s.analyzing);
        assert_eq!(s.analysis.as_ref().unwrap().analysis.total_requests, 1);
        let s = reduce(s, Action::Shown { elapsed: 12.0 });
        assert_eq!((s.shown_ms, s.started_at), (Some(12.0), None));
    }

    #[test]
    fn stale_analysis_is_dropped_and_edits_bump_the_generation() {
        let s = Rc::new(AppState::default());
        let s = reduce(s, Action::Set(Param::BlockSize, "16".into()));
        assert_eq!(s.generation, 1);
        let same = reduce(s.clone(), Action::Set(Param::BlockSize, "16".into()));
        assert!(Rc::ptr_eq(&s, &same));
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let late = reduce(s.clone(), Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace, 512)))));
        assert!(late.analysis.is_none());
        // An invalid block size (from a link) still lets the analysis at the default size show.
        let bad = reduce(s, Action::Set(Param::BlockSize, "x".into()));
        let shown = reduce(bad, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace, 512)))));
        assert!(shown.analysis.is_some());
    }

    #[test]
    fn a_late_synthesis_while_the_form_is_invalid_ends_the_wait() {
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let s = AppState { file: Some(Rc::new(summary())), ..Default::default() };
        let settings = s.form.synth().unwrap();
        let view = crate::engine::synth_view(&trace, &settings);
        let s = reduce(Rc::new(s), Action::SynthStarted);
        // The user types an invalid value: no newer request will go out.
        let s = reduce(s, Action::Set(Param::SpeedupRatio, "fast".into()));
        assert!(s.synth_busy && s.form.synth().is_none());
        let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view.clone()))));
        assert!(!s.synth_busy);
        assert_eq!(s.synth, Synth::Idle, "the late result for other settings is not shown");
        // With a valid but different form, a newer request is pending: keep waiting.
        let s = reduce(s, Action::Set(Param::SpeedupRatio, "3".into()));
        let s = reduce(s, Action::SynthStarted);
        let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view))));
        assert!(s.synth_busy);
    }

    #[test]
    fn failures_keep_the_bad_rows() {
        let s =
            reduce(Rc::new(AppState::default()), Action::Open { name: "bad".into(), size: 1, now: 0.0, sample: true });
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
