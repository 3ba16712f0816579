//! Small pieces the panels share: a parameter field, a copy button, a number the tests read.

use aiperf_core::synthesis::Param;
use yew::prelude::*;

use crate::params::{Form, field_hint};
use crate::web;

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

/// A button copying `text` to the clipboard.
pub fn copy_button(text: String) -> Html {
    let onclick = Callback::from(move |_: MouseEvent| web::copy_text(&text));
    html! { <button class="button small" {onclick}>{ "Copy" }</button> }
}

/// A shell command or link with its copy button.
pub fn copyable(class: &'static str, text: String) -> Html {
    html! { <><code class={class}>{ text.clone() }</code>{ copy_button(text) }</> }
}

/// A value shown with its raw number attached (read by the end-to-end test).
pub fn metric(key: &str, raw: f64, shown: String) -> Html {
    html! { <span data-metric={key.to_string()} data-value={raw.to_string()}>{ shown }</span> }
}

/// A labelled number with an optional line under it.
pub fn card(label: &str, value: Html, sub: Option<String>) -> Html {
    html! {
        <div class="stat">
            <div class="stat-label">{ label }</div>
            <div class="stat-value">{ value }</div>
            { sub.map(|s| html! { <div class="stat-sub muted">{ s }</div> }).unwrap_or_default() }
        </div>
    }
}
