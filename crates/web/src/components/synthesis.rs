//! The synthesis panel: parameters, before/after statistics, download, share.

use std::rc::Rc;

use aiperf_core::analysis::Analysis;
use aiperf_core::stats::Summary;
use aiperf_core::synthesis::fidelity::ArrivalCheck;
use aiperf_core::synthesis::{Mode, Param};
use yew::prelude::*;

use super::charts::CdfCompare;
use super::fields::{FieldInput, copyable};
use crate::engine::synth_file_name;
use crate::format::{int, millis, num};
use crate::hooks::use_app;
use crate::params::Form;
use crate::protocol::{AnalysisView, FileSummary, SynthView, ToWorker};
use crate::state::{Action, Computed};
use crate::web;

#[derive(Properties, PartialEq)]
pub struct SynthProps {
    pub form: Form,
    pub synth: Computed<SynthView>,
    pub file: Rc<FileSummary>,
    /// The original trace's analysis, compared with the synthesized one.
    pub original: Rc<AnalysisView>,
}

/// Parameters, before/after statistics, download, share.
#[component]
pub fn SynthPanel(p: &SynthProps) -> Html {
    let ctx = use_app();
    let settings = p.form.synth();
    let name = &p.file.name;
    let out = synth_file_name(name, p.form.get(Param::Seed).trim());
    let cmd = p.form.synthesize_command(name, &out, p.file.bad_total > 0);
    let link = format!("{}{}", web::location_base(), p.form.to_query());
    let mode_radio = |m: Mode, label: &str, id: &str| {
        let dispatch = ctx.dispatch.clone();
        html! {
            <label class="radio" for={id.to_string()}>
                <input type="radio" id={id.to_string()} name="mode" checked={p.form.mode == m} onchange={Callback::from(move |_| dispatch.dispatch(Action::ModeChosen(m)))} />
                { label }
            </label>
        }
    };
    let export = {
        let (worker, settings) = (ctx.worker.clone(), settings.clone());
        Callback::from(move |_: MouseEvent| {
            if let Some(settings) = settings.clone() {
                worker.send(ToWorker::Export { settings });
            }
        })
    };
    let o = &p.original;
    html! {
        <section class="card" aria-labelledby="synth-h">
            <div class="section-head">
                <h2 id="synth-h">{ "Synthesis" }{ if p.synth.busy() { html! { <span class="badge" id="synth-busy">{ "computing…" }</span> } } else { html! {} } }</h2>
                <fieldset class="modes">
                    <legend class="visually-hidden">{ "Synthesis mode" }</legend>
                    { mode_radio(Mode::Transform, "Transform every request", "mode-transform") }
                    { mode_radio(Mode::Generate, "Generate new requests", "mode-generate") }
                </fieldset>
            </div>
            <div class="field-grid">
                { for p.form.active_synth_fields().map(|f| html! { <FieldInput field={f} form={p.form.clone()} on_set={ctx.on_set()} /> }) }
            </div>
            { match p.synth.outcome() {
                Some(Err(m)) => html! { <p class="error-text" role="alert">{ m }</p> },
                Some(Ok(shown)) => html! {
                    <div class="compare-grid">
                        <Compare original={o.analysis.clone()} synthesized={shown.analysis.clone()} rows={shown.rows} compute_ms={shown.compute_ms} />
                        { arrivals_table(&shown.arrivals) }
                        <div class="compare-charts">
                            <CdfCompare title="Input length, original vs synthesized" x_label="input length (tokens)" original={o.charts.isl.clone()} synthesized={shown.isl.clone()} />
                            <CdfCompare title="Output length, original vs synthesized" x_label="output length (tokens)" original={o.charts.osl.clone()} synthesized={shown.osl.clone()} />
                        </div>
                    </div>
                },
                None if settings.is_none() => html! { <p class="error-text">{ "Fix the highlighted values to synthesize." }</p> },
                None => html! {},
            }}
            <div class="actions">
                <button class="button primary" onclick={export} disabled={settings.is_none()}>{ "Download synthesized JSONL" }</button>
                { copyable("cmd", cmd) }
            </div>
            <div class="actions">
                <span class="muted">{ "Share these settings:" }</span>
                { copyable("cmd link", link) }
            </div>
            <p class="muted small">{ "A link carries the parameters, never the trace: the recipient opens the same file to get the same result." }</p>
        </section>
    }
}

