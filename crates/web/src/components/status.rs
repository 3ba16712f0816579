//! Where the page stands: the invitation, reading progress, why a file failed, and notices.

use std::rc::Rc;

use yew::prelude::*;

use crate::format::{bytes, int};
use crate::protocol::BadRow;
use crate::state::Load;

#[derive(Properties, PartialEq)]
pub struct LoadProps {
    pub load: Load,
}

/// Empty-page invitation, progress bar, or the reasons a file failed.
#[component]
pub fn LoadStatus(p: &LoadProps) -> Html {
    match &p.load {
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

/// The rejected lines, with their line numbers and reasons.
#[component]
pub fn BadRows(p: &BadRowsProps) -> Html {
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

#[derive(Properties, PartialEq)]
pub struct NoticesProps {
    /// Unknown keys of the link the page was opened with.
    pub url_warnings: Vec<String>,
    /// Seconds the worker has been silent while the page waits on it.
    pub worker_silent_s: Option<u64>,
}

/// Warnings above the panels.
#[component]
pub fn Notices(p: &NoticesProps) -> Html {
    html! {
        <>
            { for p.url_warnings.iter().map(|w| html! { <p class="warning" role="status">{ format!("Ignored an unknown link parameter: {w}") }</p> }) }
            { p.worker_silent_s.map(|secs| html! {
                <p class="warning" role="status">{ format!("No answer from the background worker for {secs} s. Very large traces take a while; if this does not change, the browser may have run out of memory: reload the page or try a smaller file.") }</p>
            }).unwrap_or_default() }
        </>
    }
}
