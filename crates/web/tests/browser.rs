//! Browser tests (headless Chromium through `wasm-bindgen-test-runner`): the core compiled to
//! wasm gives the golden analysis, and the components render and react.
#![cfg(target_arch = "wasm32")]

use std::rc::Rc;

use aiperf_core::synthesis::Param;
use aiperf_core::trace::{ParseOptions, parse_str};
use aiperf_web::chart_data::Dist;
use aiperf_web::components::{DistChart, DistProps, FieldInput, RunsSection, StatsProps, StatsTable, dist_svg};
use aiperf_web::engine::{analysis_json, analysis_view};
use aiperf_web::hooks::{AppContext, WorkerLink};
use aiperf_web::ingest::{Ingest, Read};
use aiperf_web::params::Form;
use aiperf_web::protocol::{RunsView, ToWorker};
use aiperf_web::state::{AppState, RunView, ShownRuns};
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use yew::prelude::*;

wasm_bindgen_test_configure!(run_in_browser);

const TRACE: &str = include_str!("../../../tests/fixtures/traces/synthetic_trace.jsonl");
const GOLDEN: &str = include_str!("../../../tests/fixtures/golden/aiperf-0.13.0/analyze/synthetic_trace_bs512.json");

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * b.abs().max(1e-300)
}

#[wasm_bindgen_test]
fn core_in_wasm_gives_the_golden_analysis() {
    let trace = parse_str(TRACE, ParseOptions::default()).expect("fixture parses").trace;
    let view = analysis_view(&trace, 512);
    let ours: serde_json::Value = serde_json::from_str(&analysis_json(&view.analysis)).expect("json");
    let golden: serde_json::Value = serde_json::from_str(GOLDEN).expect("golden");
    let mut n = 0;
    for (k, g) in golden.as_object().expect("object") {
        match g {
            serde_json::Value::Object(stats) => {
                for (s, gv) in stats {
                    let (a, b) = (ours[k][s].as_f64().expect("num"), gv.as_f64().expect("num"));
                    assert!(close(a, b), "{k}.{s}: {a} vs {b}");
                    n += 1;
                }
            }
            g => {
                let (a, b) = (ours[k].as_f64().expect("num"), g.as_f64().expect("num"));
                assert!(close(a, b), "{k}: {a} vs {b}");
                n += 1;
            }
        }
    }
    assert_eq!(n, 11 + 5 * 7);
}

#[wasm_bindgen_test]
fn streaming_ingest_equals_whole_file_parse_in_wasm() {
    let mut ing = Ingest::new(ParseOptions::new("t").skip_invalid(true), None);
    for chunk in TRACE.as_bytes().chunks(65_536) {
        ing.push(chunk).expect("push");
    }
    let Read::Mooncake(got) = ing.finish().expect("readable").expect("valid") else {
        panic!("a Mooncake trace was read as another format");
    };
    assert_eq!(got.trace.len(), 3993);
    assert_eq!(got.skipped_total, 0);
}

fn root() -> web_sys::Element {
    let doc = web_sys::window().and_then(|w| w.document()).expect("document");
    let div = doc.create_element("div").expect("div");
    doc.body().expect("body").append_child(&div).expect("append");
    div
}

async fn settle() {
    gloo_timers::future::TimeoutFuture::new(20).await;
}

#[wasm_bindgen_test]
async fn stats_table_shows_grouped_numbers() {
    let trace = parse_str(TRACE, ParseOptions::default()).expect("fixture parses").trace;
    let a = aiperf_core::analysis::analyze(&trace, 512);
    let div = root();
    yew::Renderer::<StatsTable>::with_root_and_props(
        div.clone(),
        StatsProps { analysis: Rc::new(a), prefix: "".into() },
    )
    .render();
    settle().await;
    let text = div.text_content().unwrap_or_default();
    assert!(text.contains("15,325.48"), "{text}");
    assert!(text.contains("191,378.00"));
    let cell = div.query_selector("[data-metric='isl_stats.median']").expect("query").expect("cell");
    assert_eq!(cell.get_attribute("data-value").as_deref(), Some("11587"));
}

