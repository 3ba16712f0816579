//! The reducer, message by message.

use super::*;
use crate::engine::{analysis_view, synth_view};
use crate::protocol::RunsView;
use aiperf_core::trace::{ParseOptions, Trace, parse_str};

fn reduce(s: Rc<AppState>, a: Action) -> Rc<AppState> {
    s.reduce(a)
}

/// The debounce ended: what is pending went out.
fn request(s: Rc<AppState>) -> Rc<AppState> {
    let pending = s.pending();
    reduce(s, Action::Requested(pending))
}

/// The action changes nothing: the same state comes back (no re-render).
fn unchanged(s: &Rc<AppState>, a: Action) {
    let next = s.clone().reduce(a);
    assert!(Rc::ptr_eq(&next, s), "changed: {next:?}");
}

fn trace() -> Trace {
    parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace
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

fn opened(block_size: u32) -> Action {
    Action::FileOpened { name: "t.jsonl".into(), size: 100, now: 5.0, sample: false, block_size }
}

fn loaded() -> Rc<AppState> {
    let s = reduce(Rc::new(AppState::default()), opened(512));
    reduce(s, Action::Worker(FromWorker::Loaded(summary())))
}

fn runs_view(html: &str) -> Box<RunsView> {
    Box::new(RunsView {
        labels: vec!["a".into()],
        baseline: 0,
        records: vec![3],
        html: html.into(),
        compute_ms: 1.0,
        stages: Default::default(),
    })
}

#[test]
fn a_silent_worker_is_reported_only_while_the_page_waits_on_it() {
    let s = Rc::new(AppState::default());
    // Nothing asked of the worker: silence is normal.
    unchanged(&s, Action::Ticked { silent_ms: 60_000.0 });
    let s = reduce(s, opened(512));
    unchanged(&s, Action::Ticked { silent_ms: 5_000.0 });
    let s = reduce(s, Action::Ticked { silent_ms: 31_500.0 });
    assert_eq!(s.worker_silent_s, Some(31));
    // Any message clears the notice and is applied.
    let p = Progress { bytes: 50, total: 100, rows: 1, invalid: 0 };
    let s = reduce(s, Action::Worker(FromWorker::Progress(p.clone())));
    assert_eq!(s.worker_silent_s, None);
    assert_eq!(s.load, Load::Reading { name: "t.jsonl".into(), progress: p });
    let s = reduce(s, Action::Ticked { silent_ms: 45_000.0 });
    assert_eq!(s.worker_silent_s, Some(45));
    let s = reduce(s, Action::Worker(FromWorker::LoadFailed { message: "x".into(), bad_rows: vec![], bad_total: 0 }));
    assert_eq!(s.worker_silent_s, None);
    unchanged(&s, Action::Ticked { silent_ms: 90_000.0 });
    // Reading runs is waiting too; a message that changes nothing else still clears the notice.
    let s = reduce(s, Action::RunsOpened { names: vec!["a.jsonl".into()], now: 1.0 });
    let s = reduce(s, Action::Ticked { silent_ms: 40_000.0 });
    assert_eq!(s.worker_silent_s, Some(40));
    let s = reduce(s, Action::Worker(FromWorker::Converted { name: "x".into(), jsonl: String::new() }));
    assert_eq!(s.worker_silent_s, None);
}

#[test]
fn open_progress_load_analysis() {
    let s = Rc::new(AppState::default());
    let s = reduce(s, opened(16));
    assert!(matches!(s.load, Load::Reading { .. }) && s.analysis.busy());
    assert_eq!(s.asked, Asked { block_size: Some(16), synth: None });
    let p = Progress { bytes: 50, total: 100, rows: 1, invalid: 0 };
    let s = reduce(s, Action::Worker(FromWorker::Progress(p.clone())));
    assert_eq!(s.load, Load::Reading { name: "t.jsonl".into(), progress: p.clone() });
    let s = reduce(s, Action::Worker(FromWorker::Loaded(summary())));
    assert_eq!(s.load, Load::Ready(Rc::new(summary())));
    // Progress after the load is over changes nothing.
    unchanged(&s, Action::Worker(FromWorker::Progress(p)));
    let s = reduce(s, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace(), 512)))));
    assert!(!s.analysis.busy());
    assert_eq!(s.analysis.shown().unwrap().analysis.total_requests, 1);
    let s = reduce(s, Action::AnalysisShown { elapsed: 12.0 });
    assert_eq!((s.shown_ms, s.started_at), (Some(12.0), None));
}

