//! The "What if" panel: the opened trace simulated on a cluster of replicas (the core's simulator,
//! run in the worker); every change of a control simulates again.

use std::rc::Rc;

use aiperf_core::simulate::engine::EngineMode;
use yew::prelude::*;

use super::charts::{balance_svg, dist_svg, kv_svg, markup};
use super::fields::{card, copyable, metric};
use crate::format::{int, millis, num, pct};
use crate::hooks::use_app;
use crate::protocol::FileSummary;
use crate::state::{Action, Computed};
use crate::what_if::{Field, POLICIES, ROUTERS, SimView, WhatIfForm};

/// Replicas listed in the table and drawn in the balance chart at most.
const SHOWN_REPLICAS: usize = 32;

#[derive(Properties, PartialEq)]
pub struct WhatIfProps {
    pub file: Rc<FileSummary>,
    pub form: WhatIfForm,
    pub sim: Computed<SimView>,
}

/// Controls, the cluster's numbers, per-replica table and charts.
#[component]
pub fn WhatIfPanel(p: &WhatIfProps) -> Html {
    let ctx = use_app();
    let on_set = {
        let dispatch = ctx.dispatch.clone();
        Callback::from(move |(f, v): (Field, String)| dispatch.dispatch(Action::WhatIfEdited(f, v)))
    };
    let control = |f: Field| {
        let id = format!("w-{}", f.flag());
        let err = p.form.error(f);
        let hint_id = format!("{id}-hint");
        let choices: Option<Vec<&'static str>> = match f {
            Field::Router => Some(ROUTERS.iter().map(|r| r.name()).collect()),
            Field::Policy => Some(POLICIES.iter().map(|p| p.name()).collect()),
            Field::Engine => Some(EngineMode::ALL.iter().map(|m| m.name()).collect()),
            _ => None,
        };
        let on_set = on_set.clone();
        let input = match choices {
            Some(names) => {
                let onchange = Callback::from(move |e: Event| {
                    if let Some(s) = e.target_dyn_into::<web_sys::HtmlSelectElement>() {
                        on_set.emit((f, s.value()));
                    }
                });
                let value = p.form.get(f).to_string();
                html! {
                    <select id={id.clone()} {onchange} aria-describedby={hint_id.clone()}>
                        { for names.into_iter().map(|n| html! { <option value={n} selected={n == value}>{ n }</option> }) }
                    </select>
                }
            }
            None => {
                let oninput = Callback::from(move |e: InputEvent| {
                    if let Some(input) = e.target_dyn_into::<web_sys::HtmlInputElement>() {
                        on_set.emit((f, input.value()));
                    }
                });
                html! {
                    <input id={id.clone()} type="text" inputmode="decimal" autocomplete="off" spellcheck="false"
                        value={p.form.get(f).to_string()} {oninput} aria-invalid={err.is_some().to_string()}
                        aria-describedby={hint_id.clone()} />
                }
            }
        };
        html! {
            <div class={classes!("field", err.is_some().then_some("invalid"))}>
                <label for={id}>{ f.label() }</label>
                { input }
                <div id={hint_id} class={if err.is_some() { "hint error-text" } else { "hint muted" }} aria-live="polite">
                    { err.unwrap_or_else(|| f.hint().to_string()) }
                </div>
            </div>
        }
    };
    let cmd = p.form.command(&p.file.name);
    html! {
        <section class="card" id="what-if" aria-labelledby="whatif-h">
            <div class="section-head">
                <h2 id="whatif-h">{ "What if: this trace on a cluster" }{ if p.sim.busy() { html! { <span class="badge" id="sim-busy">{ "simulating…" }</span> } } else { html! {} } }</h2>
            </div>
            <p class="muted small">{ "Replicas with a finite prefix cache of KV blocks, a router in front and a simple engine timing; the trace's own arrivals and sessions. The same simulator as aiperf-cli simulate." }</p>
            <div class="field-grid">
                { for Field::ALL.into_iter().map(control) }
            </div>
            { match p.sim.outcome() {
                Some(Err(m)) => html! { <p class="error-text" role="alert">{ m }</p> },
                Some(Ok(view)) => html! { <SimResults view={view.clone()} /> },
                None if p.form.cluster().is_none() => html! { <p class="error-text">{ "Fix the highlighted values to simulate." }</p> },
                None => html! {},
            }}
            <div class="actions">
                <span class="muted">{ "The same simulation on the command line:" }</span>
                { copyable("cmd sim-cmd", cmd) }
            </div>
        </section>
    }
}

