//! The page's open controls: file button, sample, the next file's format, conversion settings.

use aiperf_core::formats::Format;
use aiperf_core::formats::settings::{Accepts, FLAGS as CONVERSION_FLAGS};
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::hooks::{Open, use_app};
use crate::state::Action;

/// The files of a file list, in its order.
pub fn file_list(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    list.map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect()).unwrap_or_default()
}

#[derive(Properties, PartialEq)]
pub struct OpenBarProps {
    pub open: Open,
}

/// Opens a trace or runs; the format and conversion apply to the next file read.
#[component]
pub fn OpenBar(p: &OpenBarProps) -> Html {
    let dispatch = use_app().dispatch;
    let onpick = {
        let files = p.open.files.clone();
        Callback::from(move |e: Event| {
            let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
            files.emit(file_list(input.files()));
            // Picking the same file again must fire `change` again.
            input.set_value("");
        })
    };
    let sample = p.open.sample.reform(|_: MouseEvent| ());
    let again = p.open.again.reform(|_: MouseEvent| ());
    let on_format = {
        let dispatch = dispatch.clone();
        Callback::from(move |e: Event| {
            let Some(sel) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok()) else { return };
            let v = sel.value();
            dispatch.dispatch(Action::FormatChosen((v != "auto").then_some(v)));
        })
    };
    let on_conversion = Callback::from(move |e: Event| {
        let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
        let Some(flag) = CONVERSION_FLAGS.iter().find(|f| input.id() == format!("cv-{}", f.name)) else { return };
        let value = if input.type_() == "checkbox" {
            if input.checked() { "1".to_string() } else { String::new() }
        } else {
            input.value()
        };
        dispatch.dispatch(Action::ConversionEdited { flag: flag.name, value });
    });
    html! {
        <div class="open">
            <input id="file-input" class="visually-hidden" type="file" multiple={true} accept=".jsonl,.gz,.json,.csv,application/gzip,application/x-ndjson,text/csv" onchange={onpick} />
            <label class="button primary" for="file-input">{ "Open trace…" }</label>
            <button class="button" onclick={sample}>{ "Load sample" }</button>
            <select id="trace-format" aria-label="trace format of the next file" title="trace format of the next file (auto: detected from its content)" onchange={on_format}>
                <option value="auto" selected=true>{ "format: auto" }</option>
                { for Format::ALL.iter().filter(|f| !f.is_columnar()).map(|f| html! { <option value={f.name()}>{ f.name() }</option> }) }
            </select>
            <details class="conversion" id="conversion">
                <summary>{ "conversion (as convert-trace)" }</summary>
                { for CONVERSION_FLAGS.iter().filter(|f| f.in_browser).map(|f| {
                    let id = format!("cv-{}", f.name);
                    let kind = if f.accepts == Accepts::Switch { "checkbox" } else { "text" };
                    let help = format!("{} Accepts {}.", f.help, f.accepts.describe());
                    html! { <label class="inline-field" title={help}>{ format!("--{}", f.name) }<input id={id} type={kind} onchange={on_conversion.clone()} /></label> }
                }) }
                <button id="cv-apply" class="button" onclick={again}>{ "Apply to the open trace" }</button>
                <p class="muted">{ "applies to the next file opened, or to the open one with the button (other formats than Mooncake; the transforms to any)" }</p>
            </details>
        </div>
    }
}