#[wasm_bindgen_test]
async fn histogram_is_the_kits_markup_with_one_bar_per_bin_and_the_cdf() {
    let dist = Rc::new(Dist::lengths(&(0..500).map(f64::from).collect::<Vec<_>>()));
    let bins = dist.counts.len();
    let div = root();
    let props =
        DistProps { title: "Input length".into(), x_label: "tokens".into(), dist: dist.clone(), percent: false };
    yew::Renderer::<DistChart>::with_root_and_props(div.clone(), props).render();
    settle().await;
    // The bars (each with its hover text) and the cumulative share, drawn by the core's kit.
    assert_eq!(div.query_selector_all("figure.chart rect > title").expect("bars").length() as usize, bins);
    assert!(div.query_selector("figure.chart path.share").expect("q").is_some());
    assert!(div.query_selector("svg[aria-label]").expect("q").is_some());
    // The page holds exactly the kit's markup.
    let kit = root();
    kit.set_inner_html(&dist_svg("Input length", "tokens", &dist, false));
    assert_eq!(div.inner_html(), kit.inner_html());
}

#[derive(Properties, PartialEq)]
struct Harness {}

/// A form holding its own state, like the app does.
#[component]
fn FieldHarness(_: &Harness) -> Html {
    let form = use_state(Form::default);
    let on_set = {
        let form = form.clone();
        Callback::from(move |(f, v): (Param, String)| {
            let mut next = (*form).clone();
            next.set(f, v);
            form.set(next);
        })
    };
    html! { <FieldInput field={Param::SpeedupRatio} form={(*form).clone()} {on_set} /> }
}

#[wasm_bindgen_test]
async fn field_shows_its_validation_message_while_typing() {
    let div = root();
    yew::Renderer::<FieldHarness>::with_root_and_props(div.clone(), Harness {}).render();
    settle().await;
    let input: web_sys::HtmlInputElement =
        div.query_selector("#f-speedup_ratio").expect("q").expect("input").dyn_into().expect("input element");
    let label = div.query_selector("label[for='f-speedup_ratio']").expect("q").expect("label");
    assert_eq!(label.text_content().as_deref(), Some("Speedup ratio"));
    input.set_value("0");
    let ev = web_sys::InputEvent::new("input").expect("event");
    input.dispatch_event(&ev).expect("dispatch");
    settle().await;
    let text = div.text_content().unwrap_or_default();
    assert!(text.contains("must be a number from 0.001 to 1000000"), "{text}");
    assert_eq!(input.get_attribute("aria-invalid").as_deref(), Some("true"));
    input.set_value("2");
    input.dispatch_event(&web_sys::InputEvent::new("input").expect("event")).expect("dispatch");
    settle().await;
    assert_eq!(input.get_attribute("aria-invalid").as_deref(), Some("false"));
}

thread_local! {
    /// What the panels under test sent to the worker.
    static SENT: RefCell<Vec<ToWorker>> = const { RefCell::new(Vec::new()) };
}

/// The run view inside the page's context, with a stand-in worker that records what it is sent.
#[component]
fn RunsHarness(_: &Harness) -> Html {
    let state = use_reducer(AppState::default);
    let worker = use_memo((), |_| WorkerLink::new(Callback::from(|m| SENT.with(|s| s.borrow_mut().push(m)))));
    let view = RunsView {
        labels: vec!["a".into(), "b".into()],
        baseline: 0,
        records: vec![3, 4],
        html: r#"<svg><circle class="pt" data-run="1" data-i="2"></circle></svg>"#.into(),
        compute_ms: 1.0,
        stages: Default::default(),
    };
    let shown =
        ShownRuns { view: Rc::new(view), generation: 1, record: Some("rec".into()), shown_ms: None, started: None };
    html! {
        <ContextProvider<AppContext> context={AppContext { dispatch: state.dispatcher(), worker: (*worker).clone() }}>
            <RunsSection runs={RunView::Shown(shown)} />
        </ContextProvider<AppContext>>
    }
}

