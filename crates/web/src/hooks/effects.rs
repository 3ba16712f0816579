//! The page's effects of state changes: requests to the worker (debounced), the address bar, and
//! the time from a drop to its view on screen.

use std::rc::Rc;

use yew::prelude::*;

use super::worker::WorkerLink;
use crate::protocol::ToWorker;
use crate::state::{Action, AppState};
use crate::web;

/// Wait this long after the last keystroke before recomputing.
const DEBOUNCE_MS: u32 = 250;

/// Asks the worker for what the state says is pending ([`AppState::pending`]), once the form has
/// been still for [`DEBOUNCE_MS`].
#[hook]
pub fn use_requests(state: &AppState, dispatch: UseReducerDispatcher<AppState>, worker: WorkerLink) {
    use_effect_with(state.pending(), move |pending| {
        let pending = pending.clone();
        let timer = (pending.block_size.is_some() || pending.synth.is_some()).then(|| {
            gloo_timers::callback::Timeout::new(DEBOUNCE_MS, move || {
                if let Some(block_size) = pending.block_size {
                    worker.send(ToWorker::Analyze { block_size });
                }
                if let Some(settings) = pending.synth.clone() {
                    worker.send(ToWorker::Synthesize { settings });
                }
                dispatch.dispatch(Action::Requested(pending));
            })
        });
        move || drop(timer)
    });
}

/// Asks the worker to simulate the "What if" panel's cluster ([`AppState::pending_sim`]) once
/// the controls have been still for [`DEBOUNCE_MS`]; the worker runs only the latest request.
#[hook]
pub fn use_simulation(state: &AppState, dispatch: UseReducerDispatcher<AppState>, worker: WorkerLink) {
    use_effect_with(state.pending_sim(), move |pending| {
        let timer = pending.map(|cluster| {
            gloo_timers::callback::Timeout::new(DEBOUNCE_MS, move || {
                worker.send(ToWorker::Simulate { cluster });
                dispatch.dispatch(Action::SimRequested(cluster));
            })
        });
        move || drop(timer)
    });
}

/// The address bar mirrors the parameters, so a link reproduces them.
#[hook]
pub fn use_address_bar(state: &AppState) {
    use_effect_with(state.form.clone(), |form| web::replace_query(&form.to_query()));
}

/// Measures drop → analysis and drop → run view on screen, after the render that showed them.
#[hook]
pub fn use_shown_timing(state: &AppState, dispatch: UseReducerDispatcher<AppState>) {
    let shown = state.analysis.shown().map(Rc::as_ptr);
    let started = state.started_at;
    let d = dispatch.clone();
    use_effect_with(shown, move |shown| {
        if let (Some(_), Some(t0)) = (shown, started) {
            let elapsed = web::now_ms() - t0;
            web::log(&format!("drop to analysis shown: {elapsed:.1} ms"));
            d.dispatch(Action::AnalysisShown { elapsed });
        }
    });
    use_effect_with(state.runs.untimed(), move |untimed| {
        if let Some((_, t0)) = untimed {
            let elapsed = web::now_ms() - t0;
            web::log(&format!("drop to runs shown: {elapsed:.1} ms"));
            dispatch.dispatch(Action::RunsShown { elapsed });
        }
    });
}
