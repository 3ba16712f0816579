//! The run view: one or several finished runs (summary, charts, comparison) as drawn by the core's
//! `view::html` in the worker, with editable labels, the baseline, and the record of a clicked point.

use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::format::{int, millis};
use crate::hooks::use_app;
use crate::protocol::ToWorker;
use crate::state::{RunView, ShownRuns};

#[derive(Properties, PartialEq)]
pub struct RunsSectionProps {
    pub runs: RunView,
}

/// The run view as it stands: nothing, reading, why it failed, or the runs.
#[component]
pub fn RunsSection(p: &RunsSectionProps) -> Html {
    match &p.runs {
        RunView::None => html! {},
        RunView::Reading { names, .. } => {
            html! { <p class="card runs-reading" role="status">{ format!("Reading run(s): {}…", names.join(", ")) }</p> }
        }
        RunView::Failed(message) => {
            html! { <p class="card error runs-failed" role="alert">{ format!("Cannot show the run: {message}") }</p> }
        }
        RunView::Shown(shown) => html! { <RunsPanel shown={shown.clone()} /> },
    }
}

#[derive(Properties, PartialEq)]
struct RunsProps {
    shown: ShownRuns,
}

/// The runs on screen.
#[component]
fn RunsPanel(p: &RunsProps) -> Html {
    let worker = use_app().worker;
    let ShownRuns { view: v, generation, record, shown_ms, .. } = &p.shown;
    let holder = use_node_ref();
    {
        let holder = holder.clone();
        let view = v.clone();
        use_effect_with(*generation, move |_| {
            if let Some(el) = holder.cast::<web_sys::Element>() {
                el.set_inner_html(&view.html);
            }
        });
    }
    let onclick = {
        let worker = worker.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(target) = e.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else { return };
            let Ok(Some(point)) = target.closest("[data-i]") else { return };
            let run = point.get_attribute("data-run").and_then(|v| v.parse().ok());
            let index = point.get_attribute("data-i").and_then(|v| v.parse().ok());
            if let (Some(run), Some(index)) = (run, index) {
                worker.send(ToWorker::Describe { run, index });
            }
        })
    };
    let label_inputs = v.labels.iter().enumerate().map(|(i, label)| {
        let onchange = {
            let (worker, labels, baseline) = (worker.clone(), v.labels.clone(), v.baseline);
            Callback::from(move |e: Event| {
                let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else {
                    return;
                };
                let mut labels = labels.clone();
                labels[i] = input.value();
                worker.send(ToWorker::ShowRuns { labels, baseline });
            })
        };
        html! {
            <label class="run-label-edit">
                <span class={format!("swatch c{}", i % 8)}>{ "■" }</span>
                <input type="text" value={label.clone()} aria-label={format!("label of run {}", i + 1)} {onchange} />
                <span class="muted small">{ format!("{} requests", int(v.records[i] as f64)) }</span>
            </label>
        }
    });
    let baseline = (v.labels.len() > 1).then(|| {
        let onchange = {
            let (worker, labels) = (worker.clone(), v.labels.clone());
            Callback::from(move |e: Event| {
                let Some(sel) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok()) else { return };
                worker.send(ToWorker::ShowRuns { labels: labels.clone(), baseline: sel.value().parse().unwrap_or(0) });
            })
        };
        html! {
            <label>{ "Baseline " }
                <select id="baseline" {onchange}>
                    { for v.labels.iter().enumerate().map(|(i, l)| html! { <option value={i.to_string()} selected={i == v.baseline}>{ l.clone() }</option> }) }
                </select>
            </label>
        }
    });
    let timing = shown_ms.map(|ms| format!("{ms:.1}")).unwrap_or_default();
    html! {
        <section class="card runs-panel" aria-labelledby="runs-h">
            <div class="section-head">
                <h2 id="runs-h">{ if v.labels.len() > 1 { "Runs compared" } else { "Run results" } }</h2>
                <p class="muted small runs-timing" data-shown-ms={timing} data-compute-ms={format!("{:.1}", v.compute_ms)}
                    data-read-ms={format!("{:.1}", v.stages.read_ms)} data-parse-ms={format!("{:.1}", v.stages.parse_ms)}
                    data-summary-ms={format!("{:.1}", v.stages.summary_ms)} data-html-ms={format!("{:.1}", v.stages.html_ms)}
                    data-chunks={v.stages.chunks.to_string()} data-curves-apart={v.stages.curves_apart.to_string()}
                    data-records-apart={v.stages.records_apart.to_string()}>
                    { format!("computed in the worker in {}", millis(v.compute_ms)) }
                    { shown_ms.map(|ms| format!(" · on screen {} after the drop", millis(ms))).unwrap_or_default() }
                </p>
            </div>
            <div class="run-labels">{ for label_inputs }{ for baseline }</div>
            <div class="runs" ref={holder} {onclick}></div>
            <pre class="record" id="record">{ record.clone().unwrap_or_else(|| "Click a point to see that request's record.".into()) }</pre>
        </section>
    }
}
