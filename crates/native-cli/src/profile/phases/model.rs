//! What the phases share: the inputs of a replay and how a run ended.

use std::sync::Arc;

use aiperf_core::replay::schedule::Schedule;
use aiperf_core::results::summary::RunSummary;
use aiperf_core::trace::Trace;

use crate::profile::prompt::PromptBuilder;

/// What a replay reads before it starts.
pub struct Inputs {
    pub trace: Arc<Trace>,
    pub schedule: Arc<Schedule>,
    pub prompts: Arc<PromptBuilder>,
    /// Where the tokenizer came from.
    pub tokenizer: String,
}

/// How one run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// The exit status a single run has.
    pub status: u8,
    pub summary: RunSummary,
    /// What `--concurrency` did to a fixed schedule, when it was given with one.
    pub ceiling_note: Option<String>,
}
