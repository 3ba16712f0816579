//! Where the run view stands: finished runs dropped on the page, read and drawn by the worker.

use std::rc::Rc;

use crate::protocol::RunsView;

/// The run view.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum RunView {
    #[default]
    None,
    /// The worker reads the runs; `started` is `performance.now()` at the drop.
    Reading {
        names: Vec<String>,
        started: f64,
    },
    Failed(String),
    Shown(ShownRuns),
}

/// Runs on screen.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownRuns {
    pub view: Rc<RunsView>,
    /// Bumped by every new view, so the page sets its HTML once per view.
    pub generation: u64,
    /// The clicked request's record.
    pub record: Option<String>,
    /// Drop → view on screen (ms), once measured.
    pub shown_ms: Option<f64>,
    /// `performance.now()` at the drop, until the view is on screen.
    pub started: Option<f64>,
}

impl RunView {
    /// A new view from the worker.
    pub(super) fn with_view(&self, view: Rc<RunsView>) -> RunView {
        let (generation, started) = match self {
            RunView::Shown(s) => (s.generation + 1, None),
            RunView::Reading { started, .. } => (1, Some(*started)),
            RunView::None | RunView::Failed(_) => (1, None),
        };
        RunView::Shown(ShownRuns { view, generation, record: None, shown_ms: None, started })
    }

    /// A clicked request's record; `None` when no run is shown.
    pub(super) fn with_record(&self, text: String) -> Option<RunView> {
        match self {
            RunView::Shown(s) => Some(RunView::Shown(ShownRuns { record: Some(text), ..s.clone() })),
            _ => None,
        }
    }

    /// The view went on screen `elapsed` ms after the drop; `None` when nothing waited for it.
    pub(super) fn with_shown(&self, elapsed: f64) -> Option<RunView> {
        match self {
            RunView::Shown(s) if s.started.is_some() => {
                Some(RunView::Shown(ShownRuns { shown_ms: Some(elapsed), started: None, ..s.clone() }))
            }
            _ => None,
        }
    }

    /// The generation of a view waiting to be timed on screen.
    pub fn untimed(&self) -> Option<(u64, f64)> {
        match self {
            RunView::Shown(ShownRuns { generation, started: Some(t0), shown_ms: None, .. }) => Some((*generation, *t0)),
            _ => None,
        }
    }
}
