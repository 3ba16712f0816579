//! The page's components: [`App`] wires the worker, the reducer, the address bar and the panels.

mod charts;
mod panels;
mod runs;

pub use charts::{ArrivalsChart, CacheChart, CdfCompare, DistChart, DistProps, GroupsChart};
pub use panels::{AnalysisPanel, FieldInput, FieldProps, LoadStatus, StatsProps, StatsTable, SynthPanel};
pub use runs::{RunsPanel, RunsProps};

use std::rc::Rc;

use wasm_bindgen::JsCast;
use yew::prelude::*;
use yew_agent::worker::{WorkerProvider, use_worker_bridge};

use aiperf_core::synthesis::{Mode, Param, SynthesisSettings};

use crate::params::Form;
use crate::protocol::{FromWorker, RunFiles, ToWorker};
use crate::runs::{RunsUi, is_run_file, labels, looks_like_records, pick_files};
use crate::state::{Action, AppState};
use crate::web;
use crate::worker::TraceWorker;
use aiperf_core::formats::settings::{Accepts, ConversionSettings, FLAGS as CONVERSION_FLAGS};

/// Where the bundled sample trace is served.
pub const SAMPLE_URL: &str = "sample/conversation_trace.jsonl";
const SAMPLE_NAME: &str = "conversation_trace.jsonl";
/// Wait this long after the last keystroke before recomputing.
const DEBOUNCE_MS: u32 = 250;

/// The whole app.
#[component]
pub fn App() -> Html {
    html! {
        <WorkerProvider<TraceWorker> path="worker.js" module=true>
            <Main />
        </WorkerProvider<TraceWorker>>
    }
}

/// What was last asked of the worker, so each request goes out once.
#[derive(Default)]
struct Sent {
    block_size: Option<u32>,
    synth: Option<SynthesisSettings>,
    blob_url: Option<String>,
    /// Blob URLs of the runs being read.
    run_urls: Vec<String>,
    /// Blob URLs of the files merged after the first (several WEKA files).
    more_urls: Vec<String>,
}

