//! `aiperf-cli profile`: replay a trace against an OpenAI-compatible server with precise timing,
//! and measure it the way AIPerf does.
//!
//! Data flows one way: flags → [`plan::ReplayPlan`] → trace and [`aiperf_core::replay::schedule`] →
//! [`dispatcher`] (driving [`aiperf_core::replay::dispatch`], bodies from the [`preparer`]) →
//! [`request`] over a [`transport::Transport`] → [`records`] (token counts, metrics, the JSONL
//! line) → [`export`](crate::io::exports) of one [`aiperf_core::results::summary::RunSummary`].
//!
//! A run has named phases — warm-up, before time zero, measure, drain, export ([`phases`]) —
//! stopped through the two cancellation tokens of [`control`], which SIGINT, SIGTERM and SIGHUP
//! cancel alike.
//!
//! [`run`] resolves the [`plan`] and runs one replay ([`single::run_one`]) or several
//! ([`campaign`]); a replay reads its inputs and readies the server ([`single`]), then runs its
//! [`phases`]; [`control`] holds the tokens and watches the signals, [`clock`] the wall clock of
//! sharded runs.

pub mod aiperf_options;
pub mod artifacts;
pub mod body;
pub mod campaign;
pub mod client;
pub mod clock;
pub mod config_file;
pub mod control;
pub mod dashboard;
pub mod dispatcher;
pub mod network;
pub mod options;
pub mod phases;
pub mod plan;
pub mod preparer;
pub mod progress;
pub mod prompt;
pub mod records;
pub mod request;
pub mod scraper;
pub mod server_control;
pub mod single;
pub mod transport;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;

use std::time::Instant;

use anyhow::{Context, Result};

use crate::exit::BadInput;
use control::Control;

pub use options::reject_unsupported;

/// Runs `aiperf-cli profile`; returns the process exit status.
pub fn run(args: options::Args) -> Result<u8> {
    let started = Instant::now();
    let profile = plan::ProfilePlan::from_args(args).context(BadInput)?;
    if profile.sla.ignored {
        say!(
            "note: the SLA targets (--ttft-sla-ms, --itl-sla-ms, --tpot-sla-ms, --e2e-sla-ms, --error-rate-sla, --slo-attainment-fraction) are read by --search-max only; this run ignores them, as AIPerf does outside its search recipes"
        );
    }
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    // Signals are watched from the start: a job stopped while loading still ends with exports.
    let control = Control::default();
    rt.spawn(control::watch_signals(control.clone(), profile.first.limits.grace));
    if profile.is_single_run() {
        return single::run_one(&rt, &profile.first, &control, started).map(|o| o.status);
    }
    campaign::run(&rt, &profile, &control, started)
}
