//! The page as a drop target: files dropped anywhere on it are opened.

use yew::prelude::*;

use super::open_bar::file_list;

#[derive(Properties, PartialEq)]
pub struct DropPageProps {
    pub on_files: Callback<Vec<web_sys::File>>,
    pub children: Html,
}

/// The page's outer box; marked while files are dragged over it.
#[component]
pub fn DropPage(p: &DropPageProps) -> Html {
    let dragging = use_state(|| false);
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
        let (dragging, on_files) = (dragging.clone(), p.on_files.clone());
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            on_files.emit(file_list(e.data_transfer().and_then(|dt| dt.files())));
        })
    };
    html! {
        <div class={classes!("page", dragging.then_some("dragging"))} {ondragover} {ondragleave} {ondrop}>
            { p.children.clone() }
        </div>
    }
}
