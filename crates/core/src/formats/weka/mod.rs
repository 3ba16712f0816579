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
mod progress;
pub(super) mod scan;
mod serde_read;
mod timing;

pub use timing::{fits_context, no_eligible_trace, time_turns};

pub(super) use convert::convert;
pub(super) use progress::Progress;

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use super::error::FormatError;
use build::{Builder, List, Request, block_of};
use scan::Reader;

/// One request, or a sub-agent with its requests. Strings without escapes are borrowed from the
/// document.
#[derive(Deserialize)]
struct Entry<'a> {
    t: f64,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(rename = "in")]
    input: Option<u64>,
    out: Option<u64>,
    hash_ids: Option<Vec<u64>>,
    #[serde(borrow)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    requests: Option<Vec<Entry<'a>>>,
    /// Read when a number, else taken as absent (the converter only ever skipped it).
    #[serde(default, deserialize_with = "timing::lenient_seconds")]
    api_time: Option<f64>,
    #[serde(default, deserialize_with = "timing::lenient_seconds")]
    think_time: Option<f64>,
    /// A sub-agent's recorded run time (AIPerf joins it by this).
    #[serde(default, deserialize_with = "timing::lenient_seconds")]
    duration_ms: Option<f64>,
}

/// A part of a document read into its requests, ready for [`convert`]: what the converter
/// needs and nothing of the text. A document is one part, or several in order ([`Reader`]).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Parsed {
    reqs: Vec<Req>,
    /// The requests' hash ids, one after the other.
    ids: Vec<u64>,
    /// The conversations (without the file's prefix) and models first met in this part,
    /// numbered after those of the parts before.
    convs: Vec<Conv>,
    models: Vec<Box<str>>,
    /// In the document's last part: how it ends.
    end: Option<End>,
}

impl Parsed {
    pub(super) fn is_last(&self) -> bool {
        self.end.is_some()
    }
}

/// How a document ends: its name (its `id`, else the file's) and block size for the note, its
/// counts, or why the reading stopped after the requests (converted first: the converter may
/// refuse one of them before).
#[derive(Debug, Default, PartialEq)]
struct End {
    name: String,
    block: u32,
    requests: u64,
    subagents: u64,
    stop: Option<FormatError>,
}

#[derive(Clone, Debug, PartialEq)]
struct Conv {
    name: String,
    block: u32,
    /// A sub-agent's: where it was started.
    spawn: Option<Spawn>,
}

/// Where a sub-agent entry sits: the conversation holding it, its place in that conversation's
/// list, its start and its recorded `duration_ms`.
#[derive(Clone, Debug, PartialEq)]
struct Spawn {
    parent: u32,
    outer: u32,
    at_ns: i64,
    duration_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
struct Req {
    at_ns: i64,
    /// Its place in its conversation's list (sub-agent entries counted).
    outer: u32,
    input: u64,
    output: Option<u64>,
    /// The end of its ids in [`Parsed::ids`] (they start where the previous request's end).
    ids_end: usize,
    conv: u32,
    model: u32,
    /// The recorded `api_time` and `think_time` in seconds (AIPerf's re-timed turns).
    api: Option<f64>,
    think: Option<f64>,
}

/// Reads a whole document (the text as [`super::Converter::push_line`] would join its lines:
/// each followed by `\n`, a trailing `\r` dropped; other text is read as if it were so) as one
/// part. Its errors are those of converting it, in the same order.
pub(super) fn parse(source: &Arc<str>, text: &str) -> Parsed {
    Reader::new(source, text).next_part(usize::MAX).unwrap_or_default()
}

/// The text as pushed line by line: `\r\n` as `\n`, and a final line end (serde's error
/// positions count lines and columns).
fn as_lines(text: &str) -> Cow<'_, str> {
    if text.is_empty() || (text.ends_with('\n') && !text.contains('\r')) {
        return Cow::Borrowed(text);
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(text.len() + 1);
    for line in body.split('\n') {
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests;
