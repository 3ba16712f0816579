//! Production trace formats turned into the Mooncake trace model.
//!
//! Bailian/Qwen JSONL, ServeGen offline JSONL, Azure LLM 2023/2024 CSV, BurstGPT v1/v2 CSV and
//! WEKA kv-cache-tester JSON are read record by record by a [`Converter`] (lines are pushed, as
//! with [`crate::trace::TraceParser`], so the browser can feed chunks) into one [`Trace`](crate::trace::Trace):
//!
//! - timestamps become integer milliseconds from the first kept row, ties kept, rows in time order
//!   (a stable sort, so each conversation keeps its source order);
//! - hash ids are re-blocked to the target block size by [`Reblocker`] (equal ids ⇔ equal
//!   prefixes; partial tails get fresh ids; each file its own id namespace); sources without
//!   hashes get none, and the analysis then reports "no prefix information";
//! - a conversation's identity travels as `conversation_id` (see
//!   [`crate::trace::Row::conversation`]): each row already carries its full input.
//!
//! [`detect`] tells the format from a file's first bytes; [`transform`] holds the transforms long
//! production traces need (time window, idle-gap cap, conversation sampling, turn-gap cap).

mod azure;
mod bailian;
pub mod baseten;
mod burstgpt;
mod columns;
mod convert;
pub mod dag_jsonl;
mod detect;
mod error;
mod flat;
mod format;
pub(crate) mod json;
mod options;
mod parsed;
mod reblock;
mod servegen;
pub mod settings;
mod sink;
pub mod transform;
mod weka;

pub use convert::{Converted, Converter};
pub use detect::{Detection, detect};
pub use error::{FormatError, Line};
pub use format::Format;
pub use options::{Arrivals, ConvertOptions, WekaTiming};
pub use parsed::{DocumentReader, ParsedDocument, ParsedLine, parse_document, parse_line};
pub use reblock::Reblocker;
pub use sink::{ConvertStats, FileOptions, MAX_MODELS_NAMED};
pub use weka::{fits_context, no_eligible_trace, time_turns};
