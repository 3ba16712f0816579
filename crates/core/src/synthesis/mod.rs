//! Trace synthesis: turn a trace into a new one with scaled prefixes, prompts, timing and output.
//!
//! - [`transform()`]: AIPerf's prefix synthesis (`--synthesis-*` options), row for row, with the same
//!   ids and random draws as AIPerf 0.13.0 for the same seed, minus its three defects;
//! - [`generate()`]: learn a trace's prefix tree and length/arrival distributions, then sample any
//!   number of new rows from them;
//! - [`arrivals`]: the request rate over time that generation learns and reproduces;
//! - [`fidelity`]: how close a synthesized trace's distributions are to the original's;
//! - [`sampled`]: the fidelity report's numbers of a generated trace, gathered while sampling;
//! - [`synthetic`]: AIPerf's synthetic workloads (`--isl`, `--num-dataset-entries`, turns, prefix
//!   prompts, `--seq-dist`) generated as a trace;
//! - [`settings`]: the parameters as users set them (names, ranges, defaults) for every surface.
//!
//! All functions are pure and deterministic: the seed is a parameter; the draws come from
//! [`crate::rng`].

pub mod agentic;
pub mod arrivals;
mod error;
pub mod fidelity;
pub mod generate;
mod params;
pub mod sampled;
pub mod settings;
pub mod synthetic;
pub mod transform;

pub use error::{MAX_OUTPUT_IDS, MAX_OUTPUT_ROWS, SynthesisError};
pub use fidelity::{
    ArrivalCheck, ArrivalSeries, Compared, FidelityReport, MetricFidelity, arrival_checks, arrival_checks_of,
    compare_metric, fidelity_from_analyses, fidelity_from_analyses_with, fidelity_of_with, fidelity_report,
};
pub use generate::{ModelStats, PrefixModel, Sampler, generate};
pub use params::{GenerateParams, TransformParams};
pub use sampled::SampledFacts;
pub use settings::{Mode, Param, SynthesisSettings};
pub use transform::{synthesize_direct, transform};