#[derive(Properties, PartialEq)]
struct ResultsProps {
    view: Rc<SimView>,
}

/// The simulation's numbers and charts (drawn again only when another simulation arrives, not
/// on every keystroke in the controls).
#[component]
fn SimResults(p: &ResultsProps) -> Html {
    let v = &p.view;
    let ms = |key: &str, x: f64| metric(key, x, format!("{} ms", num(x, 1)));
    let shown = v.replicas.len().min(SHOWN_REPLICAS);
    let requests: Vec<u64> = v.replicas.iter().map(|r| r.requests).collect();
    html! {
        <div class="sim-results" data-replicas={v.replicas.len().to_string()} data-router={v.cluster.router.name()} data-engine={EngineMode::of(v.cluster.steps).name()}>
            <div class="stat-grid">
                { card("Hit rate (token-weighted)", metric("sim.token_hit_rate", v.token_hit_rate, pct(v.token_hit_rate)), Some("cached prompt tokens / prompt tokens".into())) }
                { card("Hit rate (per-row mean)", metric("sim.row_hit_rate", v.row_hit_rate, pct(v.row_hit_rate)), Some("as analyze-trace reports it".into())) }
                { card("TTFT p50", ms("sim.ttft_p50_ms", v.ttft_ms[0]), None) }
                { card("TTFT p99", ms("sim.ttft_p99_ms", v.ttft_ms[1]), None) }
                { card("Latency p50", ms("sim.latency_p50_ms", v.latency_ms[0]), None) }
                { card("Latency p99", ms("sim.latency_p99_ms", v.latency_ms[1]), None) }
                { card("Routing imbalance", metric("sim.imbalance", v.imbalance, num(v.imbalance, 3)), Some("busiest replica / mean (1 = even)".into())) }
                { card("Evictions", metric("sim.evictions", v.evictions as f64, int(v.evictions as f64)), None) }
                { if v.cluster.steps.is_some() {
                    card("Preemptions", metric("sim.preemptions", v.preemptions as f64, int(v.preemptions as f64)), Some("running requests put back to wait for KV blocks".into()))
                } else { html! {} } }
                { card("Requests", metric("sim.requests", v.requests as f64, int(v.requests as f64)), Some(format!("simulated in {}", millis(v.compute_ms)))) }
            </div>
            <span hidden=true data-metric="sim.compute_ms" data-value={v.compute_ms.to_string()}></span>
            <div class="chart-grid">
                { markup(dist_svg("Time to first token (simulated)", "TTFT (ms)", &v.ttft, false)) }
                { markup(dist_svg("Request latency (simulated)", "latency (ms)", &v.latency, false)) }
                { markup(kv_svg(&v.kv_lines, v.cluster.kv_blocks)) }
                { markup(balance_svg(&requests, SHOWN_REPLICAS)) }
            </div>
            <div class="table-wrap">
                <table class="stats replicas">
                    <thead><tr>
                        <th scope="col">{ "Replica" }</th><th scope="col" class="num">{ "Requests" }</th>
                        <th scope="col" class="num">{ "Hit rate (tokens)" }</th><th scope="col" class="num">{ "Hit rate (row mean)" }</th>
                        <th scope="col" class="num">{ "Evictions" }</th><th scope="col" class="num">{ "Peak blocks" }</th>
                        <th scope="col" class="num">{ "Peak waiting" }</th><th scope="col" class="num">{ "Peak running" }</th>
                    </tr></thead>
                    <tbody>
                        { for v.replicas.iter().take(shown).enumerate().map(|(i, r)| html! {
                            <tr data-replica={i.to_string()}>
                                <th scope="row">{ i }</th>
                                <td class="num">{ int(r.requests as f64) }</td>
                                <td class="num">{ metric(&format!("sim.replica.{i}.token_hit_rate"), r.token_hit_rate(), pct(r.token_hit_rate())) }</td>
                                <td class="num">{ metric(&format!("sim.replica.{i}.row_hit_rate"), r.row_hit_rate(), pct(r.row_hit_rate())) }</td>
                                <td class="num">{ int(r.evictions as f64) }</td>
                                <td class="num">{ int(r.peak_blocks as f64) }</td>
                                <td class="num">{ int(r.peak_waiting as f64) }</td>
                                <td class="num">{ int(r.peak_running as f64) }</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
                { if v.replicas.len() > shown { html! { <p class="muted small">{ format!("The first {shown} of {} replicas.", v.replicas.len()) }</p> } } else { html! {} } }
            </div>
        </div>
    }
}
