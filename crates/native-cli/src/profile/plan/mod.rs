//! The validated, typed plan of `profile`: what its flags mean, resolved in one place.
//!
//! [`ProfilePlan::from_args`] and [`ReplayPlan::from_args`] are the only functions that read
//! clap's [`Args`](super::options::Args): every range check and every error message about an
//! option is here, naming the option, the value and what is accepted. The rest of `profile` sees
//! only the plan.
//!
//! - [`campaign`]: what `profile` runs (one replay, repeats, a sweep, a search) — [`ProfilePlan`];
//! - [`model`]: the types of one replay's plan ([`ReplayPlan`] and its parts);
//! - [`replay`]: one replay — [`ReplayPlan::from_args`], checked option group by option group;
//! - [`input`]: what a replay reads (a trace, AIPerf's dataset files, inline records, the synthetic
//!   workload), its format and the in-memory synthesis;
//! - [`target`]: where requests go — the `--url`s, their credentials, the run's secrets;
//! - [`schedule`]: the plan applied to a trace — timing, offsets kept, the schedule sent;
//! - [`server`]: the server's side of a replay (metrics scraped, readiness, cache reset, GPUs);
//! - `cli_config`: the options as given, redacted, for the exports' `aiperf_cli_config`;
//! - [`aiperf_config`]: the options in AIPerf's configuration shape (the exports' `input_config`);
//! - [`arrivals`]: when sessions start, resolved against the trace;
//! - [`delay_cap`]: `--inter-turn-delay-cap-seconds`, checked and applied to the rows read;
//! - [`dataset_file`]: AIPerf's own dataset files (single_turn, multi_turn, random_pool), read;
//! - [`limits`]: the options' bounds and the checks of one option;
//! - [`shaping`]: AIPerf's load-shaping options (request cancellation, warm-up, ramps, gamma
//!   arrivals, rate series);
//! - [`network`]: the network latency calibration options (`--network-latency-*`);
//! - [`sla`]: AIPerf's SLA targets as the capacity search's goodput targets;
//! - [`system_prompt`]: `--system-prompt`/`--system-prompt-file`, read and checked;
//! - [`secrets`]: credentials in URLs and headers, redacted and masked;
//! - [`tls`]: the `--ssl-ca-cert` file;
//! - [`weka`]: AIPerf's `weka_trace` replay options, checked and applied to the trace read.

pub mod aiperf_config;
pub mod arrivals;
pub mod baseten;
pub mod campaign;
mod cli_config;
pub mod dataset_file;
pub mod delay_cap;
mod input;
pub mod limits;
pub mod model;
pub mod network;
pub mod replay;
mod schedule;
pub mod secrets;
pub mod server;
pub mod shaping;
pub mod sla;
pub mod system_prompt;
mod target;
pub mod tls;
pub mod weka;

pub use campaign::{Mode, ProfilePlan};
pub use model::ReplayPlan;
