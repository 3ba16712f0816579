//! The generator's configuration: AIPerf 0.13.0's `SessionDistributionConfig` (the keys of its
//! `configs/default.json`, their defaults and ranges), read from a config file or from the
//! `generation_params` of a previous run's `manifest.json`, and written back into a manifest.
//!
//! Unlike AIPerf, which accepts and ignores keys it does not know, an unknown key is refused with
//! its dotted path and the keys accepted there, so that a misspelt key never silently falls back
//! to a default.

mod error;
mod parts;
mod read;
#[cfg(test)]
mod tests;
mod whole;

pub use error::ConfigError;
pub use parts::{Cache, Groups, Lognormal, MixtureDelay, NewTokens, Reset, Turns};
pub use read::BUNDLED_DEFAULT;
pub use whole::{AgenticConfig, MAX_GROUP_BLOCKS, MAX_GROUPS, MAX_SESSION_BLOCKS};