#[component]
fn Main() -> Html {
    let state = use_reducer(|| {
        let (form, warnings) = Form::from_query(&web::location_search());
        AppState::new(form, warnings)
    });
    let sent = use_mut_ref(Sent::default);
    let dragging = use_state(|| false);
    // The trace format chosen for the next file (`None`: detected from its content).
    let trace_format = use_mut_ref(|| None::<String>);
    // The conversion settings (`convert-trace`'s flags) as typed, by flag name.
    let conversion = use_mut_ref(std::collections::BTreeMap::<&'static str, String>::new);
    // Files to merge after the next one opened (several WEKA files dropped together).
    let merge_next = use_mut_ref(Vec::<web_sys::File>::new);
    // The trace open now (with the files merged into it, and whether it is the sample), so that
    // changed conversion settings can be applied to it.
    let open_now = use_mut_ref(|| None::<OpenTrace>);
    // When the worker last spoke (or was last asked to read a file), for the silence notice.
    let last_heard = use_mut_ref(web::now_ms);
    // The run view (finished runs dropped on the page); the latest state, read by the bridge.
    let runs_ui = use_state(RunsUi::default);
    let runs_now = use_mut_ref(RunsUi::default);

    let bridge = {
        let dispatcher = state.dispatcher();
        let sent = sent.clone();
        let last_heard = last_heard.clone();
        let (runs_ui, runs_now) = (runs_ui.clone(), runs_now.clone());
        use_worker_bridge::<TraceWorker, _>(move |out: FromWorker| {
            *last_heard.borrow_mut() = web::now_ms();
            let next = runs_now.borrow().on_worker(&out);
            if let Some(next) = next {
                if matches!(out, FromWorker::Runs(_) | FromWorker::RunsFailed { .. }) {
                    for url in sent.borrow_mut().run_urls.drain(..) {
                        web::revoke(&url);
                    }
                }
                *runs_now.borrow_mut() = next.clone();
                runs_ui.set(next);
                return;
            }
            match &out {
                FromWorker::Loaded(_) | FromWorker::LoadFailed { .. } => {
                    if let Some(url) = sent.borrow_mut().blob_url.take() {
                        web::revoke(&url);
                    }
                    for url in sent.borrow_mut().more_urls.drain(..) {
                        web::revoke(&url);
                    }
                }
                FromWorker::Export { name, jsonl, .. } | FromWorker::Converted { name, jsonl } => {
                    if let Err(e) = web::download(name, jsonl, "application/x-ndjson") {
                        web::log(&format!("download failed: {e:?}"));
                    }
                }
                _ => {}
            }
            dispatcher.dispatch(Action::Worker(out));
        })
    };

    // Hands a file (dropped, picked or fetched) to the worker.
    let open_blob = {
        let last_heard = last_heard.clone();
        let bridge = bridge.clone();
        let sent = sent.clone();
        let state = state.clone();
        let trace_format = trace_format.clone();
        let conversion = conversion.clone();
        let merge_next = merge_next.clone();
        let open_now = open_now.clone();
        Callback::from(move |(blob, name, sample): (web_sys::Blob, String, bool)| {
            let merge: Vec<web_sys::File> = std::mem::take(&mut *merge_next.borrow_mut());
            *open_now.borrow_mut() =
                Some(OpenTrace { blob: blob.clone(), name: name.clone(), merge: merge.clone(), sample });
            let conversion = match parse_conversion(&conversion.borrow()) {
                Ok(c) => c,
                Err(message) => {
                    state.dispatch(Action::OpenFailed { name, message });
                    return;
                }
            };
            let size = blob.size() as u64;
            let Ok(url) = web::object_url(&blob) else {
                state.dispatch(Action::OpenFailed { name, message: "the browser refused to open the file".into() });
                return;
            };
            let mut s = sent.borrow_mut();
            if let Some(old) = s.blob_url.replace(url.clone()) {
                web::revoke(&old);
            }
            let block_size = state.form.block_size().unwrap_or(512);
            s.block_size = Some(block_size);
            *last_heard.borrow_mut() = web::now_ms();
            s.synth = None;
            let format = trace_format.borrow().clone();
            for old in s.more_urls.drain(..) {
                web::revoke(&old);
            }
            let mut more = Vec::new();
            for f in &merge {
                let Ok(u) = web::object_url(f) else {
                    drop(s);
                    state.dispatch(Action::OpenFailed { name, message: "the browser refused to open the file".into() });
                    return;
                };
                s.more_urls.push(u.clone());
                more.push((u, f.name()));
            }
            bridge.send(ToWorker::Load { url, name, size, block_size, format, conversion, more });
        })
    };
    let open_file = {
        let state = state.clone();
        let open_blob = open_blob.clone();
        Callback::from(move |file: web_sys::File| {
            state.dispatch(Action::FileOpened {
                name: file.name(),
                size: file.size() as u64,
                now: web::now_ms(),
                sample: false,
            });
            open_blob.emit((file.clone().into(), file.name(), false));
        })
    };
    // Reads the open trace again with the conversion settings as they are now.
    let reapply = {
        let (state, open_blob, open_now, merge_next) =
            (state.clone(), open_blob.clone(), open_now.clone(), merge_next.clone());
        Callback::from(move |_: MouseEvent| {
            let Some(open) = open_now.borrow().clone() else { return };
            let size = open.blob.size() as u64;
            state.dispatch(Action::FileOpened {
                name: open.name.clone(),
                size,
                now: web::now_ms(),
                sample: open.sample,
            });
            *merge_next.borrow_mut() = open.merge;
            open_blob.emit((open.blob, open.name, open.sample));
        })
    };
    // Finished runs: pair the files, hand them to the worker.
    let open_runs = {
        let (bridge, sent, runs_ui, runs_now) = (bridge.clone(), sent.clone(), runs_ui.clone(), runs_now.clone());
        Callback::from(move |files: Vec<web_sys::File>| {
            let names: Vec<String> = files.iter().map(web_sys::File::name).collect();
            let set = |ui: RunsUi| {
                *runs_now.borrow_mut() = ui.clone();
                runs_ui.set(ui);
            };
            let picked = match pick_files(&names) {
                Ok(p) => p,
                Err(message) => return set(RunsUi::Failed(message)),
            };
            let run_labels = labels(&picked.runs.iter().map(|r| names[r.records].as_str()).collect::<Vec<_>>());
            let mut s = sent.borrow_mut();
            for url in s.run_urls.drain(..) {
                web::revoke(&url);
            }
            let mut url_of = |i: usize| -> Option<String> {
                let url = web::object_url(&files[i]).ok()?;
                s.run_urls.push(url.clone());
                Some(url)
            };
            let refused = || RunsUi::Failed("the browser refused to open the file".into());
            let mut runs = Vec::new();
            for (pick, label) in picked.runs.iter().zip(run_labels) {
                let Some(records_url) = url_of(pick.records) else { return set(refused()) };
                let mut side = |i: Option<usize>| -> Result<Option<(String, String)>, ()> {
                    match i {
                        None => Ok(None),
                        Some(i) => url_of(i).map(|u| Some((u, names[i].clone()))).ok_or(()),
                    }
                };
                let (Ok(config), Ok(server)) = (side(pick.config), side(pick.server)) else { return set(refused()) };
                runs.push(RunFiles { label, records_url, records_name: names[pick.records].clone(), config, server });
            }
            let mut curves = Vec::new();
            for &c in &picked.curves {
                let Some(url) = url_of(c) else { return set(refused()) };
                curves.push((url, names[c].clone()));
            }
            set(RunsUi::Reading { names, started: web::now_ms() });
            bridge.send(ToWorker::LoadRuns { runs, curves });
        })
    };
    // Dropped or picked files: several, or a summary file, or records → runs; else a trace.
    let open_files = {
        let (open_file, open_runs) = (open_file.clone(), open_runs.clone());
        let merge_next = merge_next.clone();
        Callback::from(move |files: Vec<web_sys::File>| {
            // Several `.json` files that are not a run's: WEKA traces merged into one, in name order.
            let trace_json = |f: &web_sys::File| {
                let n = f.name();
                n.ends_with(".json") && !is_run_file(&n)
            };
            if files.len() > 1 && files.iter().all(trace_json) {
                let mut files = files;
                files.sort_by_key(web_sys::File::name);
                *merge_next.borrow_mut() = files.split_off(1);
                return open_file.emit(files.remove(0));
            }
            let [file] = files.as_slice() else {
                if !files.is_empty() {
                    open_runs.emit(files);
                }
                return;
            };
            // A run's summary, server metrics or a sweep's summary goes to the run view; another
            // `.json` (WEKA) is a trace.
            if is_run_file(&file.name()) {
                return open_runs.emit(files);
            }
            let (file, open_file, open_runs) = (file.clone(), open_file.clone(), open_runs.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let head = match file.slice_with_i32_and_i32(0, 64) {
                    Ok(b) => wasm_bindgen_futures::JsFuture::from(b.text()).await.ok().and_then(|t| t.as_string()),
                    Err(_) => None,
                };
                if head.as_deref().is_some_and(looks_like_records) {
                    open_runs.emit(vec![file]);
                } else {
                    open_file.emit(file);
                }
            });
        })
    };
    let on_runs_show = {
        let bridge = bridge.clone();
        Callback::from(move |(labels, baseline): (Vec<String>, usize)| {
            bridge.send(ToWorker::ShowRuns { labels, baseline })
        })
    };
    let on_point = {
        let bridge = bridge.clone();
        Callback::from(move |(run, index): (usize, u32)| bridge.send(ToWorker::Describe { run, index }))
    };
    // Drop → run view on screen, measured after the render that set its HTML.
    {
        let (runs_ui, runs_now) = (runs_ui.clone(), runs_now.clone());
        let key = match &*runs_ui {
            RunsUi::Shown { generation, started: Some(_), shown_ms: None, .. } => Some(*generation),
            _ => None,
        };
        use_effect_with(key, move |key| {
            if key.is_some()
                && let RunsUi::Shown { view, generation, record, started: Some(t0), .. } = &*runs_ui
            {
                let elapsed = web::now_ms() - t0;
                web::log(&format!("drop to runs shown: {elapsed:.1} ms"));
                let next = RunsUi::Shown {
                    view: view.clone(),
                    generation: *generation,
                    record: record.clone(),
                    shown_ms: Some(elapsed),
                    started: None,
                };
                *runs_now.borrow_mut() = next.clone();
                runs_ui.set(next);
            }
        });
    }
    let load_sample = {
        let state = state.clone();
        let open_blob = open_blob.clone();
        Callback::from(move |_: ()| {
            state.dispatch(Action::FileOpened { name: SAMPLE_NAME.into(), size: 0, now: web::now_ms(), sample: true });
            let (state, open_blob) = (state.clone(), open_blob.clone());
            wasm_bindgen_futures::spawn_local(async move {
                match fetch_sample().await {
                    Ok(blob) => open_blob.emit((blob, SAMPLE_NAME.into(), true)),
                    Err(message) => state.dispatch(Action::OpenFailed { name: SAMPLE_NAME.into(), message }),
                }
            });
        })
    };

    // A shared link with `sample=1` opens the sample right away.
    {
        let load_sample = load_sample.clone();
        let sample = state.form.sample;
        use_effect_with((), move |_| {
            if sample {
                load_sample.emit(());
            }
        });
    }

    // A worker that died (e.g. out of memory) never answers again: say so after a long silence.
    {
        let dispatcher = state.dispatcher();
        let last_heard = last_heard.clone();
        use_effect_with((), move |_| {
            let tick = gloo_timers::callback::Interval::new(5_000, move || {
                let silent_ms = web::now_ms() - *last_heard.borrow();
                dispatcher.dispatch(Action::Ticked { silent_ms });
            });
            move || drop(tick)
        });
    }

    // The address bar mirrors the parameters.
    use_effect_with(state.form.clone(), |form| web::replace_query(&form.to_query()));

    // Recompute (debounced) when the block size or the synthesis settings change.
    {
        let bridge = bridge.clone();
        let sent = sent.clone();
        let dispatcher = state.dispatcher();
        let bs = state.form.block_size();
        let synth = state.synth_request();
        let loaded = state.file().is_some();
        use_effect_with((state.generation, loaded), move |_| {
            let timer = loaded.then(|| {
                gloo_timers::callback::Timeout::new(DEBOUNCE_MS, move || {
                    let mut s = sent.borrow_mut();
                    if let Some(bs) = bs.filter(|&b| s.block_size != Some(b)) {
                        s.block_size = Some(bs);
                        dispatcher.dispatch(Action::AnalysisRequested);
                        bridge.send(ToWorker::Analyze { block_size: bs });
                    }
                    if let Some(settings) = synth.filter(|v| s.synth.as_ref() != Some(v)) {
                        s.synth = Some(settings.clone());
                        dispatcher.dispatch(Action::SynthesisRequested);
                        bridge.send(ToWorker::Synthesize { settings });
                    }
                })
            });
            move || drop(timer)
        });
    }

    // Drop → analysis on screen, measured after the render that shows it.
    {
        let dispatcher = state.dispatcher();
        let shown = state.analysis.shown().map(Rc::as_ptr);
        let started = state.started_at;
        use_effect_with(shown, move |shown| {
            if let (Some(_), Some(t0)) = (shown, started) {
                let elapsed = web::now_ms() - t0;
                web::log(&format!("drop to analysis shown: {elapsed:.1} ms"));
                dispatcher.dispatch(Action::AnalysisShown { elapsed });
            }
        });
    }

    let on_set = {
        let state = state.clone();
        Callback::from(move |(f, v): (Param, String)| state.dispatch(Action::Edited(f, v)))
    };
    let on_mode = {
        let state = state.clone();
        Callback::from(move |m: Mode| state.dispatch(Action::ModeChosen(m)))
    };
    let on_export = {
        let bridge = bridge.clone();
        Callback::from(move |settings: SynthesisSettings| bridge.send(ToWorker::Export { settings }))
    };
    let on_convert = {
        let bridge = bridge.clone();
        Callback::from(move |()| bridge.send(ToWorker::ExportConverted))
    };

    let ondragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if !*dragging {
                dragging.set(true);
            }
        })
    };
    let ondragleave = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            // Only when leaving the window, not when moving between children.
            if e.related_target().is_none() {
                dragging.set(false);
            }
        })
    };
    let ondrop = {
        let dragging = dragging.clone();
        let open_files = open_files.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            if let Some(list) = e.data_transfer().and_then(|dt| dt.files()) {
                open_files.emit((0..list.length()).filter_map(|i| list.get(i)).collect());
            }
        })
    };
    let onpick = {
        let open_files = open_files.clone();
        Callback::from(move |e: Event| {
            let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
            if let Some(list) = input.files() {
                open_files.emit((0..list.length()).filter_map(|i| list.get(i)).collect());
            }
            // Picking the same file again must fire `change` again.
            input.set_value("");
        })
    };
    let sample_click = {
        let load_sample = load_sample.clone();
        Callback::from(move |_: MouseEvent| load_sample.emit(()))
    };

    let on_format = {
        let trace_format = trace_format.clone();
        Callback::from(move |e: Event| {
            let Some(sel) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok()) else { return };
            let v = sel.value();
            *trace_format.borrow_mut() = (v != "auto").then_some(v);
        })
    };
    let on_conversion = {
        let conversion = conversion.clone();
        Callback::from(move |e: Event| {
            let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
            let Some(flag) = CONVERSION_FLAGS.iter().find(|f| input.id() == format!("cv-{}", f.name)) else { return };
            let v = if input.type_() == "checkbox" {
                if input.checked() { "1".to_string() } else { String::new() }
            } else {
                input.value()
            };
            conversion.borrow_mut().insert(flag.name, v);
        })
    };
    let st: &AppState = &state;
    html! {
        <div class={classes!("page", dragging.then_some("dragging"))} {ondragover} {ondragleave} {ondrop}>
            <header class="top">
                <div class="brand">
                    <h1>{ "aiperf trace explorer" }</h1>
                    <p class="privacy">{ "Your trace never leaves this browser: it is read and analysed locally, in WebAssembly. Nothing is uploaded." }</p>
                </div>
                <div class="open">
                    <input id="file-input" class="visually-hidden" type="file" multiple={true} accept=".jsonl,.gz,.json,.csv,application/gzip,application/x-ndjson,text/csv" onchange={onpick} />
                    <label class="button primary" for="file-input">{ "Open trace…" }</label>
                    <button class="button" onclick={sample_click}>{ "Load sample" }</button>
                    <select id="trace-format" aria-label="trace format of the next file" title="trace format of the next file (auto: detected from its content)" onchange={on_format}>
                        <option value="auto" selected=true>{ "format: auto" }</option>
                        { for aiperf_core::formats::Format::ALL.iter().map(|f| html! { <option value={f.name()}>{ f.name() }</option> }) }
                    </select>
                    <details class="conversion" id="conversion">
                        <summary>{ "conversion (as convert-trace)" }</summary>
                        { for CONVERSION_FLAGS.iter().filter(|f| f.in_browser).map(|f| {
                            let id = format!("cv-{}", f.name);
                            let kind = if f.accepts == Accepts::Switch { "checkbox" } else { "text" };
                            let help = format!("{} Accepts {}.", f.help, f.accepts.describe());
                            html! { <label class="inline-field" title={help}>{ format!("--{}", f.name) }<input id={id} type={kind} onchange={on_conversion.clone()} /></label> }
                        }) }
                        <button id="cv-apply" class="button" onclick={reapply}>{ "Apply to the open trace" }</button>
                        <p class="muted">{ "applies to the next file opened, or to the open one with the button (other formats than Mooncake; the transforms to any)" }</p>
                    </details>
                </div>
            </header>
            <div class="drop-overlay" aria-hidden="true"><div>{ "Drop the trace to open it" }</div></div>
            <main>
                { for st.url_warnings.iter().map(|w| html! { <p class="warning" role="status">{ format!("Ignored an unknown link parameter: {w}") }</p> }) }
                {
                    if let Some(secs) = st.worker_silent_s {
                        html! { <p class="warning" role="status">{ format!("No answer from the background worker for {secs} s. Very large traces take a while; if this does not change, the browser may have run out of memory: reload the page or try a smaller file.") }</p> }
                    } else {
                        html! {}
                    }
                }
                {
                    match &*runs_ui {
                        RunsUi::None => html! {},
                        RunsUi::Reading { names, .. } => html! { <p class="card runs-reading" role="status">{ format!("Reading run(s): {}…", names.join(", ")) }</p> },
                        RunsUi::Failed(message) => html! { <p class="card error runs-failed" role="alert">{ format!("Cannot show the run: {message}") }</p> },
                        RunsUi::Shown { view, generation, record, shown_ms, .. } => html! {
                            <RunsPanel view={view.clone()} generation={*generation} record={record.clone()} shown_ms={*shown_ms} on_show={on_runs_show.clone()} on_point={on_point.clone()} />
                        },
                    }
                }
                <LoadStatus state={state.clone()} />
                {
                    if let (Some(file), Some(shown)) = (st.file().cloned(), st.analysis.shown().cloned()) {
                        html! {
                            <>
                                <AnalysisPanel file={file.clone()} shown={shown.clone()} form={st.form.clone()} shown_ms={st.shown_ms} analyzing={st.analysis.busy()} error={st.analysis.error().map(str::to_string)} on_set={on_set.clone()} on_convert={on_convert.clone()} />
                                <SynthPanel form={st.form.clone()} synth={st.synth.clone()} file={Some(file)} original={Some(shown)} on_set={on_set.clone()} {on_mode} {on_export} />
                            </>
                        }
                    } else {
                        html! {}
                    }
                }
            </main>
            <footer>
                { "aiperf-rs · the same core as the aiperf-cli command line, compiled to WebAssembly · works offline once loaded" }
            </footer>
        </div>
    }
}