#[test]
fn stale_analysis_is_dropped() {
    let s = Rc::new(AppState::default());
    let s = reduce(s, Action::Edited(Param::BlockSize, "16".into()));
    unchanged(&s, Action::Edited(Param::BlockSize, "16".into()));
    unchanged(&s, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace(), 512)))));
    // An invalid block size (from a link) still lets the analysis at the default size show.
    let bad = reduce(s, Action::Edited(Param::BlockSize, "x".into()));
    let shown = reduce(bad, Action::Worker(FromWorker::Analysis(Box::new(analysis_view(&trace(), 512)))));
    assert!(shown.analysis.shown().is_some());
}

#[test]
fn each_request_goes_out_once() {
    let s = Rc::new(AppState::default());
    assert_eq!(s.pending(), Asked::default(), "nothing to ask without a trace");
    let s = loaded();
    // The load analysed at 512 already; the synthesis is still to ask for.
    let defaults = s.form.synth().unwrap();
    assert_eq!(s.pending(), Asked { block_size: None, synth: Some(defaults.clone()) });
    let s = request(s);
    assert!(s.synth.busy());
    assert_eq!(s.pending(), Asked::default());
    unchanged(&s, Action::Requested(Asked::default()));
    // Edited and edited back before the debounce ended: nothing new to ask.
    let s = reduce(s, Action::Edited(Param::BlockSize, "16".into()));
    assert_eq!(s.pending().block_size, Some(16));
    assert!(s.pending().synth.is_some(), "the synthesis depends on the block size too");
    let s = reduce(s, Action::Edited(Param::BlockSize, "512".into()));
    assert_eq!(s.pending(), Asked::default());
    let s = reduce(s, Action::Edited(Param::BlockSize, "64".into()));
    let s = request(s);
    assert!(s.analysis.busy());
    assert_eq!(s.asked.block_size, Some(64));
    // An invalid field asks nothing.
    let s = reduce(s, Action::Edited(Param::Seed, "x".into()));
    assert_eq!(s.pending(), Asked::default());
    // A new file: only the synthesis is left to ask once it is read.
    let s = reduce(s, opened(64));
    assert_eq!(s.pending(), Asked::default());
    assert_eq!(s.asked, Asked { block_size: Some(64), synth: None });
}

#[test]
fn a_late_synthesis_while_the_form_is_invalid_ends_the_wait() {
    let s = AppState { load: Load::Ready(Rc::new(summary())), ..Default::default() };
    let settings = s.form.synth().unwrap();
    let view = synth_view(&trace(), &settings);
    let s = reduce(Rc::new(s), Action::Requested(Asked { block_size: None, synth: Some(settings) }));
    // The user types an invalid value: no newer request will go out.
    let s = reduce(s, Action::Edited(Param::SpeedupRatio, "fast".into()));
    assert!(s.synth.busy() && s.form.synth().is_none());
    let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view.clone()))));
    assert_eq!(s.synth, Computed::Idle, "the late result for other settings is not shown, the wait ends");
    // With a valid but different form, a newer request is pending: keep waiting.
    let s = reduce(s, Action::Edited(Param::SpeedupRatio, "3".into()));
    let s = request(s);
    unchanged(&s, Action::Worker(FromWorker::Synthesis(Box::new(view))));
    assert!(s.synth.busy());
}

#[test]
fn the_last_synthesis_stays_shown_while_the_next_is_computed() {
    let s = loaded();
    let view = synth_view(&trace(), &s.form.synth().unwrap());
    let s = request(s);
    let s = reduce(s, Action::Worker(FromWorker::Synthesis(Box::new(view))));
    let first = s.synth.shown().cloned().unwrap();
    assert_eq!(first.rows, 1);
    let s = reduce(s, Action::Edited(Param::SpeedupRatio, "2".into()));
    let s = request(s);
    assert!(s.synth.busy());
    assert!(Rc::ptr_eq(s.synth.shown().unwrap(), &first), "shared, not copied");
    let s = reduce(s, Action::Worker(FromWorker::SynthFailed { message: "too large".into() }));
    assert_eq!((s.synth.busy(), s.synth.error()), (false, Some("too large")));
    // A failure stays shown while the next request is computed.
    let s = reduce(s, Action::Edited(Param::SpeedupRatio, "4".into()));
    let s = request(s);
    assert_eq!((s.synth.busy(), s.synth.error()), (true, Some("too large")));
}

