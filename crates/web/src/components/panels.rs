//! The page's panels: loading status, analysis (numbers and charts), synthesis.

use std::rc::Rc;

use aiperf_core::analysis::Analysis;
use aiperf_core::stats::Summary;
use yew::prelude::*;

use super::charts::{ArrivalsChart, CacheChart, CdfCompare, DistChart, GroupsChart};
use crate::engine::synth_file_name;
use crate::format::{bytes, int, millis, num, pct};
use aiperf_core::synthesis::{Mode, Param, SynthesisSettings};

use crate::params::{Form, field_hint};
use crate::protocol::{BadRow, FileSummary};
use crate::state::{AppState, Computed, Load, Shown, SynthShown};
use crate::web;

#[derive(Properties, PartialEq)]
pub struct LoadProps {
    pub state: UseReducerHandle<AppState>,
}

/// Empty-page invitation, progress bar, or the reasons a file failed.
#[component]
pub fn LoadStatus(p: &LoadProps) -> Html {
    match &p.state.load {
        Load::Empty => html! {
            <section class="card dropzone" aria-label="open a trace">
                <h2>{ "Open a Mooncake trace" }</h2>
                <p>{ "Drop a " }<code>{ ".jsonl" }</code>{ " or " }<code>{ ".jsonl.gz" }</code>{ " file anywhere on this page, use " }<strong>{ "Open trace…" }</strong>{ ", or try " }<strong>{ "Load sample" }</strong>{ " (the Mooncake conversation trace, 12,031 requests)." }</p>
                <p>{ "Or drop the " }<code>{ "profile_export.jsonl" }</code>{ " of an " }<code>{ "aiperf-cli profile" }</code>{ " run (with its " }<code>{ "profile_export_aiperf.json" }</code>{ "), or up to 8 runs to compare them." }</p>
                <p class="muted">{ "Each line is one request: " }<code>{ "{\"timestamp\": 0, \"input_length\": 6758, \"output_length\": 500, \"hash_ids\": [0, 1, 2]}" }</code></p>
            </section>
        },
        Load::Reading { name, progress } => {
            let frac = if progress.total > 0 { progress.bytes as f64 / progress.total as f64 } else { 0.0 };
            let what = if progress.total > 0 {
                format!("{} of {} · {} rows", bytes(progress.bytes), bytes(progress.total), int(progress.rows as f64))
            } else {
                "fetching…".to_string()
            };
            html! {
                <section class="card loading" aria-live="polite">
                    <h2>{ format!("Reading {name}") }</h2>
                    <progress max="1" value={frac.min(1.0).to_string()} aria-label="reading progress"></progress>
                    <p class="muted">{ what }{ if progress.invalid > 0 { format!(" · {} invalid", int(progress.invalid as f64)) } else { String::new() } }</p>
                </section>
            }
        }
        Load::Failed { name, message, bad_rows, bad_total } => html! {
            <section class="card error" role="alert">
                <h2>{ format!("Cannot open {name}") }</h2>
                <p>{ message }</p>
                <BadRows rows={bad_rows.clone()} total={*bad_total} />
            </section>
        },
        Load::Ready(_) => html! {},
    }
}

#[derive(Properties, PartialEq)]
pub struct BadRowsProps {
    pub rows: Rc<Vec<BadRow>>,
    pub total: u64,
}

#[component]
fn BadRows(p: &BadRowsProps) -> Html {
    if p.rows.is_empty() {
        return html! {};
    }
    html! {
        <div class="bad-rows">
            <table>
                <thead><tr><th scope="col">{ "Line" }</th><th scope="col">{ "Field" }</th><th scope="col">{ "Reason" }</th></tr></thead>
                <tbody>
                    { for p.rows.iter().map(|r| html! {
                        <tr><td class="num">{ int(r.line as f64) }</td><td><code>{ r.field.clone().unwrap_or_default() }</code></td><td>{ &r.reason }</td></tr>
                    })}
                </tbody>
            </table>
            { if p.total > p.rows.len() as u64 { html! { <p class="muted">{ format!("… and {} more invalid rows.", int((p.total - p.rows.len() as u64) as f64)) }</p> } } else { html! {} } }
        </div>
    }
}

/// A value shown with its raw number attached (read by the end-to-end test).
fn metric(key: &str, raw: f64, shown: String) -> Html {
    html! { <span data-metric={key.to_string()} data-value={raw.to_string()}>{ shown }</span> }
}

