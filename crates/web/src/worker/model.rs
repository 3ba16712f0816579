//! What the worker holds between messages, and the worker agent that holds it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use aiperf_core::replay::schedule::Schedule;
use aiperf_core::synthesis::SynthesisSettings;
use aiperf_core::trace::Trace;
use aiperf_core::view::Run;
use aiperf_core::view::curve::Curve;
use serde::{Deserialize, Serialize};

use crate::engine::ModelCache;

/// What the worker holds between messages.
#[derive(Default)]
pub(super) struct Inner {
    pub(super) trace: Option<Rc<Trace>>,
    pub(super) name: String,
    /// True when the loaded trace was converted from another format (it can be downloaded).
    pub(super) converted: bool,
    pub(super) model: ModelCache,
    /// The last synthesis, kept for the download.
    pub(super) last: Option<(SynthesisSettings, Rc<Trace>)>,
    /// Bumped by every load, so that an older load still streaming stops.
    pub(super) load_generation: u64,
    /// Finished runs (`profile_export.jsonl`), shown by the run view.
    pub(super) runs: Vec<Run>,
    /// Sweeps and capacity searches dropped with them (or alone).
    pub(super) curves: Vec<Curve>,
    pub(super) runs_generation: u64,
    /// The loaded trace's replay schedule, built by the first simulation.
    pub(super) schedule: Option<Arc<Schedule>>,
    /// Bumped by every simulation request: only the latest one runs.
    pub(super) sim_generation: u64,
    /// The last agentic-code dataset, kept for its downloads.
    pub(super) agentic: Option<crate::agentic::Generated>,
}

/// The worker agent (registered by the `worker` binary).
pub struct TraceWorker {
    pub(super) inner: Rc<RefCell<Inner>>,
}

/// Messages the worker sends itself (none).
#[derive(Serialize, Deserialize)]
pub enum Never {}