#[test]
fn failures_keep_the_bad_rows() {
    let s = reduce(
        Rc::new(AppState::default()),
        Action::FileOpened { name: "bad".into(), size: 1, now: 0.0, sample: true, block_size: 512 },
    );
    let bad = vec![BadRow { line: 3, field: Some("input_length".into()), reason: "expected an integer".into() }];
    let failed = FromWorker::LoadFailed { message: "no valid row".into(), bad_rows: bad.clone(), bad_total: 1 };
    let s = reduce(s, Action::Worker(failed));
    match &s.load {
        Load::Failed { name, bad_rows, .. } => assert_eq!((name.as_str(), bad_rows.as_slice()), ("bad", &bad[..])),
        other => panic!("{other:?}"),
    }
    assert!(s.synth_request().is_none() && !s.analysis.busy());
    assert!(s.form.sample);
    let s = reduce(s, Action::OpenFailed { name: "s.jsonl".into(), message: "HTTP 404".into() });
    assert!(matches!(&s.load, Load::Failed { name, message, .. } if name == "s.jsonl" && message == "HTTP 404"));
}

#[test]
fn mode_format_and_conversion_fields() {
    let s = Rc::new(AppState::default());
    unchanged(&s, Action::ModeChosen(Mode::Transform));
    let s = reduce(s, Action::ModeChosen(Mode::Generate));
    assert_eq!(s.form.mode, Mode::Generate);
    unchanged(&s, Action::FormatChosen(None));
    let s = reduce(s, Action::FormatChosen(Some("azure".into())));
    assert_eq!(s.reading.format.as_deref(), Some("azure"));
    unchanged(&s, Action::ConversionEdited { flag: "model", value: String::new() });
    let s = reduce(s, Action::ConversionEdited { flag: "model", value: "GPT-4".into() });
    unchanged(&s, Action::ConversionEdited { flag: "model", value: "GPT-4".into() });
    assert_eq!(s.reading.conversion().unwrap().options.models, ["GPT-4"]);
}