#[wasm_bindgen_test]
async fn the_run_view_asks_the_worker_through_the_context() {
    let div = root();
    yew::Renderer::<RunsHarness>::with_root_and_props(div.clone(), Harness {}).render();
    settle().await;
    assert_eq!(div.query_selector("#record").expect("q").expect("record").text_content().as_deref(), Some("rec"));
    // A click bubbles from the point (inside the worker's HTML) to the view's handler.
    let point = div.query_selector("circle.pt").expect("q").expect("point");
    let init = web_sys::EventInit::new();
    init.set_bubbles(true);
    point.dispatch_event(&web_sys::Event::new_with_event_init_dict("click", &init).expect("event")).expect("dispatch");
    let label: web_sys::HtmlInputElement =
        div.query_selector("input[aria-label='label of run 2']").expect("q").expect("label").dyn_into().expect("input");
    label.set_value("B");
    label.dispatch_event(&web_sys::Event::new("change").expect("event")).expect("dispatch");
    settle().await;
    let sent = SENT.with(|s| s.borrow().clone());
    assert_eq!(
        sent,
        vec![
            ToWorker::Describe { run: 1, index: 2 },
            ToWorker::ShowRuns { labels: vec!["a".into(), "B".into()], baseline: 0 },
        ]
    );
}

/// A run's files cross to the worker as the browser's blobs beside the bincode bytes: the message
/// decodes to the same blobs, in their places, readable as they were.
#[wasm_bindgen_test]
async fn files_cross_the_worker_codec_as_the_blobs_themselves() {
    use aiperf_web::codec::{FileRef, WithFiles};
    use aiperf_web::protocol::RunFiles;
    use yew_agent::Codec;

    let blob = |text: &str| {
        let parts = js_sys::Array::of1(&js_sys::JsString::from(text));
        web_sys::Blob::new_with_str_sequence(&parts).expect("a blob")
    };
    let (records, summary) = (blob("{\"records\":1}\n"), blob("{\"summary\":2}"));
    let msg = ToWorker::LoadRuns {
        runs: vec![RunFiles {
            label: "a".into(),
            records: FileRef::new(records.clone()),
            records_name: "profile_export.jsonl".into(),
            config: Some((FileRef::new(summary.clone()), "profile_export_aiperf.json".into())),
            server: None,
        }],
        curves: Vec::new(),
    };
    let crossed = WithFiles::encode(&msg);
    let parts: js_sys::Array = crossed.clone().dyn_into().expect("bytes and files");
    assert_eq!(parts.length(), 3, "the bytes, then the two files");
    let back: ToWorker = WithFiles::decode(crossed);
    assert_eq!(back, msg, "the same blobs in the same places");
    let ToWorker::LoadRuns { runs, .. } = back else { panic!("another message") };
    let text = |f: &FileRef| wasm_bindgen_futures::JsFuture::from(f.blob().expect("a blob").text());
    assert_eq!(text(&runs[0].records).await.expect("text").as_string().as_deref(), Some("{\"records\":1}\n"));
    let (summary, _) = runs[0].config.as_ref().expect("summary");
    assert_eq!(text(summary).await.expect("text").as_string().as_deref(), Some("{\"summary\":2}"));
    // A message without files crosses as gloo-worker's own bincode bytes.
    let plain = WithFiles::encode(&ToWorker::ExportConverted);
    assert!(plain.is_instance_of::<js_sys::Uint8Array>());
    assert_eq!(WithFiles::decode::<ToWorker>(plain), ToWorker::ExportConverted);
}
