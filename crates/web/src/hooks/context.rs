//! What every panel reaches without props: the reducer's dispatcher and the worker.

use aiperf_core::synthesis::Param;
use yew::prelude::*;

use super::worker::WorkerLink;
use crate::state::{Action, AppState};

/// Provided once by the page; both parts are stable, so consumers never re-render for it.
#[derive(Clone, PartialEq)]
pub struct AppContext {
    pub dispatch: UseReducerDispatcher<AppState>,
    pub worker: WorkerLink,
}

impl AppContext {
    /// Records an edit of a parameter field.
    pub fn on_set(&self) -> Callback<(Param, String)> {
        let dispatch = self.dispatch.clone();
        Callback::from(move |(f, v)| dispatch.dispatch(Action::Edited(f, v)))
    }
}

/// The page's [`AppContext`].
#[hook]
pub fn use_app() -> AppContext {
    use_context::<AppContext>().expect("components are rendered inside the page's AppContext provider")
}
