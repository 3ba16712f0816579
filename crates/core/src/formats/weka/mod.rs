//! WEKA kv-cache-tester traces (Claude Code sessions): one JSON object per file, one conversation
//! per file. Requests have `t` (seconds from the conversation start), `model`, `in`, `out` and
//! 64-token `hash_ids` with `len == floor(in / 64)` (the partial tail is unhashed); ids are local
//! to the file. A `"subagent"` entry nests requests whose `t` is read from the entry's `t` when it
//! is before it (older captures) and from the file's start otherwise (AIPerf's rule); its
//! requests share the parent's id space but form their own conversation
//! (`<conversation>/<agent_id>`). With AIPerf's replay options ([`WekaTiming`](crate::formats::WekaTiming)) the conversations
//! are AIPerf's sessions ([`agents`]): the file's own requests split into agent chains
//! ([`chains`]), whose main chain starts and joins the sub-agents and the other chains.
//!
//! A document is read in two steps: [`parse`] turns its text into a compact [`Parsed`] form (the
//! requests, checked, with their hash ids in one buffer), which needs nothing from the converter
//! and so can run on any thread; [`convert`] then hands the requests to the converter. Parsing
//! tries a hand-written scanner first ([`scan::Reader`]: flat request objects, the values of other
//! keys skipped), which gives way, per request, to serde for a request it does not read (a
//! sub-agent, escapes, nulls, unusual numbers) and, for the whole document, to the serde reading
//! ([`serde_read::parse_serde`]) at anything wrong or unusual, so that every error is serde's,
//! worded and placed as serde words and places it. A test checks that both give the same result.
//! A big document is read in parts ([`scan::Reader::next_part`]), converted one after the other,
//! so that its first requests can be converted while the rest is read.

mod agents;
mod build;
mod chains;
mod convert;
mod model;
mod progress;
pub(super) mod scan;
mod serde_read;
mod timing;

pub use timing::{fits_context, no_eligible_trace, time_turns};

pub(super) use convert::convert;
pub(super) use model::Parsed;
pub(super) use progress::Progress;

use std::sync::Arc;

use scan::Reader;

/// Reads a whole document (the text as [`super::Converter::push_line`] would join its lines:
/// each followed by `\n`, a trailing `\r` dropped; other text is read as if it were so) as one
/// part. Its errors are those of converting it, in the same order.
pub(super) fn parse(source: &Arc<str>, text: &str) -> Parsed {
    Reader::new(source, text).next_part(usize::MAX).unwrap_or_default()
}

#[cfg(test)]
mod tests;
