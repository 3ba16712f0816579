//! A document's parts into the converter: their conversations and models, the requests (read
//! ahead in batches), and the note of a document that ended.

use std::sync::Arc;

use super::{End, Parsed, Req, Spawn, timing};
use crate::formats::{FormatError, Record, Sink, SourceIds};

/// What the converter keeps of a document's parts: their conversations (with the file's
/// prefix) and models, and the requests kept so far.
#[derive(Debug, Default)]
pub(in crate::formats) struct Progress {
    pub(super) convs: Vec<(Arc<str>, u32)>,
    models: Vec<Box<str>>,
    kept: u64,
    /// With [`WekaTiming`]: the parts read so far, converted when the document ends.
    pub(super) held: Vec<Parsed>,
    /// Each conversation's sub-agent entry (`None` for the file's own).
    pub(super) spawns: Vec<Option<Spawn>>,
}

/// Requests read ahead at a time (see [`Sink::touch`]).
const AHEAD: usize = 64;

/// Reads ahead for the first [`AHEAD`] of `reqs` (whose ids start at `start` in `ids`).
fn touch_ahead(sink: &mut Sink<'_>, progress: &Progress, reqs: &[Req], ids: &[u64], start: usize) {
    let reqs = reqs.iter().take(AHEAD);
    let Some(first) = reqs.clone().next() else { return };
    let Some(&(_, block)) = progress.convs.get(first.conv as usize) else { return };
    let mut from = start;
    let sources = reqs.take_while(|r| progress.convs.get(r.conv as usize).is_some_and(|c| c.1 == block)).map(|r| {
        let these = ids.get(from..r.ids_end).unwrap_or_default();
        from = r.ids_end;
        these
    });
    sink.touch(block, sources);
}

/// Hands a part's requests to the converter: after the last part the note, or the first error.
pub(in crate::formats) fn convert(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    part: Parsed,
) -> Result<Option<String>, FormatError> {
    let prefix = sink.prefix().to_string();
    progress.convs.extend(part.convs.iter().map(|c| (format!("{prefix}{}", c.name).into(), c.block)));
    progress.models.extend(part.models.iter().cloned());
    progress.spawns.extend(part.convs.iter().map(|c| c.spawn.clone()));
    if let Some(timing) = sink.opts.weka {
        return timing::convert_whole(sink, progress, part, &timing);
    }
    let mut start = 0;
    for (k, r) in part.reqs.iter().enumerate() {
        if k % AHEAD == 0 {
            touch_ahead(sink, progress, part.reqs.get(k..).unwrap_or_default(), &part.ids, start);
        }
        let ids = part.ids.get(start..r.ids_end).unwrap_or_default();
        start = r.ids_end;
        push_request(sink, progress, r, ids, r.at_ns, None)?;
    }
    let Some(end) = part.end else { return Ok(None) };
    note(sink, progress, end)
}

/// One request into the converter, sent at `at_ns` (`turn`: as [`Record::turn`]), unless its
/// model is filtered out.
#[inline]
pub(super) fn push_request(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    r: &Req,
    ids: &[u64],
    at_ns: i64,
    turn: Option<Option<f64>>,
) -> Result<(), FormatError> {
    sink.count_record();
    if !sink.keeps_model(progress.models.get(r.model as usize).map_or("", |m| m)) {
        return Ok(());
    }
    progress.kept += 1;
    let Some((name, block)) = progress.convs.get(r.conv as usize) else {
        return Err(FormatError::Options(format!("{}: a request without its conversation", sink.file())));
    };
    sink.push(Record {
        at_ns,
        input: r.input,
        output: r.output,
        conversation: Some(name.clone()),
        ids: Some(SourceIds { ids, block: *block, complete: ids.len() }),
        line: 0,
        turn,
    })
}

/// The note of a document that ended (or its error).
pub(super) fn note(sink: &Sink<'_>, progress: &Progress, end: End) -> Result<Option<String>, FormatError> {
    if let Some(e) = end.stop {
        return Err(e);
    }
    Ok(Some(format!(
        "WEKA trace {}: {} requests ({} kept), {} sub-agents; {}-token hash ids re-blocked to {}, \
         one conversation per file and per sub-agent",
        end.name, end.requests, progress.kept, end.subagents, end.block, sink.opts.block_size
    )))
}
