//! WEKA kv-cache-tester traces (Claude Code sessions): one JSON object per file, one conversation
//! per file. Requests have `t` (seconds from the conversation start), `model`, `in`, `out` and
//! 64-token `hash_ids` with `len == floor(in / 64)` (the partial tail is unhashed); ids are local
//! to the file. A `"subagent"` entry nests requests on its own clock starting at the entry's `t`;
//! its requests share the parent's id space but form their own conversation
//! (`<conversation>/<agent_id>`).
//!
//! The document is buffered line by line and parsed when the file ends (it is one JSON value).

use std::borrow::Cow;

use serde::Deserialize;

use super::error::{FormatError, Line};
use super::{Record, Sink, SourceIds, check_id_count, seconds_to_ns};

#[derive(Deserialize)]
struct Doc<'a> {
    id: Option<String>,
    block_size: Option<u32>,
    #[serde(borrow)]
    requests: Vec<Entry<'a>>,
}

/// `type` and `model` borrow from the document unless they hold escapes.
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
    agent_id: Option<String>,
    #[serde(borrow)]
    requests: Option<Vec<Entry<'a>>>,
}

#[derive(Default)]
struct Counts {
    requests: u64,
    kept: u64,
    subagents: u64,
}

pub(super) fn convert(sink: &mut Sink<'_>, text: &str) -> Result<String, FormatError> {
    let doc: Doc = serde_json::from_str(text).map_err(|e| FormatError::Shape {
        file: sink.file().clone(),
        line: Line(Some(e.line() as u64)),
        reason: format!("not a WEKA trace object (`id`, `block_size`, `requests`): {e}"),
    })?;
    let block = doc.block_size.unwrap_or(64);
    if block == 0 {
        return Err(field_error(sink, "block_size", "0", "a positive number of tokens"));
    }
    let name = doc.id.clone().unwrap_or_else(|| sink.file().to_string());
    let conversation = format!("{}{name}", sink.prefix());
    let mut counts = Counts::default();
    walk(sink, &doc.requests, 0, &conversation, "requests", block, &mut counts)?;
    Ok(format!(
        "WEKA trace {name}: {} requests ({} kept), {} sub-agents; {block}-token hash ids re-blocked to {}, \
         one conversation per file and per sub-agent",
        counts.requests, counts.kept, counts.subagents, sink.opts.block_size
    ))
}

fn field_error(sink: &Sink<'_>, field: &str, value: &str, expected: &str) -> FormatError {
    FormatError::Field {
        file: sink.file().clone(),
        line: Line(None),
        field: field.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

fn walk(
    sink: &mut Sink<'_>,
    entries: &[Entry<'_>],
    base_ns: i64,
    conversation: &str,
    path: &str,
    block: u32,
    counts: &mut Counts,
) -> Result<(), FormatError> {
    for (i, e) in entries.iter().enumerate() {
        // The entry's path, written only for an error.
        let here = || format!("{path}[{i}]");
        let at_ns = seconds_to_ns(Some(e.t)).and_then(|t| t.checked_add(base_ns)).ok_or_else(|| {
            field_error(sink, &format!("{}.t", here()), &e.t.to_string(), "a non-negative number of seconds")
        })?;
        if e.kind.as_deref() == Some("subagent") || e.requests.is_some() {
            counts.subagents += 1;
            let agent = e.agent_id.clone().unwrap_or_else(|| format!("agent{i}"));
            let sub = format!("{conversation}/{agent}");
            let nested = e.requests.as_deref().unwrap_or_default();
            walk(sink, nested, at_ns, &sub, &format!("{}.requests", here()), block, counts)?;
            continue;
        }
        counts.requests += 1;
        sink.out.stats.records += 1;
        let input =
            e.input.ok_or_else(|| field_error(sink, &format!("{}.in", here()), "nothing", "a non-negative integer"))?;
        let ids = e.hash_ids.as_deref().unwrap_or_default();
        check_id_count(sink.file(), Line(None), "hash_ids", ids.len(), input, block, false).map_err(|mut err| {
            if let FormatError::Field { field, .. } = &mut err {
                *field = format!("{}.hash_ids", here());
            }
            err
        })?;
        if !sink.keeps_model(e.model.as_deref().unwrap_or("")) {
            continue;
        }
        counts.kept += 1;
        sink.push(Record {
            at_ns,
            input,
            output: e.out,
            conversation: Some(conversation.to_string()),
            ids: Some(SourceIds { ids, block, complete: ids.len() }),
            line: 0,
        })?;
    }
    Ok(())
}