fn card(label: &str, value: Html, sub: Option<String>) -> Html {
    html! {
        <div class="stat">
            <div class="stat-label">{ label }</div>
            <div class="stat-value">{ value }</div>
            { sub.map(|s| html! { <div class="stat-sub muted">{ s }</div> }).unwrap_or_default() }
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct StatsProps {
    pub analysis: Rc<Analysis>,
    /// Prefix of the `data-metric` keys (`""` for the original trace).
    #[prop_or_default]
    pub prefix: AttrValue,
}

/// The reference's statistics table (mean, std dev, min, p25, median, p75, max).
#[component]
pub fn StatsTable(p: &StatsProps) -> Html {
    let a = &p.analysis;
    let rows: [(&str, &str, &Option<Summary>, usize); 5] = [
        ("Input length", "isl_stats", &a.isl_stats, 2),
        ("Context length", "context_length_stats", &a.context_length_stats, 2),
        ("Unique prompt length", "unique_prompt_length_stats", &a.unique_prompt_length_stats, 2),
        ("Output length", "osl_stats", &a.osl_stats, 2),
        ("Theoretical hit rate", "hit_rate_stats", &a.hit_rate_stats, 4),
    ];
    html! {
        <div class="table-wrap">
            <table class="stats">
                <thead><tr>
                    <th scope="col">{ "Metric" }</th>
                    { for ["Mean", "Std dev", "Min", "P25", "Median", "P75", "Max"].iter().map(|h| html! { <th scope="col" class="num">{ *h }</th> }) }
                </tr></thead>
                <tbody>
                    { for rows.iter().map(|(label, key, s, dec)| html! {
                        <tr>
                            <th scope="row">{ *label }</th>
                            { match s {
                                Some(s) => html! { <>{ for [("mean", s.mean), ("std_dev", s.std_dev), ("min", s.min), ("p25", s.p25), ("median", s.median), ("p75", s.p75), ("max", s.max)].iter().map(|(k, v)| html! {
                                    <td class="num">{ metric(&format!("{}{key}.{k}", p.prefix), *v, num(*v, *dec)) }</td>
                                })}</> },
                                None => html! { <td colspan="7" class="muted">{ "no values" }</td> },
                            }}
                        </tr>
                    })}
                </tbody>
            </table>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct FieldProps {
    pub field: Param,
    pub form: Form,
    pub on_set: Callback<(Param, String)>,
}

/// A labelled text field with its hint and its validation message.
#[component]
pub fn FieldInput(p: &FieldProps) -> Html {
    let f = p.field;
    let id = format!("f-{}", f.key());
    let err = p.form.error(f);
    let oninput = {
        let on_set = p.on_set.clone();
        Callback::from(move |e: InputEvent| {
            if let Some(input) = e.target_dyn_into::<web_sys::HtmlInputElement>() {
                on_set.emit((f, input.value()));
            }
        })
    };
    let hint_id = format!("{id}-hint");
    html! {
        <div class={classes!("field", err.is_some().then_some("invalid"))}>
            <label for={id.clone()}>{ f.label() }</label>
            <input {id} type="text" inputmode="decimal" autocomplete="off" spellcheck="false" value={p.form.get(f).to_string()} {oninput}
                aria-invalid={err.is_some().to_string()} aria-describedby={hint_id.clone()} />
            <div id={hint_id} class={if err.is_some() { "hint error-text" } else { "hint muted" }} aria-live="polite">
                { err.unwrap_or_else(|| field_hint(f)) }
            </div>
        </div>
    }
}

fn copy_button(text: String) -> Html {
    let onclick = Callback::from(move |_: MouseEvent| web::copy_text(&text));
    html! { <button class="button small" {onclick}>{ "Copy" }</button> }
}

#[derive(Properties, PartialEq)]
pub struct AnalysisProps {
    pub file: Rc<FileSummary>,
    pub shown: Rc<Shown>,
    pub form: Form,
    pub shown_ms: Option<f64>,
    pub analyzing: bool,
    pub error: Option<String>,
    pub on_set: Callback<(Param, String)>,
    /// Asks the worker for the converted trace as Mooncake JSONL (a format other than Mooncake).
    pub on_convert: Callback<()>,
}

/// Every number of `analyze-trace`, plus the charts.
#[component]
pub fn AnalysisPanel(p: &AnalysisProps) -> Html {
    let a = p.shown.analysis.clone();
    let v = &p.shown.view;
    let f = &p.file;
    let download = {
        let json = v.json.clone();
        let name = format!("{}.analysis.json", f.name.trim_end_matches(".gz").trim_end_matches(".jsonl"));
        Callback::from(move |_: MouseEvent| {
            if let Err(e) = web::download(&name, &json, "application/json") {
                web::log(&format!("download failed: {e:?}"));
            }
        })
    };
    let cmd = p.form.analyze_command(&f.name, f.bad_total > 0);
    let timing = format!(
        "read + parse {} · analysis {}{}",
        millis(f.parse_ms),
        millis(v.compute_ms),
        p.shown_ms.map(|ms| format!(" · drop → shown {}", millis(ms))).unwrap_or_default()
    );
    let c = &v.charts;
    let updating = p.analyzing || p.form.block_size().is_some_and(|b| b != v.block_size);
    html! {
        <>
        <section class="card file-bar" aria-label="file">
            <div>
                <h2 class="file-name">{ &f.name }</h2>
                <p class="muted">{ format!("{} · {} rows · {} lines", bytes(f.size), int(f.rows as f64), int(f.lines as f64)) }</p>
            </div>
            <p class="muted timing" data-shown-ms={p.shown_ms.map(|m| m.to_string()).unwrap_or_default()} data-compute-ms={v.compute_ms.to_string()} data-parse-ms={f.parse_ms.to_string()}>{ timing }</p>
            <div class="trace-format" data-format={f.format.clone()} data-prefix-info={f.has_prefix_info.to_string()}>
                <p class="muted" id="detected-format">{ format!("format: {} ({})", f.format, f.evidence) }</p>
                { if f.has_prefix_info { html! {} } else { html! {
                    <p class="muted" id="no-prefix-info">{ "no prefix information: the source has no hash ids, so no prefix-cache hit rate is computed" }</p>
                }}}
                { if f.notes.is_empty() { html! {} } else { html! {
                    <ul class="format-notes">{ for f.notes.iter().map(|n| html! { <li>{ n }</li> }) }</ul>
                }}}
                { if !f.downloadable { html! {} } else {
                    let on_convert = p.on_convert.clone();
                    let onclick = Callback::from(move |_: MouseEvent| on_convert.emit(()));
                    html! { <button class="button small" id="download-converted" {onclick}>{ "Download Mooncake JSONL" }</button> }
                }}
            </div>
            { if f.bad_total > 0 { html! {
                <details class="warning-box" open=true>
                    <summary>{ format!("{} invalid rows were skipped (the CLI needs --skip-invalid to do the same)", int(f.bad_total as f64)) }</summary>
                    <BadRows rows={Rc::new(f.bad_rows.clone())} total={f.bad_total} />
                </details>
            }} else { html! {} } }
        </section>

        <section class="card" aria-labelledby="analysis-h" data-block-size={v.block_size.to_string()}>
            <div class="section-head">
                <h2 id="analysis-h">{ "Analysis" }{ if updating { html! { <span class="badge" id="analysis-busy">{ "updating…" }</span> } } else { html! {} } }</h2>
                <div class="inline-field">
                    <FieldInput field={Param::BlockSize} form={p.form.clone()} on_set={p.on_set.clone()} />
                </div>
            </div>
            { p.error.clone().map(|e| html! { <p class="error-text">{ e }</p> }).unwrap_or_default() }
            <div class="stat-grid">
                { card("Total requests", metric("total_requests", a.total_requests as f64, int(a.total_requests as f64)), None) }
                { card("Unique prefixes", metric("unique_prefixes", a.unique_prefixes as f64, int(a.unique_prefixes as f64)), Some("nodes of the prefix tree".into())) }
                { card("Prefix groups", metric("num_prefix_groups", a.num_prefix_groups as f64, int(a.num_prefix_groups as f64)), Some("first blocks shared by ≥ 2 requests".into())) }
                { card("Cache hit rate", metric("cache_hit_rate", a.cache_hit_rate, pct(a.cache_hit_rate)), Some("unbounded prefix cache, mean per request".into())) }
                { card("Prefix reuse ratio", metric("prefix_reuse_ratio", a.prefix_reuse_ratio, pct(a.prefix_reuse_ratio)), Some("prefix blocks shared with another request".into())) }
                { card("Input length (tokens)", html! { <>{ metric("avg_isl", a.avg_isl, num(a.avg_isl, 2)) }<span class="unit">{ " avg" }</span></> },
                    Some(format!("min {} · max {}", int(a.min_isl as f64), int(a.max_isl as f64)))) }
                { card("Output length (tokens)", html! { <>{ metric("avg_osl", a.avg_osl, num(a.avg_osl, 2)) }<span class="unit">{ " avg" }</span></> },
                    Some(format!("min {} · max {}", int(a.min_osl as f64), int(a.max_osl as f64)))) }
                { card("Hash ids", metric("total_hash_ids", a.total_hash_ids as f64, int(a.total_hash_ids as f64)), Some(format!("{} distinct", int(a.distinct_hash_ids as f64)))) }
            </div>
            <span hidden=true>{ metric("min_isl", a.min_isl as f64, String::new()) }{ metric("max_isl", a.max_isl as f64, String::new()) }{ metric("min_osl", a.min_osl as f64, String::new()) }{ metric("max_osl", a.max_osl as f64, String::new()) }</span>
            <StatsTable analysis={a.clone()} />
            <div class="chart-grid">
                <DistChart title="Input length" x_label="input length (tokens)" dist={c.isl.clone()} />
                <DistChart title="Output length" x_label="output length (tokens)" dist={c.osl.clone()} />
                <DistChart title="Context length (reused prefix)" x_label="context length (tokens)" dist={c.context_length.clone()} />
                <DistChart title="Theoretical hit rate per request" x_label="hit rate" dist={c.hit_rate.clone()} percent=true />
                <ArrivalsChart series={c.arrivals.clone()} />
                <CacheChart analysis={a.clone()} />
            </div>
            <div class="two-col">
                <GroupsChart analysis={a.clone()} />
                <Extras analysis={a.clone()} />
            </div>
            <div class="actions">
                <button class="button" onclick={download}>{ "Download analysis JSON" }</button>
                <code class="cmd">{ cmd.clone() }</code>
                { copy_button(cmd) }
            </div>
        </section>
        </>
    }
}

#[derive(Properties, PartialEq)]
struct ExtrasProps {
    analysis: Rc<Analysis>,
}

/// Arrival statistics and lint findings.
#[component]
fn Extras(p: &ExtrasProps) -> Html {
    let a = &p.analysis;
    let mut rows: Vec<(String, String)> = Vec::new();
    if let Some(arr) = &a.arrivals {
        rows.push(("Timed requests".into(), int(arr.timed_requests as f64)));
        rows.push(("Duration".into(), format!("{} s", num(arr.duration_s, 1))));
        rows.push(("Mean rate".into(), format!("{} req/s", num(arr.mean_rate_per_s, 2))));
        rows.push(("Peak in 1 s".into(), format!("{} requests", int(arr.peak_requests_1s as f64))));
        rows.push(("Peak rate over 10 s".into(), format!("{} req/s", num(arr.peak_rate_10s_per_s, 1))));
        if let Some(g) = &arr.inter_arrival_ms {
            rows.push(("Inter-arrival (median / p75)".into(), format!("{} / {} ms", num(g.median, 1), num(g.p75, 1))));
        }
        rows.push(("Requests sharing a timestamp".into(), int(arr.same_ms_requests as f64)));
        rows.push(("Largest burst".into(), format!("{} requests", int(arr.largest_burst as f64))));
        if arr.sessions > 0 {
            rows.push(("Sessions".into(), int(arr.sessions as f64)));
        }
    }
    let l = &a.lint;
    let lint = [
        ("input length does not fit its blocks", &l.block_length_mismatch),
        ("input length below 1", &l.non_positive_input_length),
        ("timestamp earlier than the previous row", &l.non_monotonic_timestamps),
        ("repeated session turn", &l.duplicate_session_turns),
    ];
    html! {
        <div class="extras">
            <h3>{ "Arrivals" }</h3>
            { if rows.is_empty() { html! { <p class="muted">{ "No timestamps." }</p> } } else { html! {
                <dl class="kv">{ for rows.into_iter().map(|(k, v)| html! { <><dt>{ k }</dt><dd>{ v }</dd></> }) }</dl>
            }}}
            <h3>{ "Lint" }</h3>
            { if l.total() == 0 { html! { <p class="ok">{ "✓ No findings: every row will replay as written." }</p> } } else { html! {
                <ul class="lint">
                    { for lint.iter().filter(|(_, f)| f.count > 0).map(|(what, f)| html! {
                        <li>{ format!("{} rows: {what} (lines {})", int(f.count as f64), f.first_lines.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")) }</li>
                    })}
                    { if l.ids_at_several_positions > 0 { html! { <li>{ format!("{} hash ids appear at several positions", int(l.ids_at_several_positions as f64)) }</li> } } else { html! {} } }
                </ul>
            }}}
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct SynthProps {
    pub form: Form,
    pub synth: Computed<SynthShown>,
    pub file: Option<Rc<FileSummary>>,
    pub original: Option<Rc<Shown>>,
    pub on_set: Callback<(Param, String)>,
    pub on_mode: Callback<Mode>,
    pub on_export: Callback<SynthesisSettings>,
}

/// Parameters, before/after statistics, download, share.
#[component]
pub fn SynthPanel(p: &SynthProps) -> Html {
    let settings = p.form.synth();
    let name = p.file.as_ref().map_or("trace.jsonl".to_string(), |f| f.name.clone());
    let out = synth_file_name(&name, p.form.get(Param::Seed).trim());
    let cmd = p.form.synthesize_command(&name, &out, p.file.as_ref().is_some_and(|f| f.bad_total > 0));
    let link = format!("{}{}", web::location_base(), p.form.to_query());
    let mode_radio = |m: Mode, label: &str, id: &str| {
        let on_mode = p.on_mode.clone();
        html! {
            <label class="radio" for={id.to_string()}>
                <input type="radio" id={id.to_string()} name="mode" checked={p.form.mode == m} onchange={Callback::from(move |_| on_mode.emit(m))} />
                { label }
            </label>
        }
    };
    let export = {
        let on_export = p.on_export.clone();
        let settings = settings.clone();
        Callback::from(move |_: MouseEvent| {
            if let Some(s) = settings.clone() {
                on_export.emit(s);
            }
        })
    };
    let ready = settings.is_some() && p.file.is_some();
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
                { for p.form.active_synth_fields().map(|f| html! { <FieldInput field={f} form={p.form.clone()} on_set={p.on_set.clone()} /> }) }
            </div>
            { match p.synth.outcome() {
                Some(Err(m)) => html! { <p class="error-text" role="alert">{ m }</p> },
                Some(Ok(shown)) => html! {
                    <div class="compare-grid">
                        <Compare original={p.original.as_ref().map(|o| o.analysis.clone())} synthesized={shown.analysis.clone()} rows={shown.view.rows} compute_ms={shown.view.compute_ms} />
                        { p.original.as_ref().map(|o| html! {
                            <div class="compare-charts">
                                <CdfCompare title="Input length, original vs synthesized" x_label="input length (tokens)" original={o.view.charts.isl.clone()} synthesized={shown.view.isl.clone()} />
                                <CdfCompare title="Output length, original vs synthesized" x_label="output length (tokens)" original={o.view.charts.osl.clone()} synthesized={shown.view.osl.clone()} />
                            </div>
                        }).unwrap_or_default() }
                    </div>
                },
                _ if settings.is_none() => html! { <p class="error-text">{ "Fix the highlighted values to synthesize." }</p> },
                _ => html! {},
            }}
            <div class="actions">
                <button class="button primary" onclick={export} disabled={!ready}>{ "Download synthesized JSONL" }</button>
                <code class="cmd">{ cmd.clone() }</code>
                { copy_button(cmd) }
            </div>
            <div class="actions">
                <span class="muted">{ "Share these settings:" }</span>
                <code class="cmd link">{ link.clone() }</code>
                { copy_button(link) }
            </div>
            <p class="muted small">{ "A link carries the parameters, never the trace: the recipient opens the same file to get the same result." }</p>
        </section>
    }
}

#[derive(Properties, PartialEq)]
struct CompareProps {
    original: Option<Rc<Analysis>>,
    synthesized: Rc<Analysis>,
    rows: u64,
    compute_ms: f64,
}

/// Original and synthesized statistics side by side.
#[component]
fn Compare(p: &CompareProps) -> Html {
    let Some(o) = &p.original else { return html! {} };
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