async fn fetch_sample() -> Result<web_sys::Blob, String> {
    let resp = gloo_net::http::Request::get(SAMPLE_URL)
        .send()
        .await
        .map_err(|e| format!("cannot fetch the sample trace: {e}"))?;
    if !resp.ok() {
        return Err(format!("cannot fetch the sample trace: HTTP {}", resp.status()));
    }
    let bytes = resp.binary().await.map_err(|e| format!("cannot read the sample trace: {e}"))?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(|_| "cannot hold the sample trace".to_string())
}

/// A trace opened on the page, kept to read it again.
#[derive(Clone)]
struct OpenTrace {
    blob: web_sys::Blob,
    name: String,
    merge: Vec<web_sys::File>,
    sample: bool,
}

/// The typed conversion settings (the core's parser and range checks, as `convert-trace`'s), or
/// what is wrong with the first field refused.
fn parse_conversion(v: &std::collections::BTreeMap<&'static str, String>) -> Result<ConversionSettings, String> {
    ConversionSettings::from_pairs(v.iter().map(|(k, v)| (*k, v.as_str()))).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_fields_parse_like_the_cli_flags() {
        let v = |pairs: &[(&'static str, &str)]| pairs.iter().map(|&(k, v)| (k, v.to_string())).collect();
        let c = parse_conversion(&v(&[
            ("arrival-rate", "20"),
            ("model", "GPT-4, ChatGPT ,"),
            ("drop-failed", "1"),
            ("sample-fraction", " 0.5 "),
            ("sample-seed", "3"),
            ("output-length", ""),
        ]))
        .unwrap();
        assert_eq!(c.options.arrivals, aiperf_core::formats::Arrivals::Rate { per_second: 20.0 });
        assert_eq!(c.options.models, ["GPT-4", "ChatGPT"]);
        assert!(c.options.drop_failed);
        assert_eq!(
            (c.transforms.sample_fraction, c.transforms.sample_seed, c.options.output_length),
            (Some(0.5), 3, None)
        );
        let e = parse_conversion(&v(&[("output-length", "12.5")])).unwrap_err();
        assert_eq!(e, "--output-length: \"12.5\" is not accepted: expected a whole number ≥ 0");
        let e = parse_conversion(&v(&[("file-rate", "0")])).unwrap_err();
        assert_eq!(e, "--file-rate: \"0\" is not accepted: expected a number > 0");
        assert_eq!(parse_conversion(&v(&[("file-spacing-ms", "5000")])).unwrap().file_offset_ms(2), 10_000);
        assert_eq!(parse_conversion(&v(&[("file-rate", "0.5")])).unwrap().file_offset_ms(3), 6_000);
    }
}