#[test]
fn conversion_fields_parse_like_the_cli_flags() {
    let v = |pairs: &[(&'static str, &str)]| Reading {
        format: None,
        conversion: pairs.iter().map(|&(k, v)| (k, v.to_string())).collect(),
    };
    let c = v(&[
        ("arrival-rate", "20"),
        ("model", "GPT-4, ChatGPT ,"),
        ("drop-failed", "1"),
        ("sample-fraction", " 0.5 "),
        ("sample-seed", "3"),
        ("output-length", ""),
    ])
    .conversion()
    .unwrap();
    assert_eq!(c.options.arrivals, aiperf_core::formats::Arrivals::Rate { per_second: 20.0 });
    assert_eq!(c.options.models, ["GPT-4", "ChatGPT"]);
    assert!(c.options.drop_failed);
    assert_eq!((c.transforms.sample_fraction, c.transforms.sample_seed, c.options.output_length), (Some(0.5), 3, None));
    let e = v(&[("output-length", "12.5")]).conversion().unwrap_err();
    assert_eq!(e, "--output-length: \"12.5\" is not accepted: expected a whole number ≥ 0");
    let e = v(&[("file-rate", "0")]).conversion().unwrap_err();
    assert_eq!(e, "--file-rate: \"0\" is not accepted: expected a number > 0");
    assert_eq!(v(&[("file-spacing-ms", "5000")]).conversion().unwrap().file_offset_ms(2), 10_000);
    assert_eq!(v(&[("file-rate", "0.5")]).conversion().unwrap().file_offset_ms(3), 6_000);
}

#[test]
fn run_view_follows_the_drop_and_the_worker() {
    let s = Rc::new(AppState::default());
    // A record or a timing with no run shown changes nothing.
    unchanged(&s, Action::Worker(FromWorker::Record { run: 0, index: 0, text: String::new() }));
    unchanged(&s, Action::RunsShown { elapsed: 3.0 });
    let s = reduce(s, Action::RunsOpened { names: vec!["a.jsonl".into()], now: 5.0 });
    assert_eq!(s.runs, RunView::Reading { names: vec!["a.jsonl".into()], started: 5.0 });
    let s = reduce(s, Action::Worker(FromWorker::Runs(runs_view("<p>x</p>"))));
    let RunView::Shown(shown) = &s.runs else { panic!("{:?}", s.runs) };
    assert_eq!((shown.generation, shown.started, shown.view.html.as_str()), (1, Some(5.0), "<p>x</p>"));
    assert_eq!(s.runs.untimed(), Some((1, 5.0)));
    let s = reduce(s, Action::RunsShown { elapsed: 7.5 });
    assert_eq!(s.runs.untimed(), None);
    assert!(matches!(&s.runs, RunView::Shown(r) if r.shown_ms == Some(7.5) && r.started.is_none()));
    unchanged(&s, Action::RunsShown { elapsed: 9.0 });
    let s = reduce(s, Action::Worker(FromWorker::Record { run: 0, index: 1, text: "rec".into() }));
    assert!(matches!(&s.runs, RunView::Shown(r) if r.record.as_deref() == Some("rec") && r.generation == 1));
    // New labels or baseline: a new view, the record cleared, no drop to time.
    let s = reduce(s, Action::Worker(FromWorker::Runs(runs_view("<p>y</p>"))));
    assert!(
        matches!(&s.runs, RunView::Shown(r) if r.generation == 2 && r.record.is_none() && r.started.is_none() && r.shown_ms.is_none())
    );
    let s = reduce(s, Action::Worker(FromWorker::RunsFailed { message: "m".into() }));
    assert_eq!(s.runs, RunView::Failed("m".into()));
    let s = reduce(s, Action::RunsRefused("a.csv: not a run".into()));
    assert_eq!(s.runs, RunView::Failed("a.csv: not a run".into()));
    // The trace's state is untouched by all of it.
    assert_eq!(s.load, Load::Empty);
}

#[test]
fn downloads_leave_the_state_alone() {
    let s = loaded();
    unchanged(&s, Action::Worker(FromWorker::Converted { name: "t.mooncake.jsonl".into(), jsonl: "{}\n".into() }));
    let settings = s.form.synth().unwrap();
    unchanged(&s, Action::Worker(FromWorker::Export { settings, name: "t.synth.jsonl".into(), url: String::new() }));
}

#[test]
fn the_latest_what_if_cluster_is_simulated_and_late_answers_are_dropped() {
    use crate::what_if::{Field, schedule, simulate_view};
    assert_eq!(AppState::default().pending_sim(), None, "nothing to simulate without a trace");
    let s = loaded();
    let first = s.pending_sim().unwrap();
    let s = reduce(s, Action::SimRequested(first));
    assert!(s.sim.busy() && s.pending_sim().is_none());
    let s = reduce(s, Action::WhatIfEdited(Field::Replicas, "2".into()));
    let second = s.pending_sim().unwrap();
    assert_eq!(second.replicas, 2);
    let s = reduce(s, Action::SimRequested(second));
    let t =
        parse_str("{\"timestamp\":0,\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
    let sched = schedule(&t).unwrap();
    // The answer for the first cluster comes late: dropped, the page still waits.
    unchanged(&s, Action::Worker(FromWorker::Simulation(Box::new(simulate_view(&t, &sched, &first).unwrap()))));
    unchanged(&s, Action::Worker(FromWorker::SimFailed { cluster: first, message: "m".into() }));
    let s = reduce(s, Action::Worker(FromWorker::Simulation(Box::new(simulate_view(&t, &sched, &second).unwrap()))));
    assert_eq!(s.sim.shown().map(|v| v.replicas.len()), Some(2));
    // An invalid control: nothing to ask, the last result stays.
    let s = reduce(s, Action::WhatIfEdited(Field::Replicas, "0".into()));
    assert_eq!(s.pending_sim(), None);
    assert!(s.sim.shown().is_some());
    unchanged(&s, Action::WhatIfEdited(Field::Replicas, "0".into()));
    // A new file simulates again.
    let s = reduce(s, opened(512));
    assert_eq!((s.sim.clone(), s.asked_sim), (Computed::Idle, None));
}

#[test]
fn the_agentic_form_asks_on_request_and_shows_the_last_outcome() {
    use crate::agentic::{AgenticField, generate_dataset};
    let s = Rc::new(AppState::default());
    let s = reduce(s, Action::AgenticEdited(AgenticField::Sessions, "3".into()));
    unchanged(&s, Action::AgenticEdited(AgenticField::Sessions, "3".into()));
    let req = s.agentic_form.request().unwrap();
    assert_eq!((req.sessions, req.seed, req.config.clone()), (3, 42, None));
    let s = reduce(s, Action::AgenticRequested(req.clone()));
    assert!(s.agentic.busy());
    let (view, _) = generate_dataset(&req).unwrap();
    let s = reduce(s, Action::Worker(FromWorker::Agentic(Box::new(view))));
    assert_eq!(s.agentic.shown().map(|v| v.sessions >= 3), Some(true));
    let s = reduce(s, Action::AgenticConfigChosen(Some(("c.json".into(), "{}".into()))));
    assert_eq!(s.agentic_form.request().unwrap().config, Some(("c.json".into(), "{}".into())));
    let s = reduce(s, Action::Worker(FromWorker::AgenticFailed { message: "c.json: bad".into() }));
    assert_eq!(s.agentic.error(), Some("c.json: bad"));
    unchanged(&s, Action::Worker(FromWorker::File { name: "dataset.jsonl".into(), text: String::new() }));
}
