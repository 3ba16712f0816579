//! The agentic-code panel: AIPerf's coding-agent sessions generated in the worker, their
//! comparison table, their prefix layers, and the command's files to download.

use wasm_bindgen_futures::JsFuture;
use yew::prelude::*;

use super::charts::{layers_svg, markup};
use super::fields::{card, copyable, metric};
use crate::agentic::{AgenticField, AgenticForm, AgenticView, FILES};
use crate::format::{int, millis};
use crate::hooks::use_app;
use crate::protocol::ToWorker;
use crate::state::{Action, Computed};

#[derive(Properties, PartialEq)]
pub struct AgenticProps {
    pub form: AgenticForm,
    pub agentic: Computed<AgenticView>,
}

/// Form, generate button, results and downloads.
#[component]
pub fn AgenticPanel(p: &AgenticProps) -> Html {
    let ctx = use_app();
    let field = |f: AgenticField| {
        let id = format!("a-{}", f.flag());
        let err = p.form.error(f);
        let hint_id = format!("{id}-hint");
        let dispatch = ctx.dispatch.clone();
        let oninput = Callback::from(move |e: InputEvent| {
            if let Some(input) = e.target_dyn_into::<web_sys::HtmlInputElement>() {
                dispatch.dispatch(Action::AgenticEdited(f, input.value()));
            }
        });
        html! {
            <div class={classes!("field", err.is_some().then_some("invalid"))}>
                <label for={id.clone()}>{ f.label() }</label>
                <input {id} type="text" inputmode="numeric" autocomplete="off" spellcheck="false" value={p.form.get(f).to_string()}
                    {oninput} aria-invalid={err.is_some().to_string()} aria-describedby={hint_id.clone()} />
                <div id={hint_id} class={if err.is_some() { "hint error-text" } else { "hint muted" }} aria-live="polite">
                    { err.unwrap_or_else(|| f.hint().to_string()) }
                </div>
            </div>
        }
    };
    let on_config = {
        let dispatch = ctx.dispatch.clone();
        Callback::from(move |e: Event| {
            let Some(input) = e.target_dyn_into::<web_sys::HtmlInputElement>() else { return };
            let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
            let dispatch = dispatch.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let name = file.name();
                match JsFuture::from(file.text()).await.ok().and_then(|t| t.as_string()) {
                    Some(text) => dispatch.dispatch(Action::AgenticConfigChosen(Some((name, text)))),
                    None => crate::web::log(&format!("cannot read {name}")),
                }
            });
        })
    };
    let defaults = {
        let dispatch = ctx.dispatch.clone();
        Callback::from(move |_: MouseEvent| dispatch.dispatch(Action::AgenticConfigChosen(None)))
    };
    let request = p.form.request();
    let generate = {
        let (worker, dispatch, request) = (ctx.worker.clone(), ctx.dispatch.clone(), request.clone());
        Callback::from(move |_: MouseEvent| {
            if let Some(request) = request.clone() {
                worker.send(ToWorker::Agentic { request: request.clone() });
                dispatch.dispatch(Action::AgenticRequested(request));
            }
        })
    };
    let download = |name: &'static str| {
        let worker = ctx.worker.clone();
        let onclick = Callback::from(move |_: MouseEvent| worker.send(ToWorker::AgenticFile { name: name.into() }));
        html! { <button class="button" {onclick}>{ format!("Download {name}") }</button> }
    };
    html! {
        <section class="card" id="agentic" aria-labelledby="agentic-h">
            <div class="section-head">
                <h2 id="agentic-h">{ "Agentic-code sessions (AIPerf's generator)" }{ if p.agentic.busy() { html! { <span class="badge" id="agentic-busy">{ "generating…" }</span> } } else { html! {} } }</h2>
            </div>
            <p class="muted small">{ "Multi-turn coding-agent sessions as AIPerf's synthesize agentic-code draws them: growing contexts, layered shared prefixes, agentic and human delays. No trace needed; the same generator as aiperf-cli synthesize-agentic-code." }</p>
            <div class="field-grid">
                { for AgenticField::ALL.into_iter().map(field) }
                <div class="field">
                    <label for="a-config">{ "Configuration (AIPerf's JSON or a manifest.json)" }</label>
                    <input id="a-config" type="file" accept=".json,application/json" onchange={on_config} />
                    <div class="hint muted">
                        { match &p.form.config {
                            Some((name, _)) => html! { <>{ format!("{name} ") }<button class="button small" onclick={defaults}>{ "Use the defaults" }</button></> },
                            None => html! { { "none: AIPerf's defaults" } },
                        }}
                    </div>
                </div>
            </div>
            <div class="actions">
                <button class="button primary" id="agentic-generate" onclick={generate} disabled={request.is_none()}>{ "Generate sessions" }</button>
                { copyable("cmd agentic-cmd", p.form.command()) }
            </div>
            { match p.agentic.outcome() {
                Some(Err(m)) => html! { <p class="error-text" role="alert">{ m }</p> },
                Some(Ok(v)) => html! {
                    <div class="agentic-results" data-sessions={v.request.sessions.to_string()} data-seed={v.request.seed.to_string()}>
                        <div class="stat-grid">
                            { card("Sessions", metric("agentic.sessions", v.sessions as f64, int(v.sessions as f64)), Some("restart continuations included".into())) }
                            { card("Rows (turns)", metric("agentic.rows", v.rows as f64, int(v.rows as f64)), Some(format!("generated in {}", millis(v.compute_ms)))) }
                        </div>
                        <span hidden=true data-metric="agentic.compute_ms" data-value={v.compute_ms.to_string()}></span>
                        <div class="actions">{ for FILES.into_iter().map(download) }</div>
                        <div class="chart-grid">
                            { markup(layers_svg(&v.layers, v.block_size)) }
                        </div>
                        <h3>{ "Target against dataset (comparison.txt)" }</h3>
                        <pre class="comparison">{ &v.comparison }</pre>
                    </div>
                },
                None => html! {},
            }}
        </section>
    }
}
