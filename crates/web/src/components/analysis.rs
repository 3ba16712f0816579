//! The analysis of the open trace: the file, every number of `analyze-trace`, and the charts.

use std::rc::Rc;

use aiperf_core::analysis::Analysis;
use aiperf_core::stats::Summary;
use aiperf_core::synthesis::Param;
use yew::prelude::*;

use super::charts::{ArrivalsChart, CacheChart, DistChart, GroupsChart};
use super::fields::{FieldInput, card, copyable, metric};
use super::status::BadRows;
use crate::engine::analysis_json;
use crate::format::{bytes, int, millis, num, pct};
use crate::hooks::use_app;
use crate::params::Form;
use crate::protocol::{AnalysisView, FileSummary, ToWorker};
use crate::state::Computed;
use crate::web;

#[derive(Properties, PartialEq)]
pub struct AnalysisProps {
    pub file: Rc<FileSummary>,
    pub analysis: Computed<AnalysisView>,
    pub form: Form,
    /// Drop → analysis on screen, once measured.
    pub shown_ms: Option<f64>,
}

/// The file read, then every number of `analyze-trace` and the charts.
#[component]
pub fn AnalysisPanel(p: &AnalysisProps) -> Html {
    let ctx = use_app();
    let Some(v) = p.analysis.shown() else { return html! {} };
    let a = v.analysis.clone();
    let f = &p.file;
    let download = {
        let a = a.clone();
        let name = format!("{}.analysis.json", f.name.trim_end_matches(".gz").trim_end_matches(".jsonl"));
        Callback::from(move |_: MouseEvent| {
            if let Err(e) = web::download(&name, &analysis_json(&a), "application/json") {
                web::log(&format!("download failed: {e:?}"));
            }
        })
    };
    let cmd = p.form.analyze_command(&f.name, f.bad_total > 0);
    let c = &v.charts;
    let updating = p.analysis.busy() || p.form.block_size().is_some_and(|b| b != v.block_size);
    html! {
        <>
        <FileBar file={f.clone()} compute_ms={v.compute_ms} shown_ms={p.shown_ms} />
        <section class="card" aria-labelledby="analysis-h" data-block-size={v.block_size.to_string()}>
            <div class="section-head">
                <h2 id="analysis-h">{ "Analysis" }{ if updating { html! { <span class="badge" id="analysis-busy">{ "updating…" }</span> } } else { html! {} } }</h2>
                <div class="inline-field">
                    <FieldInput field={Param::BlockSize} form={p.form.clone()} on_set={ctx.on_set()} />
                </div>
            </div>
            { p.analysis.error().map(|e| html! { <p class="error-text">{ e }</p> }).unwrap_or_default() }
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
                <Extras analysis={a} />
            </div>
            <div class="actions">
                <button class="button" onclick={download}>{ "Download analysis JSON" }</button>
                { copyable("cmd", cmd) }
            </div>
        </section>
        </>
    }
}

#[derive(Properties, PartialEq)]
struct FileBarProps {
    file: Rc<FileSummary>,
    /// The analysis's time in the worker.
    compute_ms: f64,
    shown_ms: Option<f64>,
}

/// The file read: size, rows, timings, format, what the conversion did, the rows skipped.
#[component]
fn FileBar(p: &FileBarProps) -> Html {
    let ctx = use_app();
    let f = &p.file;
    let timing = format!(
        "read + parse {} · analysis {}{}",
        millis(f.parse_ms),
        millis(p.compute_ms),
        p.shown_ms.map(|ms| format!(" · drop → shown {}", millis(ms))).unwrap_or_default()
    );
    html! {
        <section class="card file-bar" aria-label="file">
            <div>
                <h2 class="file-name">{ &f.name }</h2>
                <p class="muted">{ format!("{} · {} rows · {} lines", bytes(f.size), int(f.rows as f64), int(f.lines as f64)) }</p>
            </div>
            <p class="muted timing" data-shown-ms={p.shown_ms.map(|m| m.to_string()).unwrap_or_default()} data-compute-ms={p.compute_ms.to_string()} data-parse-ms={f.parse_ms.to_string()}>{ timing }</p>
            <div class="trace-format" data-format={f.format.clone()} data-prefix-info={f.has_prefix_info.to_string()}>
                <p class="muted" id="detected-format">{ format!("format: {} ({})", f.format, f.evidence) }</p>
                { if f.has_prefix_info { html! {} } else { html! {
                    <p class="muted" id="no-prefix-info">{ "no prefix information: the source has no hash ids, so no prefix-cache hit rate is computed" }</p>
                }}}
                { if f.notes.is_empty() { html! {} } else { html! {
                    <ul class="format-notes">{ for f.notes.iter().map(|n| html! { <li>{ n }</li> }) }</ul>
                }}}
                { if !f.downloadable { html! {} } else {
                    let onclick = Callback::from(move |_: MouseEvent| ctx.worker.send(ToWorker::ExportConverted));
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