#[derive(Properties, PartialEq)]
struct CompareProps {
    original: Rc<Analysis>,
    synthesized: Rc<Analysis>,
    rows: u64,
    compute_ms: f64,
}

/// Original and synthesized statistics side by side.
#[component]
fn Compare(p: &CompareProps) -> Html {
    let o = &p.original;
    let s = &p.synthesized;
    let rate = |a: &Analysis| a.arrivals.as_ref().map(|x| x.mean_rate_per_s);
    let line = |label: &str, key: &str, a: Option<f64>, b: Option<f64>, dec: usize| {
        let fmt = |v: Option<f64>| v.map_or("–".to_string(), |v| num(v, dec));
        let change = match (a, b) {
            (Some(a), Some(b)) if a != 0.0 => format!("{:+.1} %", (b / a - 1.0) * 100.0),
            _ => String::new(),
        };
        html! {
            <tr>
                <th scope="row">{ label }</th>
                <td class="num">{ fmt(a) }</td>
                <td class="num" data-synth={key.to_string()}>{ fmt(b) }</td>
                <td class="num muted">{ change }</td>
            </tr>
        }
    };
    let m = |x: &Option<Summary>| x.map(|s| s.mean);
    let med = |x: &Option<Summary>| x.map(|s| s.median);
    html! {
        <div class="table-wrap">
            <table class="stats compare">
                <thead><tr><th scope="col">{ "Statistic" }</th><th scope="col" class="num">{ "Original" }</th><th scope="col" class="num">{ "Synthesized" }</th><th scope="col" class="num">{ "Change" }</th></tr></thead>
                <tbody>
                    { line("Requests", "total_requests", Some(o.total_requests as f64), Some(s.total_requests as f64), 0) }
                    { line("Input length, mean", "isl_mean", m(&o.isl_stats), m(&s.isl_stats), 1) }
                    { line("Input length, median", "isl_median", med(&o.isl_stats), med(&s.isl_stats), 1) }
                    { line("Output length, mean", "osl_mean", m(&o.osl_stats), m(&s.osl_stats), 1) }
                    { line("Context length, mean", "context_mean", m(&o.context_length_stats), m(&s.context_length_stats), 1) }
                    { line("Cache hit rate", "cache_hit_rate", Some(o.cache_hit_rate), Some(s.cache_hit_rate), 4) }
                    { line("Prefix groups", "num_prefix_groups", Some(o.num_prefix_groups as f64), Some(s.num_prefix_groups as f64), 0) }
                    { line("Mean request rate (req/s)", "rate", rate(o), rate(s), 2) }
                    { line("Duration (s)", "duration", o.arrivals.as_ref().map(|x| x.duration_s), s.arrivals.as_ref().map(|x| x.duration_s), 1) }
                </tbody>
            </table>
            <p class="muted small">{ format!("{} synthesized rows, computed in {}.", int(p.rows as f64), millis(p.compute_ms)) }</p>
        </div>
    }
}

/// The fidelity report's arrivals over time: each statistic, original and synthesized, with its
/// tolerance and verdict.
fn arrivals_table(checks: &[ArrivalCheck]) -> Html {
    if checks.is_empty() {
        return html! {};
    }
    let fmt = |v: Option<f64>| v.map_or("–".to_string(), |v| num(v, 3));
    html! {
        <div class="table-wrap">
            <table class="stats arrivals-fidelity">
                <caption>{ "Arrivals over time, original vs synthesized (fidelity report)" }</caption>
                <thead><tr><th scope="col">{ "Statistic" }</th><th scope="col" class="num">{ "Original" }</th><th scope="col" class="num">{ "Synthesized" }</th><th scope="col">{ "Tolerance" }</th><th scope="col">{ "Verdict" }</th></tr></thead>
                <tbody>
                    { for checks.iter().map(|c| html! {
                        <tr data-arrival={c.statistic.clone()}>
                            <th scope="row">{ &c.statistic }</th>
                            <td class="num">{ fmt(c.original) }</td>
                            <td class="num">{ fmt(c.synthesized) }</td>
                            <td>{ c.tolerance.to_string() }</td>
                            <td>{ match c.pass { Some(true) => "within", Some(false) => "outside", None => "–" } }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </div>
    }
}
