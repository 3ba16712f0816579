//! The page's components. [`App`] starts the worker; `Main` holds the one reducer, provides the
//! [`AppContext`](crate::hooks::AppContext) (dispatcher and worker) and lays out the panels, each
//! given the slice of state it shows.

mod agentic;
mod analysis;
mod charts;
mod drop;
mod fields;
mod open_bar;
mod runs;
mod status;
mod synthesis;
mod what_if;

pub use agentic::AgenticPanel;
pub use analysis::{AnalysisPanel, StatsProps, StatsTable};
pub use charts::{
    ArrivalsChart, CacheChart, CdfCompare, DistChart, DistProps, GroupsChart, arrivals_svg, balance_svg, cache_svg,
    cdf_compare_svg, dist_svg, groups_svg, kv_svg, layers_svg,
};
pub use fields::{FieldInput, FieldProps};
pub use runs::RunsSection;
pub use status::{LoadStatus, Notices};
pub use synthesis::SynthPanel;
pub use what_if::WhatIfPanel;

use yew::prelude::*;
use yew_agent::worker::WorkerProvider;

use crate::codec::WithFiles;
use crate::hooks::{AppContext, use_address_bar, use_open, use_requests, use_shown_timing, use_simulation, use_worker};
use crate::params::Form;
use crate::state::AppState;
use crate::web;
use crate::worker::TraceWorker;
use drop::DropPage;
use open_bar::OpenBar;

/// The whole app.
#[component]
pub fn App() -> Html {
    html! {
        <WorkerProvider<TraceWorker, WithFiles> path="worker.js" module=true>
            <Main />
        </WorkerProvider<TraceWorker, WithFiles>>
    }
}

#[component]
fn Main() -> Html {
    let state = use_reducer(|| {
        let (form, warnings) = Form::from_query(&web::location_search());
        AppState::new(form, warnings)
    });
    let dispatch = state.dispatcher();
    let worker = use_worker(dispatch.clone());
    let open = use_open(&state, dispatch.clone(), worker.clone());
    use_requests(&state, dispatch.clone(), worker.clone());
    use_simulation(&state, dispatch.clone(), worker.clone());
    use_address_bar(&state);
    use_shown_timing(&state, dispatch.clone());
    // A shared link with `sample=1` opens the sample right away.
    {
        let (sample, load_sample) = (state.form.sample, open.sample.clone());
        use_effect_with((), move |_| {
            if sample {
                load_sample.emit(());
            }
        });
    }

    let panels = match (state.file(), state.analysis.shown()) {
        (Some(file), Some(original)) => html! {
            <>
                <AnalysisPanel file={file.clone()} analysis={state.analysis.clone()} form={state.form.clone()} shown_ms={state.shown_ms} />
                <SynthPanel file={file.clone()} original={original.clone()} synth={state.synth.clone()} form={state.form.clone()} />
                <WhatIfPanel file={file.clone()} form={state.what_if.clone()} sim={state.sim.clone()} />
            </>
        },
        _ => html! {},
    };
    html! {
        <ContextProvider<AppContext> context={AppContext { dispatch, worker }}>
            <DropPage on_files={open.files.clone()}>
                <header class="top">
                    <div class="brand">
                        <h1>{ "aiperf trace explorer" }</h1>
                        <p class="privacy">{ "Your trace never leaves this browser: it is read and analysed locally, in WebAssembly. Nothing is uploaded." }</p>
                    </div>
                    <OpenBar {open} />
                </header>
                <div class="drop-overlay" aria-hidden="true"><div>{ "Drop the trace to open it" }</div></div>
                <main>
                    <Notices url_warnings={state.url_warnings.clone()} worker_silent_s={state.worker_silent_s} />
                    <RunsSection runs={state.runs.clone()} />
                    <LoadStatus load={state.load.clone()} />
                    { panels }
                    <AgenticPanel form={state.agentic_form.clone()} agentic={state.agentic.clone()} />
                </main>
                <footer>
                    { "aiperf-rs · the same core as the aiperf-cli command line, compiled to WebAssembly · works offline once loaded" }
                </footer>
            </DropPage>
        </ContextProvider<AppContext>>
    }
}
