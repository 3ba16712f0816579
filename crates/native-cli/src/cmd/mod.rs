//! One module per command that reads inputs and writes outputs; `profile` and `mock-server` have
//! folders of their own beside this one.

pub mod agentic;
pub mod analyze;
pub mod convert;
pub mod hash_prompts;
pub mod merge;
pub mod option_names;
pub mod report;
pub mod simulate;
pub mod synthesize;
pub mod validate;
